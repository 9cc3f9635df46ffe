//===- optimizer_cpu.cpp - optimizer updates over ResNet-50's parameters --===//
//
// mpSgdUpdate (momentum 0.9, weight decay 1e-4) and mpAdamUpdate (AdamW,
// weight decay 0.01) over ResNet-50's 161 parameters (23.5M elements) with
// f32 gradients, each alone, with the bf16 copy that weight shadows keep
// (mpSgdUpdateWithCopy, mpAdamUpdateWithCopy), and, for SGD, followed by a
// separate mpConvert of each parameter (what the step did before shadows);
// mpConvert alone last. The variants alternate in one process, 14 rounds;
// each entry is the minimum of the last 12, in ms. SGD with momentum moves
// 20 bytes per element, Adam 28: their memory floors at the machine's
// bandwidth. Build against the runtime library of a Release build:
//
//   g++ -O2 -I runtime/include benchmarks/optimizer_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o optimizer_cpu && ./optimizer_cpu
//
// MP_CPU_ISA=avx2 (or scalar) runs the AVX2 (or baseline) loops on an
// AVX-512 machine.
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

using bench::Buffer;
using bench::nowMs;

static void check(mpStatus s) { bench::check("optimizer_cpu", s); }

static std::vector<std::vector<int64_t>> resnet50Shapes() {
  std::vector<std::vector<int64_t>> shapes;
  auto conv = [&](int64_t out, int64_t in, int64_t k) {
    shapes.push_back({out, in, k, k});
    shapes.push_back({out});
    shapes.push_back({out});
  };
  conv(64, 3, 7);
  int64_t in = 64;
  const int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int s = 0; s < 4; ++s)
    for (int64_t b = 0; b < blocks[s]; ++b) {
      int64_t w = widths[s];
      conv(w, in, 1);
      conv(w, w, 3);
      conv(4 * w, w, 1);
      if (b == 0)
        conv(4 * w, in, 1);
      in = 4 * w;
    }
  shapes.push_back({10, 2048});
  shapes.push_back({10});
  return shapes;
}

int main() {
  std::vector<std::vector<int64_t>> shapes = resnet50Shapes();
  std::vector<std::unique_ptr<Buffer>> p, g, m, v, c;
  Buffer step(MP_I64, {});
  for (const auto &s : shapes) {
    p.push_back(std::make_unique<Buffer>(MP_F32, s));
    g.push_back(std::make_unique<Buffer>(MP_F32, s));
    m.push_back(std::make_unique<Buffer>(MP_F32, s));
    v.push_back(std::make_unique<Buffer>(MP_F32, s));
    c.push_back(std::make_unique<Buffer>(MP_BF16, s));
  }
  size_t n = shapes.size();
  auto sgd = [&](size_t i, mpTensor *copy) {
    check(mpSgdUpdateWithCopy(&p[i]->t, &g[i]->t, &m[i]->t, nullptr, copy,
                              1e-3f, 0.9f, 1e-4f, 0));
  };
  auto adam = [&](size_t i, mpTensor *copy) {
    check(mpAdamUpdateWithCopy(&p[i]->t, &g[i]->t, &m[i]->t, &v[i]->t,
                               &step.t, nullptr, copy, 1e-3f, 0.9f, 0.999f,
                               1e-8f, 1e-2f));
  };
  auto convert = [&](size_t i) {
    check(mpConvert(p[i]->t.data, MP_F32, c[i]->t.data, MP_BF16,
                    mpNumElements(&p[i]->t)));
  };
  const char *names[] = {"sgd",  "sgd + copy", "sgd, convert",
                         "adam", "adam + copy", "convert"};
  double best[6];
  std::fill(best, best + 6, 1e30);
  for (int round = 0; round < 14; ++round) {
    double t[7];
    t[0] = nowMs();
    for (size_t i = 0; i < n; ++i)
      sgd(i, nullptr);
    t[1] = nowMs();
    for (size_t i = 0; i < n; ++i)
      sgd(i, &c[i]->t);
    t[2] = nowMs();
    for (size_t i = 0; i < n; ++i) {
      sgd(i, nullptr);
      convert(i);
    }
    t[3] = nowMs();
    for (size_t i = 0; i < n; ++i)
      adam(i, nullptr);
    t[4] = nowMs();
    for (size_t i = 0; i < n; ++i)
      adam(i, &c[i]->t);
    t[5] = nowMs();
    for (size_t i = 0; i < n; ++i)
      convert(i);
    t[6] = nowMs();
    if (round >= 2)
      for (int k = 0; k < 6; ++k)
        best[k] = std::min(best[k], t[k + 1] - t[k]);
  }
  std::printf("ResNet-50 parameters (%zu tensors), f32 gradients; ms\n", n);
  for (int k = 0; k < 6; ++k)
    std::printf("%-13s %8.2f\n", names[k], best[k]);
  return 0;
}
