// train_eval_targets_config_test.cpp — the [eval] table of ladder and mixture-search
// files (src/train/post_eval.h) and the names of mixture-search targets
// (src/mix/runner/mix_config.h): task files and text sets resolve against
// the file and are read (or found) up front, and every bad name or value is an error naming the file,
// its line and the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ladder/runner/ladder_run.h"
#include "mix/runner/mix_config.h"
#include "support/data_fixtures.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
using testdata::TempDir;
using testdata::write_file;

const char* kTask = "{\"context\": \"a\", \"choices\": [\" b\", \" c\"], \"answer\": 0}\n";
// A generative task (train/gen_tasks.h): exact match, so acc and no acc_norm.
const char* kGenTask =
    "{\"id\": \"x\", \"family\": \"passkey\", \"prompt\": \"p\", \"answer\": \" 1\", \"depth\": 0, \"tokens\": 9}\n";

std::string ladder(const TempDir& d, const std::string& eval) {
  write_file(d / "base.toml", "");
  write_file(d / "ladder.toml", "[ladder]\nbase = \"base.toml\"\n[[rung]]\nname = \"r1\"\nd_model = 32\nn_layers = 1\n" + eval);
  return d / "ladder.toml";
}

std::string search(const TempDir& d, const std::string& rest) {
  write_file(d / "search.toml", "[search]\nbase = \"base.toml\"\nmixture = \"hero.toml\"\n" + rest);
  return d / "search.toml";
}

TEST(EvalTargetsConfig, LadderTasksResolveAgainstTheFile) {
  TempDir d;
  write_file(d / "arc.jsonl", kTask);
  write_file(d / "more.jsonl", kTask);
  auto c = load_ladder_config(ladder(d, "[eval]\ntasks = [\"arc.jsonl\", \"more.jsonl\"]\nmetric = \"acc_norm\"\n"), {});
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_THAT(c->eval.tasks, ::testing::ElementsAre(d / "arc.jsonl", d / "more.jsonl"));
  EXPECT_THAT(c->eval.names, ::testing::ElementsAre("arc", "more"));
  EXPECT_EQ(c->eval.metric, "acc_norm");
  EXPECT_TRUE(c->eval.enabled());
  auto none = load_ladder_config(ladder(d, ""), {});
  ASSERT_TRUE(none) << none.status().message();
  EXPECT_FALSE(none->eval.enabled());
  EXPECT_EQ(none->eval.metric, "acc");  // the default
  auto one = load_ladder_config(ladder(d, "[eval]\ntasks = \"arc.jsonl\"\n"), {});  // one string is a list of one
  ASSERT_TRUE(one) << one.status().message();
  EXPECT_THAT(one->eval.names, ::testing::ElementsAre("arc"));
}

TEST(EvalTargetsConfig, LadderErrorsNameFileLineAndKey) {
  TempDir d;
  write_file(d / "arc.jsonl", kTask);
  write_file(d / "bad.jsonl", std::string(kTask) + "{\"context\": \"a\", \"choices\": [\"x\"], \"answer\": 0}\n");
  write_file(d / "sub/arc.jsonl", kTask);
  struct Case {
    std::string eval, want;
  };
  for (const Case& cs : {
           Case{"[eval]\ntasks = [\"arc.jsonl\"]\nmetric = \"accuracy\"\n", "ladder.toml:9: eval.metric"},
           Case{"[eval]\ntasks = [\"missing.jsonl\"]\n", "ladder.toml:8: eval.tasks: "},
           Case{"[eval]\ntasks = [\"bad.jsonl\"]\n", "ladder.toml:8: eval.tasks: " + d / "bad.jsonl:2: \"choices\""},
           Case{"[eval]\ntasks = [\"arc.jsonl\", \"sub/arc.jsonl\"]\n",
                "ladder.toml:8: eval.tasks: two task files are named \"arc\""},
           Case{"[eval]\ntask = [\"arc.jsonl\"]\n", "ladder.toml:8: eval.task: unknown key"},
       }) {
    auto c = load_ladder_config(ladder(d, cs.eval), {});
    ASSERT_FALSE(c) << cs.eval;
    EXPECT_THAT(c.status().message(), HasSubstr(cs.want)) << cs.eval;
  }
}

TEST(EvalTargetsConfig, GenerativeTasksHaveAccOnly) {
  TempDir d;
  write_file(d / "arc.jsonl", kTask);
  write_file(d / "pk.jsonl", kGenTask);
  auto c = load_ladder_config(ladder(d, "[eval]\ntasks = [\"arc.jsonl\", \"pk.jsonl\"]\n"), {});
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_THAT(c->eval.names, ::testing::ElementsAre("arc", "pk"));
  EXPECT_THAT(c->eval.generative, ::testing::ElementsAre("pk"));
  auto norm =
      load_ladder_config(ladder(d, "[eval]\ntasks = [\"arc.jsonl\", \"pk.jsonl\"]\nmetric = \"acc_norm\"\n"), {});
  ASSERT_FALSE(norm);
  EXPECT_THAT(norm.status().message(), HasSubstr("ladder.toml:9: eval.metric: \"acc_norm\" for " + d / "pk.jsonl" +
                                                 ", a generative task: exact match has acc only"));
  auto acc = load_mix_search_config(search(d, "[eval]\ntasks = [\"pk.jsonl\"]\n[target]\n\"acc:pk\" = 1\n"), {});
  ASSERT_TRUE(acc) << acc.status().message();
  auto mix_norm =
      load_mix_search_config(search(d, "[eval]\ntasks = [\"pk.jsonl\"]\n[target]\n\"acc_norm:pk\" = 1\n"), {});
  ASSERT_FALSE(mix_norm);
  EXPECT_THAT(mix_norm.status().message(),
              HasSubstr("search.toml:7: target.\"acc_norm:pk\": task \"pk\" is generative: exact match has acc only"));
}

TEST(EvalTargetsConfig, TargetNames) {
  using K = TargetName::Kind;
  struct Case {
    std::string name;
    K kind;
    std::string what;
  };
  for (const Case& cs : {Case{"docs/*", K::kLoss, "docs/*"}, Case{"loss:docs/*", K::kLoss, "docs/*"},
                         Case{"bpb:*", K::kBitsPerByte, "*"}, Case{"acc:arc", K::kAcc, "arc"},
                         Case{"acc_norm:arc", K::kAccNorm, "arc"}, Case{"text:wiki", K::kTextSet, "wiki"}}) {
    auto t = parse_target_name(cs.name);
    ASSERT_TRUE(t) << cs.name << ": " << t.status().message();
    EXPECT_EQ(t->kind, cs.kind) << cs.name;
    EXPECT_EQ(t->what, cs.what) << cs.name;
    EXPECT_EQ(std::string(target_prefix(cs.kind)) + ":" + cs.what,
              cs.name.find(':') == std::string::npos ? "loss:" + cs.name : cs.name);
  }
  EXPECT_THAT(parse_target_name("err:arc").status().message(), HasSubstr("unknown target kind \"err\""));
  EXPECT_THAT(parse_target_name("bpb:").status().message(), HasSubstr("names no buckets"));
  EXPECT_THAT(parse_target_name("acc:").status().message(), HasSubstr("names no task"));
  EXPECT_THAT(parse_target_name("text:").status().message(), HasSubstr("names no text set"));
}

TEST(EvalTargetsConfig, MixTargetsAndTasks) {
  TempDir d;
  write_file(d / "arc.jsonl", kTask);
  write_file(d / "wiki.jsonl", "{\"text\": \"held out\"}\n");
  write_file(d / "sub/wiki.txt", "held out");
  write_file(d / "bad.jsonl", "{\"text\": \"fine\"}\n{\"text\": 3}\n");
  auto c = load_mix_search_config(
      search(d, "[eval]\ntasks = [\"arc.jsonl\"]\n[target]\n\"loss:*\" = 1\n\"bpb:a/*\" = 1\n\"acc_norm:arc\" = 2\n"), {});
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_THAT(c->eval.names, ::testing::ElementsAre("arc"));
  ASSERT_EQ(c->target.size(), 3u);
  EXPECT_EQ(c->target[2].first, "acc_norm:arc");
  // A text set that is not a bucket: resolved against the file, named by its file name.
  auto sets =
      load_mix_search_config(search(d, "[eval]\ntext_sets = \"wiki.jsonl\"\n[target]\n\"text:wiki\" = 1\n"), {});
  ASSERT_TRUE(sets) << sets.status().message();
  EXPECT_THAT(sets->eval.text_sets, ::testing::ElementsAre(d / "wiki.jsonl"));
  EXPECT_THAT(sets->eval.text_set_names, ::testing::ElementsAre("wiki"));
  EXPECT_TRUE(sets->eval.enabled());
  struct Case {
    std::string rest, want;
  };
  for (const Case& cs : {
           Case{"[target]\n\"acc:arc\" = 1\n",
                "search.toml:5: target.\"acc:arc\": names task \"arc\", which is not "
                "among eval.tasks (none)"},
           Case{"[eval]\ntasks = [\"arc.jsonl\"]\n[target]\n\"a/*\" = 1\n\"acc:mmlu\" = 1\n",
                "search.toml:8: target.\"acc:mmlu\": names task \"mmlu\", which is not among eval.tasks (arc)"},
           Case{"[target]\n\"a/*\" = 1\n\"bits:a/*\" = 1\n", "search.toml:6: target.\"bits:a/*\": unknown target kind"},
           Case{"[target]\n\"bpb:\" = 1\n", "search.toml:5: target.\"bpb:\": \"bpb:\" names no buckets"},
           Case{"[eval]\nmetric = \"acc\"\n", "search.toml:5: eval.metric: unknown key"},
           Case{"[eval]\ntext_sets = [\"wiki.jsonl\"]\n[target]\n\"text:web\" = 1\n",
                "search.toml:7: target.\"text:web\": names text set \"web\", which is not among eval.text_sets (wiki)"},
           Case{"[target]\n\"text:wiki\" = 1\n", "names text set \"wiki\", which is not among eval.text_sets (none)"},
           Case{"[eval]\ntext_sets = [\"bad.jsonl\"]\n", "search.toml:5: eval.text_sets: " + (d / "bad.jsonl:2")},
           Case{"[eval]\ntext_sets = [\"gone.jsonl\"]\n",
                "search.toml:5: eval.text_sets: " + (d / "gone.jsonl") + ": no such file"},
           Case{"[eval]\ntext_sets = [\"wiki.jsonl\", \"sub/wiki.txt\"]\n",
                "search.toml:5: eval.text_sets: two text sets are named \"wiki\""},
       }) {
    auto bad = load_mix_search_config(search(d, cs.rest), {});
    ASSERT_FALSE(bad) << cs.rest;
    EXPECT_THAT(bad.status().message(), HasSubstr(cs.want)) << cs.rest;
  }
}

}  // namespace
}  // namespace mt
