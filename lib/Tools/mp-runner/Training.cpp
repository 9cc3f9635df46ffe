//===- Training.cpp - mp-runner: the step loop ----------------------------===//

#include "Driver.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mp;
using namespace mp::runner;
using namespace mp::tools;

llvm::Error Driver::saveCheckpoint(int64_t step) {
  std::map<std::string, std::string> metadata{
      {"format", "mp-runner checkpoint"},
      {"model", o.input},
      {"amp", runs[0].trainer->label() == "fp32" ? "off" : ampMode},
      {"amp_options", o.ampOptions},
      {"seed", std::to_string(o.seed)},
      {"data_parallel_ranks", std::to_string(ranks.size())}};
  llvm::Expected<Checkpoint> ckpt =
      runs[0].trainer->checkpoint(step, std::move(metadata));
  if (!ckpt)
    return ckpt.takeError();
  if (llvm::Error err = writeSafetensors(o.checkpoint, *ckpt))
    return err;
  if (!log->isTerminal() || step == o.steps)
    llvm::outs() << "checkpoint written: " << o.checkpoint << " (step " << step
                 << ")\n";
  return llvm::Error::success();
}

int Driver::train() {
  llvm::outs() << "mp-runner: " << o.input << " ("
               << runs[0].trainer->signature().entry << "), "
               << data->description << "\n";
  if (!backend.note.empty())
    llvm::outs() << "mp-runner: " << backend.note << "\n";
  llvm::outs() << "backend: " << backendName(backend.backend) << "; steps "
               << first + 1 << ".." << o.steps << "; seed " << o.seed << "\n";
  if (!ampNote.empty())
    llvm::outs() << ampNote << "\n";
  if (ranks.joined()) {
    int64_t batch = 1;
    for (const StepArgument &a : runs[0].trainer->signature().arguments)
      if (a.role == tg::ArgRole::Input && !a.shape.empty())
        batch = a.shape.front();
    llvm::outs() << "data-parallel: " << ranks.size()
                 << " rank(s) over MPI; local batch " << batch
                 << ", global batch " << batch * ranks.size()
                 << "; gradients averaged in "
                 << runs[0].trainer->signature().allReduces
                 << " all-reduce(s) of up to "
                 << llvm::format("%g", double(o.bucketMb)) << " MiB ("
                 << llvm::format("%.3f", runs[0].trainer->signature()
                                                 .allReduceBytes /
                                             1048576.0)
                 << " MiB per step); rank 0 logs and writes the files\n";
  }
  if (resumed)
    llvm::outs() << "resumed from " << o.resume << " at step " << first << "\n";

  std::vector<Run *> active;
  for (Run &run : runs)
    active.push_back(&run);
  log = std::make_unique<StepLog>(
      // Under mpirun, rank 0's stdout is a pseudo-terminal whatever mpirun's
      // own is (a pipe, a file): plain lines, as with --no-progress.
      StepLog::Config{o.log, o.logEvery, o.steps,
                      !o.noProgress && !ranks.joined()},
      active,
      first);
  if (llvm::Error err = log->open())
    return fail(std::move(err));
  log->header();

  // Ends the run with an error; the log so far is kept (it shows what led
  // there) unless writing it is what failed.
  auto stop = [&](const llvm::Twine &message) {
    if (llvm::Error err = log->finish())
      llvm::consumeError(std::move(err));
    return fail(message);
  };
  for (int64_t step = first; step < o.steps; ++step) {
    if (ampTrainer && step >= o.ampWarmupSteps) {
      llvm::Expected<CarriedState> carried =
          switchTo(runs[0], std::move(ampTrainer));
      if (!carried)
        return stop(llvm::toString(carried.takeError()));
      llvm::outs() << "amp-warmup: step " << step + 1 << " on in "
                   << runs[0].amp << ": carried " << carried->carried
                   << " parameter and state tensors over from the FP32 step"
                   << (carried->initialised.empty()
                           ? std::string()
                           : " (" + llvm::join(carried->initialised, ", ") +
                                 " start from their initial values)")
                   << "\n";
    }
    for (Run &run : runs) {
      llvm::Expected<StepRecord> r = run.trainer->step(step, *data);
      if (!r)
        return stop(run.label + " step " + llvm::Twine(step + 1) + ": " +
                    llvm::toString(r.takeError()));
      run.records.push_back(*r);
    }
    if (llvm::Error err = log->record(step + 1))
      return fail(std::move(err));
    for (Run &run : runs)
      if (llvm::Error err = afterStep(run, step))
        return stop(run.label + " step " + llvm::Twine(step + 1) + ": " +
                    llvm::toString(std::move(err)));
    for (Run &run : runs) {
      const StepRecord &r = run.records.back();
      if (std::isfinite(r.loss) || r.skipped)
        continue;
      std::string what = llvm::formatv("{0} step {1}: the loss is {2}",
                                       run.label, step + 1, r.loss)
                             .str();
      if (o.onNonFinite == "stop")
        return stop(what + " (not a step skipped by loss scaling); stopping. "
                           "Lower the learning rate, check the data, or pass "
                           "--on-nonfinite=warn to go on");
      if (!warnedNonFinite)
        llvm::errs() << "\nmp-runner: warning: " << what
                     << "; going on (--on-nonfinite=warn)\n";
      warnedNonFinite = true;
    }
    if (!o.checkpoint.empty() && o.checkpointEvery > 0 &&
        (step + 1) % o.checkpointEvery == 0 && step + 1 != o.steps)
      if (llvm::Error err = saveCheckpoint(step + 1))
        return stop(llvm::toString(std::move(err)));
  }
  if (llvm::Error err = log->finish())
    return fail(std::move(err));
  if (!o.log.empty())
    llvm::outs() << "log written: " << o.log << "\n";
  // The ranks applied the same averaged gradients: their parameters must
  // still be identical (rank 0's are the ones checkpointed; state such as
  // batch-norm statistics is per rank).
  if (ranks.joined())
    for (Run &run : runs) {
      llvm::Expected<uint64_t> hash =
          run.trainer->weightsHash(/*parametersOnly=*/true);
      if (!hash)
        return fail(hash.takeError());
      if (llvm::Error err = ranks.checkSame(
              *hash, "the parameters after step " + std::to_string(o.steps)))
        return fail(std::move(err));
    }
  if (!o.checkpoint.empty())
    if (llvm::Error err = saveCheckpoint(o.steps))
      return fail(std::move(err));
  return 0;
}
