// core_config_schema_test.cpp — the one config mechanism: every file type rejects
// an unknown key, a wrong type and an out-of-range value with the same shape
// (FILE:LINE: key: expected T, got V); --set reaches data build, mixture and
// planner files as it reaches run configs; origins name the line or the
// override; canonical TOML round-trips; table arrays, maps and custom keys.
#include "core/config_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "data/data_build.h"
#include "data/mixture.h"
#include "plan/cluster.h"
#include "plan/layout.h"
#include "plan/scaling_law.h"
#include "train/run_config.h"

namespace mt {
namespace {

using ::testing::HasSubstr;

// One file type: `file(line)` is a valid file with `line` ("key = value")
// placed at line `line_no`, in the table of `int_key` (an integer with a range).
struct FileCase {
  const char* name;
  std::function<std::string(const std::string& line)> file;
  int line_no;
  std::function<Status(const std::string& text, const std::vector<std::string>& sets)> load;
  std::string int_key;
  std::string bad_range;  // a value of int_key outside its range
};

std::vector<FileCase> cases() {
  return {
      {"run", [](const std::string& l) { return "[train]\n" + l + "\n"; }, 2,
       [](const std::string& t, const std::vector<std::string>& s) { return parse_run_config(t, "f.toml", s).status(); },
       "train.steps", "0"},
      {"data", [](const std::string& l) { return "[[input]]\npath = \"x.txt\"\n[tokenizer]\n" + l + "\n"; }, 4,
       [](const std::string& t, const std::vector<std::string>& s) {
         return parse_data_build_config(t, "f.toml", s).status();
       },
       "tokenizer.vocab_size", "3"},
      {"mixture", [](const std::string& l) { return l + "\ntotal_tokens = 100\n"; }, 1,
       [](const std::string& t, const std::vector<std::string>& s) { return parse_mixture(t, "f.toml", s).status(); },
       "seed", "-1"},
      {"cluster", [](const std::string& l) { return "[gpu]\ntype = \"H100\"\n[topology]\n" + l + "\nracks = 2\n"; }, 4,
       [](const std::string& t, const std::vector<std::string>& s) { return plan::parse_cluster(t, "f.toml", s).status(); },
       "topology.spare_racks", "-1"},
      {"layout", [](const std::string& l) { return "[batch]\nglobal_batch = 8\n[parallel]\n" + l + "\n"; }, 4,
       [](const std::string& t, const std::vector<std::string>& s) { return plan::parse_layout(t, "f.toml", s).status(); },
       "parallel.zero_stage", "7"},
  };
}

std::string last_part(const std::string& dotted) { return dotted.substr(dotted.rfind('.') + 1); }

TEST(ConfigSchema, EveryFileTypeAcceptsItsMinimalFile) {
  for (const FileCase& c : cases()) {
    const Status s = c.load(c.file("# nothing"), {});
    EXPECT_TRUE(s.is_ok()) << c.name << ": " << s.message();
  }
}

TEST(ConfigSchema, EveryFileTypeGivesTheSameErrorShapes) {
  for (const FileCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::string at = "f.toml:" + std::to_string(c.line_no) + ": ";
    const std::string key = last_part(c.int_key);
    // Unknown key, with a suggestion for a near miss.
    const std::string near = c.int_key + "x";
    Status s = c.load(c.file(key + "x = 1"), {});
    ASSERT_FALSE(s.is_ok());
    EXPECT_THAT(s.message(), HasSubstr(at + near + ": unknown key (did you mean '" + c.int_key + "'?)"));
    // Wrong type.
    s = c.load(c.file(key + " = \"many\""), {});
    ASSERT_FALSE(s.is_ok());
    EXPECT_THAT(s.message(), HasSubstr(at + c.int_key + ": expected integer"));
    EXPECT_THAT(s.message(), HasSubstr(", got \"many\""));
    // Out of range: the same shape, with the range in T.
    s = c.load(c.file(key + " = " + c.bad_range), {});
    ASSERT_FALSE(s.is_ok());
    EXPECT_THAT(s.message(), HasSubstr(at + c.int_key + ": expected integer "));
    EXPECT_THAT(s.message(), HasSubstr(", got " + c.bad_range));
    // The same through --set name the override.
    s = c.load(c.file("# nothing"), {c.int_key + "=" + c.bad_range});
    ASSERT_FALSE(s.is_ok());
    EXPECT_THAT(s.message(), HasSubstr("f.toml: --set " + c.int_key + "=" + c.bad_range + ": " + c.int_key + ": expected integer"));
    s = c.load(c.file("# nothing"), {near + "=1"});
    ASSERT_FALSE(s.is_ok());
    EXPECT_THAT(s.message(), HasSubstr("--set " + near + "=1: " + near + ": unknown key"));
  }
}

TEST(ConfigSchema, SetReachesDataBuildMixtureAndPlannerFiles) {
  auto build = parse_data_build_config("[[input]]\npath = \"a.txt\"\n[[input]]\npath = \"b.txt\"\n", "/d/f.toml",
                                       {"input[1].path=c.txt", "tokenizer.vocab_size=4096", "input[0].kind=jsonl"});
  ASSERT_TRUE(build.is_ok()) << build.status().message();
  EXPECT_EQ(build->inputs[1].path, "/d/c.txt");
  EXPECT_EQ(build->inputs[0].kind, InputKind::kJsonl);
  EXPECT_EQ(build->tokenizer.vocab_size, 4096);
  EXPECT_THAT(parse_data_build_config("[[input]]\npath = \"a\"\n", "f.toml", {"input[3].path=x"}).status().message(),
              HasSubstr("f.toml: --set input[3].path=x: there is no [[input]] table 3"));

  auto mx = parse_mixture("total_tokens = 100\n[weights]\n\"a/*\" = 1\n", "m.toml",
                          {"scale=1/360", "weights.\"b/*\"=2", "total_tokens=3600"});
  ASSERT_TRUE(mx.is_ok()) << mx.status().message();
  EXPECT_EQ(mx->scale_num, 1);
  EXPECT_EQ(mx->scale_den, 360);
  EXPECT_EQ(mx->total_tokens, 3600);
  ASSERT_EQ(mx->weights.size(), 2u);
  EXPECT_EQ(mx->weights[1].first, "b/*");
  EXPECT_EQ(mx->weights[1].second, 2.0);
  EXPECT_THAT(parse_mixture("total_tokens = 100\n", "m.toml", {"weights.\"a/*\"=-1"}).status().message(),
              HasSubstr("m.toml: --set weights.\"a/*\"=-1: weights.\"a/*\": expected number >= 0, got -1"));

  auto cl = plan::parse_cluster("[gpu]\ntype = \"H100\"\n[topology]\nracks = 2\n", "c.toml",
                                {"gpu.type=H200", "topology.racks=4"});
  ASSERT_TRUE(cl.is_ok()) << cl.status().message();
  EXPECT_EQ(cl->device.type, "H200");
  EXPECT_EQ(cl->device.hbm_gib, 141.0);  // the overridden type's preset supplies the defaults
  EXPECT_EQ(cl->racks, 4);
  auto lay = plan::parse_layout("[batch]\nglobal_batch = 8\n", "l.toml", {"parallel.pp_schedule=dualpipe"});
  ASSERT_TRUE(lay.is_ok()) << lay.status().message();
  EXPECT_EQ(lay->schedule, plan::PipeSchedule::kDualPipe);
}

TEST(ConfigSchema, CrossFieldErrorsNameTheLineOrOverride) {
  // model.top_k > n_experts is a cross-field check: it names where top_k came from.
  EXPECT_THAT(parse_run_config("[model]\nn_experts = 4\n\ntop_k = 5\n", "r.toml", {}).status().message(),
              HasSubstr("r.toml:4: model.top_k: must be <= model.n_experts = 4"));
  EXPECT_THAT(parse_run_config("[model]\nn_experts = 4\n", "r.toml", {"model.top_k=6"}).status().message(),
              HasSubstr("r.toml: --set model.top_k=6: model.top_k: must be <= model.n_experts = 4"));
  EXPECT_THAT(plan::parse_layout("[batch]\nglobal_batch = 8\n[parallel]\nvirtual_stages = 2\n", "l.toml", {})
                  .status()
                  .message(),
              HasSubstr("l.toml:4: parallel.virtual_stages: 2 needs parallel.pp_schedule = \"interleaved\""));
}

// A schema of every kind of key, written back and read again.
struct Element {
  std::string name = "e";
  int64_t size = 1;
};
struct Everything {
  int64_t i = 3;
  uint64_t u = 4;
  double f = 0.5;
  bool b = false;
  std::string s = "x";
  std::vector<std::string> list;
  ScheduleKind kind = ScheduleKind::kWsd;
  std::vector<std::pair<std::string, double>> map;
  std::vector<Element> elems;
};

void declare(ConfigSchema& sc, Everything& e) {
  sc.add("top", &e.i, "an integer").range(0, 10);
  sc.add("a.u", &e.u, "unsigned");
  sc.add("a.f", &e.f, "float").above(0).below(1);
  sc.add("a.b", &e.b, "bool");
  sc.add("b.s", &e.s, "string");
  sc.add("b.list", &e.list, "list");
  sc.add_enum("b.kind", &e.kind, {"wsd", "cosine", "constant"}, "enum");
  sc.add_map("weights", &e.map, "map").min(0);
  sc.add_table_array<Element>(
      "elem", &e.elems,
      [](ConfigSchema& s2, Element& el) {
        s2.add("name", &el.name, "name").required();
        s2.add("size", &el.size, "size").min(1);
      },
      "elements");
}

TEST(ConfigSchema, CanonicalTomlRoundTripsEveryKind) {
  Everything e;
  ConfigSchema s("test file");
  declare(s, e);
  ConfigOrigins o;
  const std::string text =
      "top = 7\n[a]\nu = 9\nf = 0.25\nb = true\n[b]\ns = \"q \\\"x\\\"\"\nlist = [\"1\", \"2\"]\nkind = \"cosine\"\n"
      "[weights]\n\"t0/*\" = 1.5\nplain = 2\n[[elem]]\nname = \"one\"\n[[elem]]\nname = \"two\"\nsize = 3\n";
  ASSERT_TRUE(s.load(text, "t.toml", {}, o).is_ok()) << s.load(text, "t.toml", {}, o).message();
  EXPECT_EQ(e.i, 7);
  EXPECT_EQ(e.u, 9u);
  EXPECT_EQ(e.s, "q \"x\"");
  EXPECT_EQ(e.kind, ScheduleKind::kCosine);
  ASSERT_EQ(e.map.size(), 2u);
  EXPECT_EQ(e.map[0], (std::pair<std::string, double>{"t0/*", 1.5}));
  ASSERT_EQ(e.elems.size(), 2u);
  EXPECT_EQ(e.elems[1].size, 3);
  EXPECT_EQ(o.at("elem[1].size"), "t.toml:17");
  EXPECT_EQ(o.at("a.f"), "t.toml:4");
  EXPECT_FALSE(o.was_set("nothing"));
  EXPECT_EQ(o.first_set_under("a."), std::optional<std::string>("a.b"));  // key order: b, f, u
  EXPECT_EQ(o.first_set_under("elem["), std::optional<std::string>("elem[0].name"));
  EXPECT_EQ(o.first_set_under("c."), std::nullopt);
  EXPECT_EQ(o.first_set_under("to"), std::optional<std::string>("top"));
  const std::string canon = s.to_toml();
  Everything e2;
  ConfigSchema s2("test file");
  declare(s2, e2);
  ConfigOrigins o2;
  ASSERT_TRUE(s2.load(canon, "c.toml", {}, o2).is_ok()) << canon;
  EXPECT_EQ(s2.to_toml(), canon);  // a fixed point
  EXPECT_EQ(e2.elems[0].name, "one");
  EXPECT_EQ(e2.map[1].first, "plain");
}

TEST(ConfigSchema, RequiredKeysInsideTableArrays) {
  Everything e;
  ConfigSchema s("test file");
  declare(s, e);
  ConfigOrigins o;
  Status st = s.load("[[elem]]\nsize = 2\n", "t.toml", {}, o);
  ASSERT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("t.toml: elem[0].name: required key missing"));
  st = s.load("[[elem]]\nname = \"a\"\nsize = 0\n", "t.toml", {}, o);
  EXPECT_THAT(st.message(), HasSubstr("t.toml:3: elem[0].size: expected integer >= 1, got 0"));
}

TEST(ConfigSchema, NonFiniteAndWrongShapesAreRefused) {
  Everything e;
  ConfigSchema s("test file");
  declare(s, e);
  ConfigOrigins o;
  EXPECT_THAT(s.load("[a]\nf = nan\n", "t.toml", {}, o).message(), HasSubstr("t.toml:2: a.f: expected float in (0, 1), got nan"));
  EXPECT_THAT(s.load("a = 1\n", "t.toml", {}, o).message(), HasSubstr("t.toml:1: a: expected a table, got 1"));
  EXPECT_THAT(s.load("[b]\nkind = \"linear\"\n", "t.toml", {}, o).message(),
              HasSubstr("b.kind: expected one of \"wsd\", \"cosine\", \"constant\", got \"linear\""));
  EXPECT_THAT(s.load("elem = 3\n", "t.toml", {}, o).message(), HasSubstr("elem: expected array of tables, got 3"));
  EXPECT_THAT(s.load("", "t.toml", {"a.u=-1"}, o).message(), HasSubstr("a.u: expected integer >= 0, got -1"));
  EXPECT_THAT(s.load("", "t.toml", {"a.f"}, o).message(), HasSubstr("t.toml: --set a.f: expected key=value"));
}

TEST(ConfigSchema, ReferenceListsEveryKeyWithDefaultsAndRanges) {
  Everything e;
  ConfigSchema s("test file");
  declare(s, e);
  const std::string md = s.reference_markdown();
  EXPECT_THAT(md, HasSubstr("| `top` | integer | `3` | in [0, 10] |"));
  EXPECT_THAT(md, HasSubstr("| `a.f` | float | `0.5` | in (0, 1) |"));
  EXPECT_THAT(md, HasSubstr("| `elem[].name` | string | required |"));
  EXPECT_THAT(md, HasSubstr("| `b.kind` | one of \"wsd\", \"cosine\", \"constant\" | `\"wsd\"` |"));
}

}  // namespace
}  // namespace mt

namespace mt {
namespace {

TEST(ConfigSchema, NumberListsCheckEveryElementAndRoundTrip) {
  std::vector<double> v;
  ConfigSchema s("test file");
  s.add("a.fractions", &v, "fractions").above(0).below(1);
  ConfigOrigins o;
  ASSERT_TRUE(s.load("[a]\nfractions = [0.25, 0.5]\n", "f.toml", {}, o));
  EXPECT_EQ(v, (std::vector<double>{0.25, 0.5}));
  EXPECT_THAT(s.to_toml(), ::testing::HasSubstr("fractions = [0.25, 0.5]"));
  Status bad = s.load("[a]\nfractions = [0.5, 1.5]\n", "f.toml", {}, o);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.message(), ::testing::HasSubstr("f.toml:2: a.fractions: expected array of numbers in (0, 1), got"));
  EXPECT_FALSE(s.load("[a]\nfractions = [\"x\"]\n", "f.toml", {}, o));
  ASSERT_TRUE(s.load("[a]\n", "f.toml", {"a.fractions=[0.1]"}, o));
  EXPECT_EQ(v, (std::vector<double>{0.1}));
}

}  // namespace
}  // namespace mt
