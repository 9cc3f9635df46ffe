//===- Dataset.h - training data for mp-runner ------------------*- C++ -*-===//
//
// A dataset holds, for every tg.input and tg.label argument of a step, a
// training array and an evaluation array whose first dimension counts
// samples and whose other dimensions match the argument without its batch
// dimension. Batch `s` of training is rows [s*B, s*B + B) modulo the sample
// count: a function of the step index alone, so a resumed run sees exactly
// the data it would have seen.
//
// Built-in synthetic tasks (all generated from the seed):
//   - classification: x ~ N(0, 1); the label is the argmax of a fixed random
//     two-layer ReLU teacher network. Learnable by an MLP, not by a linear
//     model alone.
//   - sequences: token ids uniform in the vocabulary; the label at position
//     t is the token at t - 1 (at 0, the token itself), modulo the classes:
//     it needs attention to the previous position. Attention masks pad
//     sequences on either side; padded positions are labelled -100
//     (ignored).
//   - regression: x ~ N(0, 1), target = tanh(x A) for a fixed random A.
//   - images (a rank-4 input): noise with one class's fixed random 5x5
//     pattern added at a random position; the label is the class. Learnable
//     by a convolutional network with pooling (the pattern may be anywhere),
//     not by matching pixels.
// Or arrays from .npy files, with held-out arrays for evaluation
// (--eval-data), or else evaluation on the training arrays, which the
// runner then reports as training accuracy.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_DATASET_H
#define MP_RUNNER_DATASET_H

#include "mp/Runner/HostTensor.h"
#include "mp/Runner/StepSignature.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <random>

namespace mp::runner {

struct Dataset {
  std::string description;
  /// Per argument index: all samples.
  std::map<unsigned, HostTensor> train, eval;
  int64_t trainSamples = 0, evalSamples = 0;
  /// Whether `eval` is held out (not trained on): accuracy on it is test
  /// accuracy; otherwise it is the training arrays.
  bool evalHeldOut = true;
  /// Where each array came from ("labels.npy"), for messages.
  std::map<unsigned, std::string> trainSource, evalSource;
  /// What the user should know about the data before training on it
  /// (arrays holding NaNs or infinities).
  std::vector<std::string> warnings;

  /// Copies batch `index` of `split` into the argument buffers. With
  /// `shards` > 1 (the ranks of a data-parallel run), global batch `index`
  /// is `shards` local batches and this copies local batch `shard` of it:
  /// rows [(index * shards + shard) * B, ... + B), so N ranks with batch B
  /// see exactly the rows one rank with batch N * B sees.
  void fillBatch(const std::map<unsigned, HostTensor> &split, int64_t samples,
                 int64_t index, std::vector<HostTensor> &arguments,
                 int64_t shard = 0, int64_t shards = 1) const;
};

/// What the synthetic tasks need to know about the model beyond the
/// signature: the class count (from the logits of the loss) and the
/// vocabulary (from the embedding table the inputs index).
struct ModelShape {
  int64_t classes = 0;
  int64_t vocabulary = 0;
  /// The tg.input whose token ids the embedding gathers ("input_ids").
  std::string tokenInput;
  /// Whether the convolutions of an image model read NHWC.
  bool channelsLast = false;
};

/// Reads the class and vocabulary counts off the (unlowered) step.
ModelShape inspectModel(mlir::func::FuncOp step);

/// A built-in synthetic dataset for `sig`, or an error saying why none fits.
llvm::Expected<Dataset> makeSyntheticDataset(const StepSignature &sig,
                                             const ModelShape &model,
                                             uint64_t seed,
                                             int64_t trainSamples,
                                             int64_t evalSamples);

/// A dataset from `name=path.npy` pairs, one per input and label, and
/// optionally held-out arrays for evaluation in the same form.
llvm::Expected<Dataset> loadNpyDataset(const StepSignature &sig,
                                       llvm::ArrayRef<std::string> specs,
                                       llvm::ArrayRef<std::string> evalSpecs);

/// The label that marks a position to ignore (padding), as Hugging Face and
/// PyTorch's cross-entropy use it: the loss and the accuracy skip it.
constexpr int64_t kIgnoredLabel = -100;

/// Checks that every class label of `data` lies in [0, classes) or is
/// kIgnoredLabel: any other label would be ignored by the loss too, and is
/// far more often a mistake (labels counted from 1, too few classes) than
/// meant. The error names the file, the sample (and position), the step that
/// first reads it and the position in its batch.
llvm::Error checkLabels(const StepSignature &sig, const ModelShape &model,
                        const Dataset &data);

} // namespace mp::runner

#endif // MP_RUNNER_DATASET_H
