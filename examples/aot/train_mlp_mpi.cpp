//===- train_mlp_mpi.cpp - a data-parallel step in an MPI program ---------===//
//
// Links mlp_dp.o (from `mp-compile examples/mlp.mlir --optimizer=sgd
// --lr=0.1 --amp=bf16 --data-parallel`), the mp runtime and its MPI
// transport (mp_runtime_mpi). Run it with `mpirun -np N`: every rank
// starts from the same parameters (one seed), draws its own shard of each
// global batch of the toy task of train_mlp.cpp, and runs the step, whose
// tg.all_reduce averages the gradients over the ranks. It prints the mean
// loss over the ranks, checks at the end that every rank holds the same
// parameters bit for bit, and exits non-zero unless the loss falls.
//
//===----------------------------------------------------------------------===//

#include "mlp_dp.h"

#include "mp/Runtime/MPCollectives.h"

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // tg.all_reduce runs over MPI_COMM_WORLD; a rank that waits 60 s for the
  // others gets an error from mprtTakeError instead of waiting forever.
  if (mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_WORLD), 60.0) != MP_OK) {
    std::fprintf(stderr, "rank %d: no communicator\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  std::vector<std::vector<uint64_t>> storage(MLP_NUM_TENSORS);
  mlp_args args;
  float *x = nullptr, *loss = nullptr;
  int32_t *labels = nullptr;
  std::mt19937 init(7); // the same parameters on every rank
  for (int k = 0; k < MLP_NUM_TENSORS; ++k) {
    const mlp_tensor &t = mlp_tensors[k];
    int64_t count = 1;
    for (int d = 0; d < t.rank; ++d)
      count *= t.shape[d];
    storage[k].assign((count * mpElementSize(t.elementType) + 7) / 8, 0);
    void *data = storage[k].data();
    *mlp_slot(&args, k) = data;
    if (t.role == MLP_INPUT) x = static_cast<float *>(data);
    if (t.role == MLP_LABEL) labels = static_cast<int32_t *>(data);
    if (t.role == MLP_LOSS) loss = static_cast<float *>(data);
    if (t.role == MLP_PARAM && t.rank == 2) {
      float bound = 1.0f / std::sqrt(float(t.shape[0]));
      std::uniform_real_distribution<float> u(-bound, bound);
      for (int64_t i = 0; i < count; ++i)
        static_cast<float *>(data)[i] = u(init);
    }
  }
  const mlp_tensor *xt = nullptr;
  for (int k = 0; k < MLP_NUM_TENSORS; ++k)
    if (mlp_tensors[k].role == MLP_INPUT)
      xt = &mlp_tensors[k];
  int64_t batch = xt->shape[0], features = xt->shape[1], classes = 10;

  std::mt19937 rng(1000 + rank); // each rank its own shard of the data
  std::normal_distribution<float> normal;
  const int steps = 300, window = 30;
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    for (int64_t r = 0; r < batch; ++r) {
      int32_t best = 0;
      for (int64_t f = 0; f < features; ++f) {
        x[r * features + f] = normal(rng);
        if (f < classes && x[r * features + f] > x[r * features + best])
          best = int32_t(f);
      }
      labels[r] = best;
    }
    mlp_run(&args);
    if (const char *error = mprtTakeError()) {
      std::fprintf(stderr, "rank %d, step %d: %s\n", rank, step + 1, error);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double mine = *loss, mean = 0;
    MPI_Allreduce(&mine, &mean, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    mean /= size;
    if (step < window) first += mean / window;
    if (step >= steps - window) last += mean / window;
    if (rank == 0 && (step + 1) % 100 == 0)
      std::printf("step %d mean loss over %d ranks %.4f\n", step + 1, size,
                  mean);
  }

  // Every rank applied the same averaged gradients: the same parameters.
  uint64_t hash = 1469598103934665603ull;
  for (int k = 0; k < MLP_NUM_TENSORS; ++k)
    if (mlp_tensors[k].role == MLP_PARAM)
      for (uint64_t word : storage[k])
        hash = (hash ^ word) * 1099511628211ull;
  std::vector<uint64_t> hashes(size);
  MPI_Gather(&hash, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, 0,
             MPI_COMM_WORLD);
  int status = 0;
  if (rank == 0) {
    for (int r = 1; r < size; ++r)
      if (hashes[r] != hashes[0]) {
        std::fprintf(stderr, "rank %d's parameters differ from rank 0's\n", r);
        status = 1;
      }
    std::printf("mean loss of the first %d steps %.4f, of the last %d %.4f\n",
                window, first, window, last);
    if (!(last < 0.7 * first)) {
      std::fprintf(stderr, "the loss did not fall\n");
      status = 1;
    }
    if (!status)
      std::printf("trained on %d ranks, identical parameters\n", size);
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_NULL), 0);
  MPI_Finalize();
  return status;
}
