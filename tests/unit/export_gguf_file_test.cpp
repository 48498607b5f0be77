// export_gguf_file_test.cpp — the GGUF container (src/export/gguf_file.h):
// metadata of every kind and tensors of every type read back as written
// (F32 exactly, F16 and BF16 as their round-to-nearest-even values, Q8_0 as
// a plain reference quantizes them); the bytes follow the specification
// (magic, version, counts, dimensions innermost first, 32-byte aligned
// data); and what the format cannot hold, or a damaged file, is refused by
// name.
#include "export/gguf_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/bf16.h"
#include "support/data_fixtures.h"

namespace mt {
namespace {

using testdata::read_file;
using testdata::TempDir;
using testdata::write_file;
using ::testing::HasSubstr;

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = scale * std::sin(0.37f * float(i) + 0.1f) * float(1 + i % 7);
  return v;
}

float half_rne(float x) { return float(static_cast<_Float16>(x)); }

// Q8_0 as the format defines it, written out plainly: d = amax / 127, q =
// round(x / d), stored d in fp16; the value read is q * fp16(d).
std::vector<float> q8_reference(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    const float d = amax / 127.0f;
    for (size_t i = 0; i < 32; ++i) {
      const float q = d == 0 ? 0.0f : std::round(x[b * 32 + i] / d);
      out[b * 32 + i] = q * half_rne(d);
    }
  }
  return out;
}

TEST(GgufFile, EveryKindAndTypeReadsBackAsWritten) {
  TempDir d;
  GgufFile f;
  f.metadata = {{"general.architecture", std::string("qwen2moe")},
                {"qwen2moe.block_count", uint32_t(3)},
                {"test.int", int32_t(-7)},
                {"test.big", uint64_t(1) << 40},
                {"test.eps", 1e-6f},
                {"test.flag", true},
                {"tokenizer.ggml.tokens", std::vector<std::string>{"<s>", "a", "\xe2\x82\xac"}},
                {"tokenizer.ggml.scores", std::vector<float>{0.0f, -1.5f, -2.25f}},
                {"tokenizer.ggml.token_type", std::vector<int32_t>{3, 1, 1}}};
  f.tensors = {{"a.f32", {3, 5}, GgmlType::kF32, ramp(15, 2.0f)},
               {"b.f16", {7}, GgmlType::kF16, ramp(7, 3.0f)},
               {"c.bf16", {2, 2, 3}, GgmlType::kBf16, ramp(12, 0.5f)},
               {"d.q8", {3, 64}, GgmlType::kQ8_0, ramp(192, 1.0f)}};
  f.tensors[3].data[40] = 0;  // a block with zeros in it
  ASSERT_TRUE(write_gguf(d / "m.gguf", f));
  auto r = read_gguf(d / "m.gguf");
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->metadata.size(), f.metadata.size());
  for (size_t i = 0; i < f.metadata.size(); ++i) {
    EXPECT_EQ(r->metadata[i].first, f.metadata[i].first);
    EXPECT_TRUE(r->metadata[i].second == f.metadata[i].second) << f.metadata[i].first;
  }
  ASSERT_EQ(r->tensors.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r->tensors[i].name, f.tensors[i].name);
    EXPECT_EQ(r->tensors[i].shape, f.tensors[i].shape);
    EXPECT_EQ(r->tensors[i].type, f.tensors[i].type);
  }
  EXPECT_EQ(r->tensors[0].data, f.tensors[0].data);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(r->tensors[1].data[i], half_rne(f.tensors[1].data[i])) << i;
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(r->tensors[2].data[i], bf16_to_f32(f32_to_bf16(f.tensors[2].data[i])));
  const std::vector<float> q8 = q8_reference(f.tensors[3].data);
  for (size_t i = 0; i < q8.size(); ++i) {
    EXPECT_EQ(r->tensors[3].data[i], q8[i]) << i;
    // Half a quantization step of the block, and the fp16 scale's rounding.
    float amax = 0;
    for (size_t k = i / 32 * 32; k < i / 32 * 32 + 32; ++k) amax = std::max(amax, std::fabs(f.tensors[3].data[k]));
    EXPECT_LE(std::fabs(r->tensors[3].data[i] - f.tensors[3].data[i]),
              amax / 254 + std::fabs(f.tensors[3].data[i]) / 1024 + 1e-6f)
        << i;
  }
  EXPECT_TRUE(std::holds_alternative<std::string>(*r->find("general.architecture")));
  EXPECT_EQ(r->find("absent"), nullptr);
}

// A hand-checked Q8_0 block: 0..31 has amax 31, so q_i = round(127 i / 31).
TEST(GgufFile, Q8BlockByHand) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = float(i);
  const Q8Block b = quantize_q8_0(x);
  EXPECT_EQ(b.q[0], 0);
  EXPECT_EQ(b.q[1], 4);   // 4.097
  EXPECT_EQ(b.q[8], 33);  // 32.77
  EXPECT_EQ(b.q[31], 127);
  float y[32];
  dequantize_q8_0(b, y);
  EXPECT_NEAR(y[31], 31.0f, 31.0f / 1024);  // the fp16 scale's rounding
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(y[i], x[i], 31.0f / 127.0f / 2 + 31.0f / 1024) << i;
}

TEST(GgufFile, BytesFollowTheSpecification) {
  TempDir d;
  GgufFile f;
  f.metadata = {{"k", uint32_t(9)}};
  f.tensors = {{"w", {2, 3}, GgmlType::kF32, {0, 1, 2, 3, 4, 5}}, {"v", {5}, GgmlType::kF32, {7, 7, 7, 7, 7}}};
  ASSERT_TRUE(write_gguf(d / "m.gguf", f));
  const std::string b = read_file(d / "m.gguf");
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
  };
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, b.data() + at, 8);
    return v;
  };
  EXPECT_EQ(b.substr(0, 4), "GGUF");
  EXPECT_EQ(u32(4), 3u);   // version
  EXPECT_EQ(u64(8), 2u);   // tensors
  EXPECT_EQ(u64(16), 1u);  // keys
  // key "k": length 1, 'k', type 4 (uint32), 9
  EXPECT_EQ(u64(24), 1u);
  EXPECT_EQ(b[32], 'k');
  EXPECT_EQ(u32(33), 4u);
  EXPECT_EQ(u32(37), 9u);
  // tensor "w": name, 2 dimensions, innermost first (3 then 2), type 0, offset 0
  size_t at = 41;
  EXPECT_EQ(u64(at), 1u);
  EXPECT_EQ(b[at + 8], 'w');
  at += 9;
  EXPECT_EQ(u32(at), 2u);
  EXPECT_EQ(u64(at + 4), 3u);
  EXPECT_EQ(u64(at + 12), 2u);
  EXPECT_EQ(u32(at + 20), 0u);
  EXPECT_EQ(u64(at + 24), 0u);
  at += 32;
  // tensor "v": its data after w's 24 bytes, aligned to 32
  EXPECT_EQ(u64(at + 9 + 4 + 8 + 4), 32u);
  const size_t end_of_infos = at + 9 + 4 + 8 + 4 + 8;
  const size_t data = (end_of_infos + 31) / 32 * 32;
  float w5, v0;
  std::memcpy(&w5, b.data() + data + 20, 4);
  std::memcpy(&v0, b.data() + data + 32, 4);
  EXPECT_EQ(w5, 5.0f);
  EXPECT_EQ(v0, 7.0f);
  EXPECT_EQ(b.size(), data + 64);  // each tensor padded to 32
}

TEST(GgufFile, RefusesWhatItCannotHoldAndDamagedFiles) {
  TempDir d;
  GgufFile q;
  q.tensors = {{"odd", {2, 33}, GgmlType::kQ8_0, std::vector<float>(66, 1.0f)}};
  EXPECT_THAT(write_gguf(d / "q.gguf", q).message(), HasSubstr("odd: Q8_0 needs an innermost dimension"));
  GgufFile dup;
  dup.metadata = {{"k", uint32_t(1)}, {"k", uint32_t(2)}};
  EXPECT_THAT(write_gguf(d / "k.gguf", dup).message(), HasSubstr("metadata key k given twice"));
  GgufFile shape;
  shape.tensors = {{"s", {2, 2}, GgmlType::kF32, {1, 2, 3}}};
  EXPECT_THAT(write_gguf(d / "s.gguf", shape).message(), HasSubstr("s has 3 values for its shape"));
  EXPECT_FALSE(std::filesystem::exists(d / "q.gguf"));

  GgufFile ok;
  ok.metadata = {{"general.name", std::string("x")}};
  ok.tensors = {{"w", {4}, GgmlType::kF32, {1, 2, 3, 4}}};
  ASSERT_TRUE(write_gguf(d / "ok.gguf", ok));
  const std::string b = read_file(d / "ok.gguf");
  write_file(d / "cut.gguf", b.substr(0, 40));
  EXPECT_THAT(read_gguf(d / "cut.gguf").status().message(), HasSubstr("truncated at byte"));
  write_file(d / "magic.gguf", "GGML" + b.substr(4));
  EXPECT_THAT(read_gguf(d / "magic.gguf").status().message(), HasSubstr("not a GGUF file"));
  write_file(d / "short.gguf", b.substr(0, b.size() - 24));  // into w's 16 bytes at 96, not only the padding
  EXPECT_THAT(read_gguf(d / "short.gguf").status().message(), HasSubstr("w: its data at offset 0"));
}

}  // namespace
}  // namespace mt
