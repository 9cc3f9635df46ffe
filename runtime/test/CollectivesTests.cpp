//===- CollectivesTests.cpp - tg.all_reduce over MPI, against float64 ----===//
//
// Run under mpirun with any number of ranks. Every rank fills a bucket of
// tensors with random data from a seed (fresh per run, agreed through
// rank 0, printed) and its rank; mpAllReduce sums or averages them over
// MPI; each rank regenerates every rank's data to compute the float64
// reference and checks the result within a bound derived from the storage
// type, and the ranks check that they hold the same bits. Then: the
// one-rank path, aliasing inputs and outputs, bad arguments, and a rank
// that arrives late (the other times out with MP_ERROR_COMMUNICATION).
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPCollectives.h"
#include "mp/Runtime/MPCompiled.h"

#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int rank = 0, size = 1, failures = 0;

void check(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("rank %d: FAIL: %s\n", rank, what.c_str());
    ++failures;
  }
}

/// Unit roundoff of a storage type.
double roundoff(mpElementType t) {
  switch (t) {
  case MP_F64: return std::ldexp(1.0, -53);
  case MP_F32: return std::ldexp(1.0, -24);
  case MP_F16: return std::ldexp(1.0, -11);
  default: return std::ldexp(1.0, -8); // bf16
  }
}

/// The smallest normal number of a storage type (below it rounding is
/// absolute).
double tiny(mpElementType t) {
  switch (t) {
  case MP_F64: return 2.2250738585072014e-308;
  case MP_F32: return 1.1754943508222875e-38;
  case MP_F16: return std::ldexp(1.0, -14);
  default: return 1.1754943508222875e-38;
  }
}

/// `n` values of rank `r` for tensor `k`, rounded to `type`, as doubles.
std::vector<double> values(uint64_t seed, int r, int k, int64_t n,
                           mpElementType type) {
  std::mt19937_64 rng(seed * 1000003 + uint64_t(r) * 7919 + uint64_t(k));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = normal(rng) * std::ldexp(1.0, int(rng() % 9) - 4);
  // Round to the storage type and back.
  std::vector<char> stored(size_t(n) * mpElementSize(type));
  mpConvert(v.data(), MP_F64, stored.data(), type, n);
  mpConvert(stored.data(), type, v.data(), MP_F64, n);
  return v;
}

void bucket(uint64_t seed, mpElementType type, mpCollectiveKind kind,
            bool alias) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 17}, {1}, {0}, {1000}};
  const char *name = mpElementTypeName(type);
  std::string label = std::string(name) +
                      (kind == MP_COLLECTIVE_MEAN ? " mean" : " sum") +
                      (alias ? " in place" : "");
  size_t width = mpElementSize(type);
  std::vector<std::vector<char>> in(shapes.size()), out(shapes.size());
  std::vector<mpTensor> inputs(shapes.size()), outputs(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    mpTensor t{};
    t.elementType = type;
    t.rank = int32_t(shapes[k].size());
    int64_t n = 1;
    for (size_t d = 0; d < shapes[k].size(); ++d)
      n *= (t.shape[d] = shapes[k][d]);
    std::vector<double> mine = values(seed, rank, int(k), n, type);
    in[k].resize(size_t(n) * width + 1);
    mpConvert(mine.data(), MP_F64, in[k].data(), type, n);
    out[k].resize(size_t(n) * width + 1);
    t.data = in[k].data();
    inputs[k] = t;
    t.data = alias ? in[k].data() : out[k].data();
    outputs[k] = t;
  }
  int failuresBefore = failures;
  mpElementType compute = type == MP_F64 ? MP_F64 : MP_F32;
  mpStatus status = mpAllReduce(kind, int32_t(shapes.size()), inputs.data(),
                                outputs.data(), compute);
  check(status == MP_OK, label + ": status " + mpStatusString(status));
  double u = roundoff(type);
  double worst = 0;
  uint64_t hash = 1469598103934665603ull;
  for (size_t k = 0; k < shapes.size(); ++k) {
    int64_t n = mpNumElements(&outputs[k]);
    std::vector<double> got(n);
    mpConvert(outputs[k].data, type, got.data(), MP_F64, n);
    std::vector<double> sum(n, 0.0), magnitude(n, 0.0);
    for (int r = 0; r < size; ++r) {
      std::vector<double> v = values(seed, r, int(k), n, type);
      for (int64_t i = 0; i < n; ++i) {
        sum[i] += v[i];
        magnitude[i] += std::fabs(v[i]);
      }
    }
    double divisor = kind == MP_COLLECTIVE_MEAN ? size : 1;
    for (int64_t i = 0; i < n; ++i) {
      double ref = sum[i] / divisor;
      // Each contribution is divided and rounded once (mean), and every
      // partial sum may be rounded to the storage type on its way: at most
      // `size` roundings of values bounded by the sum of magnitudes, plus
      // absolute rounding below the smallest normal number.
      double bound = (size + 1) * u * magnitude[i] / divisor +
                     size * tiny(type);
      double err = std::fabs(got[i] - ref);
      worst = std::max(worst, err / std::max(bound, 1e-300));
      if (!(err <= bound)) {
        check(false, label + ": tensor " + std::to_string(k) + "[" +
                         std::to_string(i) + "] = " + std::to_string(got[i]) +
                         ", float64 reference " + std::to_string(ref));
        break;
      }
    }
    const auto *bytes = static_cast<const unsigned char *>(outputs[k].data);
    for (size_t b = 0; b < size_t(n) * width; ++b)
      hash = (hash ^ bytes[b]) * 1099511628211ull;
  }
  // Every rank holds the same bits.
  std::vector<uint64_t> hashes(size);
  MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T,
                MPI_COMM_WORLD);
  for (int r = 1; r < size; ++r)
    check(hashes[r] == hashes[0],
          label + ": rank " + std::to_string(r) + " differs from rank 0");
  if (rank == 0 && failures == failuresBefore)
    std::printf("%s: within the bound (worst error %.2f of it)\n",
                label.c_str(), worst);
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  uint64_t seed =
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("ranks: %d, seed %llu\n", size, (unsigned long long)seed);

  check(mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_WORLD), 60) == MP_OK,
        "mpUseMpiCommunicator");
  check(mpCommunicatorSize() == size, "mpCommunicatorSize");
  for (mpElementType type : {MP_F32, MP_F64, MP_F16, MP_BF16})
    for (mpCollectiveKind kind : {MP_COLLECTIVE_SUM, MP_COLLECTIVE_MEAN})
      bucket(seed, type, kind, /*alias=*/false);
  bucket(seed, MP_BF16, MP_COLLECTIVE_MEAN, /*alias=*/true);

  // Bad arguments fail without communicating.
  mpTensor a{}, b{};
  float x = 1;
  a.data = b.data = &x;
  a.elementType = MP_F32;
  b.elementType = MP_F16;
  check(mpAllReduce(MP_COLLECTIVE_SUM, 1, &a, &b, MP_F32) ==
            MP_ERROR_INVALID_ARGUMENT,
        "mixed element types are refused");
  check(mpAllReduce(MP_COLLECTIVE_SUM, 0, &a, &a, MP_F32) ==
            MP_ERROR_INVALID_ARGUMENT,
        "an empty bucket is refused");
  a.elementType = MP_I32;
  check(mpAllReduce(MP_COLLECTIVE_SUM, 1, &a, &a, MP_F32) ==
            MP_ERROR_INVALID_ARGUMENT,
        "integer tensors are refused");

  // A rank that is late: with a 0.5 s deadline, rank 0 gives up with an
  // error naming itself and what it waited for; rank 1 joins later and the
  // collective completes in the background.
  if (size > 1) {
    check(mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_WORLD), 0.5) == MP_OK,
          "a 0.5 s deadline");
    // Static: the timed-out collective still writes it when rank 1 joins.
    static float v = 1;
    mpTensor t{};
    t.data = &v;
    t.elementType = MP_F32;
    if (rank == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    mpStatus status = mpAllReduce(MP_COLLECTIVE_SUM, 1, &t, &t, MP_F32);
    if (rank == 0) {
      check(status == MP_ERROR_COMMUNICATION,
            "a late rank makes the other time out");
      std::printf("late rank: %s\n", mpStatusString(status));
      // Every later collective fails at once: the timed-out one is active.
      check(mpAllReduce(MP_COLLECTIVE_SUM, 1, &t, &t, MP_F32) ==
                MP_ERROR_COMMUNICATION,
            "a collective after a timeout fails at once");
      mprtTakeError();
    }
    // Changing the communicator waits for the timed-out collective, which
    // rank 1 has joined by now.
    mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_WORLD), 60);
    MPI_Barrier(MPI_COMM_WORLD);
  }

  // One rank: the results are the inputs, bit for bit.
  mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_NULL), 0);
  check(mpCommunicatorSize() == 1, "back to one rank");
  float one[3] = {1.5f, -2.25f, 1e-30f}, copy[3] = {};
  mpTensor in{}, out{};
  in.data = one;
  out.data = copy;
  in.elementType = out.elementType = MP_F32;
  in.rank = out.rank = 1;
  in.shape[0] = out.shape[0] = 3;
  check(mpAllReduce(MP_COLLECTIVE_MEAN, 1, &in, &out, MP_F32) == MP_OK &&
            std::memcmp(one, copy, sizeof one) == 0,
        "one rank: the mean is the input");

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%s: %d failure(s)\n", total ? "FAIL" : "PASS", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
