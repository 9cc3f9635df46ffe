//===- RunReport.h - what mp-runner reports about a run ---------*- C++ -*-===//
//
// One trained variant of the model (FP32, or an AMP mode) with its per-step
// records and final accuracy, and the ways a run is reported: the text
// chart of --compare, the SVG of --plot and the JSON of --summary.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPRUNNER_RUNREPORT_H
#define MP_TOOLS_MPRUNNER_RUNREPORT_H

#include "mp/Runner/Trainer.h"
#include "mp/Support/Json.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mp::tools {

/// One variant of the model being trained, with its history.
struct Run {
  std::string label, amp;
  std::unique_ptr<runner::Trainer> trainer;
  std::vector<runner::StepRecord> records;
  std::optional<double> accuracy;
  /// Per evaluation sample, whether this run classified it correctly.
  std::vector<bool> correct;
};

/// How two runs' classifications of the same evaluation samples differ:
/// the samples only `a` got right and those only `b` got right. Under the
/// hypothesis that neither run is better, each such sample is as likely to
/// fall on either side, so `onlyB - onlyA` has standard deviation
/// sqrt(onlyA + onlyB) (McNemar's test).
struct Disagreement {
  int64_t onlyA = 0, onlyB = 0;
};
Disagreement compareClassifications(const Run &a, const Run &b);

/// The mean step time, without the first step (it fills the allocator's
/// cache and warms up).
double meanStepTime(const Run &run);

/// The loss curves as an SVG plot.
void writeSvg(llvm::raw_ostream &os, llvm::ArrayRef<Run> runs,
              llvm::StringRef title);

/// The loss curves as a text chart: one column per group of steps (the
/// group's mean), `*` for the first run, `o` for the second, `#` where they
/// share a cell.
void printChart(llvm::raw_ostream &os, llvm::ArrayRef<Run> runs);

} // namespace mp::tools

#endif // MP_TOOLS_MPRUNNER_RUNREPORT_H
