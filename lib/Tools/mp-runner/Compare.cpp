//===- Compare.cpp - mp-runner --compare: FP32 against AMP ----------------===//
//
// --compare trains FP32 and an AMP variant from the same initialisation on
// the same batches (Setup.cpp compiles both; the step loop runs both). What
// it adds at the end: the two loss curves as a text chart, and the paired
// comparison of the evaluations (McNemar's counts, RunReport.h) and of the
// step times.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mp;
using namespace mp::runner;
using namespace mp::tools;

void Driver::printCurves() {
  if (!o.compare)
    return;
  printChart(llvm::outs(), runs);
  llvm::outs() << "\n";
}

void Driver::printComparison() {
  if (runs.size() != 2)
    return;
  std::string split = data->evalHeldOut ? "test" : "training";
  if (runs[0].accuracy && runs[1].accuracy) {
    Disagreement d = compareClassifications(runs[0], runs[1]);
    llvm::outs() << llvm::formatv(
        "{0} accuracy difference ({1} - fp32): {2:f2} points; the runs "
        "disagree on {3} of {4} samples ({1} alone right on {5}, fp32 "
        "alone on {6})\n",
        split, runs[1].label, *runs[1].accuracy - *runs[0].accuracy,
        d.onlyA + d.onlyB, runs[1].correct.size(), d.onlyB, d.onlyA);
  }
  double t0 = meanStepTime(runs[0]), t1 = meanStepTime(runs[1]);
  if (t0 > 0)
    llvm::outs() << llvm::formatv("step time {0} / fp32: {1:f2}x\n",
                                  runs[1].label, t1 / t0);
}
