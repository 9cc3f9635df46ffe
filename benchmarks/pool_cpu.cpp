//===- pool_cpu.cpp - pooling on ResNet-50's stem ---------------------------===//
//
// mpPool2d and mpPool2dGrad on the CPU runtime's fast paths, channels-last,
// at the pooling layer of ResNet-50's stem at batch 8 on 64x64 images (what
// torch_cpu_steps.py trains): 3x3 max pooling, stride 2, padding 1, over
// 8x32x32x64, and, for comparison, 2x2 average pooling, stride 2. f32, bf16
// and f16 storage computing in f32, as AMP runs them; ReLU over the input
// is the floor (one read and one write of each element). The kernels
// alternate 20 times in one process; each entry is the minimum of the last
// 18, in microseconds. Build against the runtime library of a Release
// build (one command):
//
//   g++ -O2 -I runtime/include benchmarks/pool_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o pool_cpu && ./pool_cpu
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

using bench::Buffer;
using bench::nowMs;

static void check(mpStatus s) { bench::check("pool_cpu", s); }

int main() {
  struct Pool {
    const char *name;
    mpPoolKind kind;
    int64_t window, padding;
  };
  const Pool pools[] = {{"max 3x3", MP_POOL_MAX, 3, 1},
                        {"avg 2x2", MP_POOL_AVG, 2, 0}};
  std::printf("NHWC 8x32x32x64, stride 2; microseconds (ratio to f32)\n");
  std::printf("%-8s %-5s %9s %16s %16s\n", "pool", "type", "relu",
              "pool2d", "pool2d_grad");
  std::vector<std::vector<double>> f32Times;
  for (mpElementType type : {MP_F32, MP_BF16, MP_F16})
    for (const Pool &p : pools) {
      int64_t out = (32 + 2 * p.padding - p.window) / 2 + 1;
      Buffer x(type, {8, 32, 32, 64}), dx(type, {8, 32, 32, 64}),
          y(type, {8, out, out, 64}), dy(type, {8, out, out, 64}),
          r(type, {8, 32, 32, 64});
      mpWindow w{};
      w.window[0] = w.window[1] = p.window;
      w.strides[0] = w.strides[1] = 2;
      for (int64_t &pad : w.padding)
        pad = p.padding;
      w.dilations[0] = w.dilations[1] = 1;
      w.groups = 1;
      w.channelsLast = 1;
      std::vector<std::function<void()>> kernels = {
          [&] { check(mpUnary(MP_RELU, &x.t, &r.t, MP_F32)); },
          [&] { check(mpPool2d(p.kind, &x.t, &y.t, &w, MP_F32)); },
          [&] {
            check(mpPool2dGrad(p.kind, &dy.t, &x.t, &dx.t, &w, MP_F32));
          }};
      std::vector<double> best(kernels.size(), 1e30);
      for (int round = 0; round < 20; ++round)
        for (size_t k = 0; k < kernels.size(); ++k) {
          double start = nowMs();
          kernels[k]();
          if (round >= 2)
            best[k] = std::min(best[k], (nowMs() - start) * 1e3);
        }
      if (type == MP_F32)
        f32Times.push_back(best);
      const std::vector<double> &base = f32Times[size_t(&p - pools)];
      std::printf("%-8s %-5s %9.1f %9.1f (%4.2f) %9.1f (%4.2f)\n", p.name,
                  type == MP_F32 ? "f32" : type == MP_BF16 ? "bf16" : "f16",
                  best[0], best[1],
                  best[1] / base[1], best[2], best[2] / base[2]);
    }
  return 0;
}
