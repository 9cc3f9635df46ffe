//===- RunReport.cpp - what mp-runner reports about a run -----------------===//

#include "RunReport.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mp;
using namespace mp::runner;
using namespace mp::tools;

double tools::meanStepTime(const Run &run) {
  double sum = 0;
  int64_t n = 0;
  for (size_t k = run.records.size() > 1 ? 1 : 0; k < run.records.size(); ++k) {
    sum += run.records[k].milliseconds;
    ++n;
  }
  return n ? sum / n : 0;
}

tools::Disagreement tools::compareClassifications(const Run &a,
                                                   const Run &b) {
  Disagreement d;
  for (size_t i = 0, e = std::min(a.correct.size(), b.correct.size()); i < e;
       ++i) {
    d.onlyA += a.correct[i] && !b.correct[i];
    d.onlyB += b.correct[i] && !a.correct[i];
  }
  return d;
}

void tools::writeSvg(llvm::raw_ostream &os, llvm::ArrayRef<Run> runs,
                      llvm::StringRef title) {
  const double width = 800, height = 480, left = 70, right = 20, top = 40,
               bottom = 50;
  double maxLoss = 0, minLoss = INFINITY;
  int64_t maxStep = 1;
  for (const Run &run : runs)
    for (const StepRecord &r : run.records)
      if (std::isfinite(r.loss)) {
        maxLoss = std::max(maxLoss, r.loss);
        minLoss = std::min(minLoss, r.loss);
        maxStep = std::max(maxStep, r.step);
      }
  if (!(minLoss < maxLoss)) {
    minLoss = 0;
    maxLoss = std::max(1.0, maxLoss);
  }
  minLoss = std::min(minLoss, 0.0);
  auto x = [&](double s) {
    return left + (width - left - right) * s / double(maxStep);
  };
  auto y = [&](double l) {
    return top +
           (height - top - bottom) * (1 - (l - minLoss) / (maxLoss - minLoss));
  };
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" font-family=\"sans-serif\" "
     << "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
        "fill=\"white\"/>\n";
  os << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" "
     << "font-size=\"15\">" << title << "</text>\n";
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"black\"/>\n",
                      left, height - bottom, width - right);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                      "stroke=\"black\"/>\n",
                      left, top, height - bottom);
  for (int k = 0; k <= 5; ++k) {
    double l = minLoss + (maxLoss - minLoss) * k / 5;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">"
                        "{2:f2}</text>\n",
                        left - 6, y(l) + 4, l);
    double s = double(maxStep) * k / 5;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
                        "{2}</text>\n",
                        x(s), height - bottom + 18, int64_t(s));
  }
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">step"
                      "</text>\n<text x=\"16\" y=\"{2}\" transform=\"rotate("
                      "-90 16 {2})\" text-anchor=\"middle\">loss</text>\n",
                      (left + width - right) / 2, height - 12,
                      (top + height - bottom) / 2);
  const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c"};
  for (auto [k, run] : llvm::enumerate(runs)) {
    os << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\""
       << colors[k % 3] << "\" points=\"";
    for (const StepRecord &r : run.records)
      if (std::isfinite(r.loss))
        os << llvm::formatv("{0:f1},{1:f1} ", x(r.step), y(r.loss));
    os << "\"/>\n";
    std::string legend = run.label;
    if (run.accuracy)
      legend += llvm::formatv(" (accuracy {0:f2}%)", *run.accuracy).str();
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"{2}\">{3}</text>\n",
                        width - right - 260, top + 18 + 18 * k, colors[k % 3],
                        legend);
  }
  os << "</svg>\n";
}

void tools::printChart(llvm::raw_ostream &os, llvm::ArrayRef<Run> runs) {
  const int width = 64, height = 12;
  std::vector<std::vector<double>> columns;
  double lo = INFINITY, hi = -INFINITY;
  for (const Run &run : runs) {
    std::vector<double> col(width, NAN);
    size_t n = run.records.size();
    for (int c = 0; c < width && n; ++c) {
      size_t begin = c * n / width,
             end = std::max(begin + 1, (c + 1) * n / width);
      double sum = 0;
      int count = 0;
      for (size_t k = begin; k < end && k < n; ++k)
        if (std::isfinite(run.records[k].loss)) {
          sum += run.records[k].loss;
          ++count;
        }
      if (count) {
        col[c] = sum / count;
        lo = std::min(lo, col[c]);
        hi = std::max(hi, col[c]);
      }
    }
    columns.push_back(std::move(col));
  }
  if (!(lo < hi))
    return;
  std::vector<std::string> grid(height, std::string(width, ' '));
  const char marks[] = {'*', 'o'};
  for (size_t r = 0; r < columns.size() && r < 2; ++r)
    for (int c = 0; c < width; ++c) {
      if (!std::isfinite(columns[r][c]))
        continue;
      int row =
          int(std::lround((hi - columns[r][c]) / (hi - lo) * (height - 1)));
      char &cell = grid[row][c];
      cell = cell == ' ' ? marks[r] : '#';
    }
  os << "loss (" << runs[0].label << " *";
  if (runs.size() > 1)
    os << ", " << runs[1].label << " o, both #";
  os << ")\n";
  for (int row = 0; row < height; ++row) {
    double v = hi - (hi - lo) * row / (height - 1);
    os << llvm::format("%8.3f |", v) << grid[row] << "\n";
  }
  os << "         +" << std::string(width, '-') << "\n";
  os << llvm::format("          step %-10lld",
                     (long long)runs[0].records.front().step)
     << std::string(width - 30, ' ')
     << llvm::format("%10lld\n", (long long)runs[0].records.back().step);
}
