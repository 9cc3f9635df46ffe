//===- PrecisionPolicy.h - what the AMP pass is told to do ------*- C++ -*-===//
//
// The user-facing configuration of automatic mixed precision: the low type,
// edits of the allow / infer / clear / deny lists, per-op overrides matched
// on location names, the level, and the hardware target. Options and a JSON
// policy file (docs/MixedPrecision.md) both build one PrecisionPolicy.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_TRANSFORMS_PRECISIONPOLICY_H
#define MP_DIALECT_TG_TRANSFORMS_PRECISIONPOLICY_H

#include "mp/Dialect/TG/IR/TGOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/GlobPattern.h"

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mp::tg {

enum class AmpLevel { Default, InferAsDeny, ForceAll };

/// A user decision for the ops whose location name matches.
struct PrecisionOverride {
  enum class Precision { F32, Low };
  std::string pattern;
  /// Where the override was given ("policy file 'p.json': overrides[0]").
  std::string origin;
  bool isGlob = false;
  llvm::GlobPattern glob;
  Precision precision = Precision::F32;

  /// Whether the override applies to an op with location name `name`.
  bool matches(llvm::StringRef name) const {
    return isGlob ? glob.match(name) : pattern == name;
  }
};

class PrecisionPolicy {
public:
  /// Reports a configuration error (the pass turns it into a diagnostic).
  using ErrorFn = std::function<void(const llvm::Twine &)>;

  /// Sets the low type from its name (f16 or bf16).
  llvm::LogicalResult setComputeType(mlir::MLIRContext *ctx,
                                     llvm::StringRef name, const ErrorFn &err);
  llvm::LogicalResult setLevel(llvm::StringRef name, const ErrorFn &err);
  /// Sets the target; `fastPath` then tells whether it runs the low type
  /// fast, and `unsupportedReason` says why not and what to use instead.
  llvm::LogicalResult setTarget(llvm::StringRef name, const ErrorFn &err);

  /// Puts op `opName` on list `cls`, or takes it off (`add` false). The op
  /// must be registered and implement the precision interface.
  llvm::LogicalResult editList(mlir::MLIRContext *ctx, llvm::StringRef opName,
                               PrecisionClass cls, bool add,
                               llvm::StringRef origin, const ErrorFn &err);

  /// Reads list edits and overrides from a JSON policy file.
  llvm::LogicalResult loadFile(mlir::MLIRContext *ctx, llvm::StringRef path,
                               const ErrorFn &err);

  /// The list an op is on after the user's edits; none if it is on no list.
  std::optional<PrecisionClass> getListClass(PrecisionOpInterface op) const;
  bool hasOverrides() const { return !overrides.empty(); }
  /// The first override matching `name` (exact names before patterns).
  const PrecisionOverride *findOverride(llvm::StringRef name) const;
  const std::deque<PrecisionOverride> &getOverrides() const {
    return overrides;
  }

  /// Whether argument and result types may change (off by default).
  void setChangeSignature(bool allow) { changeSignature = allow; }
  bool allowsSignatureChange() const { return changeSignature; }

  mlir::FloatType getLowType() const { return lowType; }
  AmpLevel getLevel() const { return level; }
  llvm::StringRef getTarget() const { return target; }
  bool targetHasFastPath() const { return unsupportedReason.empty(); }
  llvm::StringRef getUnsupportedReason() const { return unsupportedReason; }

private:
  struct ListEdit {
    std::optional<PrecisionClass> addedTo;
    llvm::SmallVector<PrecisionClass, 1> removedFrom;
  };

  mlir::FloatType lowType;
  AmpLevel level = AmpLevel::Default;
  bool changeSignature = false;
  std::string target = "generic";
  std::string unsupportedReason;
  llvm::StringMap<ListEdit> edits;
  /// A deque: a GlobPattern refers into its pattern string, so overrides
  /// must not move once built.
  std::deque<PrecisionOverride> overrides;
};

/// The location name of an op for reports and overrides: the name of a
/// NameLoc (looking through fused and call-site locations), else the printed
/// location.
std::string getLocationName(mlir::Location loc);

/// Where an op is, for the passes' reports: the name of a NameLoc (an ONNX
/// node's, a model's layer) where there is one, else its first
/// file:line:col, else the printed location.
std::string getReportLocation(mlir::Location loc);

/// A readable name for `v`: its producer's location name, or for a function
/// argument the name of its training-step role (else `arg<N>`).
std::string getValueName(mlir::Value v);

} // namespace mp::tg

#endif // MP_DIALECT_TG_TRANSFORMS_PRECISIONPOLICY_H
