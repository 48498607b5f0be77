// mix_report.h — the mixture search's HTML page from its search.json:
// predicted against actual target on the held-out proxies (both regressors)
// and for the natural and chosen mixtures, and the chosen weights against
// the natural shares and the caps. Self-contained (inline SVG, no script).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace mt {

std::string mix_search_html(const nlohmann::json& search);

}  // namespace mt
