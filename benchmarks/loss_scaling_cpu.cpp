//===- loss_scaling_cpu.cpp - unscaling ResNet-50's gradients -------------===//
//
// mpUnscaleGrads on the CPU runtime's fast path, over the gradients of
// torchvision's ResNet-50 with 10 classes (161 tensors, 23.5M elements), as
// an AMP-f16 step unscales them before its update: f32 gradients (what f32
// master weights get) and, for the conversions, f16 ones. The floor is
// mpSgdUpdate without momentum of f32 parameters with the same gradients
// (one more read and the same write).
// The two alternate 12 times in one process; each entry is the minimum of
// the last 10, in milliseconds. Build against the runtime library of a
// Release build (one command):
//
//   g++ -O2 -I runtime/include benchmarks/loss_scaling_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o loss_scaling_cpu && ./loss_scaling_cpu
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

using bench::Buffer;
using bench::nowMs;

static void check(mpStatus s) { bench::check("loss_scaling_cpu", s); }

int main() {
  std::vector<std::vector<int64_t>> shapes = bench::resnet50ParameterShapes();
  int64_t total = 0;
  for (const auto &s : shapes) {
    int64_t n = 1;
    for (int64_t d : s)
      n *= d;
    total += n;
  }
  std::printf("ResNet-50 gradients: %zu tensors, %lld elements; ms\n",
              shapes.size(), static_cast<long long>(total));
  std::printf("%-9s %10s %10s %8s\n", "gradients", "sgd", "unscale", "ratio");
  for (mpElementType type : {MP_F32, MP_F16}) {
    std::vector<std::unique_ptr<Buffer>> params, grads, unscaled;
    std::vector<mpTensor> g, u;
    for (const auto &s : shapes) {
      params.push_back(std::make_unique<Buffer>(MP_F32, s));
      grads.push_back(std::make_unique<Buffer>(type, s));
      unscaled.push_back(std::make_unique<Buffer>(type, s));
      g.push_back(grads.back()->t);
      u.push_back(unscaled.back()->t);
    }
    Buffer scale(MP_F32, {}), found(MP_I1, {});
    *static_cast<float *>(scale.t.data) = 1024.0f;
    double sgd = 1e30, unscale = 1e30;
    for (int round = 0; round < 12; ++round) {
      double t0 = nowMs();
      for (size_t i = 0; i < shapes.size(); ++i)
        check(mpSgdUpdate(&params[i]->t, &g[i], nullptr, nullptr, 1e-3f, 0,
                          0, 0));
      double t1 = nowMs();
      check(mpUnscaleGrads(int32_t(shapes.size()), g.data(), u.data(),
                           &scale.t, &found.t));
      double t2 = nowMs();
      if (*static_cast<uint8_t *>(found.t.data))
        std::fprintf(stderr, "loss_scaling_cpu: unexpected overflow\n");
      if (round >= 2) {
        sgd = std::min(sgd, t1 - t0);
        unscale = std::min(unscale, t2 - t1);
      }
    }
    std::printf("%-9s %10.2f %10.2f %8.2f\n", type == MP_F32 ? "f32" : "f16",
                sgd, unscale, unscale / sgd);
  }
  return 0;
}
