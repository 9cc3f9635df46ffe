//===- CompiledStep.h - a training step compiled for the runtime -*- C++ -*-===//
//
// Takes a module with a tg training step through the mixed-precision
// pipeline (optional) and tg-lower-to-llvm, then either JIT-compiles it with
// MLIR's ExecutionEngine or writes an object file and a C header for
// ahead-of-time use. The signature is read after the mixed-precision passes,
// which add state (the loss scale) and outputs (the skip predicate).
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_COMPILEDSTEP_H
#define MP_RUNNER_COMPILEDSTEP_H

#include "mp/Runner/Progress.h"
#include "mp/Runner/StepSignature.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
}

namespace mp::runner {

/// How to run the mixed-precision pipeline: `off`, `f16` or `bf16`, plus
/// tg-mixed-precision options ("loss-scaling=dynamic growth-interval=3").
struct AmpConfig {
  std::string mode = "off";
  std::string options;
  /// A policy file that replaces the options' `policy=` (the runner's
  /// adapted policy).
  std::string policyFile;
};

/// Whether and how to run tg-assign-layout after mixed precision: its
/// `layout` (off, auto, nhwc, nchw), the `target` whose preference auto
/// follows (cpu, cuda), and its report file.
struct LayoutConfig {
  std::string layout = "off";
  std::string target = "cpu";
  std::string reportFile;
};

/// Whether to run tg-fold-transposes and tg-fuse-epilogues after layout
/// assignment (never with numerics checks, which observe every op's own
/// result), and tg-shadow-weights after them (likewise: the numerics
/// checks report a weight's overflow at the ops that read its cast).
struct FusionConfig {
  bool transposes = true;
  bool epilogues = true;
  /// tg-shadow-weights, after mixed precision.
  bool shadows = true;
  /// Where tg-fuse-epilogues writes its report (none when empty).
  std::string reportFile;
  /// Where tg-fold-transposes writes its report: both of its runs, the
  /// second's decisions after the first's.
  std::string transposesReportFile;
  /// Where tg-shadow-weights writes its report (which a step compiled without
  /// mixed precision, where the pass does not run, does not write).
  std::string shadowsReportFile;
};

/// Whether to run tg-data-parallel before mixed precision, with its bucket
/// size.
struct ParallelConfig {
  bool enabled = false;
  double bucketMb = 25;
};

/// Whether and how to run tg-check-numerics after mixed precision.
struct NumericsConfig {
  bool enabled = false;
  std::string scope = "all";
  std::vector<std::string> ops;
};

/// Makes the training step of a module that holds a forward function
/// (tg.forward) instead: runs tg-make-train-step with `options` (its
/// options, "loss=softmax-cross-entropy optimizer=adam lr=0.001") on the
/// function `entry` names, or on the forward functions when no function is
/// marked tg.train_step. Returns whether it made a step; fails (with a
/// diagnostic) on bad options or a forward function it cannot
/// differentiate. Options given for a module that is already a step are an
/// error. `progress`, when given, hears of the phase.
mlir::FailureOr<bool> makeTrainStep(mlir::ModuleOp module,
                                    llvm::StringRef entry,
                                    llvm::StringRef options,
                                    CompileProgress *progress = nullptr);

/// Finds the training step to run: `entry` when given, else the only
/// function marked tg.train_step. Emits a diagnostic on failure.
mlir::FailureOr<mlir::func::FuncOp> findTrainStep(mlir::ModuleOp module,
                                                  llvm::StringRef entry);

/// Runs tg-data-parallel, the mixed-precision pipeline, tg-assign-layout and
/// tg-fuse-epilogues on `module` (in place), adds the step's forward
/// function (`<entry>_forward`, computing the `logits` output alone, with
/// the step's precisions and layouts) and runs tg-lower-to-llvm; returns the signature of the step. Diagnostics go
/// to the context's handler; `progress`, when given, hears of each phase and
/// pass.
mlir::FailureOr<StepSignature>
lowerStep(mlir::ModuleOp module, llvm::StringRef entry, const AmpConfig &amp,
          const NumericsConfig &numerics = NumericsConfig(),
          CompileProgress *progress = nullptr,
          const LayoutConfig &layout = LayoutConfig(),
          const ParallelConfig &parallel = ParallelConfig(),
          const FusionConfig &fusion = FusionConfig());

/// Lowers the function `name` of `module` as it is (no mixed precision, no
/// training step): every argument is an input (its role taken from its
/// tg.param / tg.input / tg.label name), every result an output with a
/// destination. For running imported forward functions.
mlir::FailureOr<StepSignature> lowerFunction(mlir::ModuleOp module,
                                             llvm::StringRef name);

/// A JIT-compiled step.
class CompiledStep {
public:
  ~CompiledStep();
  /// Compiles the lowered `module` (from lowerStep) at LLVM optimisation
  /// level `optLevel` (0 to 3), binding its runtime calls to the CPU
  /// backend or, with `cuda`, to the CUDA backend.
  static llvm::Expected<std::unique_ptr<CompiledStep>>
  create(mlir::ModuleOp module, StepSignature signature, unsigned optLevel,
         bool cuda = false, CompileProgress *progress = nullptr);

  const StepSignature &signature() const { return sig; }
  /// Runs one step on one buffer per argument and destination (host memory
  /// for the CPU backend, the CUDA backend's device memory for CUDA);
  /// reports runtime errors.
  llvm::Error run(llvm::ArrayRef<void *> buffers);
  /// Runs the forward function on the step's arguments and one destination
  /// for the logits (signature().forwardEntry must be set).
  llvm::Error runForward(llvm::ArrayRef<void *> buffers);

private:
  CompiledStep() = default;
  using PackedFn = void (*)(void **);
  llvm::Error invoke(llvm::StringRef name, PackedFn fn,
                     llvm::ArrayRef<void *> buffers, size_t expected);
  std::unique_ptr<mlir::ExecutionEngine> engine;
  StepSignature sig;
  /// The packed entry points of sig.entry and sig.forwardEntry (null when
  /// there is none), looked up once, when the engine is built.
  PackedFn entryFn = nullptr, forwardFn = nullptr;
};

/// `name` as a C identifier (other characters become '_'; a leading digit
/// or a keyword gets a '_').
std::string toCIdentifier(llvm::StringRef name);

/// Writes the lowered `module` as an object file for the host.
llvm::Error emitObjectFile(mlir::ModuleOp module, llvm::StringRef path);

/// Writes a C header declaring the compiled step and describing its
/// arguments (names, roles, types, shapes, initial values), with a struct
/// naming every tensor. Tensor names are escaped; field names are unique C
/// identifiers.
llvm::Error emitHeader(const StepSignature &signature, llvm::StringRef path,
                       llvm::StringRef source);

} // namespace mp::runner

#endif // MP_RUNNER_COMPILEDSTEP_H
