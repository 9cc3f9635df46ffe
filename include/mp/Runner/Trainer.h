//===- Trainer.h - drives a compiled step -----------------------*- C++ -*-===//
//
// Owns the buffers of one compiled step (parameters, state, the batch and
// the result destinations), initialises them, runs steps, evaluates, and
// saves or restores checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_TRAINER_H
#define MP_RUNNER_TRAINER_H

#include "mp/Runner/CompiledStep.h"
#include "mp/Runner/Dataset.h"
#include "mp/Runner/Executor.h"
#include "mp/Runner/Ranks.h"

namespace mp::runner {

struct StepRecord {
  int64_t step = 0;
  double loss = 0;
  bool hasLossScale = false; // a dynamic scale the runner can read
  double lossScale = 1;
  int64_t goodSteps = -1;  // -1 without dynamic loss scaling
  bool skipped = false;
  int64_t skippedTotal = 0;
  double milliseconds = 0;
  /// With tg-check-numerics: the id of the first op with a non-finite
  /// result, or -1.
  int64_t firstNonfinite = -1;
};

/// The most steps a run counts: past 2^53 a step number is no longer exact
/// as a double (the logs and the summary hold it as one).
constexpr int64_t kMaxSteps = int64_t(1) << 53;

/// The loss scale of a record for printing ("-" without dynamic scaling).
std::string formatScale(const StepRecord &r);

/// What Trainer::adoptState carried from one compiled step to another.
struct CarriedState {
  /// FNV-1a of the carried tensors: as the old step left them, and as the
  /// new step holds them after the upload (read back from its buffers).
  uint64_t hashBefore = 0, hashAfter = 0;
  unsigned carried = 0;
  /// Parameters and state the old step did not have (initial values).
  std::vector<std::string> initialised;
};

class Trainer {
public:
  /// A trainer running `step` on `backend` (CUDA graphs after warm-up when
  /// `useGraphs`).
  static llvm::Expected<std::unique_ptr<Trainer>>
  create(std::string label, std::unique_ptr<CompiledStep> step,
         Backend backend, bool useGraphs);
  ~Trainer();

  const std::string &label() const { return name; }
  const StepSignature &signature() const { return compiled->signature(); }

  /// Parameters from tg.init, else seeded uniform in +-1/sqrt(fan-in) for
  /// matrices and zeros for vectors; state from tg.init or zeros.
  llvm::Error initialize(uint64_t seed);

  /// Makes this trainer one rank of the data-parallel run `ranks` (which
  /// outlives it): each step reads this rank's shard of the global batch,
  /// the loss it records is the mean over the ranks, and a step after which
  /// the ranks disagree on skipping or on the loss scale is an error;
  /// evaluation splits its batches among the ranks.
  void distribute(Ranks &ranks) { this->ranks = &ranks; }

  /// Runs training step `index` (0-based) on its batch.
  llvm::Expected<StepRecord> step(int64_t index, const Dataset &data);

  /// The number of evaluation batches evaluate() runs for `maxSamples`
  /// (0: the whole evaluation split); 0 when the step cannot be evaluated
  /// (no `logits` output, or no integer labels it classifies).
  int64_t evaluationBatches(const Dataset &data, int64_t maxSamples) const;

  /// Whether the argmax of the `logits` output is the label, for each
  /// sample of the first evaluationBatches() batches of the evaluation
  /// split, in order (so that two runs can be compared sample by sample).
  /// Runs the forward function alone (no backward pass, no update); calls
  /// `progress(done, total)` after each batch.
  llvm::Expected<std::vector<bool>>
  evaluate(const Dataset &data, int64_t maxSamples,
           llvm::function_ref<void(int64_t, int64_t)> progress);

  llvm::Expected<Checkpoint>
  checkpoint(int64_t step, std::map<std::string, std::string> metadata);
  /// Sets parameters to the tensors of the same name in `weights` (a
  /// safetensors file of initial weights, `path` for messages): every
  /// tensor must name a parameter of the same shape; floating-point types
  /// convert. Parameters it does not hold keep their initial values.
  /// Returns how many it set.
  llvm::Expected<unsigned> loadWeights(const Checkpoint &weights,
                                       llvm::StringRef path);

  /// Restores parameters and state; returns the step to continue from.
  /// With `ampStateMayBeMissing` (an FP32 checkpoint resumed with mixed
  /// precision), `amp.*` state the checkpoint lacks keeps its initial value.
  llvm::Expected<int64_t> restore(const Checkpoint &ckpt, llvm::StringRef path,
                                  bool ampStateMayBeMissing = false);

  /// Takes over the parameters and state of `from` (another compilation of
  /// the same model: a re-planned precision, or AMP after FP32 warm-up) by
  /// name, bit for bit, and its count of skipped steps. Parameters and
  /// state `from` lacks keep their initial values; a tensor both have with
  /// different types or shapes is an error.
  llvm::Expected<CarriedState> adoptState(Trainer &from);

  /// This step's rows of `numerics.stats` (6 floats each), read back from
  /// the last step; empty without tg-check-numerics.
  llvm::Expected<std::vector<float>> numericsStats();

  /// FNV-1a of the parameters and optimizer state (not the loss scale), or
  /// of the parameters alone.
  llvm::Expected<uint64_t> weightsHash(bool parametersOnly = false);
  int64_t skippedSteps() const { return skipped; }
  mprtAllocatorStats allocatorStats() const {
    return executor->allocatorStats();
  }
  /// Bytes of the step's arguments and destinations.
  int64_t bufferBytes() const;

private:
  Trainer(std::string label, std::unique_ptr<CompiledStep> step);
  bool isPersistent(unsigned arg) const;
  bool isBatch(unsigned arg) const;
  /// The buffer index of result `r`.
  unsigned resultBuffer(unsigned r) const;
  const HostTensor &result(unsigned r) const;
  /// Moves the parameters and state to or from the executor.
  llvm::Error uploadPersistent();
  llvm::Error downloadPersistent();
  /// Copies the batch (inputs and labels) to the step's buffers and waits.
  llvm::Error uploadBatch();
  /// Runs one step, downloads `results` (buffer indices) and waits.
  llvm::Error runStep(llvm::ArrayRef<unsigned> results);

  std::string name;
  std::unique_ptr<CompiledStep> compiled;
  /// Arguments, then destinations.
  std::vector<HostTensor> buffers;
  std::unique_ptr<Executor> executor;
  std::optional<unsigned> scaleArg, goodStepsArg, foundInfResult, logitsResult,
      labelArg, firstNonfiniteResult, statsResult;
  int64_t skipped = 0;
  Ranks *ranks = nullptr;
};

} // namespace mp::runner

#endif // MP_RUNNER_TRAINER_H
