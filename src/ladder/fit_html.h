// fit_html.h — the scaling-law fit as a self-contained HTML page (inline SVG,
// no script): loss against compute on log-log axes with every run, the fitted
// law's compute-optimal frontier extended to the projection, the projected
// hero point with its bootstrap interval; predicted against observed loss;
// the law's parameters and a table of the runs. Written by
// `moetrain ladder fit --html OUT`.
#pragma once
#include <string>

#include "ladder/analysis.h"

namespace mt::ladder {

std::string fit_html(const Analysis& a, const std::string& source);

}  // namespace mt::ladder
