// arch_report.h — the comparison as a terminal table and as a self-contained
// HTML page (report/html.h, report/svg.h): the factors side by side, the
// projected loss curves with their intervals, the ranking rule and the
// verdict. Both read compare.json only (arch_rank.h).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace mt {

std::string compare_table(const nlohmann::json& cmp);
std::string compare_html(const nlohmann::json& cmp);

}  // namespace mt
