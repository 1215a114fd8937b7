// svg_plot: see svg_plot.hpp.
#include "io/records/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace lockstep::io {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string label(double v) {
  char buf[32];
  if (std::fabs(v) >= 1000) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string chart(const Chart& c, double ox, int w, int h) {
  const double left = ox + 64, right = ox + w - 16, top = 36, bottom = h - 48;
  double xmax = 1, xmin = c.log_x ? 1 : 0, ymax = c.y_max;
  bool any = false;
  for (const auto& s : c.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      xmax = any ? std::max(xmax, s.x[i]) : s.x[i];
      if (!c.log_x) xmin = any ? std::min(xmin, s.x[i]) : s.x[i];
      any = true;
      if (c.y_max <= 0) ymax = std::max(ymax, s.y[i] * 1.1);
    }
  if (c.log_x) xmax = std::max(xmax, 1.0);
  if (xmax <= xmin) xmax = xmin + 1;
  if (ymax <= c.y_min) ymax = c.y_min + 1;
  const double lx = std::log2(std::max(2.0, xmax));
  const auto px = [&](double x) {
    return c.log_x ? left + (right - left) * std::log2(std::max(1.0, x)) / lx
                   : left + (right - left) * (x - xmin) / (xmax - xmin);
  };
  const auto py = [&](double y) { return bottom - (bottom - top) * (y - c.y_min) / (ymax - c.y_min); };
  std::string out = "<text x='" + num((left + right) / 2) + "' y='20' text-anchor='middle' font-size='14'>" +
                    xml_escape(c.title) + "</text>\n<rect x='" + num(left) + "' y='" + num(top) + "' width='" +
                    num(right - left) + "' height='" + num(bottom - top) + "' fill='none' stroke='#888'/>\n";
  std::vector<double> ticks;
  if (c.log_x)
    for (double x = 1; x <= xmax * 1.0001; x *= 2) ticks.push_back(x);
  else
    for (int i = 0; i <= 4; ++i) ticks.push_back(xmin + (xmax - xmin) * i / 4);
  for (double x : ticks)
    out += "<line x1='" + num(px(x)) + "' y1='" + num(top) + "' x2='" + num(px(x)) + "' y2='" + num(bottom) +
           "' stroke='#eee'/><text x='" + num(px(x)) + "' y='" + num(bottom + 14) +
           "' text-anchor='middle' font-size='10'>" + label(x) + "</text>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = c.y_min + (ymax - c.y_min) * i / 4;
    out += "<line x1='" + num(left) + "' y1='" + num(py(y)) + "' x2='" + num(right) + "' y2='" + num(py(y)) +
           "' stroke='#eee'/><text x='" + num(left - 4) + "' y='" + num(py(y) + 3) +
           "' text-anchor='end' font-size='10'>" + label(y) + "</text>\n";
  }
  out += "<text x='" + num((left + right) / 2) + "' y='" + num(h - 14.0) + "' text-anchor='middle' font-size='12'>" +
         xml_escape(c.x_label) + "</text>\n<text x='" + num(ox + 14) + "' y='" + num((top + bottom) / 2) +
         "' text-anchor='middle' font-size='12' transform='rotate(-90 " + num(ox + 14) + " " + num((top + bottom) / 2) +
         ")'>" + xml_escape(c.y_label) + "</text>\n";
  double legend_y = top + 14;
  for (const auto& s : c.series) {
    if (s.line && s.x.size() > 1) {
      out += "<polyline fill='none' stroke='" + s.color + "' stroke-width='2'" +
             (s.dashed ? " stroke-dasharray='6 4'" : "") + " points='";
      for (size_t i = 0; i < s.x.size(); ++i) out += num(px(s.x[i])) + "," + num(py(s.y[i])) + " ";
      out += "'/>\n";
    }
    if (s.points)
      for (size_t i = 0; i < s.x.size(); ++i)
        out += "<circle cx='" + num(px(s.x[i])) + "' cy='" + num(py(s.y[i])) + "' r='4' fill='" + s.color + "'/>\n";
    out += "<rect x='" + num(right - 150) + "' y='" + num(legend_y - 8) + "' width='10' height='10' fill='" + s.color +
           "'/><text x='" + num(right - 136) + "' y='" + num(legend_y + 1) + "' font-size='10'>" + xml_escape(s.name) + "</text>\n";
    legend_y += 14;
  }
  return out;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&#39;"; break;
      case '"': out += "&quot;"; break;
      case '\t': case '\n': case '\r': out += ' '; break;
      // XML 1.0 has no other control characters, escaped or not: one in a run's name made
      // curves.svg unreadable (a hostile finding).
      default: out += static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f ? '?' : ch;
    }
  }
  return out;
}

std::string svg_charts(const std::vector<Chart>& charts, int width, int height) {
  std::string out = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(width * static_cast<int>(charts.size())) +
                    "' height='" + std::to_string(height) + "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  for (size_t i = 0; i < charts.size(); ++i) out += chart(charts[i], static_cast<double>(i) * width, width, height);
  return out + "</svg>\n";
}

}  // namespace lockstep::io
