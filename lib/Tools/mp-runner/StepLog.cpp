//===- StepLog.cpp - mp-runner's per-step output --------------------------===//

#include "StepLog.h"

#include "mp/Support/Json.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <unistd.h>

using namespace mp;
using namespace mp::runner;
using namespace mp::tools;

StepLog::StepLog(Config config, llvm::ArrayRef<Run *> runs, int64_t first)
    : config(std::move(config)), runs(runs), first(first) {
  terminal = this->config.progress && ::isatty(fileno(stdout));
  every = this->config.every > 0
              ? this->config.every
              : std::max<int64_t>(1, (this->config.steps - first) / 10);
}

llvm::Error StepLog::open() {
  if (config.path.empty())
    return llvm::Error::success();
  llvm::StringRef path = config.path;
  csv = path.ends_with(".csv");
  if (!csv && !path.ends_with(".jsonl"))
    return llvm::createStringError(std::errc::invalid_argument,
                                   "--log: use a .jsonl or .csv file name");
  llvm::Expected<std::unique_ptr<AtomicFile>> opened = AtomicFile::create(path);
  if (!opened)
    return opened.takeError();
  file = std::move(*opened);
  if (csv)
    file->os() << "run,step,loss,loss_scale,good_steps,skipped,skipped_total,"
                  "step_ms,weights_hash\n";
  return file->check();
}

void StepLog::header() {
  if (terminal)
    return;
  llvm::outs() << llvm::formatv("{0,6}", "step");
  for (Run *run : runs)
    llvm::outs() << llvm::formatv("  {0,12}  {1,10}  {2,8}  {3,9}",
                                  run->label + " loss", "scale", "skipped",
                                  "ms/step");
  llvm::outs() << "\n";
}

llvm::Error StepLog::record(int64_t step) {
  for (Run *run : runs) {
    const StepRecord &r = run->records.back();
    if (file) {
      // Hashing every parameter is only worth it when someone reads it.
      llvm::Expected<uint64_t> weights = run->trainer->weightsHash();
      if (!weights)
        return weights.takeError();
      std::string hash = llvm::formatv("{0:x16}", *weights).str();
      if (csv)
        file->os() << run->label << ","
                   << llvm::format("%lld,%.9g,%.9g,%lld,%d,%lld,%.6f,",
                                   (long long)r.step, r.loss, r.lossScale,
                                   (long long)r.goodSteps, int(r.skipped),
                                   (long long)r.skippedTotal, r.milliseconds)
                   << hash << "\n";
      else
        file->os() << llvm::json::Value(llvm::json::Object{
                          {"run", run->label},
                          // The step's own precision: fp32 during
                          // --amp-warmup-steps.
                          {"precision", run->trainer->label()},
                          {"step", r.step},
                          {"loss", jsonNumber(r.loss)},
                          {"loss_scale", r.hasLossScale
                                             ? llvm::json::Value(r.lossScale)
                                             : llvm::json::Value(nullptr)},
                          {"good_steps", r.goodSteps},
                          {"skipped", r.skipped},
                          {"skipped_total", r.skippedTotal},
                          {"step_ms", r.milliseconds},
                          {"weights_hash", hash}})
                   << "\n";
    }
  }
  if (file)
    if (llvm::Error err = file->check())
      return err;
  bool last = step == config.steps;
  if (terminal) {
    // One line, redrawn: a progress bar and the latest values.
    const int width = 30;
    int filled = int(width * (step - first) /
                     std::max<int64_t>(1, config.steps - first));
    std::string bar(filled, '#');
    bar.resize(width, '.');
    llvm::outs() << "\r[" << bar << "] " << step << "/" << config.steps;
    for (Run *run : runs) {
      const StepRecord &r = run->records.back();
      llvm::outs() << llvm::formatv("  {0} loss {1:f4} scale {2} skipped {3}",
                                    run->label, r.loss, formatScale(r),
                                    r.skippedTotal);
    }
    llvm::outs() << "   ";
    llvm::outs().flush();
    lineOpen = true;
    return llvm::Error::success();
  }
  if (step % every != 0 && !last && step != first + 1)
    return llvm::Error::success();
  llvm::outs() << llvm::formatv("{0,6}", step);
  for (Run *run : runs) {
    const StepRecord &r = run->records.back();
    // The mean step time since the previous line.
    double mean = 0;
    int64_t n = 0;
    for (auto it = run->records.rbegin();
         it != run->records.rend() && n < every; ++it, ++n)
      mean += it->milliseconds;
    llvm::outs() << llvm::formatv("  {0,12:f6}  {1,10}  {2,8}  {3,9:f3}",
                                  r.loss, formatScale(r), r.skippedTotal,
                                  mean / std::max<int64_t>(n, 1));
  }
  llvm::outs() << "\n";
  llvm::outs().flush();
  return llvm::Error::success();
}

llvm::Error StepLog::finish() {
  if (lineOpen) {
    llvm::outs() << "\n";
    lineOpen = false;
  }
  if (!file)
    return llvm::Error::success();
  llvm::Error err = file->commit();
  file.reset();
  return err;
}
