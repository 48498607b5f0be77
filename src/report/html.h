// html.h — a self-contained HTML page (inline CSS, no external assets) built
// section by section: headings, paragraphs, tables, key/value lists, figures
// (inline SVG from report/svg.h). Text arguments are escaped; raw() is not.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace mt::report {

enum class Align { kLeft, kRight };

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  void heading(int level, const std::string& text, const std::string& id = "");
  void paragraph(const std::string& text);        // escaped
  void note(const std::string& text);             // small grey print, escaped
  void raw(const std::string& html);              // inserted as is
  // First column left-aligned, the rest right-aligned (numbers) unless `align` says otherwise.
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
             const std::vector<Align>& align = {}, int highlight_row = -1);
  void key_values(const std::vector<std::pair<std::string, std::string>>& kv);
  void figure(const std::string& svg, const std::string& caption);
  // Starts a row of figures side by side (wraps on narrow screens).
  void begin_row();
  void end_row();

  std::string render() const;

 private:
  std::string title_;
  std::string body_;
};

std::string html_escape(const std::string& s);

}  // namespace mt::report
