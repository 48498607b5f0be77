// svg.h — self-contained SVG charts for HTML reports (no JavaScript, no
// external assets): line charts with linear or log axes, stacked bars and
// horizontal bars. Hovering any mark shows its exact value (SVG <title>).
// Used by `moetrain plan --html` and meant for every other report.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mt::report {

// Categorical palette (colour-blind friendly, Okabe–Ito order).
const std::string& palette(size_t i);

enum class Scale { kLinear, kLog };

struct Axis {
  std::string label;
  Scale scale = Scale::kLinear;
  std::optional<double> min, max;              // default: from the data (with padding)
  std::function<std::string(double)> format;   // tick labels; default: compact number
};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  std::string color;                              // empty = palette by index
  bool dashed = false;
  bool markers = false;                           // a dot on every point
};

struct VLine {
  double x;
  std::string label;
  std::string color = "#555";
};

struct Marker {  // a labelled point (e.g. an optimum)
  double x, y;
  std::string label;
  std::string color = "#000";
};

struct Band {  // a shaded x-range behind the series (e.g. a period of reduced service)
  double x0, x1;
  std::string label;  // tooltip
  std::string color = "#f4d7c4";
};

struct Tick {  // a short mark at the bottom of the frame (e.g. an event), with a tooltip
  double x;
  std::string label;
  std::string color = "#000";
};

struct LineChart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<VLine> vlines;
  std::vector<Marker> markers;
  std::vector<Band> bands;
  std::vector<Tick> ticks;
  // Legend entries besides the series' (name, colour): for bands and ticks, drawn as swatches.
  std::vector<std::pair<std::string, std::string>> legend_extra;
  int width = 660, height = 400;
};

struct StackedBars {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;        // one bar each
  std::vector<std::string> segments;          // stacked parts, bottom first
  std::vector<std::vector<double>> values;    // [category][segment]
  std::optional<double> limit;                // dashed horizontal line (e.g. HBM capacity)
  std::string limit_label;
  std::function<std::string(double)> format;  // axis and tooltip values
  int width = 660, height = 420;
};

struct HBars {
  std::string title;
  std::string x_label;
  std::vector<std::string> labels;            // one row each, top to bottom
  std::vector<double> values;
  std::vector<std::string> notes;             // optional text after each bar
  int highlight = -1;                         // row drawn in the accent colour
  std::function<std::string(double)> format;
  int width = 720;
};

// A grid of cells shaded white to blue by `shade` (in [0, 1]), each with its
// text and tooltip; a missing cell (no value) stays grey.
struct Heatmap {
  std::string title, subtitle;
  std::vector<std::string> rows, columns;  // labels, top to bottom and left to right
  struct Cell {
    double shade = 0;
    std::string text, tooltip;
  };
  std::vector<std::vector<std::optional<Cell>>> cells;  // [row][column]
  int cell_width = 72, cell_height = 22, label_width = 150;
};

std::string render_svg(const LineChart& c);
std::string render_svg(const StackedBars& c);
std::string render_svg(const HBars& c);
std::string render_svg(const Heatmap& h);

// "1.5k", "2.3M", "4.1G", "7e+21": short tick labels.
std::string compact_number(double v);
// Tick positions: "nice" 1-2-5 steps for linear axes, decades (plus 2 and 5
// when few decades are shown) for log axes.
std::vector<double> nice_ticks(double lo, double hi, Scale scale, int target = 6);
// XML-escapes text for SVG and HTML.
std::string xml_escape(const std::string& s);

}  // namespace mt::report
