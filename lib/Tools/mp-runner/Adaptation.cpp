//===- Adaptation.cpp - mp-runner: numerics checks and re-plans -----------===//
//
// After every step: the first op that produced an infinity or a NaN
// (--check-numerics), the range statistics (--range-stats), and, with
// --adapt-precision, the re-plan that pins a repeatedly overflowing op to
// f32 and carries the state over to the recompiled step
// (docs/Numerics.md).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mp;
using namespace mp::runner;
using namespace mp::tools;

llvm::Expected<CarriedState> Driver::switchTo(Run &run,
                                              std::unique_ptr<Trainer> next) {
  llvm::Expected<CarriedState> carried = next->adoptState(*run.trainer);
  if (!carried)
    return carried.takeError();
  if (carried->hashBefore != carried->hashAfter)
    return llvm::createStringError(
        std::errc::io_error,
        "the state changed on its way to the recompiled step (hash %016llx "
        "before, %016llx after)",
        (unsigned long long)carried->hashBefore,
        (unsigned long long)carried->hashAfter);
  run.trainer = std::move(next);
  // Rows of the statistics belong to one compilation: start again.
  if (!o.rangeStats.empty() && ranges.steps() > 0) {
    llvm::outs() << "range statistics: starting again with the new step\n";
    ranges = RangeStatistics();
  }
  return carried;
}

llvm::Error Driver::afterStep(Run &run, int64_t step) {
  const StepRecord &r = run.records.back();
  const StepSignature &stepSig = run.trainer->signature();
  bool collect = !o.rangeStats.empty() &&
                 (o.rangeStatsSteps == 0 || step - first < o.rangeStatsSteps);
  bool explain =
      r.firstNonfinite >= 0 && o.checkNumerics && !reportedFirstNonfinite;
  std::vector<float> rows;
  if (collect || explain) {
    llvm::Expected<std::vector<float>> stats = run.trainer->numericsStats();
    if (!stats)
      return stats.takeError();
    rows = std::move(*stats);
  }
  if (collect)
    ranges.add(rows);
  if (r.firstNonfinite >= 0) {
    const CheckedOp *op = stepSig.findCheckedOp(r.firstNonfinite);
    if (!op)
      return llvm::createStringError(
          std::errc::invalid_argument,
          "the step reports op #%lld, which tg-check-numerics did not watch",
          (long long)r.firstNonfinite);
    ++firstNonfiniteCounts[op->name];
    if (explain) {
      printNonfiniteReport(llvm::outs(), r, *op, rows);
      reportedFirstNonfinite = true;
    } else if (r.skipped && (o.checkNumerics || adapter) &&
               attributionLines < 20) {
      llvm::outs() << "numerics: step " << r.step << " skipped (loss scale now "
                   << formatScale(r) << "): first non-finite value from "
                   << describeCheckedOp(*op) << "\n";
      if (++attributionLines == 20)
        llvm::outs() << "numerics: (further skipped steps are counted in "
                        "the summary only)\n";
    }
  }
  if (!adapter)
    return llvm::Error::success();
  auto hit = adapter->observe(r, stepSig);
  if (!hit)
    return llvm::Error::success();
  // A copy: the table belongs to the step the re-plan replaces.
  CheckedOp op = *hit->first;
  if (!adapter->pin(op)) {
    llvm::outs() << "adapt-precision: step " << r.step << ": "
                 << describeCheckedOp(op) << " keeps overflowing ("
                 << hit->second << "), but "
                 << (op.pin.empty() ? "it has no precision to change"
                                    : "it is pinned to f32 already")
                 << "; leaving it\n";
    return llvm::Error::success();
  }
  if (llvm::Error err = adapter->writePolicy())
    return err;
  llvm::Expected<std::unique_ptr<Trainer>> next =
      compile(run.label, run.amp, adapter->path());
  if (!next) {
    fail(next.takeError());
    return llvm::createStringError(std::errc::invalid_argument,
                                   "the re-planned step does not compile");
  }
  if (llvm::Error err = (*next)->initialize(o.seed))
    return err;
  llvm::Expected<CarriedState> carried = switchTo(run, std::move(*next));
  if (!carried)
    return carried.takeError();
  std::vector<std::string> pinned(op.pin.begin(), op.pin.end());
  llvm::outs() << "adapt-precision: step " << r.step
               << ": re-planned: " << describeCheckedOp(op) << " "
               << hit->second << "; pinned " << llvm::join(pinned, ", ")
               << " to f32; recompiled; carried " << carried->carried
               << " parameter and state tensors over unchanged (hash "
               << llvm::format_hex_no_prefix(carried->hashBefore, 16)
               << " before, "
               << llvm::format_hex_no_prefix(carried->hashAfter, 16)
               << " after); policy written to " << adapter->path() << "\n";
  adapter->replans.push_back(
      {r.step, op.name, std::move(pinned), hit->second, *carried});
  return llvm::Error::success();
}

llvm::Error Driver::finishAdaptation() {
  if (adapter) {
    if (llvm::Error err = adapter->writePolicy())
      return err;
    llvm::outs() << "adapt-precision: " << adapter->replans.size() << " re-plan"
                 << (adapter->replans.size() == 1 ? "" : "s") << ", "
                 << adapter->numPinned()
                 << " op(s) pinned to f32; final policy written to "
                 << adapter->path()
                 << " (use it with --amp-options=policy=" << adapter->path()
                 << ")\n";
  }
  if (o.rangeStats.empty())
    return llvm::Error::success();
  const StepSignature &last = runs[0].trainer->signature();
  if (llvm::Error err = ranges.write(o.rangeStats, last, runs[0].amp))
    return err;
  ranges.printClosest(llvm::outs(), last, 5);
  llvm::outs() << "range statistics written to " << o.rangeStats << "\n";
  // With the precision report when the run wrote one (report=...).
  if (ampPipeline && !ampPipeline->reportFile.empty() && runs[0].amp != "off") {
    if (llvm::Error err = ranges.annotateReport(ampPipeline->reportFile, last))
      return err;
    llvm::outs() << "ranges added to the precision report "
                 << ampPipeline->reportFile << "\n";
  }
  return llvm::Error::success();
}

llvm::json::Object Driver::numericsSummary() const {
  llvm::json::Object summary;
  if (o.ampWarmupSteps > 0)
    summary["amp_warmup_steps"] = int64_t(o.ampWarmupSteps);
  if (!firstNonfiniteCounts.empty() || o.checkNumerics || adapter) {
    llvm::json::Object counts;
    for (auto &[name, count] : firstNonfiniteCounts)
      counts[name] = count;
    summary["first_nonfinite_ops"] = std::move(counts);
  }
  if (adapter) {
    llvm::json::Array replans;
    for (const Replan &r : adapter->replans)
      replans.push_back(llvm::json::Object{
          {"step", r.step},
          {"op", r.op},
          {"pinned", llvm::json::Array(r.pinned)},
          {"evidence", r.evidence},
          {"carried_tensors", int64_t(r.state.carried)},
          {"state_hash_before",
           llvm::utohexstr(r.state.hashBefore, /*LowerCase=*/true, 16)},
          {"state_hash_after",
           llvm::utohexstr(r.state.hashAfter, /*LowerCase=*/true, 16)}});
    summary["replans"] = std::move(replans);
    summary["adapted_policy"] = adapter->path();
  }
  return summary;
}
