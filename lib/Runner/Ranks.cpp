//===- Ranks.cpp - the processes of a data-parallel run -------------------===//

#include "mp/Runner/Ranks.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#ifdef MP_HAS_MPI
#include "mp/Runtime/MPCollectives.h"

#include <mpi.h>
#endif

using namespace mp::runner;
using llvm::createStringError;

bool Ranks::launchedByMpi() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var))
      return true;
  return false;
}

bool Ranks::available() {
#ifdef MP_HAS_MPI
  return true;
#else
  return false;
#endif
}

Ranks::Ranks(Ranks &&other) { *this = std::move(other); }

Ranks &Ranks::operator=(Ranks &&other) {
  std::swap(mpi, other.mpi);
  std::swap(me, other.me);
  std::swap(count, other.count);
  std::swap(timeout, other.timeout);
  return *this;
}

#ifdef MP_HAS_MPI

namespace {

/// Waits for `request` at most `timeout` seconds (0: forever).
bool wait(MPI_Request &request, double timeout) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  for (int spins = 0;; ++spins) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return false;
    if (done)
      return true;
    if (spins > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (timeout > 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() > timeout)
      return false;
  }
}

} // namespace

llvm::Expected<Ranks> Ranks::join(double timeoutSeconds) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS)
      return createStringError("MPI_Init failed");
  }
  Ranks r;
  r.mpi = true;
  r.timeout = timeoutSeconds;
  MPI_Comm_rank(MPI_COMM_WORLD, &r.me);
  MPI_Comm_size(MPI_COMM_WORLD, &r.count);
  if (mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_WORLD), timeoutSeconds) !=
      MP_OK)
    return createStringError("cannot use MPI_COMM_WORLD for tg.all_reduce");
  return std::move(r);
}

Ranks::~Ranks() {
  if (!mpi)
    return;
  mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_NULL), 0);
  MPI_Finalize();
}

static llvm::Error collective(int rank, double timeout, llvm::StringRef what,
                              llvm::function_ref<int(MPI_Request *)> start) {
  MPI_Request request;
  if (start(&request) != MPI_SUCCESS)
    return createStringError(
        llvm::formatv("rank {0}: MPI failed to start the {1}", rank, what)
            .str());
  if (!wait(request, timeout)) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", timeout);
    return createStringError(
        llvm::formatv("rank {0} waited more than {1} s for the {2}: another "
                      "rank died, hangs, or runs a different step "
                      "(--collective-timeout)",
                      rank, seconds, what)
            .str());
  }
  return llvm::Error::success();
}

llvm::Error Ranks::mean(llvm::MutableArrayRef<double> values) {
  if (!mpi || values.empty())
    return llvm::Error::success();
  if (llvm::Error err = collective(me, timeout, "mean of the losses",
                                   [&](MPI_Request *r) {
                                     return MPI_Iallreduce(
                                         MPI_IN_PLACE, values.data(),
                                         int(values.size()), MPI_DOUBLE,
                                         MPI_SUM, MPI_COMM_WORLD, r);
                                   }))
    return err;
  for (double &v : values)
    v /= count;
  return llvm::Error::success();
}

llvm::Error Ranks::sum(llvm::MutableArrayRef<int64_t> values) {
  if (!mpi || values.empty())
    return llvm::Error::success();
  return collective(me, timeout, "sum of the evaluation results",
                    [&](MPI_Request *r) {
                      return MPI_Iallreduce(MPI_IN_PLACE, values.data(),
                                            int(values.size()), MPI_INT64_T,
                                            MPI_SUM, MPI_COMM_WORLD, r);
                    });
}

llvm::Error Ranks::range(double value, double &lo, double &hi) {
  lo = hi = value;
  if (!mpi)
    return llvm::Error::success();
  // max(v) and max(-v) in one message.
  double both[2] = {value, -value};
  if (llvm::Error err =
          collective(me, timeout, "comparison of the steps' results",
                     [&](MPI_Request *r) {
                       return MPI_Iallreduce(MPI_IN_PLACE, both, 2,
                                             MPI_DOUBLE, MPI_MAX,
                                             MPI_COMM_WORLD, r);
                     }))
    return err;
  hi = both[0];
  lo = -both[1];
  return llvm::Error::success();
}

llvm::Error Ranks::checkSame(uint64_t value, llvm::StringRef what) {
  if (!mpi)
    return llvm::Error::success();
  std::vector<uint64_t> all(count);
  if (llvm::Error err = collective(
          me, timeout, "comparison of " + what.str(), [&](MPI_Request *r) {
            return MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1,
                                  MPI_UINT64_T, MPI_COMM_WORLD, r);
          }))
    return err;
  std::string differ;
  for (int k = 1; k < count; ++k)
    if (all[k] != all[0])
      differ += (differ.empty() ? "" : ", ") + std::to_string(k);
  if (differ.empty())
    return llvm::Error::success();
  return createStringError(llvm::formatv("the ranks disagree on {0}: rank(s) "
                                         "{1} differ from rank 0",
                                         what, differ)
                               .str());
}

void Ranks::abort(int status) {
  if (mpi)
    MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

#else // !MP_HAS_MPI

llvm::Expected<Ranks> Ranks::join(double) {
  return createStringError("this build of mp has no MPI (configure with "
                           "libopenmpi-dev installed): it cannot join a "
                           "data-parallel run");
}

Ranks::~Ranks() = default;

llvm::Error Ranks::mean(llvm::MutableArrayRef<double>) {
  return llvm::Error::success();
}
llvm::Error Ranks::sum(llvm::MutableArrayRef<int64_t>) {
  return llvm::Error::success();
}
llvm::Error Ranks::range(double value, double &lo, double &hi) {
  lo = hi = value;
  return llvm::Error::success();
}
llvm::Error Ranks::checkSame(uint64_t, llvm::StringRef) {
  return llvm::Error::success();
}
void Ranks::abort(int status) { std::exit(status); }

#endif
