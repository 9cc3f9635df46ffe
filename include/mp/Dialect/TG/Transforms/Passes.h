//===- Passes.h - tg transformation passes ----------------------*- C++ -*-===//
//
// The mixed-precision passes of the tg dialect. Each pass has a generated
// options struct (`TGAutoMixedPrecisionOptions`) and a create function that
// takes it, so C++ users configure passes without strings:
//
//   mp::tg::TGAutoMixedPrecisionOptions options;
//   options.computeType = "bf16";
//   options.addDeny = {"tg.gelu"};
//   pm.addPass(mp::tg::createTGAutoMixedPrecision(options));
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_TRANSFORMS_PASSES_H
#define MP_DIALECT_TG_TRANSFORMS_PASSES_H

#include "mp/Dialect/TG/IR/TGDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mp::tg {

#define GEN_PASS_DECL
#include "mp/Dialect/TG/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Dialect/TG/Transforms/Passes.h.inc"

/// The options of `tg-mixed-precision`: those of tg-auto-mixed-precision and
/// of tg-insert-loss-scaling (`loss-scaling` is the latter's `mode`).
struct TGMixedPrecisionPipelineOptions
    : public mlir::PassPipelineOptions<TGMixedPrecisionPipelineOptions> {
  Option<std::string> computeType{*this, "compute-type",
                                  llvm::cl::desc("f16 or bf16"),
                                  llvm::cl::init("f16")};
  ListOption<std::string> addAllow{*this, "add-allow",
                                   llvm::cl::desc("Ops to put on allow")};
  ListOption<std::string> addInfer{*this, "add-infer",
                                   llvm::cl::desc("Ops to put on infer")};
  ListOption<std::string> addClear{*this, "add-clear",
                                   llvm::cl::desc("Ops to put on clear")};
  ListOption<std::string> addDeny{*this, "add-deny",
                                  llvm::cl::desc("Ops to put on deny")};
  ListOption<std::string> removeAllow{*this, "remove-allow",
                                      llvm::cl::desc("Ops to take off allow")};
  ListOption<std::string> removeInfer{*this, "remove-infer",
                                      llvm::cl::desc("Ops to take off infer")};
  ListOption<std::string> removeClear{*this, "remove-clear",
                                      llvm::cl::desc("Ops to take off clear")};
  ListOption<std::string> removeDeny{*this, "remove-deny",
                                     llvm::cl::desc("Ops to take off deny")};
  Option<std::string> policyFile{*this, "policy",
                                 llvm::cl::desc("JSON policy file")};
  Option<bool> strictPolicy{
      *this, "strict-policy",
      llvm::cl::desc("An override that matches no op is an error"),
      llvm::cl::init(false)};
  Option<std::string> level{*this, "level",
                            llvm::cl::desc("default, infer-as-deny, force-all"),
                            llvm::cl::init("default")};
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("The hardware target"),
                             llvm::cl::init("generic")};
  Option<std::string> reportFile{*this, "report",
                                 llvm::cl::desc("Precision report (JSON)")};
  Option<std::string> reportDotFile{*this, "report-dot",
                                    llvm::cl::desc("Precision graph (DOT)")};
  Option<std::string> lossScaling{
      *this, "loss-scaling",
      llvm::cl::desc("auto (dynamic for f16, none for bf16), dynamic, "
                     "static or none"),
      llvm::cl::init("auto")};
  Option<double> initScale{*this, "init-scale",
                           llvm::cl::desc("Initial or fixed loss scale"),
                           llvm::cl::init(65536.0)};
  Option<double> growthFactor{*this, "growth-factor",
                              llvm::cl::desc("Scale growth factor"),
                              llvm::cl::init(2.0)};
  Option<double> backoffFactor{*this, "backoff-factor",
                               llvm::cl::desc("Scale backoff factor"),
                               llvm::cl::init(0.5)};
  Option<int64_t> growthInterval{*this, "growth-interval",
                                 llvm::cl::desc("Clean steps between growths"),
                                 llvm::cl::init(2000)};
  Option<double> minScale{*this, "min-scale",
                          llvm::cl::desc("Lower bound (0: none)"),
                          llvm::cl::init(0.0)};
  Option<double> maxScale{*this, "max-scale",
                          llvm::cl::desc("Upper bound (0: none)"),
                          llvm::cl::init(0.0)};
};

/// Adds tg-mixed-precision's passes to `pm`.
void buildTGMixedPrecisionPipeline(mlir::OpPassManager &pm,
                                   const TGMixedPrecisionPipelineOptions &o);

/// Registers the `tg-mixed-precision` pipeline.
void registerTGMixedPrecisionPipeline();

} // namespace mp::tg

#endif // MP_DIALECT_TG_TRANSFORMS_PASSES_H
