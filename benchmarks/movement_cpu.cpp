//===- movement_cpu.cpp - gradients of embeddings and biases, copies ------===//
//
// The data movement of a transformer's backward pass on the CPU runtime,
// each with the fast kernels on and off (mpUseLibraryKernels: the
// reference loops, one thread) in one process, alternating, 12 rounds; each
// entry is the minimum over the last 10, in microseconds:
//
//   * gather_grad: the word-embedding gradient of BERT-base (a 30522 x 768
//     f32 table, 1024 token ids: batch 8, sequence 128);
//   * reduce_sum over rows: the bias gradients of the ViT and BERT layers
//     of benchmarks/torch_cpu_steps.py ([520, 256], [520, 768],
//     [520, 1024], [1024, 3072]);
//   * concat: the adjoint of a split QKV projection, three [520, 1, 256]
//     parts into [520, 3, 256] (what tg-make-train-step builds instead of
//     three slice gradients and two adds);
//   * reduce_sum over axes 0, 2 and 3 of [8, 256, 8, 8]: the bias gradient
//     of ViT's patch embedding, an NCHW convolution;
//   * transposes: BERT's attention keys ([8, 128, 4, 64] to
//     [8, 4, 64, 128]) and their gradient, NHWC to NCHW ([8, 8, 8, 256]),
//     and the last two dimensions of ViT's [8, 4, 65, 64] queries.
//
// Build against the runtime library of a Release build (one command):
//
//   g++ -O2 -I runtime/include benchmarks/movement_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o movement_cpu && ./movement_cpu
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using bench::Buffer;
using bench::nowMs;

static void check(mpStatus s) { bench::check("movement_cpu", s); }

int main() {
  struct Case {
    std::string name;
    std::function<void()> run;
  };
  std::vector<Case> cases;

  Buffer table(MP_F32, {30522, 768}), grad(MP_F32, {8, 128, 768}),
      ids(MP_I64, {8, 128});
  auto *id = reinterpret_cast<int64_t *>(ids.bytes.data());
  for (int64_t i = 0; i < 1024; ++i)
    id[i] = (i * 7919) % 30522; // distinct (7919 is prime)...
  for (int64_t i = 0; i < 1024; i += 16)
    id[i] = 101; // ...but for a token that repeats, as [CLS] does
  cases.push_back({"gather_grad 30522x768, 1024 ids",
                   [&] { check(mpGatherGrad(&grad.t, &ids.t, &table.t,
                                            MP_F32)); }});

  std::vector<Buffer> reduceIn, reduceOut;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {520, 256}, {520, 768}, {520, 1024}, {1024, 3072}};
  reduceIn.reserve(shapes.size());
  reduceOut.reserve(shapes.size());
  for (auto [rows, cols] : shapes) {
    reduceIn.emplace_back(MP_F32, std::vector<int64_t>{rows, cols});
    reduceOut.emplace_back(MP_F32, std::vector<int64_t>{cols});
  }
  for (size_t k = 0; k < shapes.size(); ++k)
    cases.push_back({"reduce_sum [" + std::to_string(shapes[k].first) + ", " +
                         std::to_string(shapes[k].second) + "] over rows",
                     [&, k] {
                       int64_t axes[1] = {0};
                       check(mpReduce(MP_REDUCE_SUM, &reduceIn[k].t,
                                      &reduceOut[k].t, axes, 1, MP_F32));
                     }});

  std::vector<Buffer> parts;
  for (int k = 0; k < 3; ++k)
    parts.emplace_back(MP_F32, std::vector<int64_t>{520, 1, 256});
  Buffer joined(MP_F32, {520, 3, 256});
  std::vector<mpTensor> views;
  for (Buffer &p : parts)
    views.push_back(p.t);
  cases.push_back({"concat 3 x [520, 1, 256] on axis 1", [&] {
                     check(mpConcat(3, views.data(), &joined.t, 1));
                   }});

  Buffer nchw(MP_F32, {8, 256, 8, 8}), channels(MP_F32, {256});
  cases.push_back({"reduce_sum [8, 256, 8, 8] over axes 0, 2, 3", [&] {
                     int64_t axes[3] = {0, 2, 3};
                     check(mpReduce(MP_REDUCE_SUM, &nchw.t, &channels.t, axes,
                                    3, MP_F32));
                   }});

  struct Permutation {
    std::vector<int64_t> shape, perm;
  };
  const std::vector<Permutation> perms = {{{8, 128, 4, 64}, {0, 2, 3, 1}},
                                          {{8, 4, 64, 128}, {0, 3, 1, 2}},
                                          {{8, 8, 8, 256}, {0, 3, 1, 2}},
                                          {{8, 4, 65, 64}, {0, 1, 3, 2}}};
  std::vector<Buffer> transposeIn, transposeOut;
  transposeIn.reserve(perms.size());
  transposeOut.reserve(perms.size());
  for (const Permutation &p : perms) {
    std::vector<int64_t> shape;
    for (int64_t d : p.perm)
      shape.push_back(p.shape[d]);
    transposeIn.emplace_back(MP_F32, p.shape);
    transposeOut.emplace_back(MP_F32, shape);
  }
  for (size_t k = 0; k < perms.size(); ++k) {
    std::string name = "transpose [";
    for (size_t d = 0; d < perms[k].shape.size(); ++d)
      name += (d ? ", " : "") + std::to_string(perms[k].shape[d]);
    name += "] by [";
    for (size_t d = 0; d < perms[k].perm.size(); ++d)
      name += (d ? ", " : "") + std::to_string(perms[k].perm[d]);
    cases.push_back({name + "]", [&, k] {
                       check(mpTranspose(&transposeIn[k].t, &transposeOut[k].t,
                                         perms[k].perm.data()));
                     }});
  }

  // Each call runs 4 times in a row and the first is not counted: the
  // later ones find the threads awake and the operands in cache, as the
  // kernels of a step do.
  std::vector<std::vector<double>> fast(cases.size()), reference(cases.size());
  for (int round = 0; round < 12; ++round)
    for (size_t k = 0; k < cases.size(); ++k)
      for (int on : {1, 0}) {
        mpUseLibraryKernels(on);
        for (int repeat = 0; repeat < 4; ++repeat) {
          double t0 = nowMs();
          cases[k].run();
          double t = (nowMs() - t0) * 1e3;
          if (round >= 2 && repeat > 0)
            (on ? fast : reference)[k].push_back(t);
        }
      }
  mpUseLibraryKernels(1);
  std::printf("| case | fast us | reference us | reference / fast |\n");
  std::printf("|---|---:|---:|---:|\n");
  for (size_t k = 0; k < cases.size(); ++k) {
    double f = *std::min_element(fast[k].begin(), fast[k].end());
    double r = *std::min_element(reference[k].begin(), reference[k].end());
    std::printf("| %s | %.1f | %.1f | %.1f |\n", cases[k].name.c_str(), f, r,
                r / f);
  }
  return 0;
}
