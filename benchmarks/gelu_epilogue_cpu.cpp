//===- gelu_epilogue_cpu.cpp - GELU in the GEMM's epilogue, on the CPU ----===//
//
// A transformer MLP's GELU and its gradient, fused into the products around
// them (mpFusedMatmulAux: the packed GEMM's tile epilogue) against the
// kernels a step runs without that fusion:
//  - forward: z = x w1^T + b (mpFusedMatmul, bias epilogue), then y =
//    gelu(z) (mpUnary), against one mpFusedMatmulAux writing y and z;
//  - backward: dy = dh w2 (mpMatmul), then dz = dy gelu'(z)
//    (mpActivationGrad), against one mpFusedMatmulAux reading z.
// The product alone (mpFusedMatmul with the bias, mpMatmul) is timed too, so
// each line also gives what the GELU adds to it, fused or not. Default
// shapes: the ViT benchmark step's MLP (torch_cpu_steps.py's vit: 520
// tokens, width 256, hidden 1024); `rows width hidden` on the command line
// for others. Variants run in turn, round after round (so a drift of the
// machine's speed reaches all of them); each entry is the median. Build
// against the runtime library of a Release build:
//
//   g++ -O2 -fopenmp -I runtime/include benchmarks/gelu_epilogue_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -o gelu_epilogue_cpu
//   ./gelu_epilogue_cpu [rows width hidden [rounds]]
//
// MP_CPU_ISA=avx2 runs the AVX2 code on an AVX-512 machine (with
// DNNL_MAX_CPU_ISA=AVX2 for oneDNN's products).
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using bench::Buffer;

namespace {

const char *kTool = "gelu_epilogue_cpu";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int64_t rows = argc > 1 ? std::atoll(argv[1]) : 520;
  int64_t width = argc > 2 ? std::atoll(argv[2]) : 256;
  int64_t hidden = argc > 3 ? std::atoll(argv[3]) : 1024;
  int rounds = argc > 4 ? std::atoi(argv[4]) : 31;
  if (rows <= 0 || width <= 0 || hidden <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: %s [rows width hidden [rounds]]\n", kTool);
    return 1;
  }
  Buffer x(MP_F32, {rows, width}), w1(MP_F32, {hidden, width}),
      b1(MP_F32, {hidden}), dh(MP_F32, {rows, width}),
      w2(MP_F32, {width, hidden}), z(MP_F32, {rows, hidden}),
      y(MP_F32, {rows, hidden}), dy(MP_F32, {rows, hidden}),
      dz(MP_F32, {rows, hidden});
  auto run = [](mpStatus s) { bench::check(kTool, s); };
  struct Variant {
    std::string name;
    std::function<void()> call;
    std::vector<double> ms;
  };
  std::vector<Variant> variants = {
      {"forward: product + bias",
       [&] {
         run(mpFusedMatmul(&x.t, &w1.t, &b1.t, nullptr, &z.t, 0, 1,
                           MP_ACTIVATION_NONE, MP_F32));
       },
       {}},
      {"forward: then mpUnary gelu",
       [&] {
         run(mpFusedMatmul(&x.t, &w1.t, &b1.t, nullptr, &z.t, 0, 1,
                           MP_ACTIVATION_NONE, MP_F32));
         run(mpUnary(MP_GELU, &z.t, &y.t, MP_F32));
       },
       {}},
      {"forward: fused, saves z",
       [&] {
         run(mpFusedMatmulAux(&x.t, &w1.t, &b1.t, nullptr, &z.t, &y.t, 0, 1,
                              MP_ACTIVATION_GELU, MP_F32));
       },
       {}},
      {"backward: product",
       [&] { run(mpMatmul(&dh.t, &w2.t, &dy.t, 0, 0, MP_F32)); },
       {}},
      {"backward: then gelu_grad",
       [&] {
         run(mpMatmul(&dh.t, &w2.t, &dy.t, 0, 0, MP_F32));
         run(mpActivationGrad(MP_GELU_GRAD, &dy.t, &z.t, &dz.t, MP_F32));
       },
       {}},
      {"backward: fused, reads z",
       [&] {
         run(mpFusedMatmulAux(&dh.t, &w2.t, nullptr, nullptr, &z.t, &dz.t, 0,
                              0, MP_ACTIVATION_GELU_GRAD, MP_F32));
       },
       {}},
  };
  for (int r = 0; r < rounds + 2; ++r)
    for (Variant &v : variants) {
      double t0 = bench::nowMs();
      v.call();
      if (r >= 2) // the first rounds warm the caches and the thread pool
        v.ms.push_back(bench::nowMs() - t0);
    }
  std::printf("GELU epilogue: %lld rows, width %lld, hidden %lld, f32, "
              "median of %d rounds\n",
              (long long)rows, (long long)width, (long long)hidden, rounds);
  std::printf("%-30s %9s %12s\n", "variant", "ms", "GELU adds");
  for (size_t i = 0; i < variants.size(); ++i) {
    double ms = median(variants[i].ms);
    double product = median(variants[i < 3 ? 0 : 3].ms);
    if (i % 3 == 0)
      std::printf("%-30s %9.3f %12s\n", variants[i].name.c_str(), ms, "");
    else
      std::printf("%-30s %9.3f %9.3f ms\n", variants[i].name.c_str(), ms,
                  ms - product);
  }
  for (int pass = 0; pass < 2; ++pass) {
    double unfused = median(variants[3 * pass + 1].ms);
    double fused = median(variants[3 * pass + 2].ms);
    std::printf("%s: unfused / fused = %.3f\n",
                pass ? "backward" : "forward", unfused / fused);
  }
  return 0;
}
