// heatmap.cpp — SVG cells with a white-to-blue ramp on sqrt(share) (so small
// buckets stay visible next to a dominant one) and labels.
#include "data/heatmap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace mt {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace

std::string heatmap_svg(const std::vector<BucketCell>& cells, const std::string& title) {
  std::set<std::string> topics, quals;
  std::map<std::pair<std::string, std::string>, const BucketCell*> at;
  int64_t total = 0, max_tokens = 1;
  for (const BucketCell& c : cells) {
    topics.insert(c.topic);
    quals.insert(c.quality);
    at[{c.topic, c.quality}] = &c;
    total += c.tokens;
    max_tokens = std::max(max_tokens, c.tokens);
  }
  const int cw = 72, ch = 22, left = 150, top = 64;
  const int w = left + cw * int(quals.size()) + 20, h = top + ch * int(topics.size()) + 40;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n"
      "<text x=\"10\" y=\"38\" fill=\"#555\">share of train tokens per bucket (topic rows x quality columns); "
      "total {} tokens</text>\n",
      w, h, w, h, esc(title), total);
  int col = 0;
  for (const std::string& q : quals)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\n",
                     left + col++ * cw + cw / 2, top - 6, esc(q));
  int row = 0;
  for (const std::string& t : topics) {
    const int y = top + row++ * ch;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, y + ch / 2 + 4, esc(t));
    col = 0;
    for (const std::string& q : quals) {
      const int x = left + col++ * cw;
      auto it = at.find({t, q});
      if (it == at.end()) {
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\" stroke=\"#ddd\"/>\n", x,
                         y, cw, ch);
        continue;
      }
      const BucketCell& c = *it->second;
      const double share = total > 0 ? double(c.tokens) / double(total) : 0.0;
      const double v = std::sqrt(double(c.tokens) / double(max_tokens));
      const int r = int(255 - v * (255 - 33)), g = int(255 - v * (255 - 102)), b = int(255 - v * (255 - 172));
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},{})\" stroke=\"#ddd\">"
          "<title>{}/{}: {} docs, {} tokens ({:.2f}%)</title></rect>\n"
          "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{:.1f}%</text>\n",
          x, y, cw, ch, r, g, b, esc(t), esc(q), c.documents, c.tokens, 100 * share, x + cw / 2, y + ch / 2 + 4,
          v > 0.6 ? "white" : "black", 100 * share);
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace mt
