//===- batchnorm_cpu.cpp - batch norm on ResNet-50's activations ----------===//
//
// mpBatchNorm and mpBatchNormGrad (training: batch statistics) on the CPU
// runtime's fast paths, channels-last, over the activation shapes of
// ResNet-50 at batch 8 on 64x64 images (what torch_cpu_steps.py trains):
// 32x32 with 64 channels (the stem), then 16x16, 8x8, 4x4 and 2x2 with
// 64/256, 128/512, 256/1024 and 512/2048 channels. ReLU over the same
// elements is the floor (it reads and writes each element once); the table
// gives ns per element and the ratio to ReLU's time, with f32, bf16 and f16
// storage. Each shape alternates the three kernels 12 times in one process;
// each entry is the minimum of the last 10. Build against the runtime
// library of a Release build (one command):
//
//   g++ -O2 -I runtime/include benchmarks/batchnorm_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o batchnorm_cpu && ./batchnorm_cpu
//
// MP_CPU_ISA=avx2 (or scalar) runs the AVX2 (or baseline) code on an
// AVX-512 machine.
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <functional>

using bench::Buffer;
using bench::nowMs;

static void check(mpStatus s) { bench::check("batchnorm_cpu", s); }

int main() {
  struct Shape {
    int64_t side, channels;
  };
  const Shape shapes[] = {{32, 64},  {16, 64},  {16, 256}, {8, 128},
                          {8, 512},  {4, 256},  {4, 1024}, {2, 512},
                          {2, 2048}};
  const int64_t batch = 8;
  std::printf("NHWC, batch %lld; ns per element (ratio to ReLU's)\n",
              static_cast<long long>(batch));
  std::printf("%-14s %-5s %8s %16s %16s\n", "shape", "type", "relu",
              "batch_norm", "batch_norm_grad");
  for (mpElementType type : {MP_F32, MP_BF16, MP_F16})
    for (Shape s : shapes) {
      std::vector<int64_t> dims = {batch, s.side, s.side, s.channels};
      Buffer x(type, dims), y(type, dims), dy(type, dims), dx(type, dims);
      std::vector<Buffer> stats;
      for (int k = 0; k < 9; ++k)
        stats.emplace_back(MP_F32, std::vector<int64_t>{s.channels});
      // Running variances and scales of 1 keep rstd finite and the
      // values in range.
      for (int k : {1, 3}) {
        float *v = reinterpret_cast<float *>(stats[k].bytes.data());
        std::fill(v, v + s.channels, 1.0f);
      }
      auto relu = [&] { check(mpUnary(MP_RELU, &x.t, &y.t, MP_F32)); };
      auto forward = [&] {
        check(mpBatchNorm(&x.t, &stats[0].t, &stats[1].t, &stats[2].t,
                          &stats[3].t, &y.t, &stats[4].t, &stats[5].t,
                          &stats[6].t, &stats[7].t, 1e-5f, 0.1f, 1, MP_F32));
      };
      auto gradient = [&] {
        check(mpBatchNormGrad(&dy.t, &x.t, &stats[0].t, &stats[4].t,
                              &stats[5].t, &dx.t, &stats[7].t, &stats[8].t,
                              1, MP_F32));
      };
      std::function<void()> fns[] = {relu, forward, gradient};
      double best[3] = {1e30, 1e30, 1e30};
      for (int round = 0; round < 12; ++round)
        for (int k = 0; k < 3; ++k) {
          double t0 = nowMs();
          fns[k]();
          double ms = nowMs() - t0;
          if (round >= 2)
            best[k] = std::min(best[k], ms);
        }
      double n = double(x.count());
      char name[32];
      std::snprintf(name, sizeof name, "%lldx%lldx%lld",
                    static_cast<long long>(s.side),
                    static_cast<long long>(s.side),
                    static_cast<long long>(s.channels));
      const char *typeName = type == MP_F32    ? "f32"
                             : type == MP_BF16 ? "bf16"
                                               : "f16";
      std::printf("%-14s %-5s %8.3f %8.3f (%4.1fx) %8.3f (%4.1fx)\n", name,
                  typeName, best[0] * 1e6 / n,
                  best[1] * 1e6 / n, best[1] / best[0], best[2] * 1e6 / n,
                  best[2] / best[0]);
    }
  return 0;
}
