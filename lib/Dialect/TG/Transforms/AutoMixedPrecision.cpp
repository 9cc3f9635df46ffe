//===- AutoMixedPrecision.cpp - the tg-auto-mixed-precision pass ----------===//
//
// Builds a PrecisionPolicy from the options (and the policy file), runs
// applyAutoMixedPrecision on every function of the module, and writes the
// report and the DOT picture atomically (temporary file, then rename). Bad
// options are errors on the module, never crashes.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/Transforms/MixedPrecision.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/raw_ostream.h"

namespace mp::tg {
#define GEN_PASS_DEF_TGAUTOMIXEDPRECISION
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp::tg;

namespace {

struct TGAutoMixedPrecisionPass
    : public mp::tg::impl::TGAutoMixedPrecisionBase<TGAutoMixedPrecisionPass> {
  using Base::Base;

  LogicalResult buildPolicy(PrecisionPolicy &policy) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto err = [&](const Twine &message) {
      module.emitError() << "tg-auto-mixed-precision: " << message;
    };
    if (failed(policy.setComputeType(ctx, computeType, err)) ||
        failed(policy.setLevel(level, err)) ||
        failed(policy.setTarget(target, err)))
      return failure();
    // Removals first, then additions, then the policy file's edits.
    auto edit = [&](const auto &names, PrecisionClass cls, bool add) {
      std::string origin = std::string(add ? "add-" : "remove-") +
                           stringifyPrecisionClass(cls).str();
      for (const std::string &name : names)
        if (failed(policy.editList(ctx, name, cls, add, origin, err)))
          return failure();
      return success();
    };
    if (failed(edit(removeAllow, PrecisionClass::Allow, false)) ||
        failed(edit(removeInfer, PrecisionClass::Infer, false)) ||
        failed(edit(removeClear, PrecisionClass::Clear, false)) ||
        failed(edit(removeDeny, PrecisionClass::Deny, false)) ||
        failed(edit(addAllow, PrecisionClass::Allow, true)) ||
        failed(edit(addInfer, PrecisionClass::Infer, true)) ||
        failed(edit(addClear, PrecisionClass::Clear, true)) ||
        failed(edit(addDeny, PrecisionClass::Deny, true)))
      return failure();
    if (!policyFile.empty() && failed(policy.loadFile(ctx, policyFile, err)))
      return failure();
    policy.setChangeSignature(changeSignature);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PrecisionPolicy policy;
    if (failed(buildPolicy(policy)))
      return signalPassFailure();
    if (!policy.targetHasFastPath())
      module.emitRemark() << "tg-auto-mixed-precision: "
                          << policy.getUnsupportedReason();

    SmallVector<FunctionOpInterface> functions;
    module.walk([&](FunctionOpInterface fn) {
      if (!fn.isExternal())
        functions.push_back(fn);
    });
    std::vector<FunctionReport> reports(functions.size());
    for (auto [fn, report] : llvm::zip(functions, reports))
      applyAutoMixedPrecision(fn, policy, report, !reportFile.empty());

    auto write = [&](StringRef path, StringRef what,
                     function_ref<void(raw_ostream &)> body) {
      if (path.empty())
        return success();
      if (llvm::Error e = llvm::writeToOutput(path, [&](raw_ostream &os) {
            body(os);
            return llvm::Error::success();
          })) {
        module.emitError() << "tg-auto-mixed-precision: cannot write " << what
                           << " '" << path
                           << "': " << llvm::toString(std::move(e));
        return failure();
      }
      return success();
    };
    if (failed(write(reportFile, "report", [&](raw_ostream &os) {
          writePrecisionReport(os, policy, reports);
        })) ||
        failed(write(reportDotFile, "DOT graph", [&](raw_ostream &os) {
          writePrecisionDot(os, functions);
        })))
      return signalPassFailure();
  }
};

} // namespace
