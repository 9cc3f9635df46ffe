//===- Runner.h - train a tg model from C++ ---------------------*- C++ -*-===//
//
// The runner library in one include: what mp-runner does, for a compiler or
// a program that embeds mp and trains a step without running the tool.
//
//   runner::Session session;                              // Loading.h
//   OwningOpRef<ModuleOp> module =
//       runner::loadModel(session, "model.onnx", importOptions);
//   runner::makeTrainStep(*module, "", "optimizer=adam");  // CompiledStep.h
//   runner::CompileOptions options;                        // below
//   options.amp.mode = "bf16";
//   Expected<std::unique_ptr<runner::Trainer>> trainer =
//       runner::compileTrainer(*module, options, "bf16");
//   Expected<runner::Dataset> data = runner::makeSyntheticDataset(
//       (*trainer)->signature(), shape, seed, 8192, 1024);  // Dataset.h
//   (*trainer)->initialize(seed);                           // Trainer.h
//   // Under mpirun: Expected<Ranks> ranks = Ranks::join(300); compile
//   // with options.parallel.enabled, then (*trainer)->distribute(*ranks).
//   for (int64_t i = 0; i < steps; ++i)
//     (*trainer)->step(i, *data);
//   (*trainer)->evaluate(*data, 0, progress);
//   runner::writeSafetensors("ckpt.safetensors",            // HostTensor.h
//                            *(*trainer)->checkpoint(steps, metadata));
//
// examples/embedding/train-step.cpp is a complete program. The layers, from
// the bottom: HostTensor (host tensors, .npy, safetensors), StepSignature
// (a lowered step's calling convention), Progress (what a long
// compilation is doing) and Ranks (the processes of a data-parallel run),
// then Dataset, CompiledStep (lowering, the JIT,
// object files), Loading and Weights (reading models), then Executor
// (backends), Trainer, Numerics (the numerics checks' reports and adaptive
// precision). A header includes only the layers below it.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_RUNNER_H
#define MP_RUNNER_RUNNER_H

#include "mp/Runner/CompiledStep.h"
#include "mp/Runner/Dataset.h"
#include "mp/Runner/Executor.h"
#include "mp/Runner/HostTensor.h"
#include "mp/Runner/Loading.h"
#include "mp/Runner/Ranks.h"
#include "mp/Runner/Progress.h"
#include "mp/Runner/Trainer.h"

#include "llvm/Support/Error.h"

namespace mp::runner {

/// How compileTrainer compiles and runs a step.
struct CompileOptions {
  /// The step function; empty: the one marked tg.train_step.
  std::string entry;
  AmpConfig amp;
  LayoutConfig layout;
  ParallelConfig parallel;
  FusionConfig fusion;
  NumericsConfig numerics;
  Backend backend = Backend::CPU;
  /// LLVM's optimisation level for the JIT.
  unsigned optLevel = 2;
  /// On CUDA: replay the step as a CUDA graph after warm-up.
  bool cudaGraphs = true;
  /// Told of each phase and pass of the compilation, when given.
  CompileProgress *progress = nullptr;
};

/// An error that MLIR's diagnostic handler has reported already, with its
/// location: callers print nothing more for it.
class DiagnosedError : public llvm::ErrorInfo<DiagnosedError> {
public:
  static char ID;
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;
};

/// Lowers the training step of `module` in place (mixed precision, the
/// numerics checks, tg-lower-to-llvm: lowerStep), JIT-compiles it for
/// `options.backend` and returns a Trainer named `label` that owns it. A
/// module holding a forward function must go through makeTrainStep first.
/// Problems in the IR are reported through the context's diagnostic
/// handler and return a DiagnosedError; others return their message.
llvm::Expected<std::unique_ptr<Trainer>>
compileTrainer(mlir::ModuleOp module, const CompileOptions &options,
               std::string label);

} // namespace mp::runner

#endif // MP_RUNNER_RUNNER_H
