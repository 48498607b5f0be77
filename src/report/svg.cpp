// svg.cpp — see svg.h. Geometry: a plot rectangle inside margins that leave
// room for tick labels, axis labels and the legend; data map to it through
// linear or log10 transforms.
#include "report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mt::report {
namespace {

struct Frame {
  double left, top, right, bottom;  // plot rectangle in pixels
  double w() const { return right - left; }
  double h() const { return bottom - top; }
};

struct Mapper {
  double lo, hi;
  Scale scale;
  double a, b;  // pixel range
  double t(double v) const { return scale == Scale::kLog ? std::log10(std::max(v, 1e-300)) : v; }
  double operator()(double v) const {
    const double tl = t(lo), th = t(hi);
    const double f = th > tl ? (t(v) - tl) / (th - tl) : 0.5;
    return a + f * (b - a);
  }
};

std::string fmt_px(double v) { return fmt::format("{:.1f}", v); }

std::string default_format(double v) { return compact_number(v); }

// Data range of an axis, padded (linear) or widened to whole decades (log).
std::pair<double, double> axis_range(const Axis& ax, double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (ax.scale == Scale::kLog) {
    lo = std::max(lo, 1e-300);
    hi = std::max(hi, lo * 1.0001);
    double llo = std::log10(lo), lhi = std::log10(hi);
    if (lhi - llo < 1.0) {
      const double mid = 0.5 * (llo + lhi);
      llo = mid - 0.5;
      lhi = mid + 0.5;
    }
    lo = std::pow(10.0, llo - 0.03 * (lhi - llo));
    hi = std::pow(10.0, lhi + 0.03 * (lhi - llo));
  } else {
    if (hi <= lo) {
      const double d = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
      lo -= d;
      hi += d;
    }
    const double pad = 0.05 * (hi - lo);
    lo -= pad;
    hi += pad;
  }
  if (ax.min) lo = *ax.min;
  if (ax.max) hi = *ax.max;
  return {lo, hi};
}

std::string svg_open(int w, int h) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"-apple-system,Segoe UI,Helvetica,Arial,sans-serif\" font-size=\"12\" role=\"img\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n",
      w, h);
}

std::string text(double x, double y, const std::string& s, const char* anchor = "start",
                 const char* extra = "") {
  return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" {}>{}</text>\n", fmt_px(x), fmt_px(y),
                     anchor, extra, xml_escape(s));
}

// Legend entries laid out left to right, wrapping; returns the SVG and its height.
std::pair<std::string, double> legend(const std::vector<std::pair<std::string, std::string>>& items, double x0,
                                      double y0, double max_w, bool dashed_line_style = false) {
  std::string out;
  double x = x0, y = y0;
  for (const auto& [name, color] : items) {
    const double w = 22 + 7.0 * double(name.size()) + 14;
    if (x + w > x0 + max_w && x > x0) {
      x = x0;
      y += 18;
    }
    if (dashed_line_style)
      out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2.5\"/>\n",
                         fmt_px(x), fmt_px(y - 4), fmt_px(x + 16), fmt_px(y - 4), color);
    else
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", fmt_px(x),
                         fmt_px(y - 10), color);
    out += text(x + 20, y, name);
    x += w;
  }
  return {out, y - y0 + 18};
}

double legend_height(const std::vector<std::string>& names, double max_w) {
  double x = 0, rows = 1;
  for (const auto& n : names) {
    const double w = 22 + 7.0 * double(n.size()) + 14;
    if (x + w > max_w && x > 0) {
      x = 0;
      rows += 1;
    }
    x += w;
  }
  return rows * 18;
}

}  // namespace

const std::string& palette(size_t i) {
  static const std::vector<std::string> kColors = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
                                                   "#56B4E9", "#F0E442", "#000000", "#999999", "#8C564B"};
  return kColors[i % kColors.size()];
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string compact_number(double v) {
  if (v == 0) return "0";
  if (!std::isfinite(v)) return v > 0 ? "inf" : (v < 0 ? "-inf" : "nan");
  const double a = std::abs(v);
  struct Unit {
    double scale;
    const char* suffix;
  };
  static const Unit kUnits[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  if (a >= 1e18 || a < 1e-3) return fmt::format("{:.2g}", v);
  for (const Unit& u : kUnits) {
    if (a >= u.scale) {
      std::string s = fmt::format("{:.3g}", v / u.scale);
      return s + u.suffix;
    }
  }
  return fmt::format("{:.3g}", v);
}

std::vector<double> nice_ticks(double lo, double hi, Scale scale, int target) {
  std::vector<double> ticks;
  if (!(hi > lo)) return {lo};
  if (scale == Scale::kLog) {
    const int d0 = int(std::floor(std::log10(lo))), d1 = int(std::ceil(std::log10(hi)));
    const int decades = d1 - d0;
    const int step = std::max(1, decades / std::max(target, 1));
    for (int d = d0; d <= d1; d += step) {
      const double base = std::pow(10.0, d);
      for (double m : decades <= 2 ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double t = base * m;
        if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) ticks.push_back(t);
      }
    }
    return ticks;
  }
  const double raw = (hi - lo) / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string render_svg(const LineChart& c) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const Series& s : c.series)
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (c.x.scale == Scale::kLog && x <= 0) continue;
      if (c.y.scale == Scale::kLog && y <= 0) continue;
      xlo = std::min(xlo, x), xhi = std::max(xhi, x), ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
  for (const Marker& m : c.markers) {
    xlo = std::min(xlo, m.x), xhi = std::max(xhi, m.x), ylo = std::min(ylo, m.y), yhi = std::max(yhi, m.y);
  }
  for (const VLine& v : c.vlines) xlo = std::min(xlo, v.x), xhi = std::max(xhi, v.x);
  auto [x0, x1] = axis_range(c.x, xlo, xhi);
  auto [y0, y1] = axis_range(c.y, ylo, yhi);
  auto xf = c.x.format ? c.x.format : default_format;
  auto yf = c.y.format ? c.y.format : default_format;

  std::vector<std::string> names;
  for (const Series& s : c.series)
    if (!s.name.empty()) names.push_back(s.name);
  std::vector<std::string> extra_names;
  for (const auto& [name, color] : c.legend_extra) extra_names.push_back(name);
  const double leg_h = (names.empty() ? 0 : legend_height(names, c.width - 80)) +
                       (extra_names.empty() ? 0 : legend_height(extra_names, c.width - 80));
  Frame f{70, c.title.empty() ? 16.0 : 36.0, double(c.width) - 20, double(c.height) - 50 - leg_h};
  Mapper mx{x0, x1, c.x.scale, f.left, f.right}, my{y0, y1, c.y.scale, f.bottom, f.top};

  std::string out = svg_open(c.width, c.height);
  if (!c.title.empty()) out += text(c.width / 2.0, 22, c.title, "middle", "font-size=\"14\" font-weight=\"600\"");
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#bbb\"/>\n",
                     fmt_px(f.left), fmt_px(f.top), fmt_px(f.w()), fmt_px(f.h()));
  for (double t : nice_ticks(x0, x1, c.x.scale)) {
    const double px = mx(t);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>\n", fmt_px(px),
                       fmt_px(f.top), fmt_px(f.bottom));
    out += text(px, f.bottom + 16, xf(t), "middle", "fill=\"#333\"");
  }
  for (double t : nice_ticks(y0, y1, c.y.scale)) {
    const double py = my(t);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e4e4e4\"/>\n", fmt_px(f.left),
                       fmt_px(py), fmt_px(f.right));
    out += text(f.left - 6, py + 4, yf(t), "end", "fill=\"#333\"");
  }
  out += text((f.left + f.right) / 2, f.bottom + 34, c.x.label, "middle", "font-weight=\"600\"");
  out += fmt::format(
      "<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" font-weight=\"600\" transform=\"rotate(-90 16 {0})\">{1}</text>\n",
      fmt_px((f.top + f.bottom) / 2), xml_escape(c.y.label));
  // Clip ids must be unique within the HTML page that embeds several charts;
  // a hash of the chart's content keeps the output deterministic.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const std::string& s) {
    for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  };
  mix(c.title + c.x.label + c.y.label);
  for (const Series& s : c.series) mix(s.name + std::to_string(s.points.size()));
  const std::string clip = fmt::format("clip{:016x}", h);
  out += fmt::format("<clipPath id=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n",
                     clip, fmt_px(f.left), fmt_px(f.top), fmt_px(f.w()), fmt_px(f.h()));
  out += fmt::format("<g clip-path=\"url(#{})\">\n", clip);
  for (const Band& b : c.bands) {
    const double p0 = mx(b.x0), p1 = mx(b.x1);
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" opacity=\"0.8\"><title>{}: {} to "
                       "{}</title></rect>\n",
                       fmt_px(std::min(p0, p1)), fmt_px(f.top), fmt_px(std::max(std::abs(p1 - p0), 1.0)), fmt_px(f.h()),
                       b.color, xml_escape(b.label), xml_escape(xf(b.x0)), xml_escape(xf(b.x1)));
  }
  for (const Tick& t : c.ticks) {
    const double px = mx(t.x);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1.5\"><title>{4} at "
                       "{5}</title></line>\n",
                       fmt_px(px), fmt_px(f.bottom), fmt_px(f.bottom - 14), t.color, xml_escape(t.label),
                       xml_escape(xf(t.x)));
  }
  for (const VLine& v : c.vlines) {
    const double px = mx(v.x);
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\" stroke-dasharray=\"5 4\" stroke-width=\"1.5\">"
        "<title>{4}: {5}</title></line>\n",
        fmt_px(px), fmt_px(f.top), fmt_px(f.bottom), v.color, xml_escape(v.label), xml_escape(xf(v.x)));
  }
  std::vector<std::pair<std::string, std::string>> leg;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    const std::string color = s.color.empty() ? palette(i) : s.color;
    if (!s.name.empty()) leg.push_back({s.name, color});
    std::string path;
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if ((c.x.scale == Scale::kLog && x <= 0) || (c.y.scale == Scale::kLog && y <= 0)) continue;
      path += fmt::format("{}{},{}", path.empty() ? "M" : " L", fmt_px(mx(x)), fmt_px(my(y)));
    }
    if (!path.empty())
      out += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}><title>{}</title></path>\n",
                         path, color, s.dashed ? " stroke-dasharray=\"6 4\"" : "", xml_escape(s.name));
    if (s.markers)
      for (auto [x, y] : s.points) {
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"><title>{}: ({}, {})</title></circle>\n",
                           fmt_px(mx(x)), fmt_px(my(y)), color, xml_escape(s.name), xml_escape(xf(x)),
                           xml_escape(yf(y)));
      }
  }
  out += "</g>\n";
  // Labels of vertical lines and markers, kept inside the frame.
  // Vertical-line labels stack upwards from the bottom of the frame (markers label the top).
  double label_y = f.bottom - 8;
  for (const VLine& v : c.vlines) {
    const double px = mx(v.x);
    if (px < f.left || px > f.right) continue;
    const bool right_side = px < f.left + 0.6 * f.w();
    out += text(right_side ? px + 4 : px - 4, label_y, v.label, right_side ? "start" : "end",
                fmt::format("fill=\"{}\"", v.color).c_str());
    label_y -= 15;
  }
  for (const Marker& m : c.markers) {
    const double px = mx(m.x), py = my(m.y);
    out += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"1.5\"><title>{}: ({}, {})</title></circle>\n",
        fmt_px(px), fmt_px(py), m.color, xml_escape(m.label), xml_escape(xf(m.x)), xml_escape(yf(m.y)));
    if (!m.label.empty()) {
      const bool right_side = px < f.left + 0.7 * f.w();
      out += text(right_side ? px + 8 : px - 8, py - 8, m.label, right_side ? "start" : "end",
                  fmt::format("fill=\"{}\" font-weight=\"600\"", m.color).c_str());
    }
  }
  double leg_y = c.height - leg_h + 4;
  if (!leg.empty()) {
    auto [svg, h] = legend(leg, f.left, leg_y, c.width - 80, true);
    out += svg;
    leg_y += h;
  }
  if (!c.legend_extra.empty()) out += legend(c.legend_extra, f.left, leg_y, c.width - 80).first;
  out += "</svg>\n";
  return out;
}

std::string render_svg(const StackedBars& c) {
  auto vf = c.format ? c.format : default_format;
  double top = 0;
  for (const auto& row : c.values) {
    double s = 0;
    for (double v : row) s += std::max(v, 0.0);
    top = std::max(top, s);
  }
  if (c.limit) top = std::max(top, *c.limit);
  if (top <= 0) top = 1;
  const double leg_h = legend_height(c.segments, c.width - 80);
  Frame f{80, c.title.empty() ? 16.0 : 36.0, double(c.width) - 20, double(c.height) - 44 - leg_h};
  const std::vector<double> ticks = nice_ticks(0, top * 1.08, Scale::kLinear, 6);
  const double y1 = std::max(top * 1.08, ticks.empty() ? top : ticks.back());
  Mapper my{0, y1, Scale::kLinear, f.bottom, f.top};

  std::string out = svg_open(c.width, c.height);
  if (!c.title.empty()) out += text(c.width / 2.0, 22, c.title, "middle", "font-size=\"14\" font-weight=\"600\"");
  for (double t : ticks) {
    const double py = my(t);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e4e4e4\"/>\n", fmt_px(f.left),
                       fmt_px(py), fmt_px(f.right));
    out += text(f.left - 6, py + 4, vf(t), "end", "fill=\"#333\"");
  }
  out += fmt::format(
      "<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" font-weight=\"600\" transform=\"rotate(-90 16 {0})\">{1}</text>\n",
      fmt_px((f.top + f.bottom) / 2), xml_escape(c.y_label));
  const size_t n = c.categories.size();
  const double slot = n ? f.w() / double(n) : f.w();
  const double bw = std::min(90.0, slot * 0.6);
  for (size_t i = 0; i < n; ++i) {
    const double cx = f.left + slot * (double(i) + 0.5);
    double acc = 0, total = 0;
    for (double v : c.values[i]) total += std::max(v, 0.0);
    for (size_t s = 0; s < c.segments.size() && s < c.values[i].size(); ++s) {
      const double v = std::max(c.values[i][s], 0.0);
      if (v <= 0) continue;
      const double ya = my(acc), yb = my(acc + v);
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.5\">"
          "<title>{} — {}: {} ({:.1f}%)</title></rect>\n",
          fmt_px(cx - bw / 2), fmt_px(yb), fmt_px(bw), fmt_px(std::max(ya - yb, 0.5)), palette(s),
          xml_escape(c.categories[i]), xml_escape(c.segments[s]), xml_escape(vf(v)), 100.0 * v / total);
      acc += v;
    }
    out += text(cx, my(total) - 5, vf(total), "middle", "font-weight=\"600\"");
    out += text(cx, f.bottom + 16, c.categories[i], "middle");
  }
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#888\"/>\n", fmt_px(f.left),
                     fmt_px(f.bottom), fmt_px(f.right));
  if (c.limit) {
    const double py = my(*c.limit);
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#D55E00\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
        fmt_px(f.left), fmt_px(py), fmt_px(f.right));
    out += text(f.right - 4, py - 5, c.limit_label + " " + vf(*c.limit), "end", "fill=\"#D55E00\"");
  }
  std::vector<std::pair<std::string, std::string>> leg;
  for (size_t s = 0; s < c.segments.size(); ++s) leg.push_back({c.segments[s], palette(s)});
  out += legend(leg, f.left, c.height - leg_h + 4, c.width - 80).first;
  out += "</svg>\n";
  return out;
}

std::string render_svg(const HBars& c) {
  auto vf = c.format ? c.format : default_format;
  size_t label_chars = 4;
  for (const auto& l : c.labels) label_chars = std::max(label_chars, l.size());
  const double row_h = 22, left = std::min(24.0 + 7.5 * double(label_chars), 0.6 * c.width);
  const double top = c.title.empty() ? 10.0 : 34.0;
  const int height = int(top + row_h * double(c.labels.size()) + 44);
  double vmax = 0;
  for (double v : c.values) vmax = std::max(vmax, v);
  if (vmax <= 0) vmax = 1;
  const std::vector<double> ticks = nice_ticks(0, vmax * 1.05, Scale::kLinear, 5);
  const double x1 = std::max(vmax * 1.05, ticks.empty() ? vmax : ticks.back());
  const double right = double(c.width) - 70;
  Mapper mx{0, x1, Scale::kLinear, left, right};
  std::string out = svg_open(c.width, height);
  if (!c.title.empty()) out += text(c.width / 2.0, 22, c.title, "middle", "font-size=\"14\" font-weight=\"600\"");
  const double bottom = top + row_h * double(c.labels.size());
  for (double t : ticks) {
    const double px = mx(t);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>\n", fmt_px(px),
                       fmt_px(top), fmt_px(bottom));
    out += text(px, bottom + 16, vf(t), "middle", "fill=\"#333\"");
  }
  out += text((left + right) / 2, bottom + 34, c.x_label, "middle", "font-weight=\"600\"");
  for (size_t i = 0; i < c.labels.size(); ++i) {
    const double y = top + row_h * double(i);
    const double v = i < c.values.size() ? c.values[i] : 0;
    const std::string color = int(i) == c.highlight ? "#D55E00" : "#0072B2";
    const std::string note = i < c.notes.size() ? c.notes[i] : "";
    out += text(left - 6, y + 15, c.labels[i], "end",
                int(i) == c.highlight ? "font-weight=\"700\" font-family=\"monospace\"" : "font-family=\"monospace\"");
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {}{}</title></rect>\n",
                       fmt_px(left), fmt_px(y + 3), fmt_px(std::max(mx(v) - left, 0.5)), fmt_px(row_h - 6), color,
                       xml_escape(c.labels[i]), xml_escape(vf(v)), note.empty() ? "" : " — " + xml_escape(note));
    out += text(mx(v) + 4, y + 15, vf(v), "start", "fill=\"#333\"");
  }
  out += "</svg>\n";
  return out;
}

std::string render_svg(const Heatmap& h) {
  const int cw = h.cell_width, ch = h.cell_height, left = h.label_width, top = 64;
  const int w = left + cw * int(h.columns.size()) + 20, height = top + ch * int(h.rows.size()) + 40;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n"
      "<text x=\"10\" y=\"38\" fill=\"#555\">{}</text>\n",
      w, height, w, height, xml_escape(h.title), xml_escape(h.subtitle));
  for (size_t c = 0; c < h.columns.size(); ++c)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\n",
                     left + int(c) * cw + cw / 2, top - 6, xml_escape(h.columns[c]));
  for (size_t r = 0; r < h.rows.size(); ++r) {
    const int y = top + int(r) * ch;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, y + ch / 2 + 4,
                     xml_escape(h.rows[r]));
    for (size_t c = 0; c < h.columns.size(); ++c) {
      const int x = left + int(c) * cw;
      const std::optional<Heatmap::Cell>& cell = r < h.cells.size() && c < h.cells[r].size() ? h.cells[r][c]
                                                                                              : std::nullopt;
      if (!cell) {
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\" stroke=\"#ddd\"/>\n",
                         x, y, cw, ch);
        continue;
      }
      const double v = std::clamp(cell->shade, 0.0, 1.0);  // white to rgb(33, 102, 172)
      const int red = int(255 - v * (255 - 33)), green = int(255 - v * (255 - 102)), blue = int(255 - v * (255 - 172));
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},{})\" stroke=\"#ddd\">"
          "<title>{}</title></rect>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
          x, y, cw, ch, red, green, blue, xml_escape(cell->tooltip), x + cw / 2, y + ch / 2 + 4,
          v > 0.6 ? "white" : "black", xml_escape(cell->text));
    }
  }
  return s + "</svg>\n";
}

}  // namespace mt::report
