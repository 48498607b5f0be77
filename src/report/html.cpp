// html.cpp — see html.h.
#include "report/html.h"

#include <fmt/format.h>

#include "report/svg.h"

namespace mt::report {

std::string html_escape(const std::string& s) { return xml_escape(s); }

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::heading(int level, const std::string& text, const std::string& id) {
  level = level < 1 ? 1 : (level > 4 ? 4 : level);
  body_ += fmt::format("<h{0}{1}>{2}</h{0}>\n", level, id.empty() ? "" : " id=\"" + html_escape(id) + "\"",
                       html_escape(text));
}

void HtmlPage::paragraph(const std::string& text) { body_ += "<p>" + html_escape(text) + "</p>\n"; }

void HtmlPage::note(const std::string& text) { body_ += "<p class=\"note\">" + html_escape(text) + "</p>\n"; }

void HtmlPage::raw(const std::string& html) { body_ += html; }

void HtmlPage::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                     const std::vector<Align>& align, int highlight_row) {
  auto cls = [&](size_t i) {
    const Align a = i < align.size() ? align[i] : (i == 0 ? Align::kLeft : Align::kRight);
    return a == Align::kRight ? " class=\"num\"" : "";
  };
  std::string t = "<table>\n<thead><tr>";
  for (size_t i = 0; i < header.size(); ++i) t += fmt::format("<th{}>{}</th>", cls(i), html_escape(header[i]));
  t += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    t += int(r) == highlight_row ? "<tr class=\"hl\">" : "<tr>";
    for (size_t i = 0; i < rows[r].size(); ++i) t += fmt::format("<td{}>{}</td>", cls(i), html_escape(rows[r][i]));
    t += "</tr>\n";
  }
  body_ += t + "</tbody></table>\n";
}

void HtmlPage::key_values(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string t = "<table class=\"kv\">\n";
  for (const auto& [k, v] : kv) t += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(k), html_escape(v));
  body_ += t + "</table>\n";
}

void HtmlPage::figure(const std::string& svg, const std::string& caption) {
  body_ += "<figure>\n" + svg;
  if (!caption.empty()) body_ += "<figcaption>" + html_escape(caption) + "</figcaption>\n";
  body_ += "</figure>\n";
}

void HtmlPage::begin_row() { body_ += "<div class=\"row\">\n"; }
void HtmlPage::end_row() { body_ += "</div>\n"; }

std::string HtmlPage::render() const {
  static const char* kCss = R"CSS(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222; margin: 24px auto;
       max-width: 1440px; padding: 0 24px; line-height: 1.45; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 19px; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin-top: 20px; }
p.note { color: #666; font-size: 13px; margin: 4px 0 10px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 13px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
thead th { border-bottom: 2px solid #ccc; background: #f6f6f6; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.hl td { background: #fff3e0; font-weight: 600; }
table.kv th { font-weight: 500; color: #555; background: none; }
figure { margin: 10px 24px 18px 0; display: inline-block; vertical-align: top; }
figcaption { color: #555; font-size: 12.5px; max-width: 660px; margin-top: 2px; }
div.row { display: flex; flex-wrap: wrap; align-items: flex-start; }
code { background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
)CSS";
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{0}</title>\n"
      "<style>{1}</style>\n</head>\n<body>\n<h1>{0}</h1>\n{2}</body>\n</html>\n",
      html_escape(title_), kCss, body_);
}

}  // namespace mt::report
