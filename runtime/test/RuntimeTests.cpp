//===- RuntimeTests.cpp - CPU runtime kernels against references ----------===//
//
// usage: mp-runtime-tests
// <convert|loss-scaling|optimizers|matmul|elementwise|softmax|norm-movement|conv|dropout|numerics>
// [seed]
//
// Each suite compares the runtime with a reference written here from the
// specification, independently of the runtime's code:
//
// * convert: every one of the 65536 f16 and bf16 bit patterns decodes to
//   the value sign * 2^e * (1 + m / 2^p) and round-trips; f32 -> f16/bf16
//   rounding matches a nearest-value search over a table of every finite
//   f16/bf16 value (ties to even, overflow to infinity) on all values, all
//   midpoints between neighbours and one f32 ulp either side of them, and
//   random f32 inputs.
// * loss-scaling: unscaling matches 1/S computed in double; an overflow in
//   any gradient is found; skipped updates leave parameters and state
//   bit-identical; the scale sequence over random finite and non-finite
//   steps matches torch.amp.GradScaler's update rule step by step.
// * optimizers: SGD (with momentum, Nesterov, weight decay) and Adam(W)
//   against float64 references on fresh random data, with tolerances from
//   f32 arithmetic.
// * elementwise: every unary op, binary op (with broadcasting) and
//   activation gradient in six storage / output / compute combinations
//   against float64, with tolerances from the evaluation type, the compute
//   type's rounding and the output's; f16/bf16 compute must produce values
//   representable in that type.
// * softmax: softmax, log-softmax, reductions and losses against float64;
//   every gradient kernel (softmax, log-softmax, the activations, both
//   losses) against central finite differences of its forward kernel, in
//   f64.
// * norm-movement: layer norm against its definition and its gradient
//   against finite differences (input, scale, bias); gather exactly, and
//   gather_grad as gather's adjoint; transpose, broadcast_to, concat, slice
//   and reshape against index formulas.
// * matmul: every storage / output / compute combination, with transposes
//   and broadcast batch dimensions, against a float64 reference within the
//   dot-product error bound ((1 + u)^K - 1) * sum|a b| of the compute type's
//   unit roundoff u, plus one rounding to the output storage; the
//   runtime's packed GEMM (Gemm.h) called directly, within the same bound,
//   at the edges of its tiles and blocks, where the runtime uses it.
//
// * dropout: Philox4x32-10 against Random123's published known answers;
//   masks against the rule of Philox.h (kept values exactly x / (1 - rate)
//   rounded once, dropped ones exactly 0) in every storage and compute
//   type; the kept fraction within 5 standard deviations of 1 - rate; the
//   same mask for the same (seed, stream) in any storage type and in place,
//   other masks for other streams and seeds; next_seed; invalid arguments.
//
// Prints one line per check group and a closing "N passed, M failed" line;
// exits non-zero on any failure.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"
#include "mp/Runtime/Philox.h"

#include "Gemm.h"

#include <algorithm>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

int passed = 0, failed = 0;

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2g", v);
  return buf;
}

void check(bool ok, const std::string &what) {
  if (ok) {
    ++passed;
    std::printf("ok: %s\n", what.c_str());
  } else {
    ++failed;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

uint32_t bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float fromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// A 16-bit format with `mantBits` mantissa bits and `expBits` exponent
/// bits, decoded by formula.
struct Format {
  const char *name;
  int expBits, mantBits;
  uint16_t (*encode)(float);
  float (*decode)(uint16_t);

  double value(uint16_t b) const {
    int bias = (1 << (expBits - 1)) - 1;
    int e = (b >> mantBits) & ((1 << expBits) - 1);
    int m = b & ((1 << mantBits) - 1);
    double sign = (b >> 15) ? -1.0 : 1.0;
    if (e == (1 << expBits) - 1)
      return m ? NAN : sign * INFINITY;
    if (e == 0)
      return sign * std::ldexp(m, 1 - bias - mantBits);
    return sign * std::ldexp(1.0 + std::ldexp(m, -mantBits), e - bias);
  }
  bool isNaN(uint16_t b) const {
    int e = (b >> mantBits) & ((1 << expBits) - 1);
    return e == (1 << expBits) - 1 && (b & ((1 << mantBits) - 1));
  }
};

/// Reference rounding of a double to the format: the nearest finite value,
/// ties to the even bit pattern, and infinity beyond the midpoint between
/// the largest finite value and the next power of the format.
struct Rounder {
  const Format &fmt;
  std::vector<std::pair<double, uint16_t>> table; // non-negative finite
  double overflow;

  explicit Rounder(const Format &f) : fmt(f) {
    for (uint32_t b = 0; b < 0x8000; ++b) {
      double v = f.value(static_cast<uint16_t>(b));
      if (std::isfinite(v))
        table.push_back({v, static_cast<uint16_t>(b)});
    }
    std::sort(table.begin(), table.end());
    double maxFinite = table.back().first;
    double ulp = maxFinite - table[table.size() - 2].first;
    overflow = maxFinite + ulp / 2; // ties go to the "even" infinity
  }

  uint16_t round(double x) const {
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    double a = std::fabs(x);
    uint16_t infBits = static_cast<uint16_t>(((1u << fmt.expBits) - 1)
                                             << fmt.mantBits);
    if (a >= overflow)
      return sign | infBits;
    auto it = std::lower_bound(table.begin(), table.end(),
                               std::make_pair(a, uint16_t(0)));
    if (it == table.end()) // above the largest finite, below the overflow
      return sign | table.back().second;
    if (it->first == a || it == table.begin())
      return sign | it->second;
    auto lo = it - 1;
    double dlo = a - lo->first, dhi = it->first - a;
    if (dlo < dhi)
      return sign | lo->second;
    if (dhi < dlo)
      return sign | it->second;
    return sign | ((lo->second & 1) ? it->second : lo->second);
  }
};

void testFormat(const Format &f, std::mt19937_64 &rng) {
  Rounder r(f);
  // Every bit pattern decodes exactly and round-trips.
  int decodeBad = 0, roundTripBad = 0;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float v = f.decode(h);
    double want = f.value(h);
    if (f.isNaN(h)) {
      decodeBad += !std::isnan(v) || std::signbit(v) != bool(h >> 15);
      uint16_t back = f.encode(v);
      roundTripBad += !f.isNaN(back) || (back >> 15) != (h >> 15);
      continue;
    }
    decodeBad += !(v == want && std::signbit(v) == std::signbit(want));
    roundTripBad += f.encode(v) != h;
  }
  check(decodeBad == 0, std::string(f.name) +
                            ": all 65536 bit patterns decode exactly (" +
                            std::to_string(decodeBad) + " wrong)");
  check(roundTripBad == 0, std::string(f.name) +
                               ": all 65536 bit patterns round-trip (" +
                               std::to_string(roundTripBad) + " wrong)");

  // Rounding of f32 inputs against the table reference.
  std::vector<float> inputs;
  for (size_t i = 0; i + 1 < r.table.size(); ++i) {
    double mid = (r.table[i].first + r.table[i + 1].first) / 2;
    float m = static_cast<float>(mid);
    if (static_cast<double>(m) != mid)
      continue; // midpoint not representable in f32: covered by neighbours
    inputs.push_back(m);
    inputs.push_back(std::nextafter(m, 0.0f));
    inputs.push_back(std::nextafter(m, INFINITY));
    inputs.push_back(static_cast<float>(r.table[i].first));
  }
  inputs.push_back(static_cast<float>(r.overflow));
  inputs.push_back(std::nextafter(static_cast<float>(r.overflow), 0.0f));
  inputs.push_back(FLT_MAX);
  inputs.push_back(FLT_MIN);
  inputs.push_back(std::numeric_limits<float>::denorm_min());
  inputs.push_back(INFINITY);
  for (int i = 0; i < 4000000; ++i)
    inputs.push_back(fromBits(static_cast<uint32_t>(rng())));
  size_t n = 0;
  int bad = 0;
  for (float x : inputs) {
    for (float v : {x, -x}) {
      if (std::isnan(v))
        continue;
      ++n;
      uint16_t got = f.encode(v), want = r.round(v);
      if (got != want && bad++ < 5)
        std::printf("  %s(%a) = 0x%04x, want 0x%04x\n", f.name, v, got, want);
    }
  }
  check(bad == 0, std::string(f.name) + ": f32 rounding matches the " +
                      "nearest-even reference on " + std::to_string(n) +
                      " inputs (midpoints, neighbours, random)");
  uint16_t nan = f.encode(NAN), negNan = f.encode(-NAN);
  check(f.isNaN(nan) && f.isNaN(negNan) && (negNan >> 15),
        std::string(f.name) + ": NaN stays NaN with its sign");
}

mpTensor tensorOf(void *data, mpElementType type,
                  std::initializer_list<int64_t> shape) {
  mpTensor t{};
  t.data = data;
  t.elementType = type;
  t.rank = static_cast<int32_t>(shape.size());
  int i = 0;
  for (int64_t d : shape)
    t.shape[i++] = d;
  return t;
}

/// torch.amp.GradScaler's update, written from its documentation.
struct ReferenceScaler {
  float scale;
  int64_t goodSteps = 0;
  float growth, backoff;
  int64_t interval;
  void update(bool foundInf) {
    if (foundInf) {
      scale = scale * backoff;
      goodSteps = 0;
    } else if (++goodSteps == interval) {
      float grown = scale * growth;
      if (std::isfinite(grown))
        scale = grown;
      goodSteps = 0;
    }
  }
};

/// f64 -> f16/bf16 through mpConvert rounds once, to nearest even: checked
/// against the nearest of the neighbouring codes, on values built to catch
/// double rounding (just above a tie in f16 or bf16 that f32 would round to
/// the tie) and on random values.
void testF64Rounding(const Format &f, mpElementType type,
                     std::mt19937_64 &rng) {
  auto nearest = [&](double d) {
    uint16_t h0 = f.encode(static_cast<float>(d));
    uint16_t best = h0;
    double bestErr = std::fabs(double(f.decode(h0)) - d);
    for (int delta : {-1, 1}) {
      uint16_t h = static_cast<uint16_t>(h0 + delta);
      if ((h & 0x8000u) != (h0 & 0x8000u) || std::isinf(f.decode(h)) ||
          std::isnan(f.decode(h)))
        continue;
      double err = std::fabs(double(f.decode(h)) - d);
      if (err < bestErr || (err == bestErr && !(h & 1u))) {
        best = h;
        bestErr = err;
      }
    }
    return best;
  };
  std::vector<double> values;
  double tie = std::ldexp(1.0, -(f.mantBits + 1));
  for (double base : {1.0, 1.5, 3.0, -1.0, 0.75})
    for (double nudge : {0.0, std::ldexp(1.0, -30), -std::ldexp(1.0, -30)})
      values.push_back(base * (1 + tie) + nudge);
  std::uniform_real_distribution<double> uni(-8.0, 8.0);
  for (int i = 0; i < 100000; ++i)
    values.push_back(std::ldexp(uni(rng), int(rng() % 16) - 8));
  std::vector<uint16_t> out(values.size());
  bool ok = mpConvert(values.data(), MP_F64, out.data(), type,
                      int64_t(values.size())) == MP_OK;
  int64_t wrong = 0;
  for (size_t i = 0; ok && i < values.size(); ++i)
    wrong += out[i] != nearest(values[i]);
  check(ok && wrong == 0, std::string("f64 -> ") + f.name +
                              " rounds once to nearest even (" +
                              std::to_string(wrong) + " wrong)");
}

void testLossScaling(std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> uni(-4.0f, 4.0f);
  // Unscaling: values and the non-finite check.
  std::vector<float> g0(37);
  std::vector<uint16_t> g1(11);
  for (float &v : g0)
    v = uni(rng) * 65536.0f;
  for (uint16_t &v : g1)
    v = mpF32ToF16(uni(rng) * 1000.0f);
  std::vector<float> u0(g0.size());
  std::vector<uint16_t> u1(g1.size());
  float s = 3000.0f;
  uint8_t found = 7;
  mpTensor grads[2] = {tensorOf(g0.data(), MP_F32, {37}),
                       tensorOf(g1.data(), MP_F16, {11})};
  mpTensor out[2] = {tensorOf(u0.data(), MP_F32, {37}),
                     tensorOf(u1.data(), MP_F16, {11})};
  mpTensor scale = tensorOf(&s, MP_F32, {});
  mpTensor inf = tensorOf(&found, MP_I1, {});
  check(mpUnscaleGrads(2, grads, out, &scale, &inf) == MP_OK && found == 0,
        "unscale_grads: finite gradients report no overflow");
  float inv = static_cast<float>(1.0 / 3000.0);
  bool valuesOk = true;
  for (size_t i = 0; i < g0.size(); ++i)
    valuesOk &= bits(u0[i]) == bits(g0[i] * inv);
  for (size_t i = 0; i < g1.size(); ++i)
    valuesOk &= u1[i] == mpF32ToF16(mpF16ToF32(g1[i]) * inv);
  check(valuesOk, "unscale_grads: each element is g * f32(1/S), 1/S in "
                  "double, rounded to its storage type");
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    g0[5] = bad;
    found = 0;
    mpUnscaleGrads(2, grads, out, &scale, &inf);
    check(found == 1, "unscale_grads: a gradient holding " +
                          std::string(std::isnan(bad) ? "NaN" : "inf") +
                          " is found");
    g0[5] = 1.0f;
  }
  g1[3] = mpF32ToF16(60000.0f);
  float small = 0.5f; // 60000 / 0.5 overflows f16 on the way
  mpTensor smallScale = tensorOf(&small, MP_F32, {});
  found = 0;
  mpUnscaleGrads(2, grads, out, &smallScale, &inf);
  check(found == 1, "unscale_grads: an unscaled f16 gradient that overflows "
                    "its storage is found");

  // A skipped step leaves parameters and optimizer state bit-identical.
  std::vector<float> p(64), m(64), v(64), buf(64), gr(64);
  for (auto *vec : {&p, &m, &v, &buf, &gr})
    for (float &x : *vec)
      x = uni(rng);
  auto pm = p, mm = m, vm = v, bm = buf;
  int64_t t = 41, tm = t;
  uint8_t skip = 1;
  mpTensor P = tensorOf(p.data(), MP_F32, {8, 8}),
           G = tensorOf(gr.data(), MP_F32, {8, 8}),
           M = tensorOf(m.data(), MP_F32, {8, 8}),
           V = tensorOf(v.data(), MP_F32, {8, 8}),
           B = tensorOf(buf.data(), MP_F32, {8, 8}),
           T = tensorOf(&t, MP_I64, {}), K = tensorOf(&skip, MP_I1, {});
  mpAdamUpdate(&P, &G, &M, &V, &T, &K, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f);
  mpSgdUpdate(&P, &G, &B, &K, 0.1f, 0.9f, 1e-4f, 1);
  check(std::memcmp(p.data(), pm.data(), 256) == 0 &&
            std::memcmp(m.data(), mm.data(), 256) == 0 &&
            std::memcmp(v.data(), vm.data(), 256) == 0 &&
            std::memcmp(buf.data(), bm.data(), 256) == 0 && t == tm,
        "skipped Adam and SGD steps leave parameters, moments, momentum and "
        "the step counter bit-identical");
  skip = 0;
  mpAdamUpdate(&P, &G, &M, &V, &T, &K, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f);
  check(std::memcmp(p.data(), pm.data(), 256) != 0 && t == tm + 1,
        "an applied Adam step changes the parameters and counts the step");
  // The kernels update a parameter and its state in place as separate
  // buffers: the same buffer twice is refused.
  check(mpSgdUpdate(&P, &G, &P, nullptr, 0.1f, 0.9f, 0, 0) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpAdamUpdate(&P, &G, &M, &M, &T, nullptr, 1e-3f, 0.9f, 0.999f,
                         1e-8f, 0) == MP_ERROR_INVALID_ARGUMENT &&
            mpAdamUpdate(&P, &G, &P, &V, &T, nullptr, 1e-3f, 0.9f, 0.999f,
                         1e-8f, 0) == MP_ERROR_INVALID_ARGUMENT &&
            t == tm + 1,
        "updates whose parameter and state share a buffer are refused");

  // The scale update: overflow halves S and resets the counter; growth
  // after `interval` clean steps; S never becomes infinite.
  float S = 65536.0f;
  int64_t n = 17;
  uint8_t f = 1;
  mpTensor Sd = tensorOf(&S, MP_F32, {}), Nd = tensorOf(&n, MP_I64, {}),
           Fd = tensorOf(&f, MP_I1, {});
  mpUpdateLossScale(&Sd, &Nd, &Fd, 2.0f, 0.5f, 2000, 0, 0);
  check(S == 32768.0f && n == 0, "update_loss_scale: an overflow halves S "
                                 "and resets the counter");
  f = 0;
  for (int i = 0; i < 1999; ++i)
    mpUpdateLossScale(&Sd, &Nd, &Fd, 2.0f, 0.5f, 2000, 0, 0);
  bool before = S == 32768.0f && n == 1999;
  mpUpdateLossScale(&Sd, &Nd, &Fd, 2.0f, 0.5f, 2000, 0, 0);
  check(before && S == 65536.0f && n == 0,
        "update_loss_scale: 2000 clean steps double S and reset the counter");
  S = FLT_MAX;
  n = 0;
  for (int i = 0; i < 10; ++i)
    mpUpdateLossScale(&Sd, &Nd, &Fd, 2.0f, 0.5f, 1, 0, 0);
  check(S == FLT_MAX, "update_loss_scale: S never becomes infinite");
  S = 1.0f;
  f = 1;
  mpUpdateLossScale(&Sd, &Nd, &Fd, 2.0f, 0.5f, 1, 0.75f, 0);
  float clampedLow = S;
  S = 4.0f;
  f = 0;
  mpUpdateLossScale(&Sd, &Nd, &Fd, 2.0f, 0.5f, 1, 0, 6.0f);
  check(clampedLow == 0.75f && S == 4.0f,
        "update_loss_scale: min-scale bounds the backoff, max-scale stops "
        "growth");

  // A random sequence of finite and non-finite steps against the reference.
  std::bernoulli_distribution overflow(0.02);
  ReferenceScaler ref{65536.0f, 0, 2.0f, 0.5f, 50};
  S = 65536.0f;
  n = 0;
  int mismatches = 0, skippedSteps = 0, refSkipped = 0;
  for (int step = 0; step < 20000; ++step) {
    bool inf = overflow(rng);
    f = inf;
    skippedSteps += f;
    refSkipped += inf;
    mpUpdateLossScale(&Sd, &Nd, &Fd, 2.0f, 0.5f, 50, 0, 0);
    ref.update(inf);
    mismatches += bits(S) != bits(ref.scale) || n != ref.goodSteps;
  }
  check(mismatches == 0 && skippedSteps == refSkipped,
        "update_loss_scale: 20000 random steps match GradScaler's rule (" +
            std::to_string(refSkipped) + " skipped)");

  // Bad arguments are reported, not crashed on.
  check(mpUnscaleGrads(0, grads, out, &scale, &inf) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpUpdateLossScale(&Sd, &Nd, &Fd, 1.0f, 0.5f, 1, 0, 0) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpUnscaleGrads(2, grads, out, &inf, &inf) ==
                MP_ERROR_INVALID_ARGUMENT,
        "invalid arguments give MP_ERROR_INVALID_ARGUMENT");
}

void testOptimizers(std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> uni(-2.0, 2.0);
  const int n = 1000, steps = 5;
  // f32 arithmetic: a handful of roundings per update, so a few ulps of the
  // largest term, accumulated over the steps.
  const double tol = 64 * std::ldexp(1.0, -24);
  for (int variant = 0; variant < 4; ++variant) {
    bool nesterov = variant == 2;
    float mu = variant == 0 ? 0.0f : 0.9f, wd = variant == 3 ? 1e-2f : 0.0f;
    std::vector<float> p(n), b(n, 0.0f), g(n);
    std::vector<double> pr(n), br(n, 0.0);
    for (int i = 0; i < n; ++i)
      pr[i] = p[i] = static_cast<float>(uni(rng));
    double worst = 0;
    for (int s = 0; s < steps; ++s) {
      for (float &x : g)
        x = static_cast<float>(uni(rng));
      mpTensor P = tensorOf(p.data(), MP_F32, {n}),
               G = tensorOf(g.data(), MP_F32, {n}),
               B = tensorOf(b.data(), MP_F32, {n});
      mpSgdUpdate(&P, &G, mu != 0 ? &B : nullptr, nullptr, 0.05f, mu, wd,
                  nesterov);
      for (int i = 0; i < n; ++i) {
        double gi = g[i] + double(wd) * pr[i];
        if (mu != 0) {
          br[i] = double(mu) * br[i] + gi;
          gi = nesterov ? gi + double(mu) * br[i] : br[i];
        }
        pr[i] -= 0.05 * gi;
        worst = std::max(worst, std::fabs(p[i] - pr[i]) /
                                    (1 + std::fabs(pr[i])));
      }
    }
    const char *names[] = {"plain", "momentum", "nesterov", "weight decay"};
    check(worst <= tol, std::string("sgd_update (") + names[variant] +
                            ") matches a float64 reference, worst relative "
                            "error " + sci(worst));
  }
  std::vector<float> p(n), m(n, 0), v(n, 0), g(n);
  std::vector<double> pr(n), mr(n, 0), vr(n, 0);
  for (int i = 0; i < n; ++i)
    pr[i] = p[i] = static_cast<float>(uni(rng));
  int64_t t = 0;
  double worst = 0;
  const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  for (int s = 1; s <= steps; ++s) {
    for (float &x : g)
      x = static_cast<float>(uni(rng));
    mpTensor P = tensorOf(p.data(), MP_F32, {n}),
             G = tensorOf(g.data(), MP_F32, {n}),
             M = tensorOf(m.data(), MP_F32, {n}),
             V = tensorOf(v.data(), MP_F32, {n}), T = tensorOf(&t, MP_I64, {});
    mpAdamUpdate(&P, &G, &M, &V, &T, nullptr, float(lr), float(b1), float(b2),
                 float(eps), float(wd));
    for (int i = 0; i < n; ++i) {
      pr[i] *= 1 - lr * wd;
      mr[i] = b1 * mr[i] + (1 - b1) * g[i];
      vr[i] = b2 * vr[i] + (1 - b2) * double(g[i]) * g[i];
      double mhat = mr[i] / (1 - std::pow(b1, s));
      double vhat = vr[i] / (1 - std::pow(b2, s));
      pr[i] -= lr * mhat / (std::sqrt(vhat) + eps);
      worst = std::max(worst, std::fabs(p[i] - pr[i]) / (1 + std::fabs(pr[i])));
    }
  }
  check(worst <= tol && t == steps,
        "adam_update (decoupled weight decay) matches a float64 reference, "
        "worst relative error " + sci(worst));
}

/// Unit roundoff of a storage or compute type.
double unitRoundoff(mpElementType t) {
  switch (t) {
  case MP_F16:
    return std::ldexp(1.0, -11);
  case MP_BF16:
    return std::ldexp(1.0, -8);
  case MP_F32:
    return std::ldexp(1.0, -24);
  default:
    return std::ldexp(1.0, -53);
  }
}

/// Smallest positive (subnormal) value of a type: the absolute error floor.
double tiniest(mpElementType t) {
  switch (t) {
  case MP_F16:
    return std::ldexp(1.0, -24);
  case MP_BF16:
    return std::ldexp(1.0, -133);
  case MP_F32:
    return std::ldexp(1.0, -149);
  default:
    return 0;
  }
}

size_t elementSize(mpElementType t) { return mpElementSize(t); }

const char *typeName(mpElementType t) {
  switch (t) {
  case MP_F16:
    return "f16";
  case MP_BF16:
    return "bf16";
  case MP_F32:
    return "f32";
  case MP_F64:
    return "f64";
  default:
    return "?";
  }
}

/// A buffer of `n` random values in [-1, 1] stored as `t`; `exact` gets
/// the stored values (exact in double).
std::vector<uint8_t> randomBuffer(mpElementType t, int64_t n,
                                  std::vector<double> &exact,
                                  std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::vector<uint8_t> buf(n * elementSize(t));
  exact.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    double v = uni(rng);
    switch (t) {
    case MP_F32: {
      float f = float(v);
      std::memcpy(&buf[i * 4], &f, 4);
      exact[i] = f;
      break;
    }
    case MP_F64:
      std::memcpy(&buf[i * 8], &v, 8);
      exact[i] = v;
      break;
    default: {
      uint16_t h = t == MP_F16 ? mpF32ToF16(float(v)) : mpF32ToBF16(float(v));
      std::memcpy(&buf[i * 2], &h, 2);
      exact[i] = t == MP_F16 ? mpF16ToF32(h) : mpBF16ToF32(h);
      break;
    }
    }
  }
  return buf;
}

double readBack(const std::vector<uint8_t> &buf, mpElementType t, int64_t i) {
  switch (t) {
  case MP_F32: {
    float f;
    std::memcpy(&f, &buf[i * 4], 4);
    return f;
  }
  case MP_F64: {
    double d;
    std::memcpy(&d, &buf[i * 8], 8);
    return d;
  }
  default: {
    uint16_t h;
    std::memcpy(&h, &buf[i * 2], 2);
    return t == MP_F16 ? mpF16ToF32(h) : mpBF16ToF32(h);
  }
  }
}

mpTensor tensorOfShape(void *data, mpElementType t,
                       const std::vector<int64_t> &shape) {
  mpTensor x{};
  x.data = data;
  x.elementType = t;
  x.rank = int32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    x.shape[i] = shape[i];
  return x;
}

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Element `i` (row-major in a result of shape `out`) of the batched
/// product op(a) op(b) of exact values, `a` of shape `sa` and `b` of shape
/// `sb` with their batch dimensions broadcast, summed in double in order;
/// `mag` gets sum |a b|, the scale of the dot product's error bound.
double referenceDot(const std::vector<double> &a,
                    const std::vector<int64_t> &sa, bool ta,
                    const std::vector<double> &b,
                    const std::vector<int64_t> &sb, bool tb,
                    const std::vector<int64_t> &out, int64_t i, double &mag) {
  int64_t orank = out.size(), m = out[orank - 2], n = out[orank - 1];
  int64_t k = ta ? sa[sa.size() - 2] : sa.back();
  int64_t row = (i / n) % m, col = i % n;
  // Batch coordinates, broadcast into each operand.
  std::vector<int64_t> coord(orank - 2);
  for (int64_t d = orank - 3, rem = i / (m * n); d >= 0; --d) {
    coord[d] = rem % out[d];
    rem /= out[d];
  }
  auto offset = [&](const std::vector<int64_t> &s) {
    int64_t off = 0, r = s.size() - 2;
    for (int64_t d = 0; d < r; ++d)
      off = off * s[d] + (s[d] == 1 ? 0 : coord[d + (orank - 2 - r)]);
    return off * s[s.size() - 1] * s[s.size() - 2];
  };
  int64_t ao = offset(sa), bo = offset(sb);
  double ref = 0;
  mag = 0;
  for (int64_t x = 0; x < k; ++x) {
    double av = a[ao + (ta ? x * m + row : row * k + x)];
    double bv = b[bo + (tb ? col * k + x : x * n + col)];
    ref += av * bv;
    mag += std::fabs(av * bv);
  }
  return ref;
}

/// tg.compare, tg.select and the integer conversions of tg.cast, against
/// plain C++ on values chosen to catch the easy mistakes: ties, NaN,
/// infinities and signed zeros; int64 values that differ by one beyond
/// 2^53 (a compare through double would call them equal); saturation.
void testMasks(std::mt19937_64 &rng) {
  std::uniform_int_distribution<int> pick(0, 7);
  const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY,
                           NAN, 2.5f};
  std::vector<float> l(6 * 7), r(5 * 7);
  for (float &x : l)
    x = special[pick(rng)];
  for (float &x : r)
    x = special[pick(rng)];
  std::vector<uint8_t> out(6 * 5 * 7);
  mpTensor L = tensorOfShape(l.data(), MP_F32, {6, 1, 7});
  mpTensor R = tensorOfShape(r.data(), MP_F32, {5, 7});
  mpTensor O = tensorOfShape(out.data(), MP_I1, {6, 5, 7});
  const char *names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  for (int kind = MP_EQ; kind <= MP_GE; ++kind) {
    bool ok = mpCompare(mpCompareKind(kind), &L, &R, &O) == MP_OK;
    for (int64_t i = 0; i < 6 && ok; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 7; ++k) {
          float a = l[i * 7 + k], b = r[j * 7 + k];
          bool want = kind == MP_EQ   ? a == b
                      : kind == MP_NE ? a != b
                      : kind == MP_LT ? a < b
                      : kind == MP_LE ? a <= b
                      : kind == MP_GT ? a > b
                                      : a >= b;
          ok &= out[(i * 5 + j) * 7 + k] == uint8_t(want);
        }
    check(ok, std::string("compare ") + names[kind] +
                  " on f32 with NaN, infinities and signed zeros, "
                  "broadcast [6,1,7] with [5,7]");
  }
  int64_t big = (int64_t(1) << 62) + 1;
  int64_t li[2] = {big, big}, ri[2] = {big, big - 1};
  uint8_t eq[2];
  mpTensor LI = tensorOfShape(li, MP_I64, {2});
  mpTensor RI = tensorOfShape(ri, MP_I64, {2});
  mpTensor EQ = tensorOfShape(eq, MP_I1, {2});
  check(mpCompare(MP_EQ, &LI, &RI, &EQ) == MP_OK && eq[0] == 1 && eq[1] == 0,
        "compare eq on i64 is exact (2^62 + 1 against 2^62)");

  std::vector<uint8_t> cond(4 * 9);
  for (uint8_t &c : cond)
    c = pick(rng) & 1;
  std::vector<uint16_t> onTrue(4 * 3 * 9), onFalse(9), picked(4 * 3 * 9);
  std::uniform_int_distribution<uint16_t> word(0, 0xffff);
  for (uint16_t &x : onTrue)
    x = word(rng);
  for (uint16_t &x : onFalse)
    x = word(rng);
  mpTensor C = tensorOfShape(cond.data(), MP_I1, {4, 1, 9});
  mpTensor T = tensorOfShape(onTrue.data(), MP_F16, {4, 3, 9});
  mpTensor F = tensorOfShape(onFalse.data(), MP_F16, {9});
  mpTensor P = tensorOfShape(picked.data(), MP_F16, {4, 3, 9});
  bool selectOk = mpSelect(&C, &T, &F, &P) == MP_OK;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 9; ++k) {
        int64_t at = (i * 3 + j) * 9 + k;
        selectOk &= picked[at] == (cond[i * 9 + k] ? onTrue[at] : onFalse[k]);
      }
  check(selectOk, "select copies f16 words bit for bit (NaN payloads too), "
                  "broadcast [4,1,9], [4,3,9], [9]");

  float values[] = {2.9f, -2.9f, NAN, 1e30f, -1e30f, -0.0f};
  int64_t asI64[6];
  int32_t asI32[6];
  uint8_t asI1[6];
  bool convertOk = mpConvert(values, MP_F32, asI64, MP_I64, 6) == MP_OK &&
                   mpConvert(values, MP_F32, asI32, MP_I32, 6) == MP_OK &&
                   mpConvert(values, MP_F32, asI1, MP_I1, 6) == MP_OK;
  int64_t wantI64[] = {2, -2, 0, INT64_MAX, INT64_MIN, 0};
  int32_t wantI32[] = {2, -2, 0, INT32_MAX, INT32_MIN, 0};
  uint8_t wantI1[] = {1, 1, 1, 1, 1, 0};
  for (int k = 0; k < 6; ++k)
    convertOk &= asI64[k] == wantI64[k] && asI32[k] == wantI32[k] &&
                 asI1[k] == wantI1[k];
  int64_t wide[3] = {int64_t(1) << 40, -(int64_t(1) << 40), 7};
  int32_t narrow[3];
  float back[3];
  convertOk &= mpConvert(wide, MP_I64, narrow, MP_I32, 3) == MP_OK &&
               narrow[0] == INT32_MAX && narrow[1] == INT32_MIN &&
               narrow[2] == 7 &&
               mpConvert(wide, MP_I64, back, MP_F32, 3) == MP_OK &&
               back[0] == 1099511627776.0f && back[2] == 7.0f;
  check(convertOk, "convert to integers truncates and saturates (NaN gives "
                   "0), to i1 tests != 0 (NaN gives 1); i64 -> i32 "
                   "saturates; i64 -> f32");
  check(mpCompare(MP_EQ, &L, &R, &L) == MP_ERROR_INVALID_ARGUMENT &&
            mpCompare(MP_EQ, &L, &LI, &O) == MP_ERROR_INVALID_ARGUMENT &&
            mpSelect(&T, &T, &F, &P) == MP_ERROR_INVALID_ARGUMENT &&
            mpSelect(&C, &T, &R, &P) == MP_ERROR_INVALID_ARGUMENT,
        "compare and select refuse a non-i1 result or condition and mixed "
        "operand types");
}

void testMatmul(std::mt19937_64 &rng) {
  struct Case {
    std::vector<int64_t> a, b;
    bool ta, tb;
    std::vector<int64_t> out;
  };
  std::vector<Case> cases = {
      {{5, 7}, {7, 3}, false, false, {5, 3}},
      {{7, 5}, {3, 7}, true, true, {5, 3}},
      {{2, 3, 4, 33}, {33, 6}, false, false, {2, 3, 4, 6}},
      {{2, 1, 4, 5}, {3, 6, 5}, false, true, {2, 3, 4, 6}},
      {{64, 300}, {300, 40}, false, false, {64, 40}},
      // Stored rows of 512 elements (2 KB in f32) along m or n, which
      // oneDNN's jit GEMM takes from copies with padded rows
      // (dnnlWantsPaddedRows): a transposed lhs, an rhs, a batch of
      // transposed lhs matrices, and an rhs under a batch of lhs matrices
      // (one taller matrix to oneDNN).
      {{40, 512}, {40, 24}, true, false, {512, 24}},
      {{24, 40}, {40, 512}, false, false, {24, 512}},
      {{2, 40, 512}, {2, 40, 8}, true, false, {2, 512, 8}},
      {{3, 4, 40}, {40, 512}, false, false, {3, 4, 512}},
      // Products large enough for the runtime's packed GEMM (Gemm.h):
      // tiles past m and n, three blocks along k; both operands
      // transposed; a batch over one rhs (one taller matrix); a batch of
      // three matrices, which two threads cannot share evenly (one
      // product each).
      {{131, 600}, {600, 45}, false, false, {131, 45}},
      {{300, 131}, {77, 300}, true, true, {131, 77}},
      {{3, 50, 260}, {260, 70}, false, false, {3, 50, 70}},
      {{3, 200, 110}, {3, 110, 100}, false, false, {3, 200, 100}},
      // Batches shared out whole matrices per thread
      // (packedGemmBatchTakes): transposed lhs matrices, attention's
      // Q K^T (each matrix too small for packedGemmTakes), transposed lhs
      // matrices again, one lhs over a batch of rhs.
      {{2, 260, 100}, {2, 260, 90}, true, false, {2, 100, 90}},
      {{8, 65, 64}, {8, 65, 64}, false, true, {8, 65, 65}},
      {{7, 70, 60}, {7, 70, 80}, true, false, {7, 60, 80}},
      {{50, 64}, {10, 64, 70}, false, false, {10, 50, 70}},
  };
  struct Types {
    mpElementType storage, out, compute;
  };
  std::vector<Types> types = {
      {MP_F32, MP_F32, MP_F32},  {MP_F16, MP_F16, MP_F32},
      {MP_F16, MP_F32, MP_F32},  {MP_BF16, MP_BF16, MP_F32},
      {MP_BF16, MP_F32, MP_F32}, {MP_F16, MP_F16, MP_F16},
      {MP_BF16, MP_BF16, MP_BF16}, {MP_F64, MP_F64, MP_F64},
      {MP_F32, MP_F32, MP_F64},
  };
  for (const Types &ty : types) {
    int worstCase = 0;
    double worstRatio = 0;
    bool ok = true;
    for (const Case &c : cases) {
      std::vector<double> ea, eb;
      auto a = randomBuffer(ty.storage, numel(c.a), ea, rng);
      auto b = randomBuffer(ty.storage, numel(c.b), eb, rng);
      std::vector<uint8_t> out(numel(c.out) * elementSize(ty.out));
      mpTensor A = tensorOfShape(a.data(), ty.storage, c.a),
               B = tensorOfShape(b.data(), ty.storage, c.b),
               O = tensorOfShape(out.data(), ty.out, c.out);
      if (mpMatmul(&A, &B, &O, c.ta, c.tb, ty.compute) != MP_OK) {
        std::printf("  shape #%d: mpMatmul failed\n", int(&c - &cases[0]));
        ok = false;
        continue;
      }
      // Reference in double, with the standard dot-product error bound:
      // |err| <= gamma_K * sum|a b| (accumulation in the compute type, plus
      // one rounding of each product in low-precision compute), then one
      // rounding to the output storage, plus an underflow floor.
      int64_t orank = c.out.size();
      int64_t m = c.out[orank - 2], n = c.out[orank - 1];
      int64_t k = c.ta ? c.a[c.a.size() - 2] : c.a.back();
      double u = unitRoundoff(ty.compute);
      double terms = ty.compute == MP_F16 || ty.compute == MP_BF16 ? k + 1 : k;
      // (1 + u)^terms - 1: the worst-case relative growth, valid for any
      // terms * u (the textbook gamma = Ku / (1 - Ku) needs Ku < 1, which
      // bf16 accumulation over a few hundred terms does not satisfy).
      double gamma = std::expm1(terms * std::log1p(u));
      double uOut = unitRoundoff(ty.out);
      int64_t batches = numel(c.out) / (m * n);
      for (int64_t bi = 0; bi < batches; ++bi) {
        for (int64_t r = 0; r < m; ++r)
          for (int64_t col = 0; col < n; ++col) {
            double mag;
            double ref = referenceDot(ea, c.a, c.ta, eb, c.b, c.tb, c.out,
                                      (bi * m + r) * n + col, mag);
            double got = readBack(out, ty.out, (bi * m + r) * n + col);
            double bound = gamma * mag * (1 + uOut) + uOut * std::fabs(ref) +
                           k * tiniest(ty.compute) + tiniest(ty.out);
            double err = std::fabs(got - ref);
            if (!(err <= bound)) {
              if (ok)
                std::printf("  shape #%d [%lld,%lld,%lld]: got %.9g, want "
                            "%.9g, bound %.3g\n",
                            int(&c - &cases[0]), (long long)bi, (long long)r,
                            (long long)col, got, ref, bound);
              ok = false;
            }
            if (bound > 0 && err / bound > worstRatio) {
              worstRatio = err / bound;
              worstCase = int(&c - &cases[0]);
            }
          }
      }
    }
    char line[160];
    std::snprintf(line, sizeof(line),
                  "matmul %s x %s -> %s, compute %s: within the error bound "
                  "on %d shapes (worst %.2f of the bound, shape #%d)",
                  typeName(ty.storage), typeName(ty.storage),
                  typeName(ty.out), typeName(ty.compute), int(cases.size()),
                  worstRatio, worstCase);
    check(ok, line);
  }
  // Mismatched shapes are refused.
  float x[6] = {};
  mpTensor A = tensorOfShape(x, MP_F32, {2, 3}), B = tensorOfShape(x, MP_F32, {2, 3}),
           O = tensorOfShape(x, MP_F32, {2, 2});
  check(mpMatmul(&A, &B, &O, 0, 0, MP_F32) == MP_ERROR_INVALID_ARGUMENT,
        "matmul: mismatched contraction dimensions are refused");
}

/// mpFusedMatmul against float64: activation(alpha (lhs x rhs) + bias +
/// residual) for every activation, with and without each addend (the
/// residual also in place, aliasing the output), alpha 1 and not (every
/// other call: an SGD step's -lr, a 1/sqrt(d), a negative power of two), on
/// the oneDNN post-op paths (f32, bf16, f16 widened; batched and folded),
/// the packed GEMM and the reference loops (f64 compute, a broadcast batch
/// oneDNN does not take, a scaled product with a bias).
void testFusedMatmul(std::mt19937_64 &rng) {
  struct Shape {
    std::vector<int64_t> a, b;
    bool ta, tb;
    std::vector<int64_t> out;
  };
  std::vector<Shape> shapes = {
      {{33, 70}, {70, 24}, false, false, {33, 24}},
      {{3, 16, 40}, {40, 48}, false, false, {3, 16, 48}},
      {{2, 40, 16}, {2, 24, 40}, true, true, {2, 16, 24}},
      {{2, 1, 5, 9}, {3, 9, 7}, false, false, {2, 3, 5, 7}},
      // Enough output tiles for the runtime's tile loops (the residual
      // widened into f32) to run on more than one thread.
      {{160, 24}, {24, 256}, false, false, {160, 256}},
      // Rows of 2 KB, padded for oneDNN's jit GEMM (see testMatmul).
      {{6, 40}, {40, 512}, false, false, {6, 512}},
      // The packed GEMM's bias and residual (see testMatmul), on one
      // product and on a batch of small ones.
      {{150, 260}, {70, 260}, false, true, {150, 70}},
      {{8, 65, 64}, {8, 64, 65}, false, false, {8, 65, 65}},
  };
  struct Types {
    mpElementType storage, out, bias, compute;
  };
  std::vector<Types> types = {
      {MP_F32, MP_F32, MP_F32, MP_F32},   {MP_BF16, MP_BF16, MP_BF16, MP_F32},
      {MP_BF16, MP_F32, MP_F32, MP_F32},  {MP_F16, MP_F16, MP_F16, MP_F32},
      {MP_F16, MP_F32, MP_BF16, MP_F32},  {MP_F64, MP_F64, MP_F64, MP_F64},
      {MP_F32, MP_F32, MP_F16, MP_F64},
  };
  const char *actNames[] = {"none", "relu", "gelu", "gelu_tanh"};
  auto activate = [](int a, double x) {
    switch (a) {
    case MP_ACTIVATION_RELU: return x > 0 ? x : 0.0;
    case MP_ACTIVATION_GELU: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case MP_ACTIVATION_GELU_TANH:
      return 0.5 * x *
             (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    }
    return x;
  };
  for (const Types &ty : types) {
    bool ok = true;
    double worst = 0;
    int calls = 0;
    for (const Shape &sh : shapes)
      for (int act = 0; act < 4; ++act)
        for (int addends = 0; addends < 4; ++addends)
          for (bool inPlace : {false, true}) {
            bool hasBias = addends & 1, hasResidual = addends & 2;
            if (inPlace && !hasResidual)
              continue;
            const double alphas[] = {1.0, -0.01, 0.125, 0.35355339059327373};
            double alpha = alphas[calls % 4];
            std::vector<double> ea, eb, ebias, eres;
            int64_t n = sh.out.back(), count = numel(sh.out);
            int64_t k = sh.ta ? sh.a[sh.a.size() - 2] : sh.a.back();
            auto a = randomBuffer(ty.storage, numel(sh.a), ea, rng);
            auto b = randomBuffer(ty.storage, numel(sh.b), eb, rng);
            auto bias = randomBuffer(ty.bias, n, ebias, rng);
            auto res = randomBuffer(ty.out, count, eres, rng);
            std::vector<uint8_t> out = inPlace
                                           ? res
                                           : std::vector<uint8_t>(
                                                 count * elementSize(ty.out));
            mpTensor A = tensorOfShape(a.data(), ty.storage, sh.a),
                     B = tensorOfShape(b.data(), ty.storage, sh.b),
                     Bias = tensorOfShape(bias.data(), ty.bias, {n}),
                     R = tensorOfShape(inPlace ? out.data() : res.data(),
                                       ty.out, sh.out),
                     O = tensorOfShape(out.data(), ty.out, sh.out);
            ++calls;
            if (mpFusedMatmul(&A, &B, hasBias ? &Bias : nullptr,
                              hasResidual ? &R : nullptr, &O, sh.ta, sh.tb, act,
                              alpha, ty.compute) != MP_OK) {
              std::printf("  mpFusedMatmul failed: shape #%d, %s\n",
                          int(&sh - &shapes[0]), actNames[act]);
              ok = false;
              continue;
            }
            // The matmul's bound (mpMatmul's test) times |alpha|, the
            // epilogue's own roundings in the compute type (alpha itself
            // and its product, two additions, the activation within a few
            // units), through the activation's slope (at most 1.13 for
            // GELU), then one rounding to the output.
            double u = unitRoundoff(ty.compute), uOut = unitRoundoff(ty.out);
            double used = ty.compute == MP_F64 ? alpha : double(float(alpha));
            double gamma = std::expm1(k * std::log1p(u));
            for (int64_t i = 0; i < count; ++i) {
              int64_t col = i % n;
              double mag;
              double acc = referenceDot(ea, sh.a, sh.ta, eb, sh.b, sh.tb,
                                        sh.out, i, mag);
              double pre = alpha * acc + (hasBias ? ebias[col] : 0) +
                           (hasResidual ? eres[i] : 0);
              double sum = std::fabs(alpha * acc) +
                           (hasBias ? std::fabs(ebias[col]) : 0) +
                           (hasResidual ? std::fabs(eres[i]) : 0);
              double ref = activate(act, pre);
              double bound = 1.13 * (std::fabs(used) * gamma * mag +
                                     std::fabs(used - alpha) * std::fabs(acc) +
                                     3 * u * sum) +
                             4 * u * std::fabs(ref) + uOut * std::fabs(ref) +
                             k * tiniest(ty.compute) + tiniest(ty.out);
              double err = std::fabs(readBack(out, ty.out, i) - ref);
              if (!(err <= bound)) {
                if (ok)
                  std::printf("  shape #%d %s bias %d residual %d%s "
                              "alpha %g, element %lld: got %.9g, want "
                              "%.9g, bound %.3g\n",
                              int(&sh - &shapes[0]), actNames[act], hasBias,
                              hasResidual, inPlace ? " in place" : "", alpha,
                              (long long)i, readBack(out, ty.out, i), ref,
                              bound);
                ok = false;
              }
              if (bound > 0)
                worst = std::max(worst, err / bound);
            }
          }
    char line[200];
    std::snprintf(line, sizeof(line),
                  "fused matmul %s x %s -> %s, bias %s, compute %s: %d "
                  "epilogues within the error bound (worst %.2f of it)",
                  typeName(ty.storage), typeName(ty.storage),
                  typeName(ty.out), typeName(ty.bias), typeName(ty.compute),
                  calls, worst);
    check(ok, line);
  }
  float x[16] = {};
  mpTensor A = tensorOfShape(x, MP_F32, {2, 2}), B = tensorOfShape(x, MP_F32, {2, 2}),
           O = tensorOfShape(x + 8, MP_F32, {2, 2}),
           wrongBias = tensorOfShape(x + 12, MP_F32, {3}),
           wrongResidual = tensorOfShape(x + 12, MP_F16, {2, 2}),
           wideRhs = tensorOfShape(x, MP_F32, {2, 3});
  check(
      mpFusedMatmul(&A, &B, &wrongBias, nullptr, &O, 0, 0, MP_ACTIVATION_NONE,
                    1.0, MP_F32) == MP_ERROR_INVALID_ARGUMENT &&
          mpFusedMatmul(&A, &B, nullptr, &wrongResidual, &O, 0, 0,
                        MP_ACTIVATION_NONE, 1.0,
                        MP_F32) == MP_ERROR_INVALID_ARGUMENT &&
          mpFusedMatmul(&A, &B, nullptr, nullptr, &O, 0, 0, 7, 1.0, MP_F32) ==
              MP_ERROR_INVALID_ARGUMENT &&
          mpFusedMatmul(&A, &B, nullptr, nullptr, &O, 0, 0, MP_ACTIVATION_RELU,
                        1.0, MP_F16) == MP_ERROR_INVALID_ARGUMENT &&
          mpFusedMatmul(&A, &wideRhs, nullptr, nullptr, &O, 0, 0,
                        MP_ACTIVATION_NONE, 1.0,
                        MP_F32) == MP_ERROR_INVALID_ARGUMENT &&
          mpFusedMatmul(&A, &B, nullptr, nullptr, &O, 0, 0, MP_ACTIVATION_NONE,
                        NAN, MP_F32) == MP_ERROR_INVALID_ARGUMENT &&
          mpFusedMatmul(&A, &B, nullptr, nullptr, &O, 0, 0, MP_ACTIVATION_NONE,
                        1e300, MP_F32) == MP_ERROR_INVALID_ARGUMENT,
      "fused matmul refuses a bias of the wrong length, a residual of "
      "another type, an unknown activation, low-precision accumulation, "
      "an rhs wider than the output and an alpha that is not finite (in "
      "the compute type)");
}

/// mpFusedMatmulBiasGrad: the product and epilogue exactly as mpFusedMatmul
/// gives them, and the sums along k of the chosen operand exactly as
/// mpReduce gives them (both sum in order along k) and within the sum's
/// error bound of float64, for each operand and transpose, on the packed
/// GEMM (which adds the sums as it packs the operand: copied or transposed,
/// k in one block and in several) and on oneDNN or the reference loops.
void testFusedMatmulBiasGrad(std::mt19937_64 &rng) {
  struct Shape {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  std::vector<Shape> shapes = {
      {{70, 33}, {70, 24}, true, false}, // small: not the packed GEMM's
      {{260, 150}, {260, 70}, true, false},
      {{150, 260}, {70, 260}, false, true},
      {{1021, 37}, {1021, 100}, true, false},
      {{96, 300}, {300, 130}, false, false},
      // b's column sums with the columns shared out (Gemm.cpp): more than
      // 8 panels a thread on three threads on AVX2 and on AVX-512.
      {{96, 300}, {300, 790}, false, false},
  };
  struct Types {
    mpElementType storage, out, grad, compute;
  };
  std::vector<Types> types = {
      {MP_F32, MP_F32, MP_F32, MP_F32},
      {MP_BF16, MP_BF16, MP_F32, MP_F32},
      {MP_F32, MP_F32, MP_BF16, MP_F32},
      {MP_F64, MP_F64, MP_F64, MP_F64},
  };
  for (const Types &ty : types) {
    bool ok = true;
    double worst = 0;
    int calls = 0;
    for (const Shape &sh : shapes)
      for (int of : {MP_MATMUL_LHS, MP_MATMUL_RHS})
        for (bool residual : {false, true}) {
          int64_t m = sh.ta ? sh.a[1] : sh.a[0], k = sh.ta ? sh.a[0] : sh.a[1];
          int64_t n = sh.tb ? sh.b[0] : sh.b[1];
          std::vector<int64_t> outShape = {m, n};
          int64_t length = of == MP_MATMUL_LHS ? m : n;
          std::vector<double> ea, eb, eres;
          auto a = randomBuffer(ty.storage, numel(sh.a), ea, rng);
          auto b = randomBuffer(ty.storage, numel(sh.b), eb, rng);
          auto res = randomBuffer(ty.out, m * n, eres, rng);
          std::vector<uint8_t> out(m * n * elementSize(ty.out)),
              plain(out.size()), grad(length * elementSize(ty.grad)),
              reduced(grad.size());
          mpTensor A = tensorOfShape(a.data(), ty.storage, sh.a),
                   B = tensorOfShape(b.data(), ty.storage, sh.b),
                   R = tensorOfShape(res.data(), ty.out, outShape),
                   O = tensorOfShape(out.data(), ty.out, outShape),
                   P = tensorOfShape(plain.data(), ty.out, outShape),
                   G = tensorOfShape(grad.data(), ty.grad, {length}),
                   D = tensorOfShape(reduced.data(), ty.grad, {length});
          double alpha = residual ? -0.01 : 1.0;
          const mpTensor *summed = of == MP_MATMUL_LHS ? &A : &B;
          bool kAlongRows = of == MP_MATMUL_LHS ? sh.ta : !sh.tb;
          int64_t axis = kAlongRows ? 0 : 1;
          ++calls;
          const char *what = of == MP_MATMUL_LHS ? "lhs" : "rhs";
          if (mpFusedMatmulBiasGrad(
                  &A, &B, nullptr, residual ? &R : nullptr, &O, &G, of, sh.ta,
                  sh.tb, MP_ACTIVATION_NONE, alpha, ty.compute) != MP_OK ||
              mpFusedMatmul(&A, &B, nullptr, residual ? &R : nullptr, &P, sh.ta,
                            sh.tb, MP_ACTIVATION_NONE, alpha,
                            ty.compute) != MP_OK ||
              mpReduce(MP_REDUCE_SUM, summed, &D, &axis, 1, ty.compute) !=
                  MP_OK) {
            std::printf("  shape #%d bias_grad(%s): a call failed\n",
                        int(&sh - &shapes[0]), what);
            ok = false;
            continue;
          }
          if (out != plain || grad != reduced) {
            std::printf("  shape #%d bias_grad(%s)%s: the %s differs from "
                        "the unfused op's\n",
                        int(&sh - &shapes[0]), what,
                        residual ? " residual" : "",
                        out != plain ? "product" : "sum");
            ok = false;
          }
          const std::vector<double> &e = of == MP_MATMUL_LHS ? ea : eb;
          const std::vector<int64_t> &stored =
              of == MP_MATMUL_LHS ? sh.a : sh.b;
          double u = unitRoundoff(ty.compute);
          double gamma = std::expm1(k * std::log1p(u));
          for (int64_t l = 0; l < length; ++l) {
            double sum = 0, mag = 0;
            for (int64_t x = 0; x < k; ++x) {
              double v =
                  kAlongRows ? e[x * stored[1] + l] : e[l * stored[1] + x];
              sum += v;
              mag += std::fabs(v);
            }
            double bound = gamma * mag +
                           unitRoundoff(ty.grad) * std::fabs(sum) +
                           k * tiniest(ty.compute) + tiniest(ty.grad);
            double err = std::fabs(readBack(grad, ty.grad, l) - sum);
            if (!(err <= bound)) {
              if (ok)
                std::printf("  shape #%d bias_grad(%s), element %lld: got "
                            "%.9g, want %.9g, bound %.3g\n",
                            int(&sh - &shapes[0]), what, (long long)l,
                            readBack(grad, ty.grad, l), sum, bound);
              ok = false;
            }
            if (bound > 0)
              worst = std::max(worst, err / bound);
          }
        }
    char line[200];
    std::snprintf(line, sizeof(line),
                  "fused matmul with bias gradient %s -> %s, sums %s, "
                  "compute %s: %d products and sums as unfused, within the "
                  "error bound (worst %.2f of it)",
                  typeName(ty.storage), typeName(ty.out), typeName(ty.grad),
                  typeName(ty.compute), calls, worst);
    check(ok, line);
  }
  float x[16] = {};
  mpTensor A = tensorOfShape(x, MP_F32, {2, 2}),
           B = tensorOfShape(x, MP_F32, {2, 2}),
           O = tensorOfShape(x + 4, MP_F32, {2, 2}),
           G = tensorOfShape(x + 8, MP_F32, {2}),
           wrongG = tensorOfShape(x + 8, MP_F32, {3}),
           batched = tensorOfShape(x, MP_F32, {1, 2, 2}),
           batchedOut = tensorOfShape(x + 4, MP_F32, {1, 2, 2});
  auto call = [&](const mpTensor *a, mpTensor *o, mpTensor *g, int of) {
    return mpFusedMatmulBiasGrad(a, &B, nullptr, nullptr, o, g, of, 1, 0,
                                 MP_ACTIVATION_NONE, 1.0, MP_F32);
  };
  check(call(&A, &O, &wrongG, MP_MATMUL_LHS) == MP_ERROR_INVALID_ARGUMENT &&
            call(&A, &O, &G, 2) == MP_ERROR_INVALID_ARGUMENT &&
            call(&A, &O, nullptr, MP_MATMUL_RHS) == MP_ERROR_INVALID_ARGUMENT &&
            call(&batched, &batchedOut, &G, MP_MATMUL_LHS) ==
                MP_ERROR_INVALID_ARGUMENT &&
            call(&A, &O, &G, MP_MATMUL_RHS) == MP_OK,
        "fused matmul refuses a bias gradient of the wrong length, an "
        "unknown operand, a missing one and a batched product");
}

/// The runtime's packed f32 GEMM (runtime/lib/CPU/Gemm.h) called directly,
/// against float64: m, n and k at and either side of its tile and block
/// sizes (14 rows, 32 columns, 256 along k; every tile height), every
/// transpose, rows stored longer than they are (1024 long for k = 1021: a
/// row-major lhs whose rows lie 4 KB apart is packed, others are read in
/// place), with and without the bias, accumulating into c, adding a
/// residual from another matrix, or neither; the elements of c past n in
/// each row must keep their values.
/// Skipped, saying so, where the runtime does not use it (AVX-512 without
/// MP_PACKED_GEMM=1, a CPU without AVX2 and FMA, MP_PACKED_GEMM=0).
void testPackedGemm(std::mt19937_64 &rng) {
  if (!mp::rt::packedGemmTakes(64, 64, 1024)) {
    std::printf("skipped: packed GEMM: not used here (it runs on AVX2 with "
                "FMA, and on AVX-512 with MP_PACKED_GEMM=1)\n");
    return;
  }
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uniform_int_distribution<int> coin(0, 1);
  bool ok = true;
  int calls = 0;
  double worst = 0;
  // Every tile height on AVX2 (6 rows) and AVX-512 (14), then several;
  // widths of a few panels, and of more than 8 panels a thread on three
  // threads on both ISAs (789 columns: 50 and 25 panels), where a plain lhs
  // read in place is shared out by columns; k with a shorter last block.
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 29, 130})
    for (int64_t n : {1, 31, 32, 33, 70, 789})
      for (int64_t k : {1, 255, 256, 257, 600, 1021})
        for (int form = 0; form < 4; ++form) {
          if (n > 70 && ((m != 15 && m != 130) || k == 255 || k == 256))
            continue; // the wide products on two heights only
          bool ta = form & 1, tb = form & 2;
          // The addend: none, c itself (accumulating) or a residual laid
          // out as c.
          bool useBias = coin(rng);
          int addendKind = int(rng() % 3);
          // Stored rows a few elements longer than the matrix's own.
          int64_t aRow = (ta ? m : k) + 3, bRow = (tb ? k : n) + 5;
          int64_t ldc = n + 7;
          std::vector<float> a((ta ? k : m) * aRow), b((tb ? n : k) * bRow),
              bias(n), c(m * ldc), c0, residual(m * ldc);
          for (std::vector<float> *v : {&a, &b, &bias, &c, &residual})
            for (float &x : *v)
              x = value(rng);
          c0 = c;
          mp::rt::GemmOperand A = ta ? mp::rt::GemmOperand{a.data(), 1, aRow}
                                     : mp::rt::GemmOperand{a.data(), aRow, 1};
          mp::rt::GemmOperand B = tb ? mp::rt::GemmOperand{b.data(), 1, bRow}
                                     : mp::rt::GemmOperand{b.data(), bRow, 1};
          const float *addend = addendKind == 0   ? nullptr
                                : addendKind == 1 ? c.data()
                                                  : residual.data();
          mp::rt::packedGemm(m, n, k, A, B, c.data(), ldc,
                             useBias ? bias.data() : nullptr, addend);
          ++calls;
          // Sums of k products in f32 blocks, each block added to c, then
          // the bias and c's own value: within k + 4 roundings.
          double gamma = std::expm1((k + 4) * std::log1p(0x1p-24));
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
              float got = c[i * ldc + j];
              if (j >= n) {
                if (std::memcmp(&got, &c0[i * ldc + j], sizeof got) != 0) {
                  if (ok)
                    std::printf("  m %lld n %lld k %lld form %d: c[%lld, "
                                "%lld] past n was written\n",
                                (long long)m, (long long)n, (long long)k, form,
                                (long long)i, (long long)j);
                  ok = false;
                }
                continue;
              }
              double ref = 0, mag = 0;
              for (int64_t x = 0; x < k; ++x) {
                double p = double(A.data[i * A.rowStep + x * A.colStep]) *
                           B.data[x * B.rowStep + j * B.colStep];
                ref += p;
                mag += std::fabs(p);
              }
              double addBias = useBias ? double(bias[j]) : 0.0;
              double addC = addendKind == 0   ? 0.0
                            : addendKind == 1 ? double(c0[i * ldc + j])
                                              : double(residual[i * ldc + j]);
              mag += std::fabs(addBias) + std::fabs(addC);
              ref += addBias + addC;
              double err = std::fabs(got - ref), bound = gamma * mag;
              if (!(err <= bound)) {
                if (ok)
                  std::printf("  m %lld n %lld k %lld form %d bias %d "
                              "addend %d: c[%lld, %lld] = %.9g, want "
                              "%.9g, bound %.3g\n",
                              (long long)m, (long long)n, (long long)k, form,
                              useBias, addendKind, (long long)i, (long long)j,
                              got, ref, bound);
                ok = false;
              }
              if (bound > 0)
                worst = std::max(worst, err / bound);
            }
        }
  char line[160];
  std::snprintf(line, sizeof(line),
                "packed GEMM: %d products within the error bound (worst "
                "%.2f of it), nothing written past n",
                calls, worst);
  check(ok, line);
}

/// Whether `v` is exactly representable in the low type `t`.
bool representable(double v, mpElementType t) {
  if (t == MP_F16)
    return mpF16ToF32(mpF32ToF16(float(v))) == v || std::isnan(v);
  if (t == MP_BF16)
    return mpBF16ToF32(mpF32ToBF16(float(v))) == v || std::isnan(v);
  return true;
}

double roundTo(double v, mpElementType t) {
  if (t == MP_F16)
    return mpF16ToF32(mpF32ToF16(float(v)));
  if (t == MP_BF16)
    return mpBF16ToF32(mpF32ToBF16(float(v)));
  if (t == MP_F32)
    return float(v);
  return v;
}

void testElementwise(std::mt19937_64 &rng) {
  struct Types {
    mpElementType storage, out, compute;
  };
  const std::vector<Types> types = {
      {MP_F32, MP_F32, MP_F32}, {MP_F16, MP_F16, MP_F32},
      {MP_BF16, MP_BF16, MP_F32}, {MP_F16, MP_F32, MP_F16},
      {MP_BF16, MP_F32, MP_BF16}, {MP_F64, MP_F64, MP_F64}};
  // Reference formulas in double; `scale` is the magnitude of intermediate
  // terms that bounds the absolute error (e.g. x for gelu's x * Phi(x)).
  struct Unary {
    const char *name;
    mpUnaryKind kind;
    double lo, hi;
    double (*f)(double);
    double (*scale)(double);
  };
  auto zero = [](double) { return 0.0; };
  auto absx = [](double x) { return std::fabs(x); };
  const std::vector<Unary> unaries = {
      {"neg", MP_NEG, -4, 4, [](double x) { return -x; }, zero},
      {"relu", MP_RELU, -4, 4, [](double x) { return x > 0 ? x : 0.0; }, zero},
      {"gelu", MP_GELU, -6, 6,
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       absx},
      {"gelu_tanh", MP_GELU_TANH, -6, 6,
       [](double x) {
         return 0.5 * x *
                (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       },
       absx},
      {"tanh", MP_TANH, -4, 4, [](double x) { return std::tanh(x); }, absx},
      {"sigmoid", MP_SIGMOID, -8, 8,
       [](double x) { return 1 / (1 + std::exp(-x)); }, zero},
      {"exp", MP_EXP, -8, 8, [](double x) { return std::exp(x); }, absx},
      {"log", MP_LOG, 0.01, 100, [](double x) { return std::log(x); },
       [](double) { return 1.0; }},
      {"sqrt", MP_SQRT, 0, 100, [](double x) { return std::sqrt(x); }, zero},
      {"rsqrt", MP_RSQRT, 0.01, 100,
       [](double x) { return 1 / std::sqrt(x); }, zero},
      {"square", MP_SQUARE, -4, 4, [](double x) { return x * x; }, zero},
      {"erf", MP_ERF, -3, 3, [](double x) { return std::erf(x); }, zero},
      {"sin", MP_SIN, -6, 6, [](double x) { return std::sin(x); }, absx},
      {"cos", MP_COS, -6, 6, [](double x) { return std::cos(x); }, absx},
  };
  const int n = 4096;
  for (const Unary &op : unaries) {
    bool ok = true, rounded = true;
    std::string failAt;
    for (const Types &ty : types) {
      std::uniform_real_distribution<double> uni(op.lo, op.hi);
      std::vector<double> x(n);
      std::vector<uint8_t> in(n * elementSize(ty.storage)),
          out(n * elementSize(ty.out));
      for (int i = 0; i < n; ++i) {
        double v = roundTo(uni(rng), ty.storage);
        x[i] = v;
        switch (ty.storage) {
        case MP_F32: {
          float f = float(v);
          std::memcpy(&in[i * 4], &f, 4);
          break;
        }
        case MP_F64:
          std::memcpy(&in[i * 8], &v, 8);
          break;
        default: {
          uint16_t h = ty.storage == MP_F16 ? mpF32ToF16(float(v))
                                            : mpF32ToBF16(float(v));
          std::memcpy(&in[i * 2], &h, 2);
        }
        }
      }
      mpTensor I = tensorOfShape(in.data(), ty.storage, {n}),
               O = tensorOfShape(out.data(), ty.out, {n});
      if (mpUnary(op.kind, &I, &O, ty.compute) != MP_OK) {
        ok = false;
        continue;
      }
      // The op is evaluated in f32 (or f64) on inputs rounded to the compute
      // type: a few ulps of that evaluation, one rounding to the compute
      // type, one to the output storage.
      double uEval = unitRoundoff(ty.compute == MP_F64 ? MP_F64 : MP_F32);
      double uc = unitRoundoff(ty.compute), uo = unitRoundoff(ty.out);
      for (int i = 0; i < n; ++i) {
        double xi = roundTo(x[i], ty.compute);
        double ref = op.f(xi), got = readBack(out, ty.out, i);
        double mag = std::fabs(ref) + op.scale(xi);
        double tol = 8 * uEval * mag +
                     ((ty.compute == MP_F16 || ty.compute == MP_BF16) ? uc : 0) *
                         std::fabs(ref) +
                     uo * std::fabs(ref) + 2 * tiniest(ty.out) +
                     2 * tiniest(ty.compute);
        if (!(std::fabs(got - ref) <= tol) && ok) {
          ok = false;
          char buf[160];
          std::snprintf(buf, sizeof(buf), " (%s->%s compute %s: f(%.9g) = %.9g, want %.9g)",
                        typeName(ty.storage), typeName(ty.out),
                        typeName(ty.compute), xi, got, ref);
          failAt = buf;
        }
        if (ty.out == MP_F32 && !representable(got, ty.compute))
          rounded = false;
      }
    }
    check(ok, std::string("unary ") + op.name +
                  " matches float64 within its type-derived tolerance in 6 "
                  "storage/compute combinations" + failAt);
    check(rounded, std::string("unary ") + op.name +
                       ": f16/bf16 compute rounds the result to that type");
  }

  // A NaN input gives a NaN, as in PyTorch and JAX: a NaN an activation
  // swallowed would hide an overflow from loss scaling's check (relu was
  // max(x, 0), which maps NaN to 0). Every unary op, every storage type,
  // through the fast paths and the loops.
  {
    bool propagates = true;
    std::string failAt;
    for (int library = 1; library >= 0; --library) {
      mpUseLibraryKernels(library);
      for (const Unary &op : unaries)
        for (mpElementType t : {MP_F32, MP_F16, MP_BF16, MP_F64}) {
          const int count = 70; // a whole vector and a tail
          std::vector<double> wide(count, std::nan(""));
          std::vector<uint8_t> in(count * elementSize(t)),
              out(count * elementSize(t));
          mpConvert(wide.data(), MP_F64, in.data(), t, count);
          mpTensor I = tensorOfShape(in.data(), t, {count}),
                   O = tensorOfShape(out.data(), t, {count});
          bool ok = mpUnary(op.kind, &I, &O, t == MP_F64 ? MP_F64 : MP_F32) ==
                    MP_OK;
          for (int i = 0; ok && i < count; ++i)
            ok = std::isnan(readBack(out, t, i));
          if (!ok && propagates)
            failAt = std::string(" (") + op.name + " on " + typeName(t) +
                     (library ? ", fast path)" : ", loops)");
          propagates &= ok;
        }
    }
    // The fused matmul's activations likewise (oneDNN's ReLU post-op is
    // max(x, 0)): a NaN in row 0 of the lhs makes row 0 of the product NaN.
    for (int library = 1; library >= 0; --library) {
      mpUseLibraryKernels(library);
      for (mpElementType t : {MP_F32, MP_BF16})
        for (int act = MP_ACTIVATION_RELU; act <= MP_ACTIVATION_GELU_TANH;
             ++act) {
          const int64_t m = 32, k = 48, nn = 40;
          std::vector<double> a(m * k, -0.25), b(k * nn, 0.5);
          a[3] = std::nan("");
          std::vector<uint8_t> al(a.size() * elementSize(t)),
              bl(b.size() * elementSize(t)), out(m * nn * elementSize(t));
          mpConvert(a.data(), MP_F64, al.data(), t, int64_t(a.size()));
          mpConvert(b.data(), MP_F64, bl.data(), t, int64_t(b.size()));
          mpTensor A = tensorOfShape(al.data(), t, {m, k}),
                   B = tensorOfShape(bl.data(), t, {k, nn}),
                   O = tensorOfShape(out.data(), t, {m, nn});
          bool ok = mpFusedMatmul(&A, &B, nullptr, nullptr, &O, 0, 0, act, 1.0,
                                  MP_F32) == MP_OK;
          for (int64_t j = 0; ok && j < nn; ++j)
            ok = std::isnan(readBack(out, t, j)) &&
                 readBack(out, t, nn + j) == (act == MP_ACTIVATION_RELU
                                                  ? 0.0
                                                  : readBack(out, t, nn + j));
          if (!ok && propagates)
            failAt = std::string(" (fused matmul, activation ") +
                     std::to_string(act) + " on " + typeName(t) +
                     (library ? ", library)" : ", loops)");
          propagates &= ok;
        }
    }
    mpUseLibraryKernels(1);
    check(propagates, "every unary op and fused-matmul activation maps NaN "
                      "to NaN" + failAt);
  }

  // Binary ops with broadcasting: [4,1,5] op [3,1] -> [4,3,5].
  struct Binary {
    const char *name;
    mpBinaryKind kind;
    double (*f)(double, double);
  };
  const std::vector<Binary> binaries = {
      {"add", MP_ADD, [](double a, double b) { return a + b; }},
      {"sub", MP_SUB, [](double a, double b) { return a - b; }},
      {"mul", MP_MUL, [](double a, double b) { return a * b; }},
      {"div", MP_DIV, [](double a, double b) { return a / b; }},
      {"maximum", MP_MAXIMUM, [](double a, double b) { return a > b ? a : b; }},
      {"minimum", MP_MINIMUM, [](double a, double b) { return a < b ? a : b; }},
  };
  for (const Binary &op : binaries) {
    bool ok = true;
    for (const Types &ty : types) {
      std::vector<double> ea, eb;
      auto a = randomBuffer(ty.storage, 20, ea, rng);
      auto b = randomBuffer(ty.storage, 3, eb, rng);
      std::vector<uint8_t> out(60 * elementSize(ty.out));
      mpTensor A = tensorOfShape(a.data(), ty.storage, {4, 1, 5}),
               B = tensorOfShape(b.data(), ty.storage, {3, 1}),
               O = tensorOfShape(out.data(), ty.out, {4, 3, 5});
      if (mpBinary(op.kind, &A, &B, &O, ty.compute) != MP_OK) {
        ok = false;
        continue;
      }
      double uc = unitRoundoff(ty.compute), uo = unitRoundoff(ty.out);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 5; ++k) {
            double av = roundTo(ea[i * 5 + k], ty.compute);
            double bv = roundTo(eb[j], ty.compute);
            if (op.kind == MP_DIV && std::fabs(bv) < 1e-3)
              continue;
            double ref = op.f(av, bv);
            double got = readBack(out, ty.out, (i * 3 + j) * 5 + k);
            // One rounding in the compute type, one to the output.
            double tol = (uc + uo) * std::fabs(ref) + 2 * tiniest(ty.out) +
                         2 * tiniest(ty.compute);
            ok &= std::fabs(got - ref) <= tol;
          }
    }
    check(ok, std::string("binary ") + op.name +
                  " with broadcasting matches float64 in 6 storage/compute "
                  "combinations");
  }

  // Activation gradients against the derivative in double.
  struct Grad {
    const char *name;
    mpActivationGradKind kind;
    double (*df)(double); // f'(saved)
  };
  const std::vector<Grad> grads = {
      {"relu_grad", MP_RELU_GRAD, [](double s) { return s > 0 ? 1.0 : 0.0; }},
      {"gelu_grad", MP_GELU_GRAD,
       [](double s) {
         return 0.5 * (1 + std::erf(s / std::sqrt(2.0))) +
                s * std::exp(-0.5 * s * s) / std::sqrt(2 * M_PI);
       }},
      {"gelu_tanh_grad", MP_GELU_TANH_GRAD,
       [](double s) {
         double k = std::sqrt(2 / M_PI), t = std::tanh(k * (s + 0.044715 * s * s * s));
         return 0.5 * (1 + t) +
                0.5 * s * (1 - t * t) * k * (1 + 3 * 0.044715 * s * s);
       }},
      {"tanh_grad", MP_TANH_GRAD, [](double s) { return 1 - s * s; }},
      {"sigmoid_grad", MP_SIGMOID_GRAD, [](double s) { return s * (1 - s); }},
  };
  for (const Grad &op : grads) {
    bool ok = true;
    for (const Types &ty : types) {
      std::vector<double> edy, es;
      auto dy = randomBuffer(ty.storage, 512, edy, rng);
      auto sv = randomBuffer(ty.storage, 512, es, rng);
      std::vector<uint8_t> dx(512 * elementSize(ty.out));
      mpTensor DY = tensorOfShape(dy.data(), ty.storage, {512}),
               S = tensorOfShape(sv.data(), ty.storage, {512}),
               DX = tensorOfShape(dx.data(), ty.out, {512});
      if (mpActivationGrad(op.kind, &DY, &S, &DX, ty.compute) != MP_OK) {
        ok = false;
        continue;
      }
      double uEval = unitRoundoff(ty.compute == MP_F64 ? MP_F64 : MP_F32);
      double uc = unitRoundoff(ty.compute), uo = unitRoundoff(ty.out);
      bool low = ty.compute == MP_F16 || ty.compute == MP_BF16;
      for (int i = 0; i < 512; ++i) {
        double g = roundTo(edy[i], ty.compute), sv2 = roundTo(es[i], ty.compute);
        double ref = g * op.df(sv2), got = readBack(dx, ty.out, i);
        double mag = std::fabs(g) * (2 + sv2 * sv2);
        double tol = 16 * uEval * mag + (low ? uc : 0) * std::fabs(ref) +
                     uo * std::fabs(ref) + 2 * tiniest(ty.out) +
                     2 * tiniest(ty.compute);
        if (!(std::fabs(got - ref) <= tol) && ok)
          std::printf("  %s %s->%s compute %s: dy %.9g s %.9g: got %.9g, "
                      "want %.9g, tol %.3g\n",
                      op.name, typeName(ty.storage), typeName(ty.out),
                      typeName(ty.compute), g, sv2, got, ref, tol);
        ok &= std::fabs(got - ref) <= tol;
      }
    }
    check(ok, std::string(op.name) +
                  " matches the float64 derivative in 6 storage/compute "
                  "combinations");
  }
  float one = 1;
  mpTensor A = tensorOfShape(&one, MP_F32, {1, 1}),
           B = tensorOfShape(&one, MP_F32, {1}),
           O = tensorOfShape(&one, MP_F32, {2});
  check(mpBinary(MP_ADD, &A, &A, &O, MP_F32) == MP_ERROR_INVALID_ARGUMENT &&
            mpUnary(MP_EXP, &A, &B, MP_F32) == MP_ERROR_INVALID_ARGUMENT,
        "elementwise: mismatched shapes are refused");
}

/// f64 tensor helpers for the finite-difference checks.
struct F64 {
  std::vector<double> v;
  std::vector<int64_t> shape;
  F64(std::vector<int64_t> s, std::mt19937_64 &rng, double lo = -2,
      double hi = 2)
      : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::uniform_real_distribution<double> uni(lo, hi);
    v.resize(n);
    for (double &x : v)
      x = uni(rng);
  }
  mpTensor t() { return tensorOfShape(v.data(), MP_F64, shape); }
};

/// Central differences of `loss` (a function of x) against `grad`, in f64:
/// the worst error relative to the largest gradient entry.
template <typename Loss>
double finiteDifferenceError(std::vector<double> &x,
                             const std::vector<double> &grad, Loss loss) {
  double worst = 0, scale = 1e-30;
  for (double g : grad)
    scale = std::max(scale, std::fabs(g));
  for (size_t i = 0; i < x.size(); ++i) {
    double x0 = x[i], h = 1e-5 * std::max(1.0, std::fabs(x0));
    x[i] = x0 + h;
    double up = loss();
    x[i] = x0 - h;
    double down = loss();
    x[i] = x0;
    worst = std::max(worst, std::fabs((up - down) / (2 * h) - grad[i]) / scale);
  }
  return worst;
}

/// A convolution's geometry with NCHW/NHWC indexing, for the references.
struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, groups;
  mpWindow win{};
  int64_t oh = 0, ow = 0;
  std::vector<int64_t> act(int64_t ch, int64_t hh, int64_t ww) const {
    return win.channelsLast ? std::vector<int64_t>{n, hh, ww, ch}
                            : std::vector<int64_t>{n, ch, hh, ww};
  }
  int64_t at(int64_t ch, int64_t hh, int64_t ww, int64_t b, int64_t cc,
             int64_t y, int64_t x) const {
    return win.channelsLast ? ((b * hh + y) * ww + x) * ch + cc
                            : ((b * ch + cc) * hh + y) * ww + x;
  }
};

/// A random convolution that fits: odd sizes, strides, dilations,
/// asymmetric padding, groups (depthwise too) and both layouts.
ConvCase randomConv(std::mt19937_64 &rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + int64_t(rng() % uint64_t(hi - lo + 1));
  };
  for (;;) {
    ConvCase k;
    k.groups = std::vector<int64_t>{1, 1, 2, 3}[rng() % 4];
    k.n = pick(1, 3);
    k.c = k.groups * pick(1, 3);
    k.o = rng() % 4 == 0 ? k.c : k.groups * pick(1, 3); // depthwise at times
    k.h = pick(4, 11);
    k.w = pick(4, 11);
    k.kh = pick(1, 4);
    k.kw = pick(1, 4);
    k.win.strides[0] = pick(1, 3);
    k.win.strides[1] = pick(1, 3);
    k.win.dilations[0] = pick(1, 2);
    k.win.dilations[1] = pick(1, 2);
    for (int64_t &p : k.win.padding)
      p = pick(0, 2);
    k.win.groups = k.groups;
    k.win.channelsLast = int32_t(rng() % 2);
    int64_t eh = (k.kh - 1) * k.win.dilations[0] + 1,
            ew = (k.kw - 1) * k.win.dilations[1] + 1;
    int64_t ph = k.h + k.win.padding[0] + k.win.padding[2],
            pw = k.w + k.win.padding[1] + k.win.padding[3];
    if (ph < eh || pw < ew)
      continue;
    k.oh = (ph - eh) / k.win.strides[0] + 1;
    k.ow = (pw - ew) / k.win.strides[1] + 1;
    return k;
  }
}

/// `k` made a 1x1, stride-1, unpadded, ungrouped NHWC convolution: the
/// shape the CPU backend runs as a matrix product.
void makePointwise(ConvCase &k) {
  k.kh = k.kw = 1;
  k.groups = k.win.groups = 1;
  k.win.strides[0] = k.win.strides[1] = 1;
  for (int64_t &p : k.win.padding)
    p = 0;
  k.win.channelsLast = 1;
  k.oh = k.h;
  k.ow = k.w;
}

/// The f64 convolution, straight from the definition; `absSum` gets the
/// sum of |products| per output (for rounding bounds).
std::vector<double> referenceConv(const ConvCase &k,
                                  const std::vector<double> &x,
                                  const std::vector<double> &f,
                                  std::vector<double> *absSum = nullptr) {
  std::vector<double> y(size_t(k.n * k.o * k.oh * k.ow));
  if (absSum)
    absSum->assign(y.size(), 0);
  int64_t cg = k.c / k.groups, og = k.o / k.groups;
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t oy = 0; oy < k.oh; ++oy)
        for (int64_t ox = 0; ox < k.ow; ++ox) {
          double acc = 0, abs = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                int64_t y0 = oy * k.win.strides[0] - k.win.padding[0] +
                             ky * k.win.dilations[0];
                int64_t x0 = ox * k.win.strides[1] - k.win.padding[1] +
                             kx * k.win.dilations[1];
                if (y0 < 0 || y0 >= k.h || x0 < 0 || x0 >= k.w)
                  continue;
                double p = x[size_t(k.at(k.c, k.h, k.w, b, (o / og) * cg + ci,
                                         y0, x0))] *
                           f[size_t(((o * cg + ci) * k.kh + ky) * k.kw + kx)];
                acc += p;
                abs += std::fabs(p);
              }
          size_t i = size_t(k.at(k.o, k.oh, k.ow, b, o, oy, ox));
          y[i] = acc;
          if (absSum)
            (*absSum)[i] = abs;
        }
  return y;
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

void testConvolution(std::mt19937_64 &rng) {
  const double u32 = std::ldexp(1.0, -24);
  bool f64Ok = true, adjointOk = true, libraryOk = true, loopsOk = true,
       bf16Ok = true;
  int64_t runs = 0;
  for (int trial = 0; trial < 40; ++trial) {
    ConvCase k = randomConv(rng);
    if (trial % 4 == 0)
      makePointwise(k);
    F64 x(k.act(k.c, k.h, k.w), rng),
        f({k.o, k.c / k.groups, k.kh, k.kw}, rng),
        dy(k.act(k.o, k.oh, k.ow), rng);
    std::vector<double> absSum;
    std::vector<double> ref = referenceConv(k, x.v, f.v, &absSum);
    // f64 through the runtime: the reference loops (oneDNN takes f32 only).
    std::vector<double> y(ref.size()), dx(x.v.size()), df(f.v.size());
    mpTensor X = x.t(), F = f.t(), DY = dy.t(),
             Y = tensorOfShape(y.data(), MP_F64, k.act(k.o, k.oh, k.ow)),
             DX = tensorOfShape(dx.data(), MP_F64, x.shape),
             DF = tensorOfShape(df.data(), MP_F64, f.shape);
    f64Ok &= mpConv2d(&X, &F, &Y, &k.win, MP_F64) == MP_OK;
    for (size_t i = 0; i < ref.size(); ++i)
      f64Ok &= std::fabs(y[i] - ref[i]) <= 1e-12 * (1 + absSum[i]);
    // The gradients are the adjoints: <conv(x, f), dy> = <x, dx> = <f, df>.
    adjointOk &= mpConv2dGradInput(&DY, &F, &DX, &k.win, MP_F64) == MP_OK &&
                 mpConv2dGradFilter(&DY, &X, &DF, &k.win, MP_F64) == MP_OK;
    double lhs = dot(ref, dy.v);
    adjointOk &= std::fabs(dot(x.v, dx) - lhs) <= 1e-10 * (1 + std::fabs(lhs));
    adjointOk &= std::fabs(dot(f.v, df) - lhs) <= 1e-10 * (1 + std::fabs(lhs));

    // f32 and bf16 storage with f32 accumulation, through oneDNN and
    // through the loops: within the accumulation bound of the f64 result on
    // the same (rounded) inputs. The gradients likewise, against the f64
    // gradients of the rounded inputs.
    for (mpElementType storage : {MP_F32, MP_BF16}) {
      auto round = [&](const std::vector<double> &v) {
        std::vector<double> r(v);
        for (double &e : r)
          e = storage == MP_F32 ? double(float(e))
                                : double(mpBF16ToF32(mpF32ToBF16(float(e))));
        return r;
      };
      auto encode = [&](const std::vector<double> &v) {
        std::vector<uint32_t> out(v.size());
        for (size_t i = 0; i < v.size(); ++i) {
          float e = float(v[i]);
          if (storage == MP_F32)
            std::memcpy(&out[i], &e, 4);
          else
            out[i] = mpF32ToBF16(e);
        }
        return out;
      };
      // bf16 buffers are packed 16-bit: copy into uint16 storage.
      auto pack = [&](const std::vector<uint32_t> &w) {
        std::vector<uint16_t> h(w.size());
        for (size_t i = 0; i < w.size(); ++i)
          h[i] = uint16_t(w[i]);
        return h;
      };
      std::vector<double> xr = round(x.v), fr = round(f.v), dyr = round(dy.v);
      std::vector<double> sum;
      std::vector<double> want = referenceConv(k, xr, fr, &sum);
      std::vector<double> dxWant(x.v.size()), dfWant(f.v.size());
      {
        mpTensor Xr = tensorOfShape(xr.data(), MP_F64, x.shape),
                 Fr = tensorOfShape(fr.data(), MP_F64, f.shape),
                 DYr = tensorOfShape(dyr.data(), MP_F64, dy.shape),
                 DXw = tensorOfShape(dxWant.data(), MP_F64, x.shape),
                 DFw = tensorOfShape(dfWant.data(), MP_F64, f.shape);
        mpConv2dGradInput(&DYr, &Fr, &DXw, &k.win, MP_F64);
        mpConv2dGradFilter(&DYr, &Xr, &DFw, &k.win, MP_F64);
      }
      std::vector<uint32_t> xw = encode(x.v), fw = encode(f.v),
                            dyw = encode(dy.v);
      std::vector<uint16_t> xh = pack(xw), fh = pack(fw), dyh = pack(dyw);
      void *xp = storage == MP_F32 ? (void *)xw.data() : (void *)xh.data();
      void *fp = storage == MP_F32 ? (void *)fw.data() : (void *)fh.data();
      void *dyp = storage == MP_F32 ? (void *)dyw.data() : (void *)dyh.data();
      // 2: the library with every NHWC convolution as im2col GEMMs
      // (ConvGemm.cpp); 1: the library without them (oneDNN's
      // convolutions); 0: the reference loops.
      for (int mode = 2; mode >= 0; --mode) {
        bool library = mode > 0;
        setenv("MP_CONV_GEMM", mode == 2 ? "always" : "never", 1);
        mpUseLibraryKernels(library);
        std::vector<float> out(want.size()), gx(x.v.size()), gf(f.v.size());
        mpTensor Xs = tensorOfShape(xp, storage, x.shape),
                 Fs = tensorOfShape(fp, storage, f.shape),
                 DYs = tensorOfShape(dyp, storage, dy.shape),
                 O = tensorOfShape(out.data(), MP_F32, k.act(k.o, k.oh, k.ow)),
                 GX = tensorOfShape(gx.data(), MP_F32, x.shape),
                 GF = tensorOfShape(gf.data(), MP_F32, f.shape);
        bool ok = mpConv2d(&Xs, &Fs, &O, &k.win, MP_F32) == MP_OK &&
                  mpConv2dGradInput(&DYs, &Fs, &GX, &k.win, MP_F32) ==
                      MP_OK &&
                  mpConv2dGradFilter(&DYs, &Xs, &GF, &k.win, MP_F32) == MP_OK;
        int64_t terms = (k.c / k.groups) * k.kh * k.kw;
        for (size_t i = 0; ok && i < want.size(); ++i)
          ok &= std::fabs(out[i] - want[i]) <=
                (2 * terms + 2) * u32 * sum[i] + 1e-30;
        // Gradient sums have more terms; bound them by the sum of |terms|
        // through the f64 gradient of |inputs|.
        double gxScale = 0, gfScale = 0;
        for (double v : dxWant)
          gxScale = std::max(gxScale, std::fabs(v));
        for (double v : dfWant)
          gfScale = std::max(gfScale, std::fabs(v));
        int64_t gfTerms = k.n * k.oh * k.ow;
        for (size_t i = 0; ok && i < dxWant.size(); ++i)
          ok &= std::fabs(gx[i] - dxWant[i]) <=
                (2 * terms * k.o + 2) * u32 * (gxScale + 1) * 4;
        for (size_t i = 0; ok && i < dfWant.size(); ++i)
          ok &= std::fabs(gf[i] - dfWant[i]) <=
                (2 * gfTerms + 2) * u32 * (gfScale + 1) * 4;
        (storage == MP_BF16 ? bf16Ok : library ? libraryOk : loopsOk) &= ok;
        ++runs;
      }
      unsetenv("MP_CONV_GEMM");
      mpUseLibraryKernels(1);
    }
  }
  check(f64Ok, "conv2d in f64 equals the direct f64 sum (40 random "
               "geometries: strides, dilations, asymmetric padding, groups, "
               "depthwise, NCHW and NHWC)");
  check(adjointOk, "conv2d_grad_input and conv2d_grad_filter are the "
                   "adjoints of conv2d in f64");
  check(libraryOk, "conv2d and its gradients in f32 through the library "
                   "paths (oneDNN's convolutions, and NHWC as im2col "
                   "GEMMs) are within the f32 accumulation bound of "
                   "f64");
  check(loopsOk, "conv2d and its gradients in f32 through the reference "
                 "loops are within the f32 accumulation bound of f64");
  check(bf16Ok, "conv2d and its gradients on bf16 storage (library and "
                "loops) are within the f32 accumulation bound of f64 on the "
                "same bf16 values");
  (void)runs;
}

/// The weight gradient of strided 1x1 NHWC convolutions with fewer input
/// channels than oneDNN's channel block, at the sizes where oneDNN 2.6's
/// jit_1x1 kernels wrote past their workspace (uxlfoundation/oneDNN#6035;
/// Dnnl.cpp's knownBroken), on f32 and bf16 storage: the heap stays whole
/// and the gradient matches the f64 loops on the same rounded inputs within
/// the f32 accumulation bound.
void testStridedPointwiseGradFilter(std::mt19937_64 &rng) {
  const double u32 = std::ldexp(1.0, -24);
  bool ok = true;
  for (mpElementType storage : {MP_F32, MP_BF16})
    for (int64_t c : {3, 4, 12, 15, 16}) {
      ConvCase k;
      k.n = 8;
      k.c = c;
      k.o = 16;
      k.h = k.w = 64;
      k.kh = k.kw = 1;
      k.groups = k.win.groups = 1;
      k.win.strides[0] = k.win.strides[1] = 2;
      k.win.dilations[0] = k.win.dilations[1] = 1;
      k.win.channelsLast = 1;
      k.oh = k.ow = 32;
      F64 x(k.act(k.c, k.h, k.w), rng), dy(k.act(k.o, k.oh, k.ow), rng);
      // The inputs in the storage type, and as the f64 values they hold.
      std::vector<uint8_t> xs(x.v.size() * elementSize(storage)),
          dys(dy.v.size() * elementSize(storage));
      mpConvert(x.v.data(), MP_F64, xs.data(), storage, int64_t(x.v.size()));
      mpConvert(dy.v.data(), MP_F64, dys.data(), storage,
                int64_t(dy.v.size()));
      mpConvert(xs.data(), storage, x.v.data(), MP_F64, int64_t(x.v.size()));
      mpConvert(dys.data(), storage, dy.v.data(), MP_F64,
                int64_t(dy.v.size()));
      std::vector<double> want(k.o * k.c), absSum(want.size());
      mpTensor X = x.t(), DY = dy.t(),
               W = tensorOfShape(want.data(), MP_F64, {k.o, k.c, 1, 1});
      ok &= mpConv2dGradFilter(&DY, &X, &W, &k.win, MP_F64) == MP_OK;
      // The sums of |terms|, the gradient of |x| and |dy|, bound the
      // rounding.
      F64 ax = x, ady = dy;
      for (double &e : ax.v)
        e = std::fabs(e);
      for (double &e : ady.v)
        e = std::fabs(e);
      mpTensor AX = ax.t(), ADY = ady.t(),
               A = tensorOfShape(absSum.data(), MP_F64, {k.o, k.c, 1, 1});
      ok &= mpConv2dGradFilter(&ADY, &AX, &A, &k.win, MP_F64) == MP_OK;
      int64_t terms = k.n * k.oh * k.ow;
      for (int repeat = 0; repeat < 4; ++repeat) {
        std::vector<float> got(want.size());
        mpTensor Xs = tensorOfShape(xs.data(), storage, x.shape),
                 DYs = tensorOfShape(dys.data(), storage, dy.shape),
                 G = tensorOfShape(got.data(), MP_F32, {k.o, k.c, 1, 1});
        ok &= mpConv2dGradFilter(&DYs, &Xs, &G, &k.win, MP_F32) == MP_OK;
        for (size_t i = 0; i < want.size(); ++i)
          ok &= std::fabs(got[i] - want[i]) <=
                (2 * terms + 2) * u32 * absSum[i];
      }
    }
  check(ok, "the weight gradient of strided 1x1 NHWC convolutions with 3 to "
            "16 input channels on f32 and bf16 (oneDNN 2.6's jit_1x1 "
            "overrun) matches the f64 loops");
}

void testPoolingAndBatchNorm(std::mt19937_64 &rng) {
  const double fdTol = 1e-6;
  // Pools: f64 against direct formulas; gradients by central differences
  // (well-separated values keep each window's maximum stable).
  bool poolOk = true, poolGradOk = true, fastPoolOk = true;
  for (int trial = 0; trial < 20; ++trial) {
    auto pick = [&](int64_t lo, int64_t hi) {
      return lo + int64_t(rng() % uint64_t(hi - lo + 1));
    };
    mpWindow w{};
    w.window[0] = pick(1, 3);
    w.window[1] = pick(1, 3);
    w.strides[0] = pick(1, 3);
    w.strides[1] = pick(1, 3);
    w.dilations[0] = w.dilations[1] = 1;
    w.padding[0] = pick(0, w.window[0] - 1);
    w.padding[2] = pick(0, w.window[0] - 1);
    w.padding[1] = pick(0, w.window[1] - 1);
    w.padding[3] = pick(0, w.window[1] - 1);
    w.channelsLast = int32_t(rng() % 2);
    // Every fourth trial has enough channels for NHWC's vector loops.
    int64_t n = pick(1, 2), c = trial % 4 ? pick(1, 3) : pick(17, 40),
            h = pick(3, 8), wd = pick(3, 8);
    int64_t oh = (h + w.padding[0] + w.padding[2] - w.window[0]) /
                     w.strides[0] + 1,
            ow = (wd + w.padding[1] + w.padding[3] - w.window[1]) /
                     w.strides[1] + 1;
    auto shape = [&](int64_t hh, int64_t ww) {
      return w.channelsLast ? std::vector<int64_t>{n, hh, ww, c}
                            : std::vector<int64_t>{n, c, hh, ww};
    };
    auto at = [&](int64_t hh, int64_t ww, int64_t b, int64_t ch, int64_t y,
                  int64_t x) {
      return size_t(w.channelsLast ? ((b * hh + y) * ww + x) * c + ch
                                   : ((b * c + ch) * hh + y) * ww + x);
    };
    F64 x(shape(h, wd), rng), dy(shape(oh, ow), rng);
    // Distinct values at least 4 / size apart (>= 0.01, far more than the
    // differences' step), so that no window's maximum changes under them.
    for (size_t i = 0; i < x.v.size(); ++i)
      x.v[i] = -2 + 4.0 * double(i) / double(x.v.size());
    std::shuffle(x.v.begin(), x.v.end(), rng);
    for (mpPoolKind kind : {MP_POOL_MAX, MP_POOL_AVG, MP_POOL_AVG_INCLUDE_PAD}) {
      auto run = [&](std::vector<double> &out) {
        mpTensor X = x.t(), Y = tensorOfShape(out.data(), MP_F64,
                                              shape(oh, ow));
        return mpPool2d(kind, &X, &Y, &w, MP_F64) == MP_OK;
      };
      std::vector<double> y(dy.v.size());
      poolOk &= run(y);
      for (int64_t b = 0; b < n; ++b)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
              int64_t y0 = oy * w.strides[0] - w.padding[0],
                      x0 = ox * w.strides[1] - w.padding[1];
              double acc = kind == MP_POOL_MAX ? -INFINITY : 0;
              int64_t count = 0;
              for (int64_t yy = y0; yy < y0 + w.window[0]; ++yy)
                for (int64_t xx = x0; xx < x0 + w.window[1]; ++xx) {
                  bool inside = yy >= 0 && yy < h && xx >= 0 && xx < wd;
                  if (kind == MP_POOL_AVG_INCLUDE_PAD)
                    count += yy < h + w.padding[2] && xx < wd + w.padding[3];
                  if (!inside)
                    continue;
                  double v = x.v[at(h, wd, b, ch, yy, xx)];
                  if (kind == MP_POOL_MAX)
                    acc = std::max(acc, v);
                  else
                    acc += v;
                  if (kind == MP_POOL_AVG)
                    ++count;
                }
              if (kind != MP_POOL_MAX)
                acc /= double(count);
              poolOk &= std::fabs(y[at(oh, ow, b, ch, oy, ox)] - acc) <=
                        1e-13 * (1 + std::fabs(acc));
            }
      std::vector<double> dx(x.v.size());
      mpTensor DY = dy.t(), X = x.t(),
               DX = tensorOfShape(dx.data(), MP_F64, x.shape);
      poolGradOk &= mpPool2dGrad(kind, &DY, kind == MP_POOL_MAX ? &X : nullptr,
                                 &DX, &w, MP_F64) == MP_OK;
      poolGradOk &= finiteDifferenceError(x.v, dx, [&] {
                      std::vector<double> out(dy.v.size());
                      run(out);
                      return dot(out, dy.v);
                    }) < fdTol;
      // f32, f16 and bf16 storage, computing in f32 or the storage type:
      // the fast path (library kernels on) writes the reference loops'
      // bits, forward and gradient; on the distinct values, and on values
      // rounded to halves with NaNs at the first element and a third of
      // the way in, so that windows tie and a NaN comes first in some
      // (the max gradient keeps the first maximum, a leading NaN included).
      std::vector<double> tied(x.v.size());
      for (size_t i = 0; i < tied.size(); ++i)
        tied[i] = std::round(2 * x.v[i]) / 2;
      tied[0] = tied[tied.size() / 3] = NAN;
      // The output (and dy) may be stored in another type than the input
      // (and dx): the last three.
      struct PoolTypes {
        mpElementType storage, compute, outStorage;
      };
      const PoolTypes types[] = {
          {MP_F32, MP_F32, MP_F32},    {MP_F16, MP_F32, MP_F16},
          {MP_F16, MP_F16, MP_F16},    {MP_BF16, MP_F32, MP_BF16},
          {MP_BF16, MP_BF16, MP_BF16}, {MP_F32, MP_F32, MP_BF16},
          {MP_BF16, MP_F32, MP_F32},   {MP_F16, MP_F32, MP_BF16}};
      for (int ties = 0; ties < 2; ++ties)
      for (auto [storage, compute, outStorage] : types) {
        auto encode = [&](const std::vector<double> &v, mpElementType t) {
          std::vector<uint32_t> bytes(v.size());
          mpConvert(v.data(), MP_F64, bytes.data(), t, int64_t(v.size()));
          return bytes;
        };
        std::vector<uint32_t> xs = encode(ties ? tied : x.v, storage),
                              dys = encode(dy.v, outStorage);
        std::vector<uint32_t> out[2], grad[2];
        for (int library = 0; library < 2; ++library) {
          mpUseLibraryKernels(library);
          out[library].assign(dy.v.size(), 0xdeadbeef);
          grad[library].assign(x.v.size(), 0xdeadbeef);
          mpTensor X = tensorOfShape(xs.data(), storage, x.shape),
                   DY = tensorOfShape(dys.data(), outStorage, dy.shape),
                   Y = tensorOfShape(out[library].data(), outStorage,
                                     dy.shape),
                   DX = tensorOfShape(grad[library].data(), storage, x.shape);
          fastPoolOk &= mpPool2d(kind, &X, &Y, &w, compute) == MP_OK &&
                        mpPool2dGrad(kind, &DY, &X, &DX, &w, compute) == MP_OK;
        }
        mpUseLibraryKernels(1);
        fastPoolOk &= out[0] == out[1] && grad[0] == grad[1];
      }
    }
  }
  check(fastPoolOk, "pooling and its gradient on f32, f16 and bf16 storage, "
                    "computing in f32 or the storage type, the output in "
                    "the input's type or another: the threaded fast path "
                    "has the reference loops' bits");
  check(poolOk, "max, average and count-include-pad average pooling in f64 "
                "match the direct formulas (20 random windows, strides, "
                "paddings, both layouts)");
  check(poolGradOk, "pooling gradients match central differences");

  // Batch norm: forward against f64 formulas (batch statistics, unbiased
  // running variance), gradients of x, scale and bias by differences.
  bool bnOk = true, bnGradOk = true, bnInferenceOk = true;
  for (int32_t last = 0; last < 2; ++last) {
    int64_t n = 3, c = 4, h = 5, wd = 3;
    std::vector<int64_t> shape = last ? std::vector<int64_t>{n, h, wd, c}
                                      : std::vector<int64_t>{n, c, h, wd};
    F64 x(shape, rng), r(shape, rng), g({c}, rng), b({c}, rng),
        rm({c}, rng), rv({c}, rng, 0.5, 2);
    auto index = [&](int64_t bb, int64_t ch, int64_t y, int64_t xx) {
      return size_t(last ? ((bb * h + y) * wd + xx) * c + ch
                         : ((bb * c + ch) * h + y) * wd + xx);
    };
    std::vector<double> y(x.v.size()), mean(c), rstd(c), nrm(c), nrv(c);
    auto run = [&](std::vector<double> &out) {
      mpTensor X = x.t(), G = g.t(), B = b.t(), RM = rm.t(), RV = rv.t(),
               Y = tensorOfShape(out.data(), MP_F64, shape),
               M = tensorOfShape(mean.data(), MP_F64, {c}),
               S = tensorOfShape(rstd.data(), MP_F64, {c}),
               NM = tensorOfShape(nrm.data(), MP_F64, {c}),
               NV = tensorOfShape(nrv.data(), MP_F64, {c});
      return mpBatchNorm(&X, &G, &B, &RM, &RV, &Y, &M, &S, &NM, &NV, 1e-5f,
                         0.1f, last, MP_F64) == MP_OK;
    };
    bnOk &= run(y);
    int64_t count = n * h * wd;
    for (int64_t ch = 0; ch < c; ++ch) {
      double mu = 0, sq = 0;
      for (int64_t bb = 0; bb < n; ++bb)
        for (int64_t yy = 0; yy < h; ++yy)
          for (int64_t xx = 0; xx < wd; ++xx)
            mu += x.v[index(bb, ch, yy, xx)];
      mu /= double(count);
      for (int64_t bb = 0; bb < n; ++bb)
        for (int64_t yy = 0; yy < h; ++yy)
          for (int64_t xx = 0; xx < wd; ++xx)
            sq += std::pow(x.v[index(bb, ch, yy, xx)] - mu, 2);
      double rs = 1 / std::sqrt(sq / double(count) + double(1e-5f));
      bnOk &= std::fabs(mean[ch] - mu) < 1e-12 && std::fabs(rstd[ch] - rs) <
              1e-10 * rs;
      bnOk &= std::fabs(nrm[ch] - (0.9 * rm.v[ch] + 0.1 * mu)) < 1e-7 &&
              std::fabs(nrv[ch] - (0.9 * rv.v[ch] +
                                   0.1 * sq / double(count - 1))) < 1e-7;
      for (int64_t bb = 0; bb < n; ++bb)
        for (int64_t yy = 0; yy < h; ++yy)
          for (int64_t xx = 0; xx < wd; ++xx) {
            size_t i = index(bb, ch, yy, xx);
            double want = (x.v[i] - mu) * rs * g.v[ch] + b.v[ch];
            bnOk &= std::fabs(y[i] - want) < 1e-10 * (1 + std::fabs(want));
          }
    }
    std::vector<double> dx(x.v.size()), dg(c), db(c);
    mpTensor R = r.t(), X = x.t(), G = g.t(),
             M = tensorOfShape(mean.data(), MP_F64, {c}),
             S = tensorOfShape(rstd.data(), MP_F64, {c}),
             DX = tensorOfShape(dx.data(), MP_F64, shape),
             DG = tensorOfShape(dg.data(), MP_F64, {c}),
             DB = tensorOfShape(db.data(), MP_F64, {c});
    bnGradOk &= mpBatchNormGrad(&R, &X, &G, &M, &S, &DX, &DG, &DB, last,
                                MP_F64) == MP_OK;
    auto loss = [&] {
      std::vector<double> out(x.v.size());
      run(out);
      return dot(out, r.v);
    };
    bnGradOk &= finiteDifferenceError(x.v, dx, loss) < fdTol &&
                finiteDifferenceError(g.v, dg, loss) < fdTol &&
                finiteDifferenceError(b.v, db, loss) < fdTol;
    // Inference with the running statistics.
    std::vector<double> yi(x.v.size());
    mpTensor B = b.t(), RM = rm.t(), RV = rv.t(),
             YI = tensorOfShape(yi.data(), MP_F64, shape);
    bnInferenceOk &= mpBatchNormInference(&X, &G, &B, &RM, &RV, &YI, 1e-5f,
                                          last, MP_F64) == MP_OK;
    for (int64_t bb = 0; bb < n; ++bb)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t yy = 0; yy < h; ++yy)
          for (int64_t xx = 0; xx < wd; ++xx) {
            size_t i = index(bb, ch, yy, xx);
            double want = (x.v[i] - rm.v[ch]) /
                              std::sqrt(rv.v[ch] + double(1e-5f)) * g.v[ch] +
                          b.v[ch];
            bnInferenceOk &= std::fabs(yi[i] - want) <
                             1e-10 * (1 + std::fabs(want));
          }
  }
  check(bnOk, "batch_norm (training) in f64: batch mean and rstd, output, "
              "running statistics with momentum and the unbiased variance, "
              "NCHW and NHWC");
  check(bnGradOk, "batch_norm_grad matches central differences for x, scale "
                  "and bias");
  check(bnInferenceOk, "batch_norm_inference in f64 matches the formula");

  // Malformed geometry is refused, not run.
  {
    std::vector<float> a(2 * 3 * 4 * 4), f(4 * 3 * 3 * 3), y(2 * 4 * 2 * 2);
    mpTensor A = tensorOfShape(a.data(), MP_F32, {2, 3, 4, 4}),
             F = tensorOfShape(f.data(), MP_F32, {4, 3, 3, 3}),
             Y = tensorOfShape(y.data(), MP_F32, {2, 4, 2, 2});
    mpWindow w{};
    w.strides[0] = w.strides[1] = 1;
    w.dilations[0] = w.dilations[1] = 1;
    w.groups = 1;
    bool ok = mpConv2d(&A, &F, &Y, &w, MP_F32) == MP_OK; // 4 - 3 + 1 = 2
    w.groups = 2; // 3 channels in 2 groups
    ok &= mpConv2d(&A, &F, &Y, &w, MP_F32) == MP_ERROR_INVALID_ARGUMENT;
    w.groups = 1;
    w.strides[0] = 0;
    ok &= mpConv2d(&A, &F, &Y, &w, MP_F32) == MP_ERROR_INVALID_ARGUMENT;
    w.strides[0] = 2; // the output would be 1 high
    ok &= mpConv2d(&A, &F, &Y, &w, MP_F32) == MP_ERROR_INVALID_ARGUMENT;
    check(ok, "conv2d refuses channels that do not divide into groups, zero "
              "strides and outputs of the wrong size");
  }
}

void testCumSum(std::mt19937_64 &rng) {
  // Every axis and flag combination against a float64 reference, stored and
  // computed in f64 and in f32 (f32: a running sum of n terms is within
  // n * u of the sum of their magnitudes).
  for (mpElementType t : {MP_F64, MP_F32}) {
    bool ok = true;
    double worst = 0;
    for (int64_t axis : {0, 1, 2})
      for (int flags = 0; flags < 4; ++flags) {
        int exclusive = flags & 1, reverse = flags >> 1;
        F64 x({4, 5, 6}, rng);
        std::vector<double> y(x.v.size());
        std::vector<float> xf(x.v.begin(), x.v.end()), yf(x.v.size());
        mpTensor X = t == MP_F64 ? x.t()
                                 : tensorOfShape(xf.data(), MP_F32, x.shape),
                 Y = t == MP_F64 ? tensorOfShape(y.data(), MP_F64, x.shape)
                                 : tensorOfShape(yf.data(), MP_F32, x.shape);
        ok &= mpCumSum(&X, &Y, axis, exclusive, reverse, t) == MP_OK;
        int64_t len = x.shape[axis], inner = 1;
        for (int64_t d = axis + 1; d < 3; ++d)
          inner *= x.shape[d];
        double u = t == MP_F64 ? 0x1p-53 : 0x1p-24;
        for (size_t k = 0; k < x.v.size(); ++k) {
          int64_t pos = (int64_t(k) / inner) % len;
          size_t first = k - pos * inner;
          double sum = 0, mag = 0;
          for (int64_t j = 0; j < len; ++j) {
            bool before = reverse ? j > pos : j < pos;
            if (before || (!exclusive && j == pos)) {
              double v = t == MP_F64 ? x.v[first + j * inner]
                                     : double(xf[first + j * inner]);
              sum += v;
              mag += std::fabs(v);
            }
          }
          double got = t == MP_F64 ? y[k] : double(yf[k]);
          double err = std::fabs(got - sum), bound = (len + 1) * u * mag;
          worst = std::max(worst, mag > 0 ? err / (u * mag) : err);
          ok &= err <= bound;
        }
      }
    check(ok, std::string("cumsum in ") + (t == MP_F64 ? "f64" : "f32") +
                  " matches float64 on every axis, inclusive and exclusive, "
                  "forward and reverse (worst error " + sci(worst) +
                  " x u x sum|x|)");
  }
  float one = 1, out = 0;
  mpTensor A = tensorOfShape(&one, MP_F32, {1}),
           B = tensorOfShape(&out, MP_F32, {1});
  check(mpCumSum(&A, &B, 1, 0, 0, MP_F32) == MP_ERROR_INVALID_ARGUMENT,
        "cumsum rejects an axis out of range");
}

void testSoftmaxFamily(std::mt19937_64 &rng) {
  testCumSum(rng);
  const double fdTol = 1e-6; // central differences: O(h^2) + O(eps / h)
  // Gradient checks in f64: softmax and log-softmax along two axes.
  for (int logSm = 0; logSm < 2; ++logSm)
    for (int64_t axis : {1, 2}) {
      F64 x({3, 5, 7}, rng), dy({3, 5, 7}, rng);
      std::vector<double> y(x.v.size()), dx(x.v.size());
      auto forward = [&](std::vector<double> &out) {
        mpTensor X = x.t(), Y = tensorOfShape(out.data(), MP_F64, x.shape);
        mpSoftmax(&X, &Y, axis, logSm, MP_F64);
      };
      forward(y);
      mpTensor DY = dy.t(), Y = tensorOfShape(y.data(), MP_F64, x.shape),
               DX = tensorOfShape(dx.data(), MP_F64, x.shape);
      mpSoftmaxGrad(&DY, &Y, &DX, axis, logSm, MP_F64);
      double err = finiteDifferenceError(x.v, dx, [&] {
        std::vector<double> out(x.v.size());
        forward(out);
        double l = 0;
        for (size_t i = 0; i < out.size(); ++i)
          l += dy.v[i] * out[i];
        return l;
      });
      check(err < fdTol, std::string(logSm ? "log_softmax_grad" : "softmax_grad") +
                             " (axis " + std::to_string(axis) +
                             ") matches finite differences in f64 (error " +
                             sci(err) + ")");
    }
  // Activation gradients against finite differences of the forward ops.
  struct Pair {
    const char *name;
    mpUnaryKind fwd;
    mpActivationGradKind grad;
    bool savesOutput;
  };
  for (Pair p : {Pair{"relu_grad", MP_RELU, MP_RELU_GRAD, false},
                 Pair{"gelu_grad", MP_GELU, MP_GELU_GRAD, false},
                 Pair{"gelu_grad (tanh)", MP_GELU_TANH, MP_GELU_TANH_GRAD, false},
                 Pair{"tanh_grad", MP_TANH, MP_TANH_GRAD, true},
                 Pair{"sigmoid_grad", MP_SIGMOID, MP_SIGMOID_GRAD, true}}) {
    F64 x({64}, rng), dy({64}, rng);
    for (double &v : x.v) // keep relu's kink out of the differences
      if (std::fabs(v) < 1e-3)
        v = 0.5;
    std::vector<double> y(64), dx(64);
    mpTensor X = x.t(), Y = tensorOfShape(y.data(), MP_F64, {64});
    mpUnary(p.fwd, &X, &Y, MP_F64);
    mpTensor DY = dy.t(), DX = tensorOfShape(dx.data(), MP_F64, {64});
    mpActivationGrad(p.grad, &DY, p.savesOutput ? &Y : &X, &DX, MP_F64);
    double err = finiteDifferenceError(x.v, dx, [&] {
      std::vector<double> out(64);
      mpTensor X2 = x.t(), O = tensorOfShape(out.data(), MP_F64, {64});
      mpUnary(p.fwd, &X2, &O, MP_F64);
      double l = 0;
      for (int i = 0; i < 64; ++i)
        l += dy.v[i] * out[i];
      return l;
    });
    check(err < fdTol, std::string(p.name) +
                           " matches finite differences in f64 (error " +
                           sci(err) + ")");
  }
  // Losses and their gradients.
  {
    F64 logits({4, 3, 6}, rng);
    std::vector<int32_t> labels = {0, 5, 2, 7, 1, 3, 4, 4, 0, 2, -1, 5};
    double dloss = 1.7, loss = 0;
    std::vector<double> dlogits(logits.v.size());
    mpTensor L = logits.t(),
             Y = tensorOfShape(labels.data(), MP_I32, {4, 3}),
             LS = tensorOfShape(&loss, MP_F64, {}),
             DL = tensorOfShape(&dloss, MP_F64, {}),
             DLG = tensorOfShape(dlogits.data(), MP_F64, {4, 3, 6});
    mpSoftmaxCrossEntropy(&L, &Y, &LS, MP_F64);
    // Reference: mean over the 10 labelled positions; labels 7 and -1 are
    // ignored.
    double ref = 0;
    int counted = 0;
    for (int r = 0; r < 12; ++r) {
      if (labels[r] < 0 || labels[r] >= 6)
        continue;
      ++counted;
      double mx = -INFINITY, sum = 0;
      for (int c = 0; c < 6; ++c)
        mx = std::max(mx, logits.v[r * 6 + c]);
      for (int c = 0; c < 6; ++c)
        sum += std::exp(logits.v[r * 6 + c] - mx);
      ref += std::log(sum) + mx - logits.v[r * 6 + labels[r]];
    }
    ref /= counted;
    check(counted == 10 && std::fabs(loss - ref) <= 1e-14 * std::fabs(ref),
          "softmax_cross_entropy matches its definition (the mean over the "
          "labelled positions; out-of-range labels are ignored)");
    mpSoftmaxCrossEntropyGrad(&DL, &L, &Y, &DLG, MP_F64);
    double err = finiteDifferenceError(logits.v, dlogits, [&] {
      double l = 0;
      mpTensor L2 = logits.t(), LS2 = tensorOfShape(&l, MP_F64, {});
      mpSoftmaxCrossEntropy(&L2, &Y, &LS2, MP_F64);
      return dloss * l;
    });
    check(err < fdTol, "softmax_cross_entropy_grad matches finite "
                       "differences in f64 (error " + sci(err) + ")");
    bool ignoredZero = true;
    for (int r : {3, 10})
      for (int c = 0; c < 6; ++c)
        ignoredZero &= dlogits[r * 6 + c] == 0;
    check(ignoredZero, "softmax_cross_entropy_grad is 0 on ignored positions");
    // Nothing labelled: a loss and a gradient of 0, not NaN.
    std::vector<int32_t> none(12, -100);
    mpTensor N = tensorOfShape(none.data(), MP_I32, {4, 3});
    mpSoftmaxCrossEntropy(&L, &N, &LS, MP_F64);
    mpSoftmaxCrossEntropyGrad(&DL, &L, &N, &DLG, MP_F64);
    bool allZero = loss == 0;
    for (double g : dlogits)
      allZero &= g == 0;
    check(allZero, "softmax_cross_entropy with every position ignored: loss "
                   "and gradient 0");
  }
  {
    F64 pred({5, 4}, rng), target({5, 4}, rng);
    double dloss = 0.6, loss;
    std::vector<double> dp(20);
    mpTensor P = pred.t(), T = target.t(),
             LS = tensorOfShape(&loss, MP_F64, {}),
             DL = tensorOfShape(&dloss, MP_F64, {}),
             DP = tensorOfShape(dp.data(), MP_F64, {5, 4});
    mpMseLoss(&P, &T, &LS, MP_F64);
    double ref = 0;
    for (int i = 0; i < 20; ++i)
      ref += (pred.v[i] - target.v[i]) * (pred.v[i] - target.v[i]);
    check(std::fabs(loss - ref / 20) <= 1e-14 * ref, "mse_loss matches its "
                                                      "definition");
    mpMseLossGrad(&DL, &P, &T, &DP, MP_F64);
    double err = finiteDifferenceError(pred.v, dp, [&] {
      double l;
      mpTensor P2 = pred.t(), LS2 = tensorOfShape(&l, MP_F64, {});
      mpMseLoss(&P2, &T, &LS2, MP_F64);
      return dloss * l;
    });
    check(err < fdTol, "mse_loss_grad matches finite differences in f64 "
                       "(error " + sci(err) + ")");
  }
  // Forward softmax and reductions in low-precision storage against f64,
  // with tolerances from the accumulation length and the types.
  struct Types {
    mpElementType storage, out, compute;
  };
  for (Types ty : {Types{MP_F32, MP_F32, MP_F32}, Types{MP_F16, MP_F16, MP_F32},
                   Types{MP_BF16, MP_BF16, MP_F32}, Types{MP_F16, MP_F32, MP_F16},
                   Types{MP_BF16, MP_F32, MP_BF16}}) {
    const int64_t rows = 6, len = 40;
    std::vector<double> ex;
    auto in = randomBuffer(ty.storage, rows * len, ex, rng);
    for (double &v : ex)
      v = roundTo(v, ty.compute);
    std::vector<uint8_t> out(rows * len * elementSize(ty.out)),
        red(rows * elementSize(ty.out));
    mpTensor I = tensorOfShape(in.data(), ty.storage, {rows, len}),
             O = tensorOfShape(out.data(), ty.out, {rows, len});
    double uc = unitRoundoff(ty.compute), uo = unitRoundoff(ty.out);
    bool smOk = mpSoftmax(&I, &O, 1, 0, ty.compute) == MP_OK;
    bool lsmOk = true, sumOk = true, maxOk = true;
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k)
        mx = std::max(mx, ex[r * len + k]);
      for (int64_t k = 0; k < len; ++k)
        sum += std::exp(ex[r * len + k] - mx);
      for (int64_t k = 0; k < len; ++k) {
        double ref = std::exp(ex[r * len + k] - mx) / sum;
        double got = readBack(out, ty.out, r * len + k);
        smOk &= std::fabs(got - ref) <=
                ((len + 4) * uc + uo) * ref + tiniest(ty.out) + tiniest(ty.compute);
      }
    }
    mpSoftmax(&I, &O, 1, 1, ty.compute);
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k)
        mx = std::max(mx, ex[r * len + k]);
      for (int64_t k = 0; k < len; ++k)
        sum += std::exp(ex[r * len + k] - mx);
      for (int64_t k = 0; k < len; ++k) {
        double ref = ex[r * len + k] - mx - std::log(sum);
        double got = readBack(out, ty.out, r * len + k);
        lsmOk &= std::fabs(got - ref) <=
                 (len + 4) * uc * (2 + std::fabs(ref) + std::log(double(len))) +
                     uo * std::fabs(ref);
      }
    }
    int64_t axis1 = 1;
    mpTensor R = tensorOfShape(red.data(), ty.out, {rows});
    mpReduce(MP_REDUCE_SUM, &I, &R, &axis1, 1, ty.compute);
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < len; ++k) {
        ref += ex[r * len + k];
        mag += std::fabs(ex[r * len + k]);
      }
      sumOk &= std::fabs(readBack(red, ty.out, r) - ref) <=
               std::expm1(len * std::log1p(uc)) * mag + uo * std::fabs(ref) +
                   tiniest(ty.out);
    }
    mpReduce(MP_REDUCE_MAX, &I, &R, &axis1, 1, ty.compute);
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -INFINITY;
      for (int64_t k = 0; k < len; ++k)
        mx = std::max(mx, ex[r * len + k]);
      maxOk &= readBack(red, ty.out, r) == roundTo(mx, ty.out);
    }
    std::string types = std::string(typeName(ty.storage)) + "->" +
                        typeName(ty.out) + " compute " + typeName(ty.compute);
    check(smOk && lsmOk, "softmax and log_softmax (" + types +
                             ") match float64 within (n + 4) u_compute + "
                             "u_out");
    check(sumOk && maxOk, "reduce_sum and reduce_max (" + types +
                              ") match float64 within the summation bound");
  }
  // reduce_mean over two axes with kept dimensions.
  {
    F64 x({4, 5, 6}, rng);
    std::vector<double> out(5);
    int64_t axes[] = {0, 2};
    mpTensor X = x.t(), O = tensorOfShape(out.data(), MP_F64, {1, 5, 1});
    bool ok = mpReduce(MP_REDUCE_MEAN, &X, &O, axes, 2, MP_F64) == MP_OK;
    for (int j = 0; j < 5; ++j) {
      double ref = 0;
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 6; ++k)
          ref += x.v[(i * 5 + j) * 6 + k];
      ok &= std::fabs(out[j] - ref / 24) <= 1e-14;
    }
    int64_t bad[] = {2, 0};
    check(ok && mpReduce(MP_REDUCE_SUM, &X, &O, bad, 2, MP_F64) ==
                    MP_ERROR_INVALID_ARGUMENT,
          "reduce_mean over axes [0, 2] with kept dims; unsorted axes are "
          "refused");
  }
}

void testNormAndMovement(std::mt19937_64 &rng) {
  const double fdTol = 1e-6;
  // Layer norm over the last two dimensions of [3, 4, 5].
  F64 x({3, 4, 5}, rng), g({4, 5}, rng), b({4, 5}, rng), dy({3, 4, 5}, rng);
  std::vector<double> y(60), mean(3), rstd(3), dx(60), dg(20), db(20);
  auto forward = [&](std::vector<double> &out, std::vector<double> &mu,
                     std::vector<double> &rs) {
    mpTensor X = x.t(), G = g.t(), B = b.t(),
             Y = tensorOfShape(out.data(), MP_F64, {3, 4, 5}),
             M = tensorOfShape(mu.data(), MP_F64, {3}),
             R = tensorOfShape(rs.data(), MP_F64, {3});
    return mpLayerNorm(&X, &G, &B, &Y, &M, &R, 1, 1e-5f, MP_F64);
  };
  bool fwdOk = forward(y, mean, rstd) == MP_OK;
  for (int r = 0; r < 3; ++r) {
    double mu = 0, var = 0;
    for (int c = 0; c < 20; ++c)
      mu += x.v[r * 20 + c] / 20;
    for (int c = 0; c < 20; ++c)
      var += (x.v[r * 20 + c] - mu) * (x.v[r * 20 + c] - mu) / 20;
    double rs = 1 / std::sqrt(var + double(1e-5f));
    fwdOk &= std::fabs(mean[r] - mu) < 1e-14 && std::fabs(rstd[r] - rs) < 1e-12;
    for (int c = 0; c < 20; ++c)
      fwdOk &= std::fabs(y[r * 20 + c] -
                         ((x.v[r * 20 + c] - mu) * rs * g.v[c] + b.v[c])) < 1e-12;
  }
  check(fwdOk, "layer_norm matches its definition in f64 (output, mean, rstd)");
  mpTensor DY = dy.t(), X = x.t(), G = g.t(),
           M = tensorOfShape(mean.data(), MP_F64, {3}),
           R = tensorOfShape(rstd.data(), MP_F64, {3}),
           DX = tensorOfShape(dx.data(), MP_F64, {3, 4, 5}),
           DG = tensorOfShape(dg.data(), MP_F64, {4, 5}),
           DB = tensorOfShape(db.data(), MP_F64, {4, 5});
  mpLayerNormGrad(&DY, &X, &G, &M, &R, &DX, &DG, &DB, 1, MP_F64);
  auto loss = [&] {
    std::vector<double> out(60), mu(3), rs(3);
    forward(out, mu, rs);
    double l = 0;
    for (int i = 0; i < 60; ++i)
      l += dy.v[i] * out[i];
    return l;
  };
  double ex = finiteDifferenceError(x.v, dx, loss);
  double eg = finiteDifferenceError(g.v, dg, loss);
  double eb = finiteDifferenceError(b.v, db, loss);
  check(ex < fdTol && eg < fdTol && eb < fdTol,
        "layer_norm_grad (input, scale, bias) matches finite differences in "
        "f64 (errors " + sci(ex) + ", " + sci(eg) + ", " + sci(eb) + ")");

  // Layer norm reading f16 and computing in f32, against float64.
  {
    std::vector<double> ex16;
    auto in = randomBuffer(MP_F16, 4 * 64, ex16, rng);
    std::vector<float> sc(64, 1.0f), bi(64, 0.0f), mu(4), rs(4);
    std::vector<uint8_t> out(4 * 64 * 2);
    mpTensor I = tensorOfShape(in.data(), MP_F16, {4, 64}),
             S = tensorOfShape(sc.data(), MP_F32, {64}),
             B2 = tensorOfShape(bi.data(), MP_F32, {64}),
             O = tensorOfShape(out.data(), MP_F16, {4, 64}),
             MU = tensorOfShape(mu.data(), MP_F32, {4}),
             RS = tensorOfShape(rs.data(), MP_F32, {4});
    bool ok = mpLayerNorm(&I, &S, &B2, &O, &MU, &RS, 1, 1e-5f, MP_F32) == MP_OK;
    for (int r = 0; r < 4; ++r) {
      double m = 0, v = 0;
      for (int c = 0; c < 64; ++c)
        m += ex16[r * 64 + c] / 64;
      for (int c = 0; c < 64; ++c)
        v += (ex16[r * 64 + c] - m) * (ex16[r * 64 + c] - m) / 64;
      double rsd = 1 / std::sqrt(v + double(1e-5f));
      for (int c = 0; c < 64; ++c) {
        double ref = (ex16[r * 64 + c] - m) * rsd;
        // f32 accumulation over 64 terms (relative to the spread of x,
        // about 1 / rstd), then one f16 rounding of the output.
        double tol = 3 * 64 * unitRoundoff(MP_F32) * (std::fabs(ref) + 4) +
                     unitRoundoff(MP_F16) * std::fabs(ref) + tiniest(MP_F16);
        ok &= std::fabs(readBack(out, MP_F16, r * 64 + c) - ref) <= tol;
      }
    }
    check(ok, "layer_norm f16 -> f16 computing in f32 matches float64 within "
              "f32 accumulation and one f16 rounding");
  }

  // gather: exact rows, negative ids counted from the end, ids outside
  // [-rows, rows) clamped; gather_grad is its adjoint:
  // <gather(T), G> == <T, gather_grad(G)> for every T and G.
  {
    F64 table({7, 3}, rng), gr({2, 4, 3}, rng);
    std::vector<int64_t> ids = {0, 6, 3, 3, -2, 9, 1, -9};
    std::vector<double> out(24), dt(21);
    mpTensor T = table.t(), I = tensorOfShape(ids.data(), MP_I64, {2, 4}),
             O = tensorOfShape(out.data(), MP_F64, {2, 4, 3}),
             GR = gr.t(), DT = tensorOfShape(dt.data(), MP_F64, {7, 3});
    bool ok = mpGather(&T, &I, &O) == MP_OK;
    for (int i = 0; i < 8; ++i) {
      int64_t id = ids[i] < -7 ? 0 : ids[i] < 0 ? ids[i] + 7
                                                : std::min<int64_t>(ids[i], 6);
      for (int k = 0; k < 3; ++k)
        ok &= out[i * 3 + k] == table.v[id * 3 + k];
    }
    check(ok, "gather copies row ids[i] exactly (negative ids from the end, "
              "out-of-range ids clamped)");
    // With only in-range ids, gather_grad is the adjoint of gather.
    std::vector<int64_t> inRange = {0, 6, 3, 3, 2, 5, 1, 3};
    mpTensor I2 = tensorOfShape(inRange.data(), MP_I64, {2, 4});
    mpGather(&T, &I2, &O);
    mpGatherGrad(&GR, &I2, &DT, MP_F64);
    double lhs = 0, rhs = 0;
    for (int i = 0; i < 24; ++i)
      lhs += out[i] * gr.v[i];
    for (int i = 0; i < 21; ++i)
      rhs += table.v[i] * dt[i];
    check(std::fabs(lhs - rhs) < 1e-12 * (std::fabs(lhs) + 1),
          "gather_grad is the adjoint of gather (repeated ids add up)");
    mpGatherGrad(&GR, &I, &DT, MP_F64);
    double row4 = 0;
    for (int k = 0; k < 3; ++k)
      row4 += std::fabs(dt[4 * 3 + k]);
    check(row4 == 0, "gather_grad drops out-of-range ids");
    bool row5 = true; // only ids[4] = -2 selects row 5
    for (int k = 0; k < 3; ++k)
      row5 &= dt[5 * 3 + k] == gr.v[4 * 3 + k];
    check(row5, "gather_grad counts negative ids from the end");
  }

  // transpose, broadcast_to, concat, slice against direct index formulas.
  {
    F64 a({2, 3, 4}, rng);
    std::vector<double> t(24);
    int64_t perm[] = {2, 0, 1};
    mpTensor A = a.t(), T = tensorOfShape(t.data(), MP_F64, {4, 2, 3});
    bool ok = mpTranspose(&A, &T, perm) == MP_OK;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k)
          ok &= t[(i * 2 + j) * 3 + k] == a.v[(j * 3 + k) * 4 + i];
    check(ok, "transpose [2,3,4] by [2,0,1]");

    std::vector<double> bc(2 * 3 * 4);
    F64 row({3, 1}, rng);
    mpTensor RW = row.t(), BC = tensorOfShape(bc.data(), MP_F64, {2, 3, 4});
    ok = mpBroadcastTo(&RW, &BC) == MP_OK;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k)
          ok &= bc[(i * 3 + j) * 4 + k] == row.v[j];
    check(ok, "broadcast_to [3,1] -> [2,3,4]");

    F64 p({2, 1, 4}, rng), q({2, 2, 4}, rng);
    std::vector<double> cc(2 * 3 * 4);
    mpTensor ins[2] = {p.t(), q.t()},
             CC = tensorOfShape(cc.data(), MP_F64, {2, 3, 4});
    ok = mpConcat(2, ins, &CC, 1) == MP_OK;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k)
          ok &= cc[(i * 3 + j) * 4 + k] ==
                (j == 0 ? p.v[i * 4 + k] : q.v[(i * 2 + j - 1) * 4 + k]);
    check(ok, "concat [2,1,4] and [2,2,4] along axis 1");

    std::vector<double> sl(1 * 2 * 2);
    int64_t off[] = {1, 0, 1}, st[] = {1, 2, 2};
    mpTensor SL = tensorOfShape(sl.data(), MP_F64, {1, 2, 2});
    ok = mpSlice(&A, &SL, off, st) == MP_OK;
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k)
        ok &= sl[j * 2 + k] == a.v[(1 * 3 + j * 2) * 4 + 1 + k * 2];
    int64_t past[] = {1, 2, 1};
    check(ok && mpSlice(&A, &SL, past, st) == MP_ERROR_INVALID_ARGUMENT,
          "slice with offsets and strides; out-of-bounds slices are refused");

    // slice_grad is slice's adjoint: <slice(a), g> == <a, slice_grad(g)>,
    // and it writes zeros outside the slice.
    F64 g({1, 2, 2}, rng);
    std::vector<double> sg(24, 7.0);
    mpTensor G = g.t(), SG = tensorOfShape(sg.data(), MP_F64, {2, 3, 4});
    ok = mpSliceGrad(&G, &SG, off, st) == MP_OK;
    double lhs = 0, rhs = 0;
    int selected = 0;
    for (int i = 0; i < 4; ++i)
      lhs += sl[i] * g.v[i];
    for (int i = 0; i < 24; ++i) {
      rhs += a.v[i] * sg[i];
      selected += sg[i] != 0;
    }
    check(ok && std::fabs(lhs - rhs) <= 1e-12 * (1 + std::fabs(lhs)) &&
              selected == 4 &&
              mpSliceGrad(&G, &SG, past, st) == MP_ERROR_INVALID_ARGUMENT,
          "slice_grad is the adjoint of slice, zero elsewhere; out-of-bounds "
          "slices are refused");

    uint16_t h[6] = {1, 2, 3, 4, 5, 6}, h2[6] = {};
    mpTensor H = tensorOfShape(h, MP_F16, {2, 3}),
             H2 = tensorOfShape(h2, MP_F16, {3, 2});
    check(mpCopy(&H, &H2) == MP_OK && std::memcmp(h, h2, 12) == 0,
          "reshape copies f16 bits unchanged");
  }
}

} // namespace

namespace {

/// tg.tensor_stats against a float64 reference over the stored values, for
/// every floating-point type, with zeros, infinities and NaNs mixed in, at
/// sizes that stay serial and that are split over threads; the fast and the
/// reference kernels agree bit for bit. Then tg.record_nonfinite.
void testNumericsChecks(std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> mant(-1, 1);
  std::uniform_int_distribution<int> exponent(-30, 14);
  std::uniform_int_distribution<int> pick(0, 199);
  bool statsOk = true, agreeOk = true;
  std::string firstBad;
  for (mpElementType t : {MP_F32, MP_F16, MP_BF16, MP_F64})
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(1025), int64_t(200000)})
      for (bool special : {false, true}) {
        std::vector<double> values(n);
        for (double &v : values) {
          int k = pick(rng);
          v = std::ldexp(mant(rng), exponent(rng));
          if (special && k == 0)
            v = INFINITY;
          else if (special && k == 1)
            v = -INFINITY;
          else if (special && k == 2)
            v = NAN;
          else if (special && k < 8)
            v = 0.0;
        }
        size_t width = t == MP_F64 ? 8 : t == MP_F32 ? 4 : 2;
        std::vector<unsigned char> storage(n * width);
        for (int64_t i = 0; i < n; ++i) {
          void *p = storage.data() + i * width;
          if (t == MP_F64) {
            std::memcpy(p, &values[i], 8);
          } else if (t == MP_F32) {
            float f = float(values[i]);
            std::memcpy(p, &f, 4);
          } else {
            uint16_t h = t == MP_F16 ? mpF32ToF16(float(values[i]))
                                     : mpF32ToBF16(float(values[i]));
            std::memcpy(p, &h, 2);
            values[i] = t == MP_F16 ? mpF16ToF32(h) : mpBF16ToF32(h);
          }
          if (t == MP_F32)
            values[i] = double(float(values[i]));
        }
        // The reference, in double over what is stored.
        double lo = INFINITY, hi = -INFINITY, amax = 0, small = INFINITY;
        int64_t nans = 0, infs = 0;
        for (double v : values) {
          if (std::isnan(v)) {
            ++nans;
            continue;
          }
          infs += std::isinf(v);
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          amax = std::max(amax, std::fabs(v));
          if (v != 0)
            small = std::min(small, std::fabs(v));
        }
        float expected[6] = {float(lo),    float(hi),   float(amax),
                             float(small), float(nans), float(infs)};
        float fast[6], ref[6];
        mpTensor in = tensorOf(storage.data(), t, {n});
        mpTensor out = tensorOf(fast, MP_F32, {1, 6});
        bool ok = mpTensorStats(&in, &out) == MP_OK &&
                  std::memcmp(fast, expected, sizeof(fast)) == 0;
        mpUseLibraryKernels(0);
        out.data = ref;
        ok &= mpTensorStats(&in, &out) == MP_OK;
        mpUseLibraryKernels(1);
        agreeOk &= std::memcmp(fast, ref, sizeof(fast)) == 0;
        if (!ok && statsOk)
          firstBad = std::string(" (first failure: ") + typeName(t) +
                     ", n=" + std::to_string(n) + ")";
        statsOk &= ok;
      }
  check(statsOk, "tensor_stats: min, max, amax, smallest non-zero magnitude, "
                 "NaN and infinity counts equal the float64 reference for "
                 "f32, f16, bf16 and f64, 1 to 200000 elements" +
                     firstBad);
  check(agreeOk, "tensor_stats: the fast and the reference kernels agree bit "
                 "for bit");

  // record_nonfinite: keeps an earlier id, records its own on a bad row,
  // passes -1 on clean rows.
  float clean[12] = {0, 1, 1, 1, 0, 0, -2, 2, 2, 0.5f, 0, 0};
  float bad[6] = {0, 1, 1, 1, 1, 0};
  auto record = [&](int64_t status, float *rows, int64_t k) {
    int64_t out = 99;
    mpTensor s = tensorOf(&status, MP_I64, {});
    mpTensor r[2] = {tensorOf(clean, MP_F32, {2, 6}),
                     tensorOf(rows, MP_F32, {k, 6})};
    mpTensor o = tensorOf(&out, MP_I64, {});
    return mpRecordNonfinite(&s, 2, r, &o, 5) == MP_OK ? out : -99;
  };
  check(record(-1, clean, 2) == -1 && record(-1, bad, 1) == 5 &&
            record(3, bad, 1) == 3 && record(3, clean, 2) == 3,
        "record_nonfinite: -1 while clean, the op's id at the first non-finite "
        "row, an earlier id kept");
  int64_t status = -1, out = 0;
  mpTensor s = tensorOf(&status, MP_I64, {});
  mpTensor o = tensorOf(&out, MP_I64, {});
  mpTensor wrong = tensorOf(bad, MP_F32, {1, 5});
  check(mpRecordNonfinite(&s, 1, &wrong, &o, 0) == MP_ERROR_INVALID_ARGUMENT &&
            mpRecordNonfinite(&s, 0, &wrong, &o, 0) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpTensorStats(&s, &o) == MP_ERROR_INVALID_ARGUMENT,
        "record_nonfinite and tensor_stats refuse malformed arguments");
}

void testDropout(std::mt19937_64 &rng) {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  struct Kat {
    mpPhilox4x32 counter;
    uint32_t key[2];
    uint32_t expected[4];
  } kats[] = {
      {{{0, 0, 0, 0}}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}};
  bool katOk = true;
  for (const Kat &k : kats) {
    mpPhilox4x32 r = mpPhilox4x32_10(k.counter, k.key[0], k.key[1]);
    katOk &= std::equal(r.v, r.v + 4, k.expected);
  }
  check(katOk, "Philox4x32-10 matches Random123's known answers");

  // The mask rule, written out: element i keeps when the 24-bit uniform of
  // its word is at least the rate.
  auto keeps = [](uint64_t seed, int64_t stream, int64_t i, float rate) {
    mpPhilox4x32 w = mpPhilox4x32_10(
        {{uint32_t(i / 4), uint32_t(uint64_t(i / 4) >> 32), uint32_t(stream),
          uint32_t(uint64_t(stream) >> 32)}},
        uint32_t(seed), uint32_t(seed >> 32));
    return double(w.v[i % 4] >> 8) / 16777216.0 >= double(rate);
  };
  struct Storage {
    mpElementType type;
    const char *name;
  } storages[] = {{MP_F32, "f32"}, {MP_F16, "f16"}, {MP_BF16, "bf16"}};
  std::uniform_real_distribution<float> value(-4, 4);
  for (float rate : {0.0f, 0.1f, 0.5f, 0.9f}) {
    for (const Storage &st : storages) {
      for (mpElementType compute : {MP_F32, MP_F64}) {
        int64_t n = 1 + int64_t(rng() % 5000);
        int64_t seed = int64_t(rng()), stream = int64_t(rng() % 1000);
        size_t bytes = mpElementSize(st.type);
        std::vector<float> xf(n);
        std::vector<char> x(n * bytes), y(n * bytes);
        mpTensor X = tensorOf(x.data(), st.type, {n}),
                 Y = tensorOf(y.data(), st.type, {n}),
                 S = tensorOf(&seed, MP_I64, {});
        for (int64_t i = 0; i < n; ++i) {
          // Exactly representable in the storage type.
          float v = value(rng);
          if (st.type == MP_F16)
            v = mpF16ToF32(mpF32ToF16(v));
          if (st.type == MP_BF16)
            v = mpBF16ToF32(mpF32ToBF16(v));
          xf[i] = v;
          if (st.type == MP_F32)
            std::memcpy(&x[i * 4], &v, 4);
          else {
            uint16_t h = st.type == MP_F16 ? mpF32ToF16(v) : mpF32ToBF16(v);
            std::memcpy(&x[i * 2], &h, 2);
          }
        }
        bool ok = mpDropout(&X, &S, &Y, rate, stream, compute) == MP_OK;
        auto loadY = [&](int64_t i) -> double {
          if (st.type == MP_F32) {
            float f;
            std::memcpy(&f, &y[i * 4], 4);
            return f;
          }
          uint16_t h;
          std::memcpy(&h, &y[i * 2], 2);
          return st.type == MP_F16 ? mpF16ToF32(h) : mpBF16ToF32(h);
        };
        auto round = [&](double v) -> double {
          float f = float(v);
          if (st.type == MP_F16)
            return mpF16ToF32(mpF32ToF16(f));
          if (st.type == MP_BF16)
            return mpBF16ToF32(mpF32ToBF16(f));
          return f;
        };
        // f64 compute rounds x / (1 - rate) once to the storage type: the
        // result is a nearest value (its bit-pattern neighbours are no
        // closer).
        auto nearest = [&](double got, double exact) {
          if (st.type == MP_F32 || got == 0)
            return got == round(exact);
          uint16_t h = st.type == MP_F16 ? mpF32ToF16(float(got))
                                         : mpF32ToBF16(float(got));
          for (uint16_t k : {uint16_t(h - 1), uint16_t(h + 1)}) {
            double other = st.type == MP_F16 ? mpF16ToF32(k) : mpBF16ToF32(k);
            if (std::fabs(other - exact) < std::fabs(got - exact))
              return false;
          }
          return true;
        };
        for (int64_t i = 0; ok && i < n; ++i) {
          if (!keeps(uint64_t(seed), stream, i, rate))
            ok = loadY(i) == 0;
          else if (compute == MP_F64)
            ok = nearest(loadY(i), double(xf[i]) / (1.0 - double(rate)));
          else
            ok = loadY(i) == round(xf[i] * (1.0f / (1.0f - rate)));
        }
        check(ok, "dropout rate " + sci(rate) + " " + st.name + " storage, " +
                      (compute == MP_F64 ? "f64" : "f32") + " compute, " +
                      std::to_string(n) + " elements");
      }
    }
  }

  // Kept fraction on a large tensor; the same mask in place, other masks
  // for other streams and seeds.
  const int64_t n = 200003;
  std::vector<float> ones(n, 1.0f), a(n), b(n), c(n), inPlace(n, 1.0f);
  int64_t seed = int64_t(rng());
  mpTensor One = tensorOf(ones.data(), MP_F32, {n}),
           A = tensorOf(a.data(), MP_F32, {n}),
           B = tensorOf(b.data(), MP_F32, {n}),
           C = tensorOf(c.data(), MP_F32, {n}),
           P = tensorOf(inPlace.data(), MP_F32, {n}),
           S = tensorOf(&seed, MP_I64, {});
  for (float rate : {0.1f, 0.5f, 0.9f}) {
    bool ok = mpDropout(&One, &S, &A, rate, 0, MP_F32) == MP_OK;
    int64_t kept = std::count_if(a.begin(), a.end(),
                                 [](float v) { return v != 0; });
    double sigma = std::sqrt(double(rate) * (1 - rate) / n);
    check(ok && std::fabs(double(kept) / n - (1 - rate)) <= 5 * sigma,
          "dropout rate " + sci(rate) + " keeps " + std::to_string(kept) +
              " of " + std::to_string(n));
  }
  bool ok = mpDropout(&One, &S, &A, 0.5f, 7, MP_F32) == MP_OK &&
            mpDropout(&P, &S, &P, 0.5f, 7, MP_F32) == MP_OK;
  check(ok && a == inPlace, "dropout in place draws the same mask");
  ok = mpDropout(&One, &S, &B, 0.5f, 8, MP_F32) == MP_OK;
  int64_t next = 0;
  mpTensor Next = tensorOf(&next, MP_I64, {});
  ok &= mpNextSeed(&S, &Next) == MP_OK && next == seed + 1;
  check(ok, "next_seed adds one");
  ok &= mpDropout(&One, &Next, &C, 0.5f, 7, MP_F32) == MP_OK;
  auto agree = [&](const std::vector<float> &u, const std::vector<float> &v) {
    int64_t same = 0;
    for (int64_t i = 0; i < n; ++i)
      same += (u[i] != 0) == (v[i] != 0);
    return double(same) / n;
  };
  // Independent masks at rate 0.5 agree on half the elements.
  double sigma = std::sqrt(0.25 / n);
  check(ok && std::fabs(agree(a, b) - 0.5) <= 5 * sigma &&
            std::fabs(agree(a, c) - 0.5) <= 5 * sigma,
        "other streams and seeds draw independent masks");
  int64_t wrap = INT64_MAX, wrapped = 0;
  mpTensor W = tensorOf(&wrap, MP_I64, {}), Wn = tensorOf(&wrapped, MP_I64, {});
  check(mpNextSeed(&W, &Wn) == MP_OK && wrapped == INT64_MIN,
        "next_seed wraps");

  // Invalid arguments are errors, not undefined behaviour.
  int32_t narrow = 0;
  mpTensor N32 = tensorOf(&narrow, MP_I32, {});
  check(mpDropout(&One, &S, &A, 1.0f, 0, MP_F32) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpDropout(&One, &S, &A, -0.5f, 0, MP_F32) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpDropout(&One, &S, &A, NAN, 0, MP_F32) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpDropout(&One, &S, &A, 0.5f, -1, MP_F32) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpDropout(&One, &N32, &A, 0.5f, 0, MP_F32) ==
                MP_ERROR_INVALID_ARGUMENT &&
            mpNextSeed(&N32, &Next) == MP_ERROR_INVALID_ARGUMENT,
        "dropout rejects a rate outside [0, 1), a negative stream and a "
        "non-i64 seed");

  // Uniform numbers: the same words as the masks, so a draw is below the
  // rate exactly where dropout with that rate drops.
  {
    int64_t n = 40000, seed = int64_t(rng()), stream = 7;
    std::vector<float> u(n), ones(n, 1.0f), dropped(n);
    std::vector<double> wide(n);
    mpTensor S = tensorOf(&seed, MP_I64, {}), U = tensorOf(u.data(), MP_F32, {n}),
             W = tensorOf(wide.data(), MP_F64, {n}),
             O = tensorOf(ones.data(), MP_F32, {n}),
             D = tensorOf(dropped.data(), MP_F32, {n});
    bool ok = mpRandomUniform(&S, &U, -1.0, 3.0, stream) == MP_OK &&
              mpRandomUniform(&S, &W, 0.0, 1.0, stream) == MP_OK &&
              mpDropout(&O, &S, &D, 0.3f, stream, MP_F32) == MP_OK;
    double sum = 0, sq = 0;
    bool inRange = true, matches = true;
    for (int64_t i = 0; i < n; ++i) {
      inRange &= u[i] >= -1.0f && u[i] < 3.0f && wide[i] >= 0 && wide[i] < 1;
      matches &= (wide[i] < double(mpDropoutThreshold(0.3f)) / 16777216.0) ==
                 (dropped[i] == 0.0f);
      sum += wide[i];
      sq += wide[i] * wide[i];
    }
    double mean = sum / n, var = sq / n - mean * mean;
    // Mean of n uniforms: standard deviation sqrt(1/12/n).
    double sigma = std::sqrt(1.0 / 12.0 / double(n));
    check(ok && inRange && std::fabs(mean - 0.5) <= 5 * sigma &&
              std::fabs(var - 1.0 / 12.0) <= 0.01,
          "random_uniform draws in [low, high) with the uniform's mean and "
          "variance (mean " + sci(mean) + ", variance " + sci(var) + ")");
    check(matches, "random_uniform's draw is below the rate exactly where "
                   "dropout with that rate drops (one generator)");
    check(mpRandomUniform(&S, &U, 1.0, 0.0, 0) == MP_ERROR_INVALID_ARGUMENT &&
              mpRandomUniform(&S, &U, 0.0, INFINITY, 0) ==
                  MP_ERROR_INVALID_ARGUMENT &&
              mpRandomUniform(&S, &U, 0.0, 1.0, -1) ==
                  MP_ERROR_INVALID_ARGUMENT,
          "random_uniform rejects low > high, infinite bounds and a negative "
          "stream");
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mp-runtime-tests "
                         "<convert|loss-scaling|optimizers|matmul|elementwise|"
                         "softmax|norm-movement|conv|dropout|numerics> "
                         "[seed]\n");
    return 2;
  }
  std::string suite = argv[1];
  uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10)
                           : std::random_device{}();
  std::printf("seed %" PRIu64 "\n", seed);
  std::mt19937_64 rng(seed);
  if (mpRuntimeAbiVersion() != MP_RUNTIME_ABI_VERSION) {
    std::printf("FAIL: runtime ABI version mismatch\n");
    return 1;
  }
  if (suite == "convert") {
    testFormat({"f16", 5, 10, mpF32ToF16, mpF16ToF32}, rng);
    testFormat({"bf16", 8, 7, mpF32ToBF16, mpBF16ToF32}, rng);
    testF64Rounding({"f16", 5, 10, mpF32ToF16, mpF16ToF32}, MP_F16, rng);
    testF64Rounding({"bf16", 8, 7, mpF32ToBF16, mpBF16ToF32}, MP_BF16, rng);
  } else if (suite == "loss-scaling") {
    testLossScaling(rng);
  } else if (suite == "optimizers") {
    testOptimizers(rng);
  } else if (suite == "matmul") {
    testMatmul(rng);
    testFusedMatmul(rng);
    testFusedMatmulBiasGrad(rng);
    testPackedGemm(rng);
  } else if (suite == "elementwise") {
    testElementwise(rng);
    testMasks(rng);
  } else if (suite == "softmax") {
    testSoftmaxFamily(rng);
  } else if (suite == "norm-movement") {
    testNormAndMovement(rng);
  } else if (suite == "conv") {
    testConvolution(rng);
    testStridedPointwiseGradFilter(rng);
    testPoolingAndBatchNorm(rng);
  } else if (suite == "dropout") {
    testDropout(rng);
  } else if (suite == "numerics") {
    testNumericsChecks(rng);
  } else {
    std::fprintf(stderr, "unknown suite '%s'\n", suite.c_str());
    return 2;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
