// run_config.cpp — strict TOML loading, --set overrides, validation and the
// canonical TOML writer for RunConfig. One table of fields below drives
// reading, override lookup and writing, so the three cannot disagree.
#include "train/run_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>
#include <type_traits>

#include <toml++/toml.h>

#include "core/toml_document.h"

#include "core/file_io.h"
#include "core/strings.h"

namespace mt {
namespace {

// ---- enums as TOML strings (index = enumerator value) -----------------------

template <typename E>
struct EnumNames;
template <>
struct EnumNames<RouterScore> {
  static constexpr std::array<std::string_view, 2> names = {"softmax", "sigmoid"};
};
template <>
struct EnumNames<Precision> {
  static constexpr std::array<std::string_view, 2> names = {"fp32", "bf16"};
};
template <>
struct EnumNames<LrSchedule> {
  static constexpr std::array<std::string_view, 3> names = {"wsd", "cosine", "constant"};
};

// ---- helpers -----------------------------------------------------------------

std::string_view type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

// "file:line" when toml++ knows the line, else just "file".
std::string at_line(const std::string& source, const toml::source_region& r) {
  return r.begin.line > 0 ? fmt::format("{}:{}", source, r.begin.line) : source;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

// Basic TOML string with every character that needs it escaped.
std::string toml_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) out += fmt::format("\\u{:04X}", unsigned(u));
        else out += ch;
    }
  }
  return out + "\"";
}

// Shortest round-trip digits; always written as a TOML float ("10000.0", not
// "10000") so the canonical text keeps each key's type.
std::string toml_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

// ---- the field table -----------------------------------------------------------

// One config key. `read` converts a TOML node (type-checked) into the field;
// `at` and `name` ("model.d_model") prefix its messages.
struct Field {
  std::string_view section;
  std::string_view key;
  std::function<Status(RunConfig&, const toml::node&, const std::string& at, const std::string& name)> read;
  std::function<std::string(const RunConfig&)> write;
};

Status type_error(const std::string& at, const std::string& name, std::string_view want,
                  const toml::node& n) {
  return Status::errorf("{}: {}: expected {}, got {}", at, name, want, type_name(n.type()));
}

template <typename T>
Status read_value(T& out, const toml::node& n, const std::string& at, const std::string& name) {
  if constexpr (std::is_same_v<T, int64_t>) {
    if (!n.is_integer()) return type_error(at, name, "integer", n);
    out = n.as_integer()->get();
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    if (!n.is_integer()) return type_error(at, name, "integer", n);
    int64_t v = n.as_integer()->get();
    if (v < 0) return Status::errorf("{}: {}: must be >= 0, got {}", at, name, v);
    out = uint64_t(v);
  } else if constexpr (std::is_same_v<T, double>) {
    double v;
    if (n.is_floating_point()) v = n.as_floating_point()->get();
    else if (n.is_integer()) v = double(n.as_integer()->get());
    else return type_error(at, name, "float", n);
    if (!std::isfinite(v)) return Status::errorf("{}: {}: must be finite, got {}", at, name, v);
    out = v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!n.is_boolean()) return type_error(at, name, "boolean", n);
    out = n.as_boolean()->get();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!n.is_string()) return type_error(at, name, "string", n);
    out = n.as_string()->get();
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (!n.is_array()) return type_error(at, name, "array of strings", n);
    std::vector<std::string> v;
    const toml::array& arr = *n.as_array();
    for (size_t i = 0; i < arr.size(); ++i) {
      if (!arr[i].is_string())
        return type_error(at, fmt::format("{}[{}]", name, i), "string", arr[i]);
      v.push_back(arr[i].as_string()->get());
    }
    out = std::move(v);
  } else if constexpr (std::is_enum_v<T>) {
    constexpr auto& names = EnumNames<T>::names;
    std::string choices;
    for (auto nm : names) choices += fmt::format("{}\"{}\"", choices.empty() ? "" : ", ", nm);
    if (!n.is_string()) return type_error(at, name, fmt::format("one of {}", choices), n);
    const std::string& s = n.as_string()->get();
    for (size_t i = 0; i < names.size(); ++i)
      if (s == names[i]) { out = static_cast<T>(i); return Status::ok(); }
    return Status::errorf("{}: {}: expected one of {}, got \"{}\"", at, name, choices, s);
  } else {
    static_assert(sizeof(T) == 0, "unsupported config field type");
  }
  return Status::ok();
}

template <typename T>
std::string write_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_integral_v<T>) return fmt::format("{}", v);
  else if constexpr (std::is_same_v<T, double>) return toml_double(v);
  else if constexpr (std::is_same_v<T, std::string>) return toml_quote(v);
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_quote(v[i]);
    return out + "]";
  } else if constexpr (std::is_enum_v<T>) {
    return toml_quote(EnumNames<T>::names[size_t(v)]);
  }
}

template <typename S, typename T>
Field field(std::string_view section, std::string_view key, S RunConfig::*sec, T S::*mem) {
  return Field{
      section, key,
      [sec, mem](RunConfig& c, const toml::node& n, const std::string& at, const std::string& name) {
        return read_value(c.*sec.*mem, n, at, name);
      },
      [sec, mem](const RunConfig& c) { return write_value(c.*sec.*mem); }};
}

// Every field of ModelConfig, TrainConfig and DataConfig, in struct order.
// A field missing here can be neither loaded nor saved: add new ones here.
const std::vector<Field>& fields() {
  static const std::vector<Field> kFields = [] {
    using M = ModelConfig;
    using Tr = TrainConfig;
    using D = DataConfig;
    using Di = DistConfig;
    auto m = [](std::string_view k, auto M::*p) { return field("model", k, &RunConfig::model, p); };
    auto t = [](std::string_view k, auto Tr::*p) { return field("train", k, &RunConfig::train, p); };
    auto d = [](std::string_view k, auto D::*p) { return field("data", k, &RunConfig::data, p); };
    auto di = [](std::string_view k, auto Di::*p) { return field("dist", k, &RunConfig::dist, p); };
    return std::vector<Field>{
        m("vocab_size", &M::vocab_size),
        m("d_model", &M::d_model),
        m("n_layers", &M::n_layers),
        m("n_heads", &M::n_heads),
        m("n_kv_heads", &M::n_kv_heads),
        m("n_kv_heads_local", &M::n_kv_heads_local),
        m("layer_pattern", &M::layer_pattern),
        m("window", &M::window),
        m("tied_embeddings", &M::tied_embeddings),
        m("qk_norm", &M::qk_norm),
        m("rope_theta", &M::rope_theta),
        m("norm_eps", &M::norm_eps),
        m("init_std", &M::init_std),
        m("d_ff", &M::d_ff),
        m("n_experts", &M::n_experts),
        m("top_k", &M::top_k),
        m("d_expert", &M::d_expert),
        m("n_shared_experts", &M::n_shared_experts),
        m("n_dense_layers", &M::n_dense_layers),
        m("router_score", &M::router_score),
        m("router_renormalize", &M::router_renormalize),
        m("capacity_factor", &M::capacity_factor),
        m("routing_group", &M::routing_group),
        m("aux_loss_coef", &M::aux_loss_coef),
        m("z_loss_coef", &M::z_loss_coef),
        m("aux_free_bias", &M::aux_free_bias),
        m("bias_update_rate", &M::bias_update_rate),
        m("d_latent", &M::d_latent),
        m("moe_out_norm", &M::moe_out_norm),

        t("steps", &Tr::steps),
        t("batch_size", &Tr::batch_size),
        t("seq_len", &Tr::seq_len),
        t("grad_accum", &Tr::grad_accum),
        t("lr", &Tr::lr),
        t("min_lr_ratio", &Tr::min_lr_ratio),
        t("warmup_steps", &Tr::warmup_steps),
        t("schedule", &Tr::schedule),
        t("decay_frac", &Tr::decay_frac),
        t("weight_decay", &Tr::weight_decay),
        t("decay_embeddings", &Tr::decay_embeddings),
        t("beta1", &Tr::beta1),
        t("beta2", &Tr::beta2),
        t("eps", &Tr::eps),
        t("grad_clip", &Tr::grad_clip),
        t("precision", &Tr::precision),
        t("seed", &Tr::seed),
        t("threads", &Tr::threads),
        t("checkpoint_every", &Tr::checkpoint_every),
        t("keep_checkpoints", &Tr::keep_checkpoints),
        t("log_every", &Tr::log_every),
        t("eval_every", &Tr::eval_every),
        t("eval_batches", &Tr::eval_batches),

        d("path", &D::path),
        d("format", &D::format),
        d("extensions", &D::extensions),
        d("max_bytes", &D::max_bytes),
        d("eval_frac", &D::eval_frac),
        d("dataset", &D::dataset),
        d("mixture", &D::mixture),

        di("ep", &Di::ep),
        di("fsdp", &Di::fsdp),
        di("timeout_s", &Di::timeout_s),
        di("prefetch", &Di::prefetch),
    };
  }();
  return kFields;
}

constexpr std::array<std::string_view, 4> kSections = {"model", "train", "data", "dist"};

bool is_section(std::string_view s) {
  return std::find(kSections.begin(), kSections.end(), s) != kSections.end();
}

const Field* find_field(std::string_view section, std::string_view key) {
  for (const Field& f : fields())
    if (f.section == section && f.key == key) return &f;
  return nullptr;
}

// " (did you mean 'model.d_model'?)" for a near miss, else "".
std::string suggest(std::string_view section, std::string_view key) {
  const Field* best = nullptr;
  size_t best_d = 3;  // only suggest within two edits
  for (const Field& f : fields()) {
    if (is_section(section) && f.section != section) continue;
    size_t dist = edit_distance(key, f.key);
    if (dist < best_d) { best_d = dist; best = &f; }
  }
  return best ? fmt::format(" (did you mean '{}.{}'?)", best->section, best->key) : std::string();
}

// Where each key got its value ("file:line" or "file: --set k=v"), so range
// errors point at the line or override the user must change.
using Origins = std::map<std::string, std::string>;

Status apply_override(RunConfig& c, const std::string& raw, const std::string& source,
                      Origins& origins) {
  const std::string at = fmt::format("{}: --set {}", source, raw);
  size_t eq = raw.find('=');
  if (eq == std::string::npos)
    return Status::errorf("{}: expected section.key=value (e.g. train.lr=3e-4)", at);
  std::string name = trim(std::string_view(raw).substr(0, eq));
  std::string value = trim(std::string_view(raw).substr(eq + 1));
  size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == name.size())
    return Status::errorf("{}: expected section.key=value (e.g. train.lr=3e-4)", at);
  std::string section = name.substr(0, dot), key = name.substr(dot + 1);
  const Field* f = find_field(section, key);
  if (!f) return Status::errorf("{}: unknown key '{}'{}", at, name, suggest(section, key));

  // The value in TOML syntax if it is one ("3e-4", "true", "[\".py\"]"),
  // otherwise the bare text as a string ("bf16", "/data/x").
  toml::table holder;
  const toml::node* node = nullptr;
  try {
    const std::string doc = "v = " + value;
    holder = toml::parse(doc, std::string_view("--set"));
    if (holder.size() == 1) node = holder.get("v");
  } catch (const toml::parse_error&) {
  }
  toml::value<std::string> bare(value);
  if (!node) node = &bare;
  MT_RETURN_IF_ERROR(f->read(c, *node, at, name));
  origins[name] = at;
  return Status::ok();
}

Status validate(const RunConfig& c, const Origins& origins) {
  auto bad = [&](const std::string& name, const std::string& why) {
    auto it = origins.find(name);
    return Status::errorf("{}: {}: {}", it != origins.end() ? it->second : c.source, name, why);
  };
  const TrainConfig& t = c.train;
  if (t.steps < 1) return bad("train.steps", "must be >= 1");
  if (t.batch_size < 1) return bad("train.batch_size", "must be >= 1");
  if (t.seq_len < 2) return bad("train.seq_len", "must be >= 2");
  if (t.grad_accum < 1) return bad("train.grad_accum", "must be >= 1");
  if (!(t.lr > 0)) return bad("train.lr", "must be > 0");
  if (!(t.min_lr_ratio >= 0 && t.min_lr_ratio <= 1)) return bad("train.min_lr_ratio", "must be in [0, 1]");
  if (t.warmup_steps < 0) return bad("train.warmup_steps", "must be >= 0");
  if (!(t.decay_frac >= 0 && t.decay_frac <= 1)) return bad("train.decay_frac", "must be in [0, 1]");
  if (!(t.weight_decay >= 0)) return bad("train.weight_decay", "must be >= 0");
  if (!(t.beta1 >= 0 && t.beta1 < 1)) return bad("train.beta1", "must be in [0, 1)");
  if (!(t.beta2 >= 0 && t.beta2 < 1)) return bad("train.beta2", "must be in [0, 1)");
  if (!(t.eps > 0)) return bad("train.eps", "must be > 0");
  if (!(t.grad_clip >= 0)) return bad("train.grad_clip", "must be >= 0 (0 = off)");
  if (t.threads < 0) return bad("train.threads", "must be >= 0 (0 = OpenMP default)");
  if (t.checkpoint_every < 0) return bad("train.checkpoint_every", "must be >= 0 (0 = only at the end)");
  if (t.keep_checkpoints < 1) return bad("train.keep_checkpoints", "must be >= 1");
  if (t.log_every < 1) return bad("train.log_every", "must be >= 1");
  if (t.eval_every < 0) return bad("train.eval_every", "must be >= 0 (0 = no eval passes)");
  if (t.eval_batches < 1) return bad("train.eval_batches", "must be >= 1");

  const DataConfig& d = c.data;
  if (d.format != "text" && d.format != "tokens")
    return bad("data.format", fmt::format("expected \"text\" or \"tokens\", got \"{}\"", d.format));
  if (d.max_bytes < 0) return bad("data.max_bytes", "must be >= 0 (0 = no cap)");
  if (!(d.eval_frac >= 0 && d.eval_frac < 1)) return bad("data.eval_frac", "must be in [0, 1)");
  if (!d.dataset.empty() && d.mixture.empty())
    return bad("data.mixture", "required with data.dataset (a mixture TOML: weights, total_tokens, scale)");
  if (d.dataset.empty() && !d.mixture.empty()) return bad("data.dataset", "required with data.mixture");

  const DistConfig& di = c.dist;
  if (di.ep < 1) return bad("dist.ep", "must be >= 1");
  if (di.fsdp < 0) return bad("dist.fsdp", "must be >= 0 (0 = ranks / dist.ep)");
  if (!(di.timeout_s > 0)) return bad("dist.timeout_s", "must be > 0");

  {
    // ModelConfig::validate names the key but only knows the file; point the
    // message at the line or the --set override that gave the value.
    Status ms = c.model.validate(c.source, t.seq_len);
    if (!ms) {
      const std::string prefix = c.source + ": ";
      const std::string& msg = ms.message();
      if (msg.rfind(prefix, 0) == 0) {
        const std::string rest = msg.substr(prefix.size());
        const std::string key = rest.substr(0, rest.find(':'));
        auto it = origins.find(key);
        if (it != origins.end()) return Status::errorf("{}: {}", it->second, rest);
      }
      return ms;
    }
  }
  if (c.model.n_experts > 0) {
    int64_t g = c.model.group_size(t.seq_len);
    if ((t.batch_size * t.seq_len) % g != 0)
      return bad("model.routing_group",
                 fmt::format("group of {} tokens must divide batch_size*seq_len = {}", g,
                             t.batch_size * t.seq_len));
  }
  // The byte tokenizer uses ids 0..255 plus 3 specials.
  if (d.dataset.empty() && d.format == "text" && c.model.vocab_size < 259)
    return bad("model.vocab_size",
               fmt::format("must be >= 259 for data.format = \"text\" (256 bytes + 3 specials), got {}",
                           c.model.vocab_size));
  return Status::ok();
}

}  // namespace

Result<RunConfig> parse_run_config(const std::string& toml_text, const std::string& source,
                                   const std::vector<std::string>& overrides) {
  RunConfig c;
  c.source = source;
  auto parsed = parse_toml_document(toml_text, source);
  if (!parsed) return parsed.status();
  toml::table doc = std::move(parsed.value());

  // Gather every key first, then apply in file order so the first error
  // reported is the first one in the file.
  struct Entry {
    uint32_t line;
    std::string section, key;
    const toml::node* node;
  };
  std::vector<Entry> entries;
  for (auto&& [k, v] : doc) {
    std::string name(k.str());
    std::string at = at_line(source, k.source());
    if (!is_section(name)) {
      if (v.is_table())
        return Status::errorf("{}: unknown table '[{}]' (expected [model], [train], [data] or [dist])", at, name);
      return Status::errorf("{}: unknown key '{}' (keys belong in [model], [train], [data] or [dist]){}", at,
                            name, suggest("", name));
    }
    if (!v.is_table()) return type_error(at, name, "table", v);
    for (auto&& [k2, v2] : *v.as_table()) {
      const toml::source_region& r = k2.source().begin.line > 0 ? k2.source() : v2.source();
      entries.push_back({r.begin.line, name, std::string(k2.str()), &v2});
    }
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.line < b.line; });

  Origins origins;
  for (const Entry& e : entries) {
    std::string name = e.section + "." + e.key;
    std::string at = e.line > 0 ? fmt::format("{}:{}", source, e.line) : source;
    const Field* f = find_field(e.section, e.key);
    if (!f) return Status::errorf("{}: unknown key '{}'{}", at, name, suggest(e.section, e.key));
    MT_RETURN_IF_ERROR(f->read(c, *e.node, at, name));
    origins[name] = at;
  }
  for (const std::string& o : overrides) MT_RETURN_IF_ERROR(apply_override(c, o, source, origins));
  MT_RETURN_IF_ERROR(validate(c, origins));
  return c;
}

Result<RunConfig> load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_file(path, "config file");
  if (!text) return text.status();
  return parse_run_config(text.value(), path, overrides);
}

std::string to_toml(const RunConfig& c) {
  std::string source = c.source;
  for (char& ch : source)
    if (ch == '\n' || ch == '\r') ch = ' ';
  std::string out = fmt::format("# moetrain resolved config (source: {})\n", source);
  for (std::string_view section : kSections) {
    out += fmt::format("\n[{}]\n", section);
    for (const Field& f : fields())
      if (f.section == section) out += fmt::format("{} = {}\n", f.key, f.write(c));
  }
  return out;
}

}  // namespace mt
