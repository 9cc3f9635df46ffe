//===- conv_grad_cpu.cpp - bf16 convolution gradients, direct or widened --===//
//
// The two ways the CPU runtime can run a bf16 convolution's gradients
// (computing in f32), at the 3x3 and stem shapes of ResNet-50 on 64x64
// images, batch 8, NHWC:
//
//   direct   mpConv2dGradFilter / mpConv2dGradInput on the bf16 tensors:
//            oneDNN's bf16 kernels (AMX or AVX512_BF16 where the CPU has
//            them), with the filter reordered to and from oneDNN's blocked
//            layout in every call;
//   widened  the bf16 operands converted exactly to f32 (mpConvert), the
//            f32 kernels, and (for dX) the result rounded back to bf16:
//            what the runtime does for f16, and for bf16 where oneDNN has
//            no bf16 kernel.
//
// Each pair runs alternately in one process, 12 times; prints the minimum
// of the last 10 per shape, in ms, and the totals. Build against the
// runtime library of a Release build:
//
//   g++ -O2 -I runtime/include benchmarks/conv_grad_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o conv_grad_cpu && ./conv_grad_cpu
//
// (one command). DNNL_MAX_CPU_ISA=AVX512_CORE_BF16 in the environment keeps
// oneDNN off AMX.
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <vector>

using bench::Buffer;
using bench::nowMs;

static void check(mpStatus s) { bench::check("conv_grad_cpu", s); }

int main() {
  struct Shape {
    int64_t n, h, c, o, k, s;
  } shapes[] = {{8, 64, 3, 64, 7, 2},    {8, 16, 64, 64, 3, 1},
                {8, 16, 128, 128, 3, 2}, {8, 8, 128, 128, 3, 1},
                {8, 4, 256, 256, 3, 1},  {8, 2, 512, 512, 3, 1}};
  double total[4] = {};
  std::printf("| N x H x W x C -> O, k x k / s | dW direct | dW widened | "
              "dX direct | dX widened |\n|---|---:|---:|---:|---:|\n");
  for (const Shape &sh : shapes) {
    int64_t oh = (sh.h + 2 * (sh.k / 2) - sh.k) / sh.s + 1;
    mpWindow w{};
    w.strides[0] = w.strides[1] = sh.s;
    for (int64_t &p : w.padding)
      p = sh.k / 2;
    w.dilations[0] = w.dilations[1] = 1;
    w.groups = 1;
    w.channelsLast = 1;
    std::vector<int64_t> xs = {sh.n, sh.h, sh.h, sh.c},
                         ys = {sh.n, oh, oh, sh.o},
                         ws = {sh.o, sh.c, sh.k, sh.k};
    Buffer x(MP_BF16, xs), dy(MP_BF16, ys), f(MP_BF16, ws), dx(MP_BF16, xs),
        df(MP_F32, ws), x32(MP_F32, xs), dy32(MP_F32, ys), f32(MP_F32, ws),
        dx32(MP_F32, xs);
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (int rep = 0; rep < 12; ++rep) {
      double t0 = nowMs();
      check(mpConv2dGradFilter(&dy.t, &x.t, &df.t, &w, MP_F32));
      double t1 = nowMs();
      check(mpConvert(x.t.data, MP_BF16, x32.t.data, MP_F32, x.count()));
      check(mpConvert(dy.t.data, MP_BF16, dy32.t.data, MP_F32, dy.count()));
      check(mpConv2dGradFilter(&dy32.t, &x32.t, &df.t, &w, MP_F32));
      double t2 = nowMs();
      check(mpConv2dGradInput(&dy.t, &f.t, &dx.t, &w, MP_F32));
      double t3 = nowMs();
      check(mpConvert(dy.t.data, MP_BF16, dy32.t.data, MP_F32, dy.count()));
      check(mpConvert(f.t.data, MP_BF16, f32.t.data, MP_F32, f.count()));
      check(mpConv2dGradInput(&dy32.t, &f32.t, &dx32.t, &w, MP_F32));
      check(mpConvert(dx32.t.data, MP_F32, dx.t.data, MP_BF16, dx.count()));
      double t4 = nowMs();
      if (rep < 2)
        continue;
      double times[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
      for (int i = 0; i < 4; ++i)
        best[i] = std::min(best[i], times[i]);
    }
    std::printf("| %lld x %lld x %lld x %lld -> %lld, %lld x %lld / %lld | "
                "%.3f | %.3f | %.3f | %.3f |\n",
                (long long)sh.n, (long long)sh.h, (long long)sh.h,
                (long long)sh.c, (long long)sh.o, (long long)sh.k,
                (long long)sh.k, (long long)sh.s, best[0], best[1], best[2],
                best[3]);
    for (int i = 0; i < 4; ++i)
      total[i] += best[i];
  }
  std::printf("| total | %.3f | %.3f | %.3f | %.3f |\n", total[0], total[1],
              total[2], total[3]);
  return 0;
}
