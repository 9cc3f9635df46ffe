//===- conv_gemm_cpu.cpp - NHWC convolutions: direct or im2col GEMMs -----===//
//
// The two library paths of the CPU runtime's NHWC convolutions, at the
// shapes ResNet-50 has on 64x64 images (the 3x3 convolutions of each stage,
// the strided ones, the strided 1x1 projections and the stem), with f32
// storage and with bf16 storage (f32 filter gradient, as mixed precision's
// master weights have it):
//
//   direct  oneDNN's convolution primitives, the filter reordered to and
//           from their blocked layout in every call (MP_CONV_GEMM=never);
//   gemm    the input unfolded (im2col) and one oneDNN matmul against the
//           plain OIHW filter (ConvGemm.cpp; MP_CONV_GEMM=always).
//
// and "auto", the runtime's choice (ConvGemm.cpp's preferGemm, on M = N *
// OH * OW, the GEMMs' row count, against the output channels). The three
// alternate in one process, 12 times; the table has the minimum of the last
// 10, in ms, per pass, and the sums. Build against the runtime library of a Release build (one command):
//
//   g++ -O2 -I runtime/include benchmarks/conv_gemm_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o conv_gemm_cpu && ./conv_gemm_cpu [batch]
//
// DNNL_MAX_CPU_ISA=AVX512_CORE_BF16 keeps oneDNN off AMX; AVX2 off AVX-512.
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

using bench::Buffer;
using bench::nowMs;

static void check(mpStatus s) { bench::check("conv_gemm_cpu", s); }

int main(int argc, char **argv) {
  int64_t batch = argc > 1 ? std::atoll(argv[1]) : 8;
  if (batch < 1) {
    std::fprintf(stderr, "usage: conv_gemm_cpu [batch]\n");
    return 1;
  }
  struct Shape {
    int64_t h, c, o, k, s;
  } shapes[] = {{64, 3, 64, 7, 2},     {16, 64, 64, 3, 1},
                {16, 128, 128, 3, 2},  {16, 256, 512, 1, 2},
                {8, 128, 128, 3, 1},   {8, 256, 256, 3, 2},
                {8, 512, 1024, 1, 2},  {4, 256, 256, 3, 1},
                {4, 512, 512, 3, 2},   {4, 1024, 2048, 1, 2},
                {2, 512, 512, 3, 1}};
  std::printf("batch %lld; ms\n\n", (long long)batch);
  std::printf("| H x W x C -> O, k x k / s | M | type | fwd direct | fwd gemm "
              "| fwd auto | dX direct | dX gemm | dX auto | dW direct | "
              "dW gemm | dW auto |\n"
              "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (mpElementType type : {MP_F32, MP_BF16}) {
    double total[9] = {};
    for (const Shape &sh : shapes) {
      int64_t pad = sh.k / 2;
      int64_t oh = (sh.h + 2 * pad - sh.k) / sh.s + 1;
      mpWindow w{};
      w.strides[0] = w.strides[1] = sh.s;
      for (int64_t &p : w.padding)
        p = pad;
      w.dilations[0] = w.dilations[1] = 1;
      w.groups = 1;
      w.channelsLast = 1;
      std::vector<int64_t> xs = {batch, sh.h, sh.h, sh.c},
                           ys = {batch, oh, oh, sh.o},
                           ws = {sh.o, sh.c, sh.k, sh.k};
      Buffer x(type, xs), y(type, ys), dy(type, ys), f(type, ws),
          dx(type, xs), df(MP_F32, ws);
      double best[9];
      std::fill(best, best + 9, 1e30);
      const char *modes[3] = {"never", "always", "auto"};
      for (int rep = 0; rep < 12; ++rep)
        for (int mode = 0; mode < 3; ++mode) {
          setenv("MP_CONV_GEMM", modes[mode], 1);
          double t0 = nowMs();
          check(mpConv2d(&x.t, &f.t, &y.t, &w, MP_F32));
          double t1 = nowMs();
          check(mpConv2dGradInput(&dy.t, &f.t, &dx.t, &w, MP_F32));
          double t2 = nowMs();
          check(mpConv2dGradFilter(&dy.t, &x.t, &df.t, &w, MP_F32));
          double t3 = nowMs();
          if (rep < 2)
            continue;
          double times[3] = {t1 - t0, t2 - t1, t3 - t2};
          for (int p = 0; p < 3; ++p)
            best[3 * p + mode] = std::min(best[3 * p + mode], times[p]);
        }
      std::printf("| %lld x %lld x %lld -> %lld, %lld x %lld / %lld | %lld "
                  "| %s |",
                  (long long)sh.h, (long long)sh.h, (long long)sh.c,
                  (long long)sh.o, (long long)sh.k, (long long)sh.k,
                  (long long)sh.s, (long long)(batch * oh * oh),
                  type == MP_F32 ? "f32" : "bf16");
      for (int i = 0; i < 9; ++i) {
        std::printf(" %.3f |", best[i]);
        total[i] += best[i];
      }
      std::printf("\n");
    }
    std::printf("| total | | %s |", type == MP_F32 ? "f32" : "bf16");
    for (int i = 0; i < 9; ++i)
      std::printf(" %.3f |", total[i]);
    std::printf("\n");
  }
  return 0;
}
