// svg_plot: a minimal line/point chart as SVG text (for `lockstep report`): a log2 x axis
// (rank counts) or a linear one (steps), a linear y axis, a legend. No dependencies; any
// browser shows it. Written by hand: charts of a few hundred points need no plotting library
// on a cluster's login node.
#pragma once

#include <string>
#include <vector>

namespace lockstep::io {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
  std::string color = "#1f77b4";
  bool line = true, points = false, dashed = false;
};

struct Chart {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  double y_min = 0, y_max = 0;  // y_max 0: from the data
  bool log_x = true;            // false: linear x from the data's least to its greatest x
};

// TEXT with &, <, >, ' and " as XML entities (names in SVG and HTML).
std::string xml_escape(const std::string& text);

// Charts side by side, each WIDTH x HEIGHT pixels.
std::string svg_charts(const std::vector<Chart>& charts, int width = 460, int height = 340);

}  // namespace lockstep::io
