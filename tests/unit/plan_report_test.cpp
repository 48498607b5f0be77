// plan_report_test.cpp — the SVG/HTML building blocks of the plan report
// (src/report): tick placement, number labels, escaping, and charts whose
// marks land where their data say.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/html.h"
#include "report/svg.h"

namespace mt::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PlanReport, NiceTicks) {
  EXPECT_EQ(nice_ticks(0, 10, Scale::kLinear, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(0.1, 0.95, Scale::kLinear, 4), (std::vector<double>{0.25, 0.5, 0.75}));
  EXPECT_EQ(nice_ticks(1, 1000, Scale::kLog, 6), (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(nice_ticks(1, 50, Scale::kLog, 6), (std::vector<double>{1, 2, 5, 10, 20, 50}));
}

TEST(PlanReport, CompactNumbersAndEscaping) {
  EXPECT_EQ(compact_number(0), "0");
  EXPECT_EQ(compact_number(1500), "1.5k");
  EXPECT_EQ(compact_number(2.5e9), "2.5G");
  EXPECT_EQ(compact_number(0.25), "0.25");
  EXPECT_EQ(xml_escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
}

TEST(PlanReport, LineChartPlacesPoints) {
  LineChart c;
  c.title = "t <1>";
  c.x = {"x", Scale::kLinear, 0.0, 10.0, {}};
  c.y = {"y", Scale::kLinear, 0.0, 10.0, {}};
  c.series.push_back({"diag", {{0, 0}, {10, 10}}, "#123456", false, true});
  const std::string svg = render_svg(c);
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("t &lt;1&gt;"));
  EXPECT_THAT(svg, Not(HasSubstr("t <1>")));
  // The plot frame spans x in [70, width - 20]; (0, 0) is its bottom-left corner, (10, 10) its top-right.
  EXPECT_THAT(svg, HasSubstr("M70.0,"));
  EXPECT_THAT(svg, HasSubstr(" L640.0,36.0"));
  EXPECT_THAT(svg, HasSubstr("stroke=\"#123456\""));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
}

TEST(PlanReport, StackedBarsAndPage) {
  StackedBars b;
  b.categories = {"a", "b"};
  b.segments = {"x", "y"};
  b.values = {{1, 2}, {3, 4}};
  b.limit = 8;
  b.limit_label = "cap";
  const std::string svg = render_svg(b);
  EXPECT_THAT(svg, HasSubstr("a — y: 2 (66.7%)"));  // tooltip of the second segment of bar a
  EXPECT_THAT(svg, HasSubstr("cap 8"));
  HtmlPage page("Plan & co");
  page.heading(2, "Memory");
  page.table({"item", "bytes"}, {{"<p>", "1"}});
  page.figure(svg, "caption");
  const std::string html = page.render();
  EXPECT_THAT(html, HasSubstr("<title>Plan &amp; co</title>"));
  EXPECT_THAT(html, HasSubstr("<td>&lt;p&gt;</td>"));
  EXPECT_THAT(html, HasSubstr("<figcaption>caption</figcaption>"));
  EXPECT_THAT(html, Not(HasSubstr("<script src")));  // self-contained
}

}  // namespace
}  // namespace mt::report
