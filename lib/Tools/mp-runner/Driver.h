//===- Driver.h - one invocation of mp-runner -------------------*- C++ -*-===//
//
// What mp-runner does once its options are parsed, split by concern:
//   Setup.cpp       the backend and precision, compiling the model (once
//                   per variant, re-plan or warm-up switch), the data, the
//                   initial state (seed, --init-weights, --resume);
//   Training.cpp    the step loop: logs, checkpoints, non-finite losses,
//                   the switch after --amp-warmup-steps;
//   Adaptation.cpp  what the numerics checks found after each step:
//                   reports, range statistics, re-plans (--adapt-precision);
//   Compare.cpp     --compare: FP32 against AMP, the chart and the paired
//                   accuracy;
//   Report.cpp      evaluation and the end of the run: final lines, plot,
//                   JSON summary.
// A single run is the same path with one variant.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPRUNNER_DRIVER_H
#define MP_TOOLS_MPRUNNER_DRIVER_H

#include "Options.h"
#include "RunReport.h"
#include "StepLog.h"

#include "mp/Dialect/TG/Transforms/Passes.h"
#include "mp/Runner/Numerics.h"
#include "mp/Runner/Ranks.h"
#include "mp/Runner/Runner.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mp::tools {

/// Prints "mp-runner: error: <message>" and returns the exit status 1.
int fail(const llvm::Twine &message);
/// The same for an error, which prints nothing more when MLIR's handler
/// reported it already (runner::DiagnosedError).
int fail(llvm::Error err);

class Driver {
public:
  /// A driver for one rank of `ranks` (which outlives it).
  Driver(const Options &options, runner::Ranks &ranks)
      : o(options), ranks(ranks),
        progress(/*stderr*/ 2, "mp-runner", options.compileProgress) {}

  /// Runs mp-runner with the options; returns the exit status.
  int run();

private:
  // Setup.cpp
  /// Resolves --backend and --amp (with --resume's checkpoint), and what
  /// the numerics checks and the adaptation need.
  llvm::Error resolve();
  /// Loads, differentiates and compiles the model into a trainer for
  /// `mode` (off, f16, bf16), in a session of its own.
  llvm::Expected<std::unique_ptr<runner::Trainer>>
  compile(const std::string &label, const std::string &mode,
          const std::string &policyFile);
  /// The variants to train (one, or FP32 and AMP with --compare) and, with
  /// --amp-warmup-steps, the AMP step the run switches to.
  llvm::Error compileRuns();
  /// The dataset, the initial state, --init-weights and --resume.
  llvm::Error prepareData();
  llvm::Error initialiseState();
  /// Under mpirun: checks that every rank starts from the same parameters,
  /// state and step.
  llvm::Error sameStartOnEveryRank();

  // Training.cpp
  /// The step loop; returns the exit status.
  int train();
  llvm::Error saveCheckpoint(int64_t step);

  // Adaptation.cpp
  /// Replaces the run's step by `next`, carrying the parameters and state
  /// over bit for bit.
  llvm::Expected<runner::CarriedState>
  switchTo(Run &run, std::unique_ptr<runner::Trainer> next);
  /// What the numerics checks found in the step just run: reports, range
  /// statistics, and a re-plan when the evidence asks for one.
  llvm::Error afterStep(Run &run, int64_t step);
  /// Writes the final policy and the range statistics.
  llvm::Error finishAdaptation();
  /// What the numerics checks found, for the summary.
  llvm::json::Object numericsSummary() const;

  // Compare.cpp
  /// With --compare: both loss curves as a text chart.
  void printCurves();
  /// With two runs: the paired accuracy and the step-time ratio.
  void printComparison();

  // Report.cpp
  llvm::Error evaluate();
  llvm::Error report();
  llvm::Error writeSummary(const mprtAllocatorStats &stats,
                           int64_t bufferBytes);

  const Options &o;
  /// The data-parallel run this process is a rank of (one rank without
  /// mpirun).
  runner::Ranks &ranks;
  runner::BackendChoice backend;
  /// The checkpoint --resume names, read before compiling (its precision
  /// decides --amp=auto).
  std::optional<runner::Checkpoint> resumed;
  std::string ampMode, ampNote;
  runner::NumericsConfig numerics;
  /// --amp-options, parsed once (its policy and report files).
  std::unique_ptr<tg::TGMixedPrecisionPipelineOptions> ampPipeline;
  std::optional<runner::PrecisionAdapter> adapter;

  /// One session per compilation: the variants of --compare, the FP32
  /// warm-up and the AMP step after it, and every re-planned step.
  std::vector<std::unique_ptr<runner::Session>> sessions;
  /// What a long compilation is doing, on stderr.
  runner::CompileProgress progress;
  runner::ModelShape modelShape;
  bool firstCompile = true;

  std::vector<Run> runs;
  /// With --amp-warmup-steps: the AMP step the run switches to (compiled
  /// up front, so that a bad AMP option fails at once).
  std::unique_ptr<runner::Trainer> ampTrainer;
  std::optional<runner::Dataset> data;
  int64_t first = 0;

  std::unique_ptr<StepLog> log;
  bool warnedNonFinite = false;
  runner::RangeStatistics ranges;
  bool reportedFirstNonfinite = false;
  int64_t attributionLines = 0;
  std::map<std::string, int64_t> firstNonfiniteCounts;
};

} // namespace mp::tools

#endif // MP_TOOLS_MPRUNNER_DRIVER_H
