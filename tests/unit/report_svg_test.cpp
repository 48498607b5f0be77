// report_svg_test.cpp — report::Heatmap (report/svg.h), which draws the data
// heatmap: one shaded cell per value with its text and tooltip, a grey cell
// where there is none, labels escaped, the shade clamped to [0, 1].
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/svg.h"

namespace mt::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(HeatmapSvg, CellsLabelsAndMissingCells) {
  Heatmap h;
  h.title = "data <set>";
  h.subtitle = "share";
  h.rows = {"code", "web & news"};
  h.columns = {"q0", "q1"};
  h.cells = {{Heatmap::Cell{1.0, "60.0%", "code/q0"}, std::nullopt},
             {Heatmap::Cell{0.0, "10.0%", "web/q0"}, Heatmap::Cell{7.0, "30.0%", "web/q1"}}};
  const std::string svg = render_svg(h);
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("data &lt;set&gt;"));
  EXPECT_THAT(svg, HasSubstr(">web &amp; news<"));
  EXPECT_THAT(svg, Not(HasSubstr("web & news")));
  EXPECT_EQ(count(svg, "<title>"), 3);            // one tooltip per value
  EXPECT_EQ(count(svg, "fill=\"#f4f4f4\""), 1);   // the missing cell
  EXPECT_THAT(svg, HasSubstr("fill=\"rgb(33,102,172)\""));  // shade 1 (and 7, clamped)
  EXPECT_EQ(count(svg, "fill=\"rgb(33,102,172)\""), 2);
  EXPECT_THAT(svg, HasSubstr("fill=\"rgb(255,255,255)\""));  // shade 0
  EXPECT_THAT(svg, HasSubstr(">60.0%</text>"));
}

}  // namespace
}  // namespace mt::report
