//===- RunnerMain.cpp - mp-runner: train a model with a compiled step -----===//
//
// Reads a training step, or a forward function it differentiates into one
// (tg-make-train-step), compiles it (optionally through the
// mixed-precision pipeline) for the CPU or CUDA runtime, initialises
// parameters from a seed and trains on a built-in synthetic dataset or .npy
// arrays, then measures accuracy on held-out data with the step's forward
// pass alone. With --compare it trains FP32 and AMP variants from the same
// initialisation on the same batches and prints both loss curves and final
// accuracies side by side. A loss that stops being finite (outside a step
// that loss scaling skipped) stops the run and names the step. Driver.h
// says where each part lives.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/mp-runner/RunnerMain.h"

#include "Driver.h"

#include "mp/Support/FileOutput.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <fcntl.h>
#include <unistd.h>

using namespace mp;
using namespace mp::runner;
using namespace mp::tools;

/// "rank N: " in the messages of a data-parallel run's ranks.
static std::string rankPrefix;

int tools::fail(const llvm::Twine &message) {
  // One write per message: the ranks of a data-parallel run share stderr,
  // where the pieces of two ranks' unbuffered writes would interleave.
  llvm::errs() << ("mp-runner: error: " + rankPrefix + message + "\n").str();
  return 1;
}

int tools::fail(llvm::Error err) {
  int status = 0;
  llvm::handleAllErrors(
      std::move(err), [&](const DiagnosedError &) { status = 1; },
      [&](const llvm::ErrorInfoBase &e) { status = fail(e.message()); });
  return status;
}

int Driver::run() {
  if (llvm::Error err = resolve())
    return fail(std::move(err));
  if (llvm::Error err = compileRuns())
    return fail(std::move(err));
  if (llvm::Error err = prepareData())
    return fail(std::move(err));
  if (llvm::Error err = initialiseState())
    return fail(std::move(err));
  if (int status = train())
    return status;
  if (llvm::Error err = evaluate())
    return fail(std::move(err));
  if (llvm::Error err = report())
    return fail(std::move(err));
  return 0;
}

int mp::runnerMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  reportFileSizeLimitAsError();
  Options o;
  llvm::cl::HideUnrelatedOptions(o.category);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "mp-runner: compile a tg training step and train a model with it\n");

  if (o.deviceInfo) {
    describeDevices(llvm::outs());
    return 0;
  }
  if (llvm::Error err = checkOptions(o))
    return fail(std::move(err));
  if (!Ranks::launchedByMpi()) {
    Ranks one;
    return Driver(o, one).run();
  }

  // One rank of a data-parallel run: the step averages its gradients over
  // the ranks, rank 0 prints and writes the files, and a rank that fails
  // stops them all (the others may be waiting for it in a collective).
  llvm::Expected<Ranks> ranks = Ranks::join(o.collectiveTimeout);
  if (!ranks)
    return fail(ranks.takeError());
  if (ranks->size() > 1) {
    rankPrefix = "rank " + std::to_string(ranks->rank()) + ": ";
    if (!o.adaptPrecision.empty() || !o.rangeStats.empty())
      return fail("--adapt-precision and --range-stats follow one "
                  "process's numerics; they do not run under mpirun yet");
  }
  if (ranks->rank() != 0) {
    for (llvm::cl::opt<std::string> *file :
         {&o.log, &o.summary, &o.checkpoint, &o.plot, &o.reports.layout,
          &o.reports.fusion, &o.reports.transposes, &o.shadowsReport})
      file->setValue("");
    llvm::outs().flush();
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::close(null);
    }
  }
  // The driver (and every buffer a timed-out collective may still write)
  // lives until the abort.
  Driver driver(o, *ranks);
  int status = driver.run();
  llvm::outs().flush();
  if (status != 0 && ranks->size() > 1)
    ranks->abort(status);
  return status;
}
