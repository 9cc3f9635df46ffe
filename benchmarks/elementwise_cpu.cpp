//===- elementwise_cpu.cpp - activations, softmax, norms, dropout ---------===//
//
// The elementwise activations of a training step and their gradients
// (mpUnary, mpActivationGrad) on the CPU runtime's fast paths, on a
// transformer feed-forward layer's hidden activations (default 4M
// elements: batch 8, 128 tokens, 4096 features), with f32 and bf16
// storage. ReLU, which only moves bytes, is the floor: the table gives
// ns per element and each kind's time as a ratio to ReLU's in the same
// run. Softmax over rows of 128 (GPT-2's attention), a select under a
// causal mask [128, 128], layer norm over rows of 256 (a hidden state),
// dropout at rate 0.1 (its gradient is the same op) and three binary ops
// (an add of two whole tensors, a bias add over rows of 256, a multiply by
// a scalar) follow, on as many elements. The kinds alternate in one process, 12
// times; each entry is the minimum of the last 10. Build against the
// runtime library of a Release build (one command):
//
//   g++ -O2 -I runtime/include benchmarks/elementwise_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o elementwise_cpu && ./elementwise_cpu [elements]
//
// MP_CPU_ISA=avx2 runs the AVX2 code on an AVX-512 machine.
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
using bench::nowMs;

static void check(mpStatus s) { bench::check("elementwise_cpu", s); }

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t(8) * 128 * 4096;
  if (n <= 0) {
    std::fprintf(stderr, "elementwise_cpu: the element count must be "
                         "positive\n");
    return 1;
  }
  struct Kind {
    const char *name;
    mpUnaryKind forward;
    mpActivationGradKind gradient;
  };
  const Kind kinds[] = {{"relu", MP_RELU, MP_RELU_GRAD},
                        {"gelu", MP_GELU, MP_GELU_GRAD},
                        {"gelu_tanh", MP_GELU_TANH, MP_GELU_TANH_GRAD},
                        {"tanh", MP_TANH, MP_TANH_GRAD},
                        {"sigmoid", MP_SIGMOID, MP_SIGMOID_GRAD}};
  std::printf("%lld elements; ns per element, and the ratio to ReLU's\n",
              static_cast<long long>(n));
  std::printf("%-10s %-5s %16s %16s\n", "kind", "type", "forward",
              "gradient");
  for (mpElementType type : {MP_F32, MP_BF16}) {
    Buffer x(type, {n}), y(type, {n}), dy(type, {n}), dx(type, {n});
    int64_t rows = std::max<int64_t>(n / 128, 1);
    Buffer scores(type, {rows, 128}), probs(type, {rows, 128}),
        dprobs(type, {rows, 128}), dscores(type, {rows, 128});
    Buffer mask(MP_I1, {128, 128}), fill(type, {}), seed(MP_I64, {});
    int64_t hidden = std::max<int64_t>(n / 256, 1);
    Buffer hx(type, {hidden, 256}), hy(type, {hidden, 256}),
        hdy(type, {hidden, 256}), hdx(type, {hidden, 256});
    Buffer gamma(MP_F32, {256}), beta(MP_F32, {256}), dgamma(MP_F32, {256}),
        dbeta(MP_F32, {256}), mean(MP_F32, {hidden}), rstd(MP_F32, {hidden});
    Buffer bias(type, {256}), scale(type, {1});
    for (int64_t i = 0; i < 128 * 128; ++i)
      mask.bytes[size_t(i)] = i % 128 <= i / 128; // causal: column <= row
    // The softmax's forward and gradient, the select, the layer norm's
    // forward and gradient, the dropout and the three binary ops, after the
    // kinds.
    std::vector<std::vector<double>> times(std::size(kinds) * 2 + 9);
    for (int round = 0; round < 12; ++round) {
      double s0 = nowMs();
      check(mpSoftmax(&scores.t, &probs.t, 1, 0, MP_F32));
      double s1 = nowMs();
      check(mpSoftmaxGrad(&dprobs.t, &probs.t, &dscores.t, 1, 0, MP_F32));
      double s2 = nowMs();
      mpTensor masked = scores.t;
      masked.rank = 3;
      masked.shape[0] = std::max<int64_t>(rows / 128, 1);
      masked.shape[1] = rows >= 128 ? 128 : rows;
      masked.shape[2] = 128;
      mpTensor maskView = mask.t;
      if (rows < 128)
        maskView.shape[0] = rows;
      check(mpSelect(&maskView, &masked, &fill.t, &masked));
      double s3 = nowMs();
      check(mpLayerNorm(&hx.t, &gamma.t, &beta.t, &hy.t, &mean.t, &rstd.t, 1,
                        1e-5f, MP_F32));
      double s4 = nowMs();
      check(mpLayerNormGrad(&hdy.t, &hx.t, &gamma.t, &mean.t, &rstd.t, &hdx.t,
                            &dgamma.t, &dbeta.t, 1, MP_F32));
      double s5 = nowMs();
      check(mpDropout(&x.t, &seed.t, &y.t, 0.1f, 0, MP_F32));
      double s6 = nowMs();
      check(mpBinary(MP_ADD, &x.t, &dy.t, &y.t, MP_F32));
      double s7 = nowMs();
      check(mpBinary(MP_ADD, &hx.t, &bias.t, &hy.t, MP_F32));
      double s8 = nowMs();
      check(mpBinary(MP_MUL, &x.t, &scale.t, &y.t, MP_F32));
      double s9 = nowMs();
      if (round >= 2) {
        size_t at = std::size(kinds) * 2;
        times[at].push_back(s1 - s0);
        times[at + 1].push_back(s2 - s1);
        times[at + 2].push_back(s3 - s2);
        times[at + 3].push_back(s4 - s3);
        times[at + 4].push_back(s5 - s4);
        times[at + 5].push_back(s6 - s5);
        times[at + 6].push_back(s7 - s6);
        times[at + 7].push_back(s8 - s7);
        times[at + 8].push_back(s9 - s8);
      }
      for (size_t k = 0; k < std::size(kinds); ++k) {
        double t0 = nowMs();
        check(mpUnary(kinds[k].forward, &x.t, &y.t, MP_F32));
        double t1 = nowMs();
        check(mpActivationGrad(kinds[k].gradient, &dy.t, &x.t, &dx.t,
                               MP_F32));
        double t2 = nowMs();
        if (round >= 2) {
          times[2 * k].push_back(t1 - t0);
          times[2 * k + 1].push_back(t2 - t1);
        }
      }
    }
    std::vector<double> best;
    for (size_t k = 0; k < times.size(); ++k)
      best.push_back(*std::min_element(times[k].begin(), times[k].end()) *
                     1e6 /
                     double(k < std::size(kinds) * 2       ? n
                            : k < std::size(kinds) * 2 + 3 ? rows * 128
                            : k < std::size(kinds) * 2 + 5 ? hidden * 256
                            : k == std::size(kinds) * 2 + 7 ? hidden * 256
                                                            : n));
    for (size_t k = 0; k < std::size(kinds); ++k)
      std::printf("%-10s %-5s %8.3f (%4.1fx) %8.3f (%4.1fx)\n",
                  kinds[k].name, type == MP_F32 ? "f32" : "bf16",
                  best[2 * k], best[2 * k] / best[0], best[2 * k + 1],
                  best[2 * k + 1] / best[1]);
    size_t at = std::size(kinds) * 2;
    std::printf("%-10s %-5s %8.3f (%4.1fx) %8.3f (%4.1fx)\n", "softmax",
                type == MP_F32 ? "f32" : "bf16", best[at], best[at] / best[0],
                best[at + 1], best[at + 1] / best[1]);
    std::printf("%-10s %-5s %8.3f (%4.1fx)\n", "select",
                type == MP_F32 ? "f32" : "bf16", best[at + 2],
                best[at + 2] / best[0]);
    std::printf("%-10s %-5s %8.3f (%4.1fx) %8.3f (%4.1fx)\n", "layer_norm",
                type == MP_F32 ? "f32" : "bf16", best[at + 3],
                best[at + 3] / best[0], best[at + 4], best[at + 4] / best[1]);
    const char *binaries[] = {"add", "add_bias", "mul_scalar"};
    for (size_t k = 0; k < 4; ++k)
      std::printf("%-10s %-5s %8.3f (%4.1fx)\n",
                  k ? binaries[k - 1] : "dropout",
                  type == MP_F32 ? "f32" : "bf16", best[at + 5 + k],
                  best[at + 5 + k] / best[0]);
  }
  return 0;
}
