// scaling_law.cpp — see scaling_law.h.
#include "plan/scaling_law.h"

#include <cmath>
#include <limits>

#include "core/config_schema.h"
#include "core/file_io.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace mt::plan {

ScalingLaw besiroglu2024() { return {"besiroglu2024", 1.8172, 482.01, 2085.43, 0.3478, 0.3658}; }
ScalingLaw hoffmann2022() { return {"hoffmann2022", 1.69, 406.4, 410.7, 0.34, 0.28}; }

void declare_keys(ConfigSchema& schema, ScalingLaw& s) {
  schema.add("fit.name", &s.name, "a label for reports");
  schema.add("fit.E", &s.E, "irreducible loss").min(0).required();
  schema.add("fit.A", &s.A, "parameter term coefficient").above(0).required();
  schema.add("fit.B", &s.B, "data term coefficient").above(0).required();
  schema.add("fit.alpha", &s.alpha, "parameter exponent").above(0).max(5).required();
  schema.add("fit.beta", &s.beta, "data exponent").above(0).max(5).required();
}

Result<ScalingLaw> parse_scaling_law(const std::string& text, const std::string& source) {
  ScalingLaw s;
  s.name = source;
  ConfigSchema schema("scaling-law file");
  declare_keys(schema, s);
  ConfigOrigins o;
  MT_RETURN_IF_ERROR(schema.load(text, source, {}, o));
  return s;
}

namespace {

// The `law` object of a `moetrain ladder fit --out FIT.json` file, as the
// [fit] table the planner reads (same checks, same messages).
Result<ScalingLaw> scaling_law_from_fit_json(const std::string& text, const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("law") || !j["law"].is_object())
    return Status::errorf("{}: not a `moetrain ladder fit` result (no \"law\" object)", path);
  const nlohmann::json& law = j["law"];
  if (law.contains("gamma") && !law["gamma"].is_null())
    return Status::errorf("{}: law: fitted with a sparsity term (gamma); the planner's param:data section takes "
                          "the two-term law L = E + A/N^alpha + B/D^beta: refit without --sparsity-term",
                          path);
  std::string toml = "[fit]\nname = " + toml_quote("ladder fit " + path) + "\n";
  for (const char* key : {"E", "A", "B", "alpha", "beta"}) {
    if (!law.contains(key) || !law[key].is_number())
      return Status::errorf("{}: law.{}: expected a number", path, key);
    toml += fmt::format("{} = {}\n", key, toml_double(law[key].get<double>()));
  }
  return parse_scaling_law(toml, path);
}

}  // namespace

Result<ScalingLaw> load_scaling_law(const std::string& name_or_path) {
  if (name_or_path.empty() || name_or_path == "besiroglu2024") return besiroglu2024();
  if (name_or_path == "hoffmann2022") return hoffmann2022();
  auto text = read_file(name_or_path, "scaling-law file");
  if (text && name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0)
    return scaling_law_from_fit_json(*text, name_or_path);
  if (!text)
    return Status::errorf("{} (expected \"besiroglu2024\", \"hoffmann2022\", a TOML file with a [fit] table, or the JSON of `moetrain ladder fit --out`)",
                          text.status().message());
  return parse_scaling_law(*text, name_or_path);
}

double loss(const ScalingLaw& s, double N, double D) {
  return s.E + s.A / std::pow(N, s.alpha) + s.B / std::pow(D, s.beta);
}

Allocation compute_optimal(const ScalingLaw& s, double C) {
  const double G = std::pow(s.alpha * s.A / (s.beta * s.B), 1.0 / (s.alpha + s.beta));
  Allocation a;
  a.N = G * std::pow(C / 6.0, s.beta / (s.alpha + s.beta));
  a.D = C / (6.0 * a.N);
  a.loss = loss(s, a.N, a.D);
  return a;
}

Overtrain overtrain(const ScalingLaw& s, double C, double k) {
  const Allocation opt = compute_optimal(s, C);
  Overtrain o;
  o.k = k;
  o.at.N = opt.N / std::sqrt(k);
  o.at.D = opt.D * std::sqrt(k);
  o.at.loss = loss(s, o.at.N, o.at.D);
  o.loss_penalty = o.at.loss - opt.loss;
  o.inference_saving = 1.0 - o.at.N / opt.N;
  return o;
}

double overtrain_factor(const ScalingLaw& s, double N, double D) {
  const Allocation opt = compute_optimal(s, 6.0 * N * D);
  return (D / N) / opt.tokens_per_param();
}

std::vector<std::pair<double, double>> isoflop_curve(const ScalingLaw& s, double C, double n_lo, double n_hi,
                                                     int points) {
  std::vector<std::pair<double, double>> out;
  const double a = std::log(n_lo), b = std::log(n_hi);
  for (int i = 0; i < points; ++i) {
    const double N = std::exp(a + (b - a) * double(i) / double(points - 1));
    out.push_back({N, loss(s, N, C / (6.0 * N))});
  }
  return out;
}

}  // namespace mt::plan
