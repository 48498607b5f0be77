// topic_corpora.h — labelled corpora every Debian CI machine with the build
// dependencies has, for measuring topic models (tests/unit/data_topics_test,
// tools/topic_eval). Header-only: the test and the tool share it.
//  * python_docs: the Python Library Reference sources (package python3-doc),
//    one document per module page, labelled by the chapter whose toctree
//    lists it (library/index.rst.txt -> chapter page -> module pages, nested
//    toctrees inherit the chapter). ~300 pages, ~30 human-named chapters.
//  * code_prose: C++ headers (fmt, nlohmann: code), man pages (sections 2 and
//    3, roff: prose with code in synopses) and licence texts (prose).
#pragma once
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace mt::testing {

struct LabelledCorpus {
  std::vector<std::string> texts;
  std::vector<int32_t> labels;      // index into label_names
  std::vector<std::string> label_names;
  std::vector<std::string> paths;
  void add(std::string text, const std::string& label, std::string path) {
    auto it = std::find(label_names.begin(), label_names.end(), label);
    if (it == label_names.end()) it = label_names.insert(label_names.end(), label);
    texts.push_back(std::move(text));
    labels.push_back(int32_t(it - label_names.begin()));
    paths.push_back(std::move(path));
  }
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline std::string slurp_gz(const std::filesystem::path& p) {
  std::string out;
  gzFile f = gzopen(p.c_str(), "rb");
  if (!f) return out;
  char buf[1 << 14];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  gzclose(f);
  return out;
}

// Entries of every ".. toctree::" block of an .rst source, as page stems.
inline std::vector<std::string> toctree_entries(const std::string& rst) {
  std::vector<std::string> out;
  std::istringstream in(rst);
  std::string line;
  bool in_tree = false;
  while (std::getline(in, line)) {
    if (line.rfind(".. toctree::", 0) == 0) { in_tree = true; continue; }
    if (!in_tree) continue;
    if (!line.empty() && line[0] != ' ' && line[0] != '\t') { in_tree = false; continue; }
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == ':') continue;
    std::string e = line.substr(b);
    while (!e.empty() && (e.back() == ' ' || e.back() == '\r')) e.pop_back();
    if (e.size() > 4 && e.compare(e.size() - 4, 4, ".rst") == 0) e.resize(e.size() - 4);
    if (e.find('<') != std::string::npos || e.find("://") != std::string::npos) continue;
    out.push_back(e);
  }
  return out;
}

// Empty when python3-doc is not installed. every: keep every n-th page;
// max_bytes: cut each page (0 = whole).
inline LabelledCorpus python_docs(int64_t every = 1, size_t max_bytes = 0,
                                  const std::string& dir = "/usr/share/doc/python3.11/html/_sources/library") {
  LabelledCorpus c;
  namespace fs = std::filesystem;
  auto page = [&](const std::string& stem) { return fs::path(dir) / (stem + ".rst.txt"); };
  if (!fs::exists(page("index"))) return c;
  std::set<std::string> seen = {"index"};
  std::vector<std::pair<std::string, std::string>> docs;  // (stem, chapter)
  for (const std::string& chapter : toctree_entries(slurp(page("index")))) {
    if (!fs::exists(page(chapter))) continue;
    seen.insert(chapter);
    std::vector<std::string> todo = toctree_entries(slurp(page(chapter)));
    for (size_t i = 0; i < todo.size(); ++i) {
      if (!seen.insert(todo[i]).second || !fs::exists(page(todo[i]))) continue;
      docs.push_back({todo[i], chapter});
      for (const std::string& sub : toctree_entries(slurp(page(todo[i])))) todo.push_back(sub);
    }
  }
  std::map<std::string, int64_t> per_chapter;
  for (const auto& d : docs) ++per_chapter[d.second];
  int64_t i = 0;
  for (const auto& [stem, chapter] : docs) {
    if (per_chapter[chapter] < 2) continue;  // a one-page chapter is not a topic
    if (i++ % every != 0) continue;
    std::string t = slurp(page(stem));
    if (max_bytes && t.size() > max_bytes) t.resize(max_bytes);
    c.add(std::move(t), chapter, page(stem).string());
  }
  return c;
}

// Labels "code", "man", "licence". man3_every: keep every n-th section-3 page.
inline LabelledCorpus code_prose(int64_t man2_every = 1, int64_t man3_every = 8, size_t max_bytes = 0) {
  LabelledCorpus c;
  namespace fs = std::filesystem;
  auto sorted_files = [](const fs::path& root, bool recursive) {
    std::vector<fs::path> v;
    std::error_code ec;
    if (!fs::exists(root, ec)) return v;
    if (recursive) {
      for (auto& e : fs::recursive_directory_iterator(root, ec))
        if (e.is_regular_file()) v.push_back(e.path());
    } else {
      for (auto& e : fs::directory_iterator(root, ec))
        if (e.is_regular_file()) v.push_back(e.path());
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  auto add = [&](std::string t, const char* label, const fs::path& p) {
    if (t.size() < 1024) return;  // ".so" redirects and stubs
    if (max_bytes && t.size() > max_bytes) t.resize(max_bytes);
    c.add(std::move(t), label, p.string());
  };
  for (const char* dir : {"/usr/include/fmt", "/usr/include/nlohmann"})
    for (const fs::path& p : sorted_files(dir, true)) add(slurp(p), "code", p);
  int64_t i = 0;
  for (const fs::path& p : sorted_files("/usr/share/man/man2", false))
    if (i++ % man2_every == 0) add(slurp_gz(p), "man", p);
  i = 0;
  for (const fs::path& p : sorted_files("/usr/share/man/man3", false))
    if (i++ % man3_every == 0) add(slurp_gz(p), "man", p);
  for (const fs::path& p : sorted_files("/usr/share/common-licenses", false)) add(slurp(p), "licence", p);
  return c;
}

}  // namespace mt::testing
