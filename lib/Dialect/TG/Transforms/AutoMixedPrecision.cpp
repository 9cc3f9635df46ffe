//===- AutoMixedPrecision.cpp - the tg-auto-mixed-precision pass ----------===//
//
// Builds a PrecisionPolicy from the options (and the policy file), runs
// applyAutoMixedPrecision on every function of the module, and writes the
// report and the DOT picture atomically (temporary file, then rename). Bad
// options are errors on the module, never crashes; a policy override that
// matches no op is a warning (an error with strict-policy), reported before
// anything is rewritten.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/Transforms/MixedPrecision.h"
#include "mp/Support/FileOutput.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

namespace mp::tg {
#define GEN_PASS_DEF_TGAUTOMIXEDPRECISION
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp;
using namespace mp::tg;

namespace {

struct TGAutoMixedPrecisionPass
    : public mp::tg::impl::TGAutoMixedPrecisionBase<TGAutoMixedPrecisionPass> {
  using Base::Base;

  LogicalResult buildPolicy(PrecisionPolicy &policy) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto err = [&](const Twine &message) {
      mlir::emitError(module.getLoc())
          << "tg-auto-mixed-precision: " << message;
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

  /// Warns about (or, strictly, rejects) every override that matches no op
  /// the pass decides, with a hint where a name is close to one.
  LogicalResult checkOverrides(const PrecisionPolicy &policy,
                               ArrayRef<FunctionOpInterface> functions) {
    const std::deque<PrecisionOverride> &overrides = policy.getOverrides();
    if (overrides.empty())
      return success();
    std::vector<char> used(overrides.size(), 0);
    llvm::StringSet<> names;
    for (FunctionOpInterface fn : functions)
      fn->walk([&](PrecisionOpInterface op) {
        if (!policy.getListClass(op))
          return;
        std::string name = getLocationName(op->getLoc());
        for (auto [k, o] : llvm::enumerate(overrides))
          used[k] |= o.matches(name);
        names.insert(name);
      });
    // Sorted, so that the hint does not depend on hashing.
    std::vector<StringRef> sorted;
    for (const auto &entry : names)
      sorted.push_back(entry.getKey());
    llvm::sort(sorted);
    bool anyUnused = false;
    for (auto [k, o] : llvm::enumerate(overrides)) {
      if (used[k])
        continue;
      anyUnused = true;
      // Attached to the location, not the module, so that mp-opt does not
      // print the whole module after it.
      Location loc = getOperation().getLoc();
      InFlightDiagnostic diag =
          strictPolicy ? mlir::emitError(loc) : mlir::emitWarning(loc);
      diag << "tg-auto-mixed-precision: " << o.origin << ": "
           << (o.isGlob ? "pattern" : "name") << " '" << o.pattern
           << "' matches no op";
      if (o.isGlob)
        continue;
      // A layer name given where its ops were meant, or a typo.
      std::string prefix = o.pattern + ".";
      StringRef closest;
      unsigned best = std::max<unsigned>(2, o.pattern.size() / 3) + 1;
      for (StringRef name : sorted) {
        if (name.starts_with(prefix)) {
          diag << "; did you mean the pattern '" << prefix << "*'?";
          closest = {};
          best = 0;
          break;
        }
        unsigned d = name.edit_distance(o.pattern, true, best);
        if (d < best) {
          best = d;
          closest = name;
        }
      }
      if (!closest.empty())
        diag << "; did you mean '" << closest << "'?";
    }
    return failure(strictPolicy && anyUnused);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PrecisionPolicy policy;
    if (failed(buildPolicy(policy)))
      return signalPassFailure();

    SmallVector<FunctionOpInterface> functions;
    module.walk([&](FunctionOpInterface fn) {
      if (!fn.isExternal())
        functions.push_back(fn);
    });
    if (failed(checkOverrides(policy, functions)))
      return signalPassFailure();
    if (!policy.targetHasFastPath())
      module.emitRemark() << "tg-auto-mixed-precision: "
                          << policy.getUnsupportedReason();
    std::vector<FunctionReport> reports(functions.size());
    for (auto [fn, report] : llvm::zip(functions, reports))
      applyAutoMixedPrecision(fn, policy, report, !reportFile.empty());

    auto write = [&](StringRef path, StringRef what,
                     function_ref<void(raw_ostream &)> body) {
      if (path.empty())
        return success();
      if (llvm::Error e = writeFileAtomically(path, [&](raw_ostream &os) {
            body(os);
            return llvm::Error::success();
          })) {
        mlir::emitError(module.getLoc())
            << "tg-auto-mixed-precision: " << what << ": "
            << llvm::toString(std::move(e));
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
