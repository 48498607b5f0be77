// tokenizer.cpp — SentencePiece training through its C++ API (kwargs +
// an in-memory sentence iterator), loading, encoding.
#include "data/tokenizer.h"
#include "core/file_io.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "core/hash.h"
#include "data/word_cache_encoder.h"

namespace mt {
namespace {

constexpr const char* kSpecialPieces[kNumSpecials] = {"<|endoftext|>", "<|success|>", "<|failure|>", "<|file|>"};

// SentencePiece skips training sentences longer than max_sentence_length, so
// documents are cut at line breaks into pieces of at most kSentenceBytes.
constexpr size_t kSentenceBytes = 8192;

class VectorIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(std::vector<std::string> v) : v_(std::move(v)) {}
  bool done() const override { return i_ >= v_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return v_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> v_;
  size_t i_ = 0;
};

void split_sentences(std::string_view text, std::vector<std::string>& out, int64_t& budget) {
  while (!text.empty() && budget > 0) {
    size_t n = std::min(text.size(), kSentenceBytes);
    if (n < text.size()) {
      size_t nl = text.rfind('\n', n - 1);
      if (nl != std::string_view::npos && nl > 0) n = nl + 1;
      // Do not split inside a UTF-8 sequence.
      while (n > 1 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    }
    out.emplace_back(text.substr(0, n));
    budget -= int64_t(n);
    text.remove_prefix(n);
  }
}

}  // namespace

const char* special_piece(Special s) { return kSpecialPieces[int(s)]; }

Tokenizer::Tokenizer() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_serialized(std::string model, const std::string& name) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  auto s = t->sp_->LoadFromSerializedProto(model);
  if (!s.ok()) return Status::errorf("{}: not a SentencePiece model: {}", name, s.ToString());
  for (int i = 0; i < kNumSpecials; ++i) {
    const int id = t->sp_->PieceToId(kSpecialPieces[i]);
    if (id <= 0 || t->sp_->IdToPiece(id) != kSpecialPieces[i])
      return Status::errorf("{}: tokenizer lacks the special piece {} (train it with `moetrain tokenizer train`)",
                            name, kSpecialPieces[i]);
    t->special_[i] = id;
  }
  t->vocab_size_ = t->sp_->GetPieceSize();
  t->hash_ = xxh64(model.data(), model.size());
  auto wc = WordCacheEncoder::create(*t->sp_, model);
  if (wc)
    t->word_cache_ = std::move(wc.value());
  else
    t->word_cache_off_ = wc.status().message();
  t->model_ = std::move(model);
  return t;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& path) {
  auto text = read_file(path, "tokenizer model");
  if (!text) return text.status();
  return from_serialized(text.value(), path);
}

Result<std::string> Tokenizer::train(const std::vector<std::string_view>& texts, const TokenizerTrainOptions& opt) {
  // Newline and the four tool-call pieces are user-defined pieces of their own.
  constexpr int64_t kLeast = 256 + kNumSpecials + 5 + 8;
  if (opt.vocab_size < kLeast)
    return Status::errorf(
        "tokenizer.vocab_size: must be >= {} (256 byte pieces + specials + newline and the tool-call pieces + a few "
        "merges), got {}",
        kLeast, opt.vocab_size);
  int64_t total = 0;
  for (auto t : texts) total += int64_t(t.size());
  if (total == 0) return Status::error("tokenizer: no text to train on");
  // Take an even share of every document (up to sample_bytes overall), so a
  // huge first input does not crowd out the rest; deterministic.
  std::vector<std::string> sentences;
  const double frac = std::min(1.0, double(opt.sample_bytes) / double(total));
  for (auto t : texts) {
    int64_t budget = std::max<int64_t>(1, int64_t(double(t.size()) * frac));
    split_sentences(t, sentences, budget);
  }
  std::string controls;
  for (int i = 0; i < kNumSpecials; ++i) {
    if (i) controls += ',';
    controls += kSpecialPieces[i];
  }
  const std::unordered_map<std::string, std::string> kw = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(opt.vocab_size)},
      {"hard_vocab_limit", "false"},
      {"byte_fallback", "true"},
      {"character_coverage", "0.9995"},
      {"normalization_rule_name", "identity"},
      {"add_dummy_prefix", "false"},
      {"remove_extra_whitespaces", "false"},
      {"split_digits", "true"},
      {"allow_whitespace_only_pieces", "true"},
      {"unk_id", "0"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"pad_id", "-1"},
      {"control_symbols", controls},
      // Newline is its own piece, not 0x0A byte fallback; the tool-call syntax
      // of agentic episodes (train/environment.h) stays whole, one piece each.
      {"user_defined_symbols", "\n,<tool>,</tool>,<result>,</result>"},
      {"max_sentence_length", std::to_string(kSentenceBytes * 2)},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"num_threads", std::to_string(std::max<int64_t>(1, opt.threads))},
      {"minloglevel", "2"},
  };
  VectorIterator it(std::move(sentences));
  std::string model;
  auto s = sentencepiece::SentencePieceTrainer::Train(kw, &it, &model);
  if (!s.ok()) return Status::errorf("tokenizer training failed: {}", s.ToString());
  return model;
}

void Tokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (word_cache_)
    word_cache_->encode(text, out);
  else
    encode_plain(text, out);
}

void Tokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  sp_encode_append(*sp_, text, out);
}

std::vector<TokenPiece> Tokenizer::pieces() const {
  std::vector<TokenPiece> out(size_t(sp_->GetPieceSize()));
  for (int id = 0; id < sp_->GetPieceSize(); ++id) {
    TokenPiece& p = out[size_t(id)];
    p.text = sp_->IdToPiece(id);
    p.score = sp_->GetScore(id);
    p.kind = sp_->IsUnknown(id)   ? TokenPiece::Kind::kUnknown
             : sp_->IsControl(id) ? TokenPiece::Kind::kControl
             : sp_->IsByte(id)    ? TokenPiece::Kind::kByte
             : sp_->IsUnused(id)  ? TokenPiece::Kind::kUnused
                                  : TokenPiece::Kind::kNormal;
    // The API has no IsUserDefined; in a BPE model learned pieces score
    // -rank (the first merge -0.0, sign bit set) and user-defined ones
    // ("\n", "<tool>", ...) +0.0.
    if (p.kind == TokenPiece::Kind::kNormal && p.score == 0.0f && !std::signbit(p.score))
      p.kind = TokenPiece::Kind::kUserDefined;
  }
  return out;
}

std::string Tokenizer::decode(const int32_t* ids, int64_t n) const {
  std::vector<int> v;
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] >= 0 && ids[i] < vocab_size_) v.push_back(ids[i]);
  std::string s;
  sp_->Decode(v, &s);
  return s;
}

}  // namespace mt
