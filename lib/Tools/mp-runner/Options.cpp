//===- Options.cpp - mp-runner's command line -----------------------------===//

#include "Options.h"

#include "mp/Runner/Trainer.h"

#include <cmath>

using namespace mp;
using namespace mp::tools;

/// Checks the options that do not need the step.
llvm::Error tools::checkOptions(const Options &o) {
  auto bad = [](const llvm::Twine &message) {
    return llvm::createStringError(std::errc::invalid_argument, "%s",
                                   message.str().c_str());
  };
  if (o.input.empty())
    return bad("no training step given (mp-runner <step.mlir>; see --help)");
  if (o.amp != "f16" && o.amp != "bf16" && o.amp != "off" && o.amp != "auto")
    return bad("--amp must be f16, bf16, off or auto, not '" + o.amp + "'");
  if (o.layout != "auto" && o.layout != "nhwc" && o.layout != "nchw" &&
      o.layout != "off")
    return bad("--layout must be auto, nhwc, nchw or off, not '" + o.layout +
               "'");
  if (llvm::Error err = o.reports.check(o.layout))
    return err;
  // The reports of the passes that the numerics checks turn off.
  struct PassReport {
    const llvm::cl::opt<std::string> &report;
    const llvm::cl::opt<bool> &pass;
    const char *withoutIt;
  };
  for (const PassReport &r :
       {PassReport{o.reports.fusion, o.fuseEpilogues, "leave the step unfused"},
        PassReport{o.reports.transposes, o.foldTransposes,
                   "leave its transposes as they are"},
        PassReport{o.shadowsReport, o.shadowWeights,
                   "leave the weights without shadows"}}) {
    if (r.report.empty())
      continue;
    std::string flag = ("--" + r.report.ArgStr).str();
    if (!r.pass)
      return bad(flag + " needs --" + r.pass.ArgStr);
    if (o.checkNumerics || !o.rangeStats.empty() || !o.adaptPrecision.empty())
      return bad(flag +
                 ": --check-numerics, --range-stats and "
                 "--adapt-precision " +
                 r.withoutIt);
  }
  if (o.backend != "cpu" && o.backend != "cuda" && o.backend != "auto")
    return bad("--backend must be cpu, cuda or auto, not '" + o.backend + "'");
  if (o.steps < 1 || o.steps > runner::kMaxSteps)
    return bad("--steps must be at least 1 and at most 2^53");
  if (o.compare && (!o.resume.empty() || !o.checkpoint.empty()))
    return bad("--compare does not take checkpoints");
  if (o.trainSamples < 1)
    return bad("--train-samples must be positive");
  if (o.evalSamples < 0)
    return bad("--eval-samples must be 0 (all) or positive");
  if (o.onNonFinite != "stop" && o.onNonFinite != "warn")
    return bad("--on-nonfinite must be stop or warn, not '" + o.onNonFinite +
               "'");
  if (!o.evalData.empty() && o.data.empty())
    return bad("--eval-data needs --data (the synthetic tasks have their own "
               "held-out split)");
  if (o.checkpointEvery < 0 || o.logEvery < 0)
    return bad("--checkpoint-every and --log-every must not be negative");
  if (o.compare && (o.checkNumerics || !o.rangeStats.empty() ||
                    !o.adaptPrecision.empty() || o.ampWarmupSteps > 0))
    return bad("--check-numerics, --range-stats, --adapt-precision and "
               "--amp-warmup-steps apply to one run, not to --compare");
  if (o.checkNumericsScope != "all" && o.checkNumericsScope != "forward" &&
      o.checkNumericsScope != "backward")
    return bad("--check-numerics-scope must be all, forward or backward, not "
               "'" +
               o.checkNumericsScope + "'");
  if (!o.checkNumerics &&
      (o.checkNumericsScope != "all" || !o.checkNumericsOps.empty()))
    return bad("--check-numerics-scope and --check-numerics-ops need "
               "--check-numerics");
  if (o.rangeStatsSteps < 0 || (o.rangeStatsSteps > 0 && o.rangeStats.empty()))
    return bad("--range-stats-steps must not be negative, and needs "
               "--range-stats");
  if (o.adaptSkips < 1 || o.adaptWindow < 1 || !(o.adaptMinScale >= 0))
    return bad("--adapt-skips and --adapt-window must be at least 1, and "
               "--adapt-min-scale not negative");
  if (o.ampWarmupSteps < 0)
    return bad("--amp-warmup-steps must not be negative");
  if (!(o.compileProgress >= 0) || !std::isfinite(o.compileProgress))
    return bad("--compile-progress must be 0 or a number of seconds");
  if (!(o.bucketMb >= 0) || !std::isfinite(o.bucketMb))
    return bad("--bucket-mb must be a finite number of MiB, at least 0");
  if (!(o.collectiveTimeout >= 0) || !std::isfinite(o.collectiveTimeout))
    return bad("--collective-timeout must be 0 (forever) or a number of "
               "seconds");
  if (o.optLevel > 3)
    return bad("-O must be 0, 1, 2 or 3, not " + llvm::Twine(o.optLevel));
  return llvm::Error::success();
}
