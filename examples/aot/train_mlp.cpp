//===- train_mlp.cpp - train with a step compiled ahead of time -----------===//
//
// Links mlp.o (from `mp-compile examples/mlp.mlir --optimizer=sgd --lr=0.1
// --amp=f16`: the forward model differentiated, with AMP) and
// the mp runtime. The generated header lists every tensor the step takes
// (mlp_tensors: parameters and state, updated in place, the batch, and
// destinations for the loss and outputs) and names them in a struct
// (mlp_args, run by mlp_run). The data is a toy task (the label is the index of
// the largest of the first `classes` features); the program exits non-zero
// unless the loss falls.
//
//===----------------------------------------------------------------------===//

#include "mlp.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

struct Buffer {
  const mlp_tensor *info;
  std::vector<uint64_t> storage;
  int64_t count = 1;
  void *data() { return storage.data(); }
};

} // namespace

int main() {
  if (mpRuntimeAbiVersion() != MP_RUNTIME_ABI_VERSION) {
    std::fprintf(stderr, "runtime ABI mismatch\n");
    return 1;
  }
  std::mt19937 rng(7);
  std::vector<Buffer> buffers(MLP_NUM_TENSORS);
  Buffer *x = nullptr, *labels = nullptr, *loss = nullptr;
  for (int k = 0; k < MLP_NUM_TENSORS; ++k) {
    Buffer &b = buffers[k];
    b.info = &mlp_tensors[k];
    for (int d = 0; d < b.info->rank; ++d)
      b.count *= b.info->shape[d];
    b.storage.assign((b.count * mpElementSize(b.info->elementType) + 7) / 8, 0);
    if (b.info->role == MLP_INPUT) x = &b;
    if (b.info->role == MLP_LABEL) labels = &b;
    if (b.info->role == MLP_LOSS) loss = &b;
    bool persistent =
        b.info->role == MLP_PARAM || b.info->role == MLP_STATE;
    if (!persistent)
      continue;
    if (b.info->hasInit) { // e.g. the loss scale and its counter
      for (int64_t i = 0; i < b.count; ++i) {
        if (b.info->elementType == MP_F32)
          static_cast<float *>(b.data())[i] = float(b.info->init);
        else if (b.info->elementType == MP_I64)
          static_cast<int64_t *>(b.data())[i] = int64_t(b.info->init);
      }
    } else if (b.info->role == MLP_PARAM && b.info->rank == 2) {
      float bound = 1.0f / std::sqrt(float(b.info->shape[0]));
      std::uniform_real_distribution<float> u(-bound, bound);
      for (int64_t i = 0; i < b.count; ++i)
        static_cast<float *>(b.data())[i] = u(rng);
    }
  }
  if (!x || !labels || !loss || x->info->elementType != MP_F32 ||
      labels->info->elementType != MP_I32) {
    std::fprintf(stderr, "unexpected step signature\n");
    return 1;
  }
  int64_t batch = x->info->shape[0], features = x->info->shape[1];
  int64_t classes = 10;

  std::normal_distribution<float> normal;
  // The header names every tensor in a struct; point each at its buffer.
  mlp_args args;
  for (int k = 0; k < MLP_NUM_TENSORS; ++k)
    *mlp_slot(&args, k) = buffers[k].data();
  double first = 0, last = 0;
  const int steps = 300, window = 30;
  for (int step = 0; step < steps; ++step) {
    auto *xs = static_cast<float *>(x->data());
    auto *ys = static_cast<int32_t *>(labels->data());
    for (int64_t r = 0; r < batch; ++r) {
      int32_t best = 0;
      for (int64_t f = 0; f < features; ++f) {
        xs[r * features + f] = normal(rng);
        if (f < classes && xs[r * features + f] > xs[r * features + best])
          best = int32_t(f);
      }
      ys[r] = best;
    }
    mlp_run(&args);
    if (const char *error = mprtTakeError()) {
      std::fprintf(stderr, "step %d: %s\n", step + 1, error);
      return 1;
    }
    double l = *static_cast<float *>(loss->data());
    if (step < window) first += l / window;
    if (step >= steps - window) last += l / window;
    if ((step + 1) % 50 == 0)
      std::printf("step %d loss %.4f\n", step + 1, l);
  }
  std::printf("mean loss of the first %d steps %.4f, of the last %d %.4f\n",
              window, first, window, last);
  if (!(last < 0.7 * first)) {
    std::fprintf(stderr, "the loss did not fall\n");
    return 1;
  }
  std::printf("trained\n");
  return 0;
}
