//===- Communicator.cpp - the runtime's communicator over MPI -------------===//
//
// mpUseMpiCommunicator (MPCollectives.h): tg.all_reduce's sums as
// MPI_Iallreduce calls, waited for with a deadline. f16 and bf16 have no
// MPI type: they travel as MPI_UINT16_T and a user-defined operation adds
// them in f32 (each transfer rounds the partial sum to the 16-bit type, as
// NCCL's half-precision reductions do).
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPCollectives.h"

#include "../CPU/Vector.h"
#include "../Entry.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <string>
#include <thread>

namespace {

struct MpiState {
  MPI_Comm comm = MPI_COMM_NULL;
  double timeoutSeconds = 0;
  int rank = 0, size = 1;
  MPI_Op addF16 = MPI_OP_NULL, addBF16 = MPI_OP_NULL;
  /// A collective that timed out is still active (MPI cannot cancel or
  /// free it): its buffer must stay untouched, so every later collective
  /// fails at once, and changing the communicator first waits for it.
  MPI_Request pending = MPI_REQUEST_NULL;
};

MpiState state;

template <mpElementType Type>
void addInF32(void *in, void *inout, int *len, MPI_Datatype *) {
  // One pass of L1-sized tiles through the runtime's vectorised
  // conversions (which round to nearest even, as every conversion does).
  using namespace mp::rt;
  float a[kTile], b[kTile];
  for (int64_t k = 0; k < *len; k += kTile) {
    int64_t n = std::min<int64_t>(kTile, *len - k);
    loadF32(in, Type, k, n, a);
    loadF32(inout, Type, k, n, b);
    for (int64_t j = 0; j < n; ++j)
      b[j] = a[j] + b[j];
    storeF32(b, n, inout, Type, k);
  }
}

/// Waits for `request` until the deadline; false when it passed. MPI's
/// non-blocking collectives advance only inside MPI calls, so this tests
/// without sleeping (each rank has its core; a sleep between tests would
/// stall every round of the collective), yielding the core after the first
/// millisecond in case ranks share cores.
bool waitFor(MPI_Request &request, double timeoutSeconds) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  for (uint64_t tests = 1;; ++tests) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return false;
    if (done)
      return true;
    if (tests % 256)
      continue;
    double waited =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (timeoutSeconds > 0 && waited > timeoutSeconds)
      return false;
    if (waited > 1e-3)
      std::this_thread::yield();
  }
}

mpStatus allReduceSum(void *, void *data, int64_t count, mpElementType type,
                      mpElementType) {
  MPI_Datatype datatype;
  MPI_Op op = MPI_SUM;
  switch (type) {
  case MP_F32: datatype = MPI_FLOAT; break;
  case MP_F64: datatype = MPI_DOUBLE; break;
  case MP_F16: datatype = MPI_UINT16_T; op = state.addF16; break;
  case MP_BF16: datatype = MPI_UINT16_T; op = state.addBF16; break;
  default: return MP_ERROR_INVALID_ARGUMENT;
  }
  if (state.pending != MPI_REQUEST_NULL) {
    mp::rt::setDetail("an earlier collective on rank " +
                      std::to_string(state.rank) +
                      " timed out; the run cannot go on");
    return MP_ERROR_COMMUNICATION;
  }
  size_t size = mpElementSize(type);
  auto *bytes = static_cast<char *>(data);
  for (int64_t first = 0; first < count; first += INT_MAX) {
    int n = int(std::min<int64_t>(INT_MAX, count - first));
    MPI_Request request;
    if (MPI_Iallreduce(MPI_IN_PLACE, bytes + first * size, n, datatype, op,
                       state.comm, &request) != MPI_SUCCESS) {
      mp::rt::setDetail("MPI_Iallreduce failed on rank " +
                        std::to_string(state.rank));
      return MP_ERROR_COMMUNICATION;
    }
    if (!waitFor(request, state.timeoutSeconds)) {
      state.pending = request;
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", state.timeoutSeconds);
      mp::rt::setDetail(
          "rank " + std::to_string(state.rank) + " of " +
          std::to_string(state.size) + " waited more than " + seconds +
          " s for an all-reduce of " + std::to_string(int64_t(n) * size) +
          " bytes: another rank died, hangs, or runs a different step");
      return MP_ERROR_COMMUNICATION;
    }
  }
  return MP_OK;
}

} // namespace

extern "C" int32_t mpMpiWait(void *request, double timeoutSeconds) {
  return waitFor(*static_cast<MPI_Request *>(request), timeoutSeconds);
}

extern "C" mpStatus mpUseMpiCommunicator(int32_t comm, double timeoutSeconds) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised || !(timeoutSeconds >= 0))
    return MP_ERROR_INVALID_ARGUMENT;
  if (state.pending != MPI_REQUEST_NULL)
    MPI_Wait(&state.pending, MPI_STATUS_IGNORE);
  MPI_Comm c = MPI_Comm_f2c(comm);
  if (c == MPI_COMM_NULL) {
    mpSetCommunicator(nullptr);
    state.comm = MPI_COMM_NULL;
    return MP_OK;
  }
  state.comm = c;
  state.timeoutSeconds = timeoutSeconds;
  MPI_Comm_rank(c, &state.rank);
  MPI_Comm_size(c, &state.size);
  if (state.addF16 == MPI_OP_NULL) {
    MPI_Op_create(&addInF32<MP_F16>, /*commute=*/1, &state.addF16);
    MPI_Op_create(&addInF32<MP_BF16>, /*commute=*/1, &state.addBF16);
  }
  mpCommunicator communicator{state.size, state.rank, &allReduceSum, nullptr};
  mpSetCommunicator(&communicator);
  return MP_OK;
}
