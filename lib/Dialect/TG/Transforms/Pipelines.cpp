//===- Pipelines.cpp - the tg-mixed-precision pipeline --------------------===//
//
// The pipeline users run: automatic mixed precision, loss scaling, then
// canonicalisation (which folds casts and exact round trips) and CSE, with
// the options of both passes.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mp::tg::buildTGMixedPrecisionPipeline(
    OpPassManager &pm, const TGMixedPrecisionPipelineOptions &o) {
  TGAutoMixedPrecisionOptions amp;
  amp.computeType = o.computeType;
  amp.addAllow.assign(o.addAllow.begin(), o.addAllow.end());
  amp.addInfer.assign(o.addInfer.begin(), o.addInfer.end());
  amp.addClear.assign(o.addClear.begin(), o.addClear.end());
  amp.addDeny.assign(o.addDeny.begin(), o.addDeny.end());
  amp.removeAllow.assign(o.removeAllow.begin(), o.removeAllow.end());
  amp.removeInfer.assign(o.removeInfer.begin(), o.removeInfer.end());
  amp.removeClear.assign(o.removeClear.begin(), o.removeClear.end());
  amp.removeDeny.assign(o.removeDeny.begin(), o.removeDeny.end());
  amp.policyFile = o.policyFile;
  amp.strictPolicy = o.strictPolicy;
  amp.level = o.level;
  amp.target = o.target;
  amp.reportFile = o.reportFile;
  amp.reportDotFile = o.reportDotFile;
  pm.addPass(createTGAutoMixedPrecision(amp));

  TGInsertLossScalingOptions scaling;
  // GradScaler's defaults: dynamic loss scaling for f16, none for bf16
  // (whose range matches f32's).
  std::string mode = o.lossScaling;
  if (mode == "auto")
    mode = o.computeType == "f16" ? "dynamic" : "none";
  scaling.mode = mode;
  scaling.initScale = o.initScale;
  scaling.growthFactor = o.growthFactor;
  scaling.backoffFactor = o.backoffFactor;
  scaling.growthInterval = o.growthInterval;
  scaling.minScale = o.minScale;
  scaling.maxScale = o.maxScale;
  pm.addPass(createTGInsertLossScaling(scaling));

  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mp::tg::registerTGMixedPrecisionPipeline() {
  PassPipelineRegistration<TGMixedPrecisionPipelineOptions>(
      "tg-mixed-precision",
      "Automatic mixed precision, loss scaling, canonicalisation and CSE: a "
      "training step ready to lower",
      buildTGMixedPrecisionPipeline);
}
