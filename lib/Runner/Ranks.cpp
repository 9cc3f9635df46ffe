//===- Ranks.cpp - the processes of a data-parallel run -------------------===//

#include "mp/Runner/Ranks.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <cstdlib>

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

Ranks::Ranks(Ranks &&other) { *this = std::move(other); }

Ranks &Ranks::operator=(Ranks &&other) {
  std::swap(mpi, other.mpi);
  std::swap(me, other.me);
  std::swap(count, other.count);
  std::swap(timeout, other.timeout);
  std::swap(broken, other.broken);
  return *this;
}

#ifdef MP_HAS_MPI


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
  // An MPI library that does not belong to the launcher starts every
  // process as a run of its own: N copies training alone, writing the same
  // files. The launcher's count says so.
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *launched = std::getenv(var))
      if (std::atoi(launched) != r.count)
        return createStringError(llvm::formatv(
            "the launcher started {0} processes ({1}) but MPI sees {2}: "
            "this mp was built with another MPI than the one running it",
            launched, var, r.count).str());
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

static llvm::Error collective(int rank, double timeout, bool &broken,
                              llvm::StringRef what,
                              llvm::function_ref<int(MPI_Request *)> start) {
  if (broken)
    return createStringError(llvm::formatv(
        "rank {0}: an earlier collective timed out; the run cannot go on",
        rank).str());
  MPI_Request request;
  if (start(&request) != MPI_SUCCESS)
    return createStringError(
        llvm::formatv("rank {0}: MPI failed to start the {1}", rank, what)
            .str());
  if (!mpMpiWait(&request, timeout)) {
    broken = true;
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

llvm::Expected<std::vector<double>> Ranks::gather(llvm::ArrayRef<double> values,
                                                 llvm::StringRef what) {
  std::vector<double> all(values.begin(), values.end());
  if (!mpi || values.empty())
    return all;
  all.resize(values.size() * size_t(count));
  if (llvm::Error err =
          collective(me, timeout, broken, what, [&](MPI_Request *r) {
            return MPI_Iallgather(values.data(), int(values.size()),
                                  MPI_DOUBLE, all.data(), int(values.size()),
                                  MPI_DOUBLE, MPI_COMM_WORLD, r);
          }))
    return std::move(err);
  return all;
}

llvm::Error Ranks::sum(llvm::MutableArrayRef<int64_t> values) {
  if (!mpi || values.empty())
    return llvm::Error::success();
  return collective(me, timeout, broken, "sum of the evaluation results",
                    [&](MPI_Request *r) {
                      return MPI_Iallreduce(MPI_IN_PLACE, values.data(),
                                            int(values.size()), MPI_INT64_T,
                                            MPI_SUM, MPI_COMM_WORLD, r);
                    });
}

llvm::Error Ranks::checkSame(uint64_t value, llvm::StringRef what) {
  if (!mpi)
    return llvm::Error::success();
  std::vector<uint64_t> all(count);
  if (llvm::Error err = collective(
          me, timeout, broken, "comparison of " + what.str(),
          [&](MPI_Request *r) {
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

llvm::Expected<std::vector<double>> Ranks::gather(llvm::ArrayRef<double> values,
                                                 llvm::StringRef) {
  return std::vector<double>(values.begin(), values.end());
}
llvm::Error Ranks::sum(llvm::MutableArrayRef<int64_t>) {
  return llvm::Error::success();
}
llvm::Error Ranks::checkSame(uint64_t, llvm::StringRef) {
  return llvm::Error::success();
}
void Ranks::abort(int status) { std::exit(status); }

#endif
