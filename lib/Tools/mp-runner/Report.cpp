//===- Report.cpp - mp-runner: evaluation and the end of a run ------------===//

#include "Driver.h"

#include "mp/Support/FileOutput.h"
#include "mp/Support/Json.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mp;
using namespace mp::runner;
using namespace mp::tools;

llvm::Error Driver::evaluate() {
  bool terminal = log->isTerminal();
  for (Run &run : runs) {
    int64_t batches = run.trainer->evaluationBatches(*data, o.evalSamples);
    if (!batches)
      continue;
    std::string what =
        llvm::formatv("evaluating {0} ({1} split, {2} batches)", run.label,
                      data->evalHeldOut ? "held-out" : "training", batches)
            .str();
    if (!terminal)
      llvm::outs() << what << "\n";
    auto progress = [&](int64_t done, int64_t total) {
      if (!terminal)
        return;
      llvm::outs() << "\r" << what << ": " << done << "/" << total;
      if (done == total)
        llvm::outs() << "\n";
      llvm::outs().flush();
    };
    llvm::Expected<std::vector<bool>> correct =
        run.trainer->evaluate(*data, o.evalSamples, progress);
    if (!correct)
      return correct.takeError();
    run.correct = std::move(*correct);
    run.accuracy =
        run.correct.empty()
            ? 0.0
            : 100.0 * llvm::count(run.correct, true) / run.correct.size();
  }
  return llvm::Error::success();
}

llvm::Error Driver::report() {
  llvm::outs() << "\n";
  printCurves();
  std::string split = data->evalHeldOut ? "test" : "training";
  for (Run &run : runs) {
    const StepRecord &last = run.records.back();
    llvm::outs() << llvm::formatv("{0,5}: final loss {1:f6}", run.label,
                                  last.loss);
    if (run.accuracy)
      llvm::outs() << llvm::formatv(", {0} accuracy {1:f2}%", split,
                                    *run.accuracy);
    llvm::outs() << llvm::formatv(", {0:f3} ms/step, {1} skipped steps",
                                  meanStepTime(run), last.skippedTotal);
    if (run.trainer->signature().findArgument("amp.loss_scale"))
      llvm::outs() << ", loss scale " << formatScale(last);
    llvm::outs() << "\n";
  }
  if (llvm::Error err = finishAdaptation())
    return err;
  printComparison();
  mprtAllocatorStats stats = runs[0].trainer->allocatorStats();
  int64_t bufferBytes = 0;
  for (Run &run : runs)
    bufferBytes += run.trainer->bufferBytes();
  llvm::outs() << llvm::formatv(
      "{0} allocator: {1} system allocations, {2} served from the cache, "
      "peak {3:f2} MiB\n",
      backend.backend == Backend::CUDA ? "device" : "runtime",
      stats.systemAllocations, stats.cacheHits,
      stats.peakBytesInUse / 1048576.0);

  if (!o.plot.empty()) {
    std::string title =
        "mp-runner: " + llvm::sys::path::filename(o.input).str();
    if (llvm::Error err =
            writeFileAtomically(o.plot, [&](llvm::raw_ostream &os) {
              writeSvg(os, runs, title);
              return llvm::Error::success();
            }))
      return err;
    llvm::outs() << "loss curves written to " << o.plot << "\n";
  }
  if (!o.summary.empty())
    return writeSummary(stats, bufferBytes);
  return llvm::Error::success();
}

llvm::Error Driver::writeSummary(const mprtAllocatorStats &stats,
                                 int64_t bufferBytes) {
  llvm::json::Array runsJson;
  for (const Run &run : runs) {
    llvm::json::Array losses, scales, skipped, times;
    for (const StepRecord &r : run.records) {
      losses.push_back(jsonNumber(r.loss));
      times.push_back(r.milliseconds);
      scales.push_back(r.hasLossScale ? llvm::json::Value(r.lossScale)
                                      : llvm::json::Value(nullptr));
      skipped.push_back(r.skipped);
    }
    const StepRecord *last =
        run.records.empty() ? nullptr : &run.records.back();
    llvm::json::Object entry{
        {"run", run.label},
        {"amp", run.amp},
        {"final_loss", last ? jsonNumber(last->loss) : nullptr},
        {"mean_step_ms", meanStepTime(run)},
        {"skipped_steps", last ? last->skippedTotal : 0},
        {"losses", std::move(losses)},
        {"loss_scales", std::move(scales)},
        {"skipped", std::move(skipped)},
        {"step_ms", std::move(times)}};
    if (run.accuracy) {
      entry["accuracy"] = *run.accuracy;
      entry["accuracy_split"] = data->evalHeldOut ? "held-out" : "training";
      entry["eval_samples"] = int64_t(run.correct.size());
      // Paired counts against the first run, for significance tests.
      if (&run != &runs.front() && runs.front().accuracy) {
        Disagreement d = compareClassifications(runs.front(), run);
        entry["paired_with"] = runs.front().label;
        entry["only_this_correct"] = d.onlyB;
        entry["only_paired_correct"] = d.onlyA;
      }
    }
    runsJson.push_back(std::move(entry));
  }
  llvm::json::Object root{
      {"model", o.input},
      {"steps", int64_t(o.steps)},
      {"first_step", first + 1},
      {"backend", backendName(backend.backend)},
      {"amp", ampMode},
      {"system_allocations", int64_t(stats.systemAllocations)},
      {"peak_bytes", int64_t(stats.peakBytesInUse)},
      {"buffer_bytes", bufferBytes},
      {"runs", std::move(runsJson)}};
  if (ranks.joined()) {
    const StepSignature &sig = runs.front().trainer->signature();
    root["data_parallel"] = llvm::json::Object{
        {"ranks", int64_t(ranks.size())},
        {"all_reduces", int64_t(sig.allReduces)},
        {"all_reduce_bytes", sig.allReduceBytes}};
  }
  for (auto &entry : numericsSummary())
    root[entry.first] = std::move(entry.second);
  return writeJsonFile(o.summary, llvm::json::Value(std::move(root)));
}
