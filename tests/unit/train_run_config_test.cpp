// train_run_config_test.cpp — strict TOML loading of RunConfig: defaults, the
// to_toml round trip, every error class (message names file and key),
// --set overrides, and that every preset under configs/ loads cleanly.
#include "train/run_config.h"
#include "kernels/cpu/simd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

namespace mt {
namespace {

using ::testing::HasSubstr;

// Field-by-field equality, written independently of run_config.cpp's table.
void expect_same(const RunConfig& a, const RunConfig& b) {
#define MT_EQ(f) EXPECT_EQ(a.f, b.f) << #f
  MT_EQ(model.vocab_size); MT_EQ(model.d_model); MT_EQ(model.n_layers); MT_EQ(model.n_heads);
  MT_EQ(model.n_kv_heads); MT_EQ(model.n_kv_heads_local); MT_EQ(model.layer_pattern);
  MT_EQ(model.window); MT_EQ(model.tied_embeddings); MT_EQ(model.qk_norm);
  MT_EQ(model.rope_theta); MT_EQ(model.norm_eps); MT_EQ(model.init_std); MT_EQ(model.d_ff);
  MT_EQ(model.n_experts); MT_EQ(model.top_k); MT_EQ(model.d_expert);
  MT_EQ(model.n_shared_experts); MT_EQ(model.n_dense_layers); MT_EQ(model.router_score);
  MT_EQ(model.router_renormalize);
  MT_EQ(model.capacity_factor);
  MT_EQ(model.routing_group);
  MT_EQ(model.drop_policy);
  MT_EQ(model.aux_loss_coef); MT_EQ(model.z_loss_coef); MT_EQ(model.aux_free_bias);
  MT_EQ(model.bias_update_rate); MT_EQ(model.d_latent); MT_EQ(model.moe_out_norm);
  MT_EQ(model.attention); MT_EQ(model.q_lora_rank); MT_EQ(model.kv_lora_rank); MT_EQ(model.qk_nope_head_dim);
  MT_EQ(model.qk_rope_head_dim); MT_EQ(model.v_head_dim);
  MT_EQ(model.delta_heads); MT_EQ(model.delta_key_dim); MT_EQ(model.delta_value_dim); MT_EQ(model.delta_chunk);
  MT_EQ(train.steps); MT_EQ(train.batch_size); MT_EQ(train.seq_len); MT_EQ(train.grad_accum);
  MT_EQ(train.schedule.lr); MT_EQ(train.schedule.min_lr_ratio); MT_EQ(train.schedule.warmup_steps); MT_EQ(train.schedule.kind);
  MT_EQ(train.schedule.decay_frac); MT_EQ(train.optim.weight_decay); MT_EQ(train.optim.decay_embeddings);
  MT_EQ(train.optim.beta1); MT_EQ(train.optim.beta2); MT_EQ(train.optim.eps); MT_EQ(train.optim.grad_clip);
  MT_EQ(train.precision); MT_EQ(train.attention_kernel); MT_EQ(train.seed); MT_EQ(train.threads);
  MT_EQ(train.checkpoint_every); MT_EQ(train.keep_checkpoints); MT_EQ(train.log_every);
  MT_EQ(data.plain.path);
  MT_EQ(data.plain.format);
  MT_EQ(data.plain.extensions);
  MT_EQ(data.plain.max_bytes);
  MT_EQ(data.plain.eval_frac);
  MT_EQ(data.dataset);
  MT_EQ(data.mixture);
  MT_EQ(train.eval_every); MT_EQ(train.eval_batches);
  MT_EQ(phases.size());
  for (size_t i = 0; i < a.phases.size() && i < b.phases.size(); ++i) {
    MT_EQ(phases[i].name);
    MT_EQ(phases[i].steps);
    MT_EQ(phases[i].tokens);
    MT_EQ(phases[i].global_batch);
    MT_EQ(phases[i].ramp_from);
    MT_EQ(phases[i].mixture);
    MT_EQ(phases[i].lr);
    MT_EQ(phases[i].aux_loss_coef);
    MT_EQ(phases[i].z_loss_coef);
    MT_EQ(phases[i].mtp_loss_weight);
    MT_EQ(phases[i].seq_len);
    MT_EQ(phases[i].rope_theta);
  }
#undef MT_EQ
}

const char* kSrc = "configs/x.toml";

// Parses `text` expecting failure; returns the message.
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  Result<RunConfig> r = parse_run_config(text, kSrc, overrides);
  EXPECT_FALSE(r.is_ok()) << "expected an error for:\n" << text;
  return r.is_ok() ? std::string() : r.status().message();
}

TEST(RunConfig, EmptyTextGivesDefaults) {
  Result<RunConfig> r = parse_run_config("", "<embedded>", {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  RunConfig want;
  want.source = "<embedded>";
  expect_same(*r, want);
  EXPECT_EQ(r->source, "<embedded>");
}

TEST(RunConfig, MissingKeysKeepDefaults) {
  Result<RunConfig> r = parse_run_config("[model]\nd_model = 256\n[train]\nlr = 1e-3\n", kSrc, {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->model.d_model, 256);
  EXPECT_EQ(r->train.schedule.lr, 1e-3);
  EXPECT_EQ(r->model.vocab_size, ModelConfig().vocab_size);
  EXPECT_EQ(r->train.steps, TrainConfig().steps);
  EXPECT_EQ(r->data.plain.format, "text");
}

RunConfig full_config() {
  RunConfig c;
  c.source = "full.toml";
  ModelConfig& m = c.model;
  m.vocab_size = 1000; m.d_model = 96; m.n_layers = 5; m.n_heads = 6; m.n_kv_heads = 3;
  m.n_kv_heads_local = 2; m.layer_pattern = "LLG"; m.window = 33; m.tied_embeddings = false;
  m.qk_norm = true; m.rope_theta = 500000.0; m.norm_eps = 1.0 / 3.0 * 1e-6; m.init_std = 0.1 + 0.2;
  m.d_ff = 333; m.n_experts = 7; m.top_k = 3; m.d_expert = 77; m.n_shared_experts = 2;
  m.n_dense_layers = 1; m.router_score = RouterScore::kSigmoid; m.router_renormalize = false;
  m.capacity_factor = 1.2345678901234567; m.routing_group = 128; m.aux_loss_coef = 0.0;
  m.drop_policy = DropPolicy::kPosition;
  m.z_loss_coef = 2.5e-4; m.aux_free_bias = true; m.bias_update_rate = 1e-300;
  m.d_latent = 48; m.moe_out_norm = true;
  m.delta_heads = 3; m.delta_key_dim = 24; m.delta_value_dim = 40; m.delta_chunk = 17;
  TrainConfig& t = c.train;
  t.steps = 12345; t.batch_size = 4; t.seq_len = 64; t.grad_accum = 4; t.schedule.lr = 3e-4;
  t.schedule.min_lr_ratio = 0.0; t.schedule.warmup_steps = 0; t.schedule.kind = ScheduleKind::kCosine; t.schedule.decay_frac = 1.0;
  t.optim.weight_decay = 0.0; t.optim.decay_embeddings = true; t.optim.beta1 = 0.8; t.optim.beta2 = 0.999;
  t.optim.eps = 1e-12; t.optim.grad_clip = 0.0; t.precision = MatmulPrecision::kBf16;
  t.seed = uint64_t(std::numeric_limits<int64_t>::max()); t.threads = 7;
  t.checkpoint_every = 50; t.keep_checkpoints = 1; t.log_every = 10;
  DataConfig& d = c.data;
  d.plain.path = "/tmp/dir with \"quotes\"\\and\ttabs/é";
  d.plain.format = "tokens";
  d.plain.extensions = {".txt", ".md", ""};
  d.plain.max_bytes = 0;
  d.plain.eval_frac = 0.05;
  // Phases: a ramp in steps, then one that takes the rest of train.steps at a higher RoPE base.
  PhaseConfig ramp;
  ramp.name = "ramp \"one\"";
  ramp.steps = 345;
  ramp.ramp_from = 4;
  ramp.global_batch = 32;
  ramp.lr = LrSegment::kWarmup;
  ramp.aux_loss_coef = 0.125;
  PhaseConfig rest;
  rest.rope_theta = 1e6 / 3.0;
  rest.z_loss_coef = 0.0;
  rest.mtp_loss_weight = 0.5;
  rest.lr = LrSegment::kDecay;
  c.phases = {ramp, rest};
  return c;
}

TEST(RunConfig, FullConfigRoundTripsThroughToml) {
  RunConfig c = full_config();
  std::string text = to_toml(c);
  Result<RunConfig> r = parse_run_config(text, "full.toml", {});
  ASSERT_TRUE(r.is_ok()) << r.status().message() << "\n" << text;
  expect_same(*r, c);
  EXPECT_EQ(to_toml(*r), text);  // canonical: a fixed point
}

TEST(RunConfig, ToTomlWritesEveryTableAndKey) {
  std::string text = to_toml(RunConfig{});
  for (const char* s : {"[model]", "[train]", "[data]", "vocab_size = 4096", "rope_theta = 10000.0",
                        "router_score = \"softmax\"", "schedule = \"wsd\"", "precision = \"fp32\"",
                        "extensions = []", "eps = 1e-08", "seed = 1234"})
    EXPECT_THAT(text, HasSubstr(s));
}

TEST(RunConfig, DefaultsRoundTrip) {
  RunConfig c;
  Result<RunConfig> r = parse_run_config(to_toml(c), "", {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  expect_same(*r, c);
}

TEST(RunConfig, IntegerAcceptedForFloatKey) {
  Result<RunConfig> r = parse_run_config("[model]\nrope_theta = 500000\n[train]\nlr = 1\n", kSrc, {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->model.rope_theta, 500000.0);
  EXPECT_EQ(r->train.schedule.lr, 1.0);
}

TEST(RunConfig, UnknownKeyNamesFileAndKey) {
  std::string msg = error_of("[model]\nd_modle = 128\n");
  EXPECT_THAT(msg, HasSubstr("configs/x.toml:2: model.d_modle: unknown key"));
  EXPECT_THAT(msg, HasSubstr("did you mean 'model.d_model'"));
  // A sub-table is an unknown key of its section; a dotted key makes a table.
  EXPECT_THAT(error_of("[train]\nlr.peak = 3\n"), HasSubstr("train.lr: expected float > 0, got a table"));
  EXPECT_THAT(error_of("[train.optim]\nlr = 3\n"), HasSubstr("configs/x.toml:1: train.optim: unknown table"));
}

TEST(RunConfig, UnknownTableOrRootKey) {
  std::string msg = error_of("[model]\nd_model = 128\n\n[optimizer]\nlr = 1\n");
  EXPECT_THAT(msg, HasSubstr("configs/x.toml:4: optimizer: unknown table"));
  EXPECT_THAT(error_of("steps = 10\n"), HasSubstr("configs/x.toml:1: steps: unknown key (did you mean 'train.steps'?)"));
  EXPECT_THAT(error_of("model = 3\n"), HasSubstr("configs/x.toml:1: model: expected a table, got 3"));
}

TEST(RunConfig, WrongTypeNamesLineAndKey) {
  EXPECT_THAT(error_of("\n[model]\nd_model = \"wide\"\n"),
              HasSubstr("configs/x.toml:3: model.d_model: expected integer in [2, 1048576], got \"wide\""));
  EXPECT_THAT(error_of("[train]\nsteps = 10.0\n"),
              HasSubstr("configs/x.toml:2: train.steps: expected integer in [1, 1099511627776], got 10.0"));
  EXPECT_THAT(error_of("[train]\nlr = \"fast\"\n"), HasSubstr("train.lr: expected float > 0, got \"fast\""));
  EXPECT_THAT(error_of("[model]\nqk_norm = 1\n"), HasSubstr("model.qk_norm: expected boolean, got 1"));
  EXPECT_THAT(error_of("[data]\nextensions = \".txt\"\n"),
              HasSubstr("data.extensions: expected array of strings, got \".txt\""));
  EXPECT_THAT(error_of("[data]\nextensions = [\".txt\", 3]\n"),
              HasSubstr("data.extensions: expected array of strings, got [\".txt\", 3]"));
  EXPECT_THAT(error_of("[data]\npath = 3\n"), HasSubstr("configs/x.toml:2: data.path: expected string"));
  EXPECT_THAT(error_of("[train]\nlr = inf\n"), HasSubstr("train.lr: expected float > 0, got inf"));
  EXPECT_THAT(error_of("[train]\nseed = -1\n"), HasSubstr("train.seed: expected integer >= 0, got -1"));
}

TEST(RunConfig, BadEnumString) {
  EXPECT_THAT(error_of("[train]\nprecision = \"fp16\"\n"),
              HasSubstr("configs/x.toml:2: train.precision: expected one of \"fp32\", \"bf16\", got \"fp16\""));
  EXPECT_THAT(error_of("[train]\nschedule = \"linear\"\n"), HasSubstr("train.schedule: expected one of"));
  EXPECT_THAT(error_of("[model]\nrouter_score = \"tanh\"\n"), HasSubstr("model.router_score"));
  EXPECT_THAT(error_of("[model]\nrouter_score = 1\n"), HasSubstr("model.router_score: expected one of"));
  EXPECT_THAT(error_of("[data]\nformat = \"json\"\n"), HasSubstr("configs/x.toml:2: data.format"));
}

TEST(RunConfig, OutOfRangeNamesKey) {
  struct Case { const char* text; const char* want; };
  const Case cases[] = {
      {"[train]\nsteps = 0\n", "configs/x.toml:2: train.steps: expected integer in [1, 1099511627776], got 0"},
      {"[train]\nbatch_size = 0\n", "train.batch_size: expected integer in [1, 16777216], got 0"},
      {"[train]\nseq_len = 1\n", "train.seq_len: expected integer in [2, 16777216], got 1"},
      {"[train]\ngrad_accum = 0\n", "train.grad_accum: expected integer in [1, 16777216], got 0"},
      {"[train]\nlr = 0\n", "configs/x.toml:2: train.lr: expected float > 0, got 0"},
      {"[train]\nlr = -1e-3\n", "train.lr: expected float > 0, got -0.001"},
      {"[train]\nmin_lr_ratio = 1.5\n", "train.min_lr_ratio"},
      {"[train]\nwarmup_steps = -1\n", "train.warmup_steps"},
      {"[train]\ndecay_frac = -0.1\n", "train.decay_frac"},
      {"[train]\nweight_decay = -0.1\n", "train.weight_decay"},
      {"[train]\nbeta1 = 1.0\n", "train.beta1"},
      {"[train]\nbeta2 = -0.5\n", "train.beta2"},
      {"[train]\neps = 0.0\n", "train.eps"},
      {"[train]\ngrad_clip = -1\n", "train.grad_clip"},
      {"[train]\nthreads = -2\n", "train.threads"},
      {"[train]\ncheckpoint_every = -1\n", "train.checkpoint_every"},
      {"[train]\nkeep_checkpoints = 0\n", "train.keep_checkpoints"},
      {"[train]\nlog_every = 0\n", "train.log_every"},
      {"[data]\nmax_bytes = -1\n", "data.max_bytes"},
      {"[data]\neval_frac = 1.0\n", "data.eval_frac"},
      {"[model]\nn_heads = 5\n", "configs/x.toml:2: model.n_heads: must divide model.d_model = 128"},
      {"[model]\nn_experts = 4\ntop_k = 5\n", "configs/x.toml:3: model.top_k: must be <= model.n_experts = 4"},
      // 3*64 = 192 tokens per step is not a multiple of a 128-token routing group.
      {"[model]\nn_experts = 4\nrouting_group = 128\n[train]\nbatch_size = 3\nseq_len = 64\n",
       "configs/x.toml:3: model.routing_group: group of 128 tokens must divide"},
      {"[model]\nvocab_size = 258\n", "model.vocab_size: must be >= 259 for data.format = \"text\""},
      {"[train]\nprecision = \"bf16\"\nattention_kernel = \"blocked\"\n",
       "configs/x.toml:3: train.attention_kernel: \"blocked\" is fp32 only"},
  };
  for (const Case& c : cases) EXPECT_THAT(error_of(c.text), HasSubstr(c.want)) << c.text;
}

TEST(RunConfig, SmallVocabAllowedForTokenData) {
  Result<RunConfig> r = parse_run_config("[model]\nvocab_size = 100\n[data]\nformat = \"tokens\"\n", kSrc, {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->model.vocab_size, 100);
}

TEST(RunConfig, SyntaxErrorHasFileLineColumn) {
  std::string msg = error_of("[model]\nd_model = = 3\n");
  EXPECT_THAT(msg, HasSubstr("configs/x.toml:2:"));
  EXPECT_THAT(msg, HasSubstr("TOML syntax error"));
  EXPECT_THAT(error_of("[model\n"), HasSubstr("configs/x.toml:1:"));
}

TEST(RunConfig, OverridesApplyAndTakePrecedence) {
  const char* text = "[model]\nlayer_pattern = \"G\"\n[train]\nlr = 1e-2\nsteps = 5\n";
  Result<RunConfig> r = parse_run_config(
      text, kSrc,
      {"train.lr=3e-4", "train.precision=bf16", "train.schedule=\"cosine\"", "model.layer_pattern=LLLG",
       "model.qk_norm=true", "data.extensions=[\".py\", \".md\"]", "data.path=/tmp/some dir/x",
       " train.steps = 7 ", "train.steps=9", "model.rope_theta=20000", "data.format=tokens"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->train.schedule.lr, 3e-4);
  EXPECT_EQ(r->train.precision, MatmulPrecision::kBf16);
  EXPECT_EQ(r->train.schedule.kind, ScheduleKind::kCosine);
  EXPECT_EQ(r->model.layer_pattern, "LLLG");
  EXPECT_TRUE(r->model.qk_norm);
  EXPECT_EQ(r->data.plain.extensions, (std::vector<std::string>{".py", ".md"}));
  EXPECT_EQ(r->data.plain.path, "/tmp/some dir/x");
  EXPECT_EQ(r->train.steps, 9);  // later override wins
  EXPECT_EQ(r->model.rope_theta, 20000.0);
  EXPECT_EQ(r->data.plain.format, "tokens");
}

TEST(RunConfig, OverrideErrors) {
  EXPECT_THAT(error_of("", {"model.xyz=3"}), HasSubstr("configs/x.toml: --set model.xyz=3: model.xyz: unknown key"));
  EXPECT_THAT(error_of("", {"optimizer.lr=3"}), HasSubstr("--set optimizer.lr=3: optimizer: unknown table"));
  EXPECT_THAT(error_of("", {"train.lr"}), HasSubstr("--set train.lr: expected key=value"));
  EXPECT_THAT(error_of("", {"lr=3e-4"}), HasSubstr("--set lr=3e-4: lr: unknown key (did you mean 'train.lr'?)"));
  EXPECT_THAT(error_of("", {".lr=1"}), HasSubstr("--set .lr=1: bad key: empty key"));
  EXPECT_THAT(error_of("", {"train.steps=many"}),
              HasSubstr("--set train.steps=many: train.steps: expected integer in [1, 1099511627776], got \"many\""));
  EXPECT_THAT(error_of("", {"train.steps=2.5"}), HasSubstr("train.steps: expected integer in [1, 1099511627776], got 2.5"));
  EXPECT_THAT(error_of("", {"train.precision=fp16"}), HasSubstr("train.precision: expected one of"));
  // Range errors point at the override that set the value, not the file.
  EXPECT_THAT(error_of("[train]\nlr = 1e-3\n", {"train.lr=0"}),
              HasSubstr("configs/x.toml: --set train.lr=0: train.lr: expected float > 0, got 0"));
}

TEST(RunConfig, LoadNamesUnreadableFile) {
  Result<RunConfig> r = load_run_config("/nonexistent/dir/cfg.toml", {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("/nonexistent/dir/cfg.toml"));
}

TEST(RunConfig, LoadReadsFileAndAppliesOverrides) {
  std::filesystem::path p = std::filesystem::temp_directory_path() / "mt_run_config_test.toml";
  {
    std::ofstream out(p);
    out << "[train]\nsteps = 42\n[model]\nd_mdl = 3\n";
  }
  Result<RunConfig> bad = load_run_config(p.string(), {});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(p.string() + ":4: model.d_mdl: unknown key"));
  {
    std::ofstream out(p);
    out << "[train]\nsteps = 42\n";
  }
  Result<RunConfig> r = load_run_config(p.string(), {"train.batch_size=2"});
  std::filesystem::remove(p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->train.steps, 42);
  EXPECT_EQ(r->train.batch_size, 2);
  EXPECT_EQ(r->source, p.string());
}

TEST(RunConfig, EveryPresetLoadsAndRoundTrips) {
  std::filesystem::path root = std::filesystem::path(MT_SOURCE_DIR) / "configs";
  int n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().extension() != ".toml") continue;
    // Cluster and layout files have the planner's own schemas (plan_config_test).
    const std::string dir = e.path().parent_path().filename().string();
    if (dir == "clusters" || dir == "layouts" || dir == "data" || dir == "ladder" || dir == "mix" || dir == "sweep" ||
        dir == "published" || dir == "arch")
      continue;
    ++n;
    Result<RunConfig> r = load_run_config(e.path().string(), {});
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    Result<RunConfig> again = parse_run_config(to_toml(*r), e.path().string(), {});
    ASSERT_TRUE(again.is_ok()) << again.status().message();
    expect_same(*again, *r);
  }
  EXPECT_GE(n, 5);
}

TEST(RunConfig, PresetValues) {
  std::string dir = std::string(MT_SOURCE_DIR) + "/configs/";
  Result<RunConfig> moe = load_run_config(dir + "bench/moe-512.toml", {});
  ASSERT_TRUE(moe.is_ok()) << moe.status().message();
  EXPECT_EQ(moe->model.n_experts, 16);
  EXPECT_EQ(moe->model.d_expert, 352);
  EXPECT_EQ(moe->model.layer_pattern, "LLLG");
  EXPECT_EQ(moe->model.capacity_factor, 1.25);
  EXPECT_EQ(moe->train.seq_len, 512);
  // moe-512-mla: moe-512 with MLA in place of GQA (configs/bench/moe-512-mla.toml says why these sizes).
  Result<RunConfig> mla = load_run_config(dir + "bench/moe-512-mla.toml", {});
  ASSERT_TRUE(mla.is_ok()) << mla.status().message();
  EXPECT_TRUE(mla->model.mla());
  EXPECT_EQ(mla->model.kv_lora_rank + mla->model.qk_rope_head_dim, 288);
  EXPECT_EQ(mla->model.q_lora_rank, 0);
  EXPECT_EQ(mla->model.n_experts, moe->model.n_experts);
  EXPECT_EQ(mla->model.d_expert, moe->model.d_expert);
  EXPECT_EQ(mla->model.layer_pattern, moe->model.layer_pattern);
  EXPECT_EQ(mla->train.seq_len, moe->train.seq_len);
  Result<RunConfig> dense = load_run_config(dir + "bench/dense-512.toml", {});
  ASSERT_TRUE(dense.is_ok()) << dense.status().message();
  EXPECT_EQ(dense->model.n_experts, 0);
  EXPECT_EQ(dense->model.d_ff, 1408);
  EXPECT_EQ(dense->model.n_kv_heads, 2);
  Result<RunConfig> quick = load_run_config(dir + "quickstart.toml", {});
  ASSERT_TRUE(quick.is_ok()) << quick.status().message();
  EXPECT_EQ(quick->model.vocab_size, 2048);
  EXPECT_EQ(quick->train.steps, 300);
  EXPECT_EQ(quick->train.precision, MatmulPrecision::kFp32);
  EXPECT_EQ(quick->data.dataset, "runs/quickstart-data");
  EXPECT_EQ(quick->data.mixture, "configs/data/quickstart-mixture.toml");
  Result<RunConfig> tiny = load_run_config(dir + "tiny-test.toml", {});
  ASSERT_TRUE(tiny.is_ok()) << tiny.status().message();
  EXPECT_EQ(tiny->data.plain.path, "");
  EXPECT_EQ(tiny->model.n_experts, 4);
  EXPECT_EQ(tiny->train.steps, 20);
}

// train.attention_kernel: fp32 steps run what the key asks (auto = the
// kernel measured faster for the build's ISA); bf16 steps always run the
// matmul-tiled kernel, and asking them for the blocked one is refused above.
TEST(RunConfig, AttentionKernelKeyResolvesByPrecisionAndIsa) {
  Result<RunConfig> r = parse_run_config("", kSrc, {"train.attention_kernel=matmul"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->train.attention_kernel, AttentionKernel::kMatmul);
  EXPECT_EQ(RunConfig().train.attention_kernel, AttentionKernel::kAuto);
  const MatmulPrecision fp32 = MatmulPrecision::kFp32, bf16 = MatmulPrecision::kBf16;
  EXPECT_EQ(resolve_attention_kernel(AttentionKernel::kBlocked, fp32), AttentionKernel::kBlocked);
  EXPECT_EQ(resolve_attention_kernel(AttentionKernel::kMatmul, fp32), AttentionKernel::kMatmul);
  EXPECT_EQ(resolve_attention_kernel(AttentionKernel::kAuto, fp32),
            simd::kLanes >= 16 ? AttentionKernel::kBlocked : AttentionKernel::kMatmul);
  for (AttentionKernel k : {AttentionKernel::kAuto, AttentionKernel::kBlocked, AttentionKernel::kMatmul}) {
    EXPECT_EQ(resolve_attention_kernel(k, bf16), AttentionKernel::kMatmul);
    EXPECT_STREQ(attention_kernel_name(k, bf16), "matmul-bf16");
  }
  EXPECT_STREQ(attention_kernel_name(AttentionKernel::kBlocked, fp32), "blocked-fp32");
  EXPECT_STREQ(attention_kernel_name(AttentionKernel::kMatmul, fp32), "matmul-fp32");
}

}  // namespace
}  // namespace mt
