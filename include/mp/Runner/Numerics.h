//===- Numerics.h - numerics checks and adaptive precision -----*- C++ -*-===//
//
// What mp-runner does with a step instrumented by tg-check-numerics:
//   - explains the first op that produced an infinity or a NaN (name,
//     location, types, the ranges of its operands and results in that step)
//     and names the op behind every step loss scaling skipped;
//   - collects per-value ranges over steps (--range-stats);
//   - decides when overflows keep coming from one op and writes the policy
//     that pins it to f32 (--adapt-precision).
// docs/Numerics.md describes the user's side.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_NUMERICS_H
#define MP_RUNNER_NUMERICS_H

#include "mp/Runner/Trainer.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <set>

namespace mp::runner {

/// The row of `numerics.stats` for one value.
struct ValueRange {
  float min, max, amax, aminNonZero, nans, infs;
};
ValueRange rangeAt(llvm::ArrayRef<float> rows, int64_t row);

/// "op #12 'fc1.matmul' (tg.matmul, model.mlir:16:5)"
std::string describeCheckedOp(const CheckedOp &op);

/// The full account of a bad step: the op, its compute and storage types,
/// and the ranges of its operands and results in `rows` (that step's
/// statistics).
void printNonfiniteReport(llvm::raw_ostream &os, const StepRecord &record,
                          const CheckedOp &op, llvm::ArrayRef<float> rows);

/// Per-value amax and smallest non-zero magnitude over steps.
class RangeStatistics {
public:
  void add(llvm::ArrayRef<float> rows);
  int64_t steps() const { return numSteps; }
  /// Writes the JSON of --range-stats: per checked op, its results' types,
  /// amax, smallest non-zero magnitude, and how they compare with the f16
  /// and bf16 limits.
  llvm::Error write(llvm::StringRef path, const StepSignature &sig,
                    llvm::StringRef amp) const;
  /// Adds each op's ranges to the precision report at `path` (written by
  /// tg-auto-mixed-precision's `report=`), as `range` in the op's entry.
  llvm::Error annotateReport(llvm::StringRef path,
                             const StepSignature &sig) const;
  /// The `count` ops whose low-precision results come closest to the f16
  /// maximum, for the run's summary line.
  void printClosest(llvm::raw_ostream &os, const StepSignature &sig,
                    unsigned count) const;

private:
  std::vector<float> amax, aminNonZero;
  std::vector<int64_t> nonfiniteSteps;
  int64_t numSteps = 0;
};

/// When overflows keep coming from one op: N skipped steps blamed on it
/// within a window of W steps, or a skipped step blamed on it with the loss
/// scale below a floor.
struct AdaptOptions {
  int64_t skips = 8;
  int64_t window = 100;
  double minScale = 1.0;
};

/// One re-plan, for the log and the summary.
struct Replan {
  int64_t step = 0;
  std::string op;
  std::vector<std::string> pinned;
  std::string evidence;
  CarriedState state;
};

class PrecisionAdapter {
public:
  PrecisionAdapter(AdaptOptions options, std::string policyPath,
                   std::string userPolicy)
      : options(options), policyPath(std::move(policyPath)),
        userPolicy(std::move(userPolicy)) {}

  /// Reads the user's policy file (the amp options' `policy=`), if any.
  llvm::Error loadUserPolicy();

  /// Records step `record`; returns the op to pin when the evidence is
  /// enough, with the evidence in words.
  std::optional<std::pair<const CheckedOp *, std::string>>
  observe(const StepRecord &record, const StepSignature &sig);

  /// Adds `op`'s pins; false when they are all pinned already (nothing left
  /// to change: the op overflows in f32 too).
  bool pin(const CheckedOp &op);

  /// The user's policy plus an f32 override per pinned name.
  llvm::json::Value policy() const;
  llvm::Error writePolicy() const;
  const std::string &path() const { return policyPath; }
  size_t numPinned() const { return pinned.size(); }

  std::vector<Replan> replans;

private:
  AdaptOptions options;
  std::string policyPath, userPolicy;
  llvm::json::Object base;
  std::vector<std::string> pinned;
  /// (step, op name) of recent skipped steps.
  std::deque<std::pair<int64_t, std::string>> blamed;
  std::set<std::string> exhausted;
};

} // namespace mp::runner

#endif // MP_RUNNER_NUMERICS_H
