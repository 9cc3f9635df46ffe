//===- Ranks.h - the processes of a data-parallel run -----------*- C++ -*-===//
//
// mp-runner started by mpirun is one rank of a data-parallel run: every
// rank compiles the same step (with tg-data-parallel), trains on its shard
// of each global batch, and agrees with the others on the step, the initial
// parameters, the loss and the skipped steps. Ranks joins the run (MPI)
// and holds the host-side collectives this needs; every one of them waits
// at most `timeoutSeconds`, so a rank that died or hangs stops the others
// with an error instead of leaving them waiting.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_RANKS_H
#define MP_RUNNER_RANKS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace mp::runner {

class Ranks {
public:
  /// Whether an MPI launcher (mpirun, srun) started this process.
  static bool launchedByMpi();

  /// One rank, no MPI.
  Ranks() = default;
  /// Joins the MPI run this process belongs to (MPI_Init), and makes
  /// compiled steps' tg.all_reduce use it.
  static llvm::Expected<Ranks> join(double timeoutSeconds);
  Ranks(Ranks &&other);
  Ranks &operator=(Ranks &&other);
  /// Leaves the run (MPI_Finalize) when this object joined one.
  ~Ranks();

  int rank() const { return me; }
  int size() const { return count; }
  bool joined() const { return mpi; }

  /// Every rank's `values` (the same count on each), rank by rank.
  llvm::Expected<std::vector<double>> gather(llvm::ArrayRef<double> values,
                                             llvm::StringRef what);
  /// Replaces each value by its sum over the ranks.
  llvm::Error sum(llvm::MutableArrayRef<int64_t> values);
  /// Checks that every rank holds the same `value`; the error names `what`
  /// and the ranks whose value differs from rank 0's.
  llvm::Error checkSame(uint64_t value, llvm::StringRef what);
  /// Stops every rank (MPI_Abort) with `status`: after an error on one
  /// rank, the others may be waiting in a collective.
  [[noreturn]] void abort(int status);

private:
  bool mpi = false;
  int me = 0, count = 1;
  double timeout = 0;
  /// A collective timed out and is still active: every later one fails.
  bool broken = false;
};

} // namespace mp::runner

#endif // MP_RUNNER_RANKS_H
