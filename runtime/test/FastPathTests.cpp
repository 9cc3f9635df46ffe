//===- FastPathTests.cpp - the CPU fast kernels against the reference -----===//
//
// usage: mp-fast-path-tests [seed]
//
// The CPU backend's fast paths (vectorised conversions, tiles, threads,
// oneDNN; runtime/lib/CPU/Vector.h) promise the reference loops' bits for
// every kernel whose sums keep their order. This runs each such kernel
// twice on the same fresh random inputs, once with mpUseLibraryKernels(1)
// and once with (0), and requires identical output bytes (a NaN may be
// any NaN: when both operands are NaNs, which one an instruction returns
// depends on an operand order vectorised code may swap):
//
// * conversions: f32 -> f16 and -> bf16 for every high half of an f32
//   combined with the low halves at every rounding boundary (the f16
//   midpoints at bits 12-15, the bf16 one at bit 15, one either side) and
//   random ones; every f16 and bf16 pattern -> f32; f16 <-> bf16.
// * every unary op, binary op, activation gradient and dropout, in every
//   storage and compute type among f32/f16/bf16, at sizes from 1 to past the
//   threading threshold; binary ops under each broadcast form the fast path
//   takes (whole, bias row, a bias row longer than a tile, per-row value,
//   scalar, both) and general ones, which it reads a run of the last
//   dimension at a time, also f32 throughout (operands read in place) and
//   with the result over an operand; unary ops, activation gradients and
//   dropout in place; and a dense sweep of [-110, 90] through every unary
//   op and gradient.
// * reductions (sum, mean, max) over leading, trailing, middle and all
//   axes, and over two runs of axes around kept ones (empty ones too).
// * batch norm (training, inference, gradient) in NCHW and NHWC.
// * softmax and log-softmax and their gradients, and layer norm and its
//   gradient, also in place; softmax cross-entropy and its gradient
//   (masked rows, large logits, i32 and out-of-range labels); transposes
//   (the last dimension moving or not), broadcasts, slices and slice
//   gradients of 2, 4 and 8-byte elements
//   (empty ones too), and copies (overlapping ones too).
// * sgd and adam updates (with a rounded copy: bf16 and f32 gradients) and
//   unscale_grads with f16 gradients.
// * the vectorisable f32 exp, erf, tanh and normal CDF (Math.h) the
//   elementwise kernels evaluate, against libm in double: every 4099th f32
//   and every f32 step of 2^-10 in [-20, 20], within their stated ulps.
//
// Inputs mix normal values with large ones (f16 overflow), tiny ones
// (subnormal results), infinities and NaNs. Matmuls change summation order
// on oneDNN; mp-runtime-tests matmul holds them to the float64 bound.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Lanes.h"
#include "Math.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  (ok ? passed : failed)++;
}

const char *typeName(mpElementType t) {
  return t == MP_F32 ? "f32" : t == MP_F16 ? "f16" : t == MP_BF16 ? "bf16"
                                                                  : "f64";
}

/// A tensor with its own bytes.
struct Buffer {
  mpElementType type;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;

  Buffer(mpElementType type, std::vector<int64_t> shape)
      : type(type), shape(std::move(shape)) {
    // Storage even for an empty tensor, as a compiled step's allocator
    // gives it: the kernels take null data for a bad argument.
    bytes.reserve(std::max<size_t>(1, size_t(count()) * mpElementSize(type)));
    bytes.resize(size_t(count()) * mpElementSize(type));
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  mpTensor tensor() {
    mpTensor t{};
    t.data = bytes.data();
    t.elementType = type;
    t.rank = int32_t(shape.size());
    for (size_t i = 0; i < shape.size(); ++i)
      t.shape[i] = shape[i];
    return t;
  }
  void set(int64_t i, float v) {
    if (type == MP_F32)
      std::memcpy(&bytes[i * 4], &v, 4);
    else if (type == MP_F64) {
      double d = v;
      std::memcpy(&bytes[i * 8], &d, 8);
    } else {
      uint16_t h = type == MP_F16 ? mpF32ToF16(v) : mpF32ToBF16(v);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
};

/// Values that reach every conversion path: mostly normal ones, with some
/// beyond f16's range, some that round to subnormals, infinities and NaNs.
float value(std::mt19937_64 &rng, bool specials) {
  std::normal_distribution<float> normal;
  if (!specials)
    return normal(rng);
  switch (rng() % 16) {
  case 0:
    return normal(rng) * 1e5f;
  case 1:
    return normal(rng) * 1e-6f;
  case 2:
    return rng() % 2 ? INFINITY : -INFINITY;
  case 3:
    return NAN;
  default:
    return normal(rng);
  }
}

void fill(Buffer &b, std::mt19937_64 &rng, bool specials = true) {
  for (int64_t i = 0; i < b.count(); ++i)
    b.set(i, value(rng, specials));
}

/// Whether element i of `bytes` (of `b`'s type) is a NaN.
bool isNaNAt(const Buffer &b, const std::vector<unsigned char> &bytes,
             int64_t i) {
  if (b.type == MP_F32) {
    float v;
    std::memcpy(&v, &bytes[i * 4], 4);
    return std::isnan(v);
  }
  if (b.type == MP_F64) {
    double v;
    std::memcpy(&v, &bytes[i * 8], 8);
    return std::isnan(v);
  }
  if (b.type != MP_F16 && b.type != MP_BF16)
    return false;
  uint16_t h;
  std::memcpy(&h, &bytes[i * 2], 2);
  return std::isnan(b.type == MP_F16 ? mpF16ToF32(h) : mpBF16ToF32(h));
}

/// The same bits in every element, where a NaN equals any NaN: which
/// operand's NaN an instruction returns when both are NaNs (its sign and
/// payload) depends on the operand order, which a vectorised loop may
/// swap; IEEE 754 leaves it unspecified.
bool sameValues(const Buffer &b, const std::vector<unsigned char> &x,
                const std::vector<unsigned char> &y) {
  if (x == y)
    return true;
  size_t size = mpElementSize(b.type);
  for (int64_t i = 0; i < b.count(); ++i)
    if (std::memcmp(&x[i * size], &y[i * size], size) &&
        !(isNaNAt(b, x, i) && isNaNAt(b, y, i)))
      return false;
  return true;
}

/// Runs `kernel` with the fast kernels on and off, each time on fresh
/// copies of `outputs` (which may also be read), and compares the bytes.
bool sameBits(std::vector<Buffer *> outputs,
              const std::function<mpStatus()> &kernel, std::string &why) {
  std::vector<std::vector<unsigned char>> initial, fast;
  for (Buffer *b : outputs)
    initial.push_back(b->bytes);
  mpUseLibraryKernels(1);
  mpStatus s1 = kernel();
  for (Buffer *b : outputs)
    fast.push_back(b->bytes);
  for (size_t i = 0; i < outputs.size(); ++i)
    outputs[i]->bytes = initial[i];
  mpUseLibraryKernels(0);
  mpStatus s2 = kernel();
  mpUseLibraryKernels(1);
  if (s1 != MP_OK || s2 != MP_OK) {
    why = "status " + std::to_string(s1) + "/" + std::to_string(s2);
    return false;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!sameValues(*outputs[i], fast[i], outputs[i]->bytes)) {
      why = "output " + std::to_string(i) + " differs";
      return false;
    }
  return true;
}

const mpElementType kTypes[] = {MP_F32, MP_F16, MP_BF16};
// Sizes from one element to past the threading threshold, odd ones among
// them so tiles end mid-vector.
const int64_t kSizes[] = {1, 15, 1000, 1025, 70001};

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

// The vectors below are arguments and results only of always-inlined
// functions, so GCC's note that their ABI differs between instruction sets
// does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/// Lanes.h's loads and stores of S (F16, Bf16) lanes, compiled as the
/// runtime's loops are: once per instruction set, N lanes of its register
/// width, the vector work in an always-inlined template that the target
/// function passes only pointers. Widens h[0, nh) into f, rounds x[0, nx)
/// into r, full vectors then the rest.
template <typename S, int N>
MP_INLINE void lanesRoundTrip(const uint16_t *h, int64_t nh, float *f,
                              const float *x, int64_t nx, uint16_t *r) {
  using mp::rt::loadVec;
  using mp::rt::storeVec;
  const S *hs = reinterpret_cast<const S *>(h);
  S *rs = reinterpret_cast<S *>(r);
  int64_t i = 0;
  for (; i + N <= nh; i += N)
    storeVec<N, N>(loadVec<N, N>(hs + i, N), f + i, N);
  if (i < nh)
    storeVec<N, 0>(loadVec<N, 0>(hs + i, nh - i), f + i, nh - i);
  for (i = 0; i + N <= nx; i += N)
    storeVec<N, N>(loadVec<N, N>(x + i, N), rs + i, N);
  if (i < nx)
    storeVec<N, 0>(loadVec<N, 0>(x + i, nx - i), rs + i, nx - i);
}
#define MP_LANES_CHECK(SUFFIX, TARGET, N)                                      \
  template <typename S>                                                        \
  TARGET void lanesRoundTrip##SUFFIX(const uint16_t *h, int64_t nh, float *f, \
                                     const float *x, int64_t nx,               \
                                     uint16_t *r) {                            \
    lanesRoundTrip<S, N>(h, nh, f, x, nx, r);                                  \
  }
#if MP_X86
MP_LANES_CHECK(Avx512, MP_TARGET_AVX512, 16)
MP_LANES_CHECK(Avx2, MP_TARGET_AVX2_F16C, 8)
#else
MP_LANES_CHECK(Avx512, , 4)
MP_LANES_CHECK(Avx2, , 4)
#endif
MP_LANES_CHECK(Base, , 4)
#undef MP_LANES_CHECK

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void testConversions(std::mt19937_64 &rng) {
  std::vector<uint32_t> low = {0,      1,      0xffff, 0x0fff, 0x1000,
                               0x1001, 0x1fff, 0x2000, 0x2001, 0x3fff,
                               0x4000, 0x4001, 0x7fff, 0x8000, 0x8001,
                               0xc000};
  while (low.size() < 32)
    low.push_back(uint32_t(rng() & 0xffff));
  std::vector<uint32_t> in;
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : low)
      in.push_back(hi << 16 | lo);
  for (mpElementType t : {MP_F16, MP_BF16}) {
    std::vector<uint16_t> out(in.size());
    bool ok = mpConvert(in.data(), MP_F32, out.data(), t, int64_t(in.size())) ==
              MP_OK;
    int64_t wrong = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      float f;
      std::memcpy(&f, &in[i], 4);
      wrong += out[i] != (t == MP_F16 ? mpF32ToF16(f) : mpF32ToBF16(f));
    }
    check(ok && wrong == 0,
          std::string("f32 -> ") + typeName(t) + ": " +
              std::to_string(in.size()) +
              " patterns (every high half, every rounding boundary) equal "
              "the scalar conversion (" +
              std::to_string(wrong) + " wrong)");
    std::vector<uint16_t> all(0x10000);
    for (uint32_t i = 0; i < 0x10000; ++i)
      all[i] = uint16_t(i);
    std::vector<float> wide(all.size());
    ok = mpConvert(all.data(), t, wide.data(), MP_F32, 0x10000) == MP_OK;
    wrong = 0;
    for (uint32_t i = 0; i < 0x10000; ++i) {
      float want = t == MP_F16 ? mpF16ToF32(all[i]) : mpBF16ToF32(all[i]);
      wrong += std::memcmp(&want, &wide[i], 4) != 0;
    }
    check(ok && wrong == 0, std::string(typeName(t)) +
                                " -> f32: all 65536 patterns equal the "
                                "scalar conversion (" +
                                std::to_string(wrong) + " wrong)");
  }
  // Lanes.h's conversions (batch norm, the f16 elementwise loops) in the
  // variant this CPU runs: every f16 and bf16 widened, and the f32
  // patterns above rounded (2^21 of them, a tail of 7 past the vectors),
  // against the scalar functions, signalling NaNs included.
  for (mpElementType t : {MP_F16, MP_BF16}) {
    if (t == MP_F16 && !mp::rt::f16LanesSupported())
      continue;
    using Fn = void (*)(const uint16_t *, int64_t, float *, const float *,
                        int64_t, uint16_t *);
    Fn roundTrip =
        t == MP_F16
            ? mp::rt::forIsa<Fn>(lanesRoundTripAvx512<mp::rt::F16>,
                                 lanesRoundTripAvx2<mp::rt::F16>,
                                 lanesRoundTripBase<mp::rt::F16>)
            : mp::rt::forIsa<Fn>(lanesRoundTripAvx512<mp::rt::Bf16>,
                                 lanesRoundTripAvx2<mp::rt::Bf16>,
                                 lanesRoundTripBase<mp::rt::Bf16>);
    std::vector<uint16_t> halves(0x10000 + 7), rounded(in.size() + 7);
    for (size_t i = 0; i < halves.size(); ++i)
      halves[i] = uint16_t(i);
    std::vector<float> floats(in.size() + 7), wide(halves.size());
    std::memcpy(floats.data(), in.data(), in.size() * 4);
    std::memcpy(floats.data() + in.size(), in.data(), 7 * 4);
    roundTrip(halves.data(), int64_t(halves.size()), wide.data(),
              floats.data(), int64_t(floats.size()), rounded.data());
    int64_t wrong = 0;
    for (size_t i = 0; i < halves.size(); ++i) {
      float want = t == MP_F16 ? mpF16ToF32(halves[i]) : mpBF16ToF32(halves[i]);
      wrong += std::memcmp(&want, &wide[i], 4) != 0;
    }
    for (size_t i = 0; i < floats.size(); ++i)
      wrong += rounded[i] != (t == MP_F16 ? mpF32ToF16(floats[i])
                                          : mpF32ToBF16(floats[i]));
    check(wrong == 0, std::string("Lanes.h: ") + typeName(t) +
                          " lanes widened (every pattern) and rounded (" +
                          std::to_string(floats.size()) +
                          " patterns) as the scalar conversions (" +
                          std::to_string(wrong) + " wrong)");
  }
  // f16 <-> bf16 through the tiles against the reference loop.
  bool ok = true;
  std::string why;
  for (int64_t n : kSizes)
    for (mpElementType from : kTypes)
      for (mpElementType to : kTypes) {
        Buffer a(from, {n}), b(to, {n});
        fill(a, rng);
        ok &= sameBits({&b}, [&] {
          return mpConvert(a.bytes.data(), from, b.bytes.data(), to, n);
        }, why);
      }
  check(ok, "mpConvert between f32, f16 and bf16 at every size " + why);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

void testElementwise(std::mt19937_64 &rng) {
  bool unaryOk = true, gradOk = true;
  std::string why, firstBad;
  for (int k = MP_NEG; k <= MP_COS; ++k)
    for (int64_t n : kSizes)
      for (mpElementType in : kTypes)
        for (mpElementType compute : kTypes) {
          mpElementType outType = kTypes[rng() % 3];
          Buffer a(in, {n}), out(outType, {n});
          fill(a, rng);
          mpTensor A = a.tensor();
          unaryOk &= sameBits({&out}, [&] {
            mpTensor O = out.tensor();
            return mpUnary(mpUnaryKind(k), &A, &O, compute);
          }, why);
        }
  check(unaryOk, "every unary op, storage and compute type and size " + why);
  for (int k = MP_RELU_GRAD; k <= MP_SIGMOID_GRAD; ++k)
    for (int64_t n : kSizes)
      for (mpElementType t : kTypes)
        for (mpElementType compute : kTypes) {
          Buffer dy(t, {n}), s(kTypes[rng() % 3], {n}), dx(t, {n});
          fill(dy, rng);
          fill(s, rng);
          mpTensor DY = dy.tensor(), S = s.tensor();
          bool same = sameBits({&dx}, [&] {
            mpTensor DX = dx.tensor();
            return mpActivationGrad(mpActivationGradKind(k), &DY, &S, &DX,
                                    compute);
          }, why);
          if (!same && gradOk)
            firstBad = why + " (kind " + std::to_string(k) + ", " +
                       std::to_string(n) + " " + typeName(t) +
                       ", compute " + typeName(compute) + ")";
          gradOk &= same;
        }
  check(gradOk, "every activation gradient, type and size " + firstBad);

  // Dropout: the vectorised Philox of whole tiles against the scalar one.
  bool dropoutOk = true;
  for (int64_t n : kSizes)
    for (mpElementType t : kTypes)
      for (mpElementType compute : kTypes)
        for (float rate : {0.0f, 0.1f, 0.5f}) {
          Buffer x(t, {n}), y(kTypes[rng() % 3], {n});
          fill(x, rng);
          int64_t seedValue = int64_t(rng());
          mpTensor X = x.tensor();
          mpTensor S{};
          S.data = &seedValue;
          S.elementType = MP_I64;
          int64_t stream = int64_t(rng() >> 1);
          dropoutOk &= sameBits({&y}, [&] {
            mpTensor Y = y.tensor();
            return mpDropout(&X, &S, &Y, rate, stream, compute);
          }, why);
        }
  check(dropoutOk, "dropout, every type, size and rate " + why);

  // In place (the output is the input), as a buffer plan that reuses a dead
  // operand's buffer produces.
  bool inPlaceOk = true;
  for (int64_t n : {int64_t(1000), int64_t(70001)})
    for (mpElementType t : kTypes) {
      Buffer x(t, {n});
      fill(x, rng);
      for (int k : {int(MP_NEG), int(MP_EXP), int(MP_GELU), int(MP_TANH)})
        inPlaceOk &= sameBits({&x}, [&] {
          mpTensor X = x.tensor();
          return mpUnary(mpUnaryKind(k), &X, &X, MP_F32);
        }, why);
      Buffer saved(t, {n});
      fill(saved, rng);
      mpTensor S0 = saved.tensor();
      for (int k : {int(MP_RELU_GRAD), int(MP_GELU_GRAD)}) {
        inPlaceOk &= sameBits({&x}, [&] {
          mpTensor X = x.tensor();
          return mpActivationGrad(mpActivationGradKind(k), &X, &S0, &X,
                                  MP_F32);
        }, why);
        inPlaceOk &= sameBits({&x}, [&] {
          mpTensor X = x.tensor();
          return mpActivationGrad(mpActivationGradKind(k), &S0, &X, &X,
                                  MP_F32);
        }, why);
      }
      int64_t seedValue = int64_t(rng());
      mpTensor S{};
      S.data = &seedValue;
      S.elementType = MP_I64;
      inPlaceOk &= sameBits({&x}, [&] {
        mpTensor X = x.tensor();
        return mpDropout(&X, &S, &X, 0.25f, 7, MP_F32);
      }, why);
    }
  check(inPlaceOk,
        "unary ops, activation gradients and dropout in place " + why);

  // A dense sweep of [-110, 90] in steps of 2^-6 through every unary op and
  // activation gradient in f32: expF's subnormal band and its cut to zero
  // below -104, the switch points of erf (|z| = 1/2, 1), tanh (1/4) and
  // the overflow of exp, each element in a vector lane and in a loop tail.
  {
    int64_t n = 200 * 64 + 1;
    Buffer x(MP_F32, {n}), dy(MP_F32, {n}), y(MP_F32, {n});
    for (int64_t i = 0; i < n; ++i)
      x.set(i, -110.0f + float(i) / 64.0f);
    fill(dy, rng, /*specials=*/false);
    mpTensor X = x.tensor(), DY = dy.tensor();
    bool sweepOk = true;
    for (int k = MP_NEG; k <= MP_COS; ++k)
      sweepOk &= sameBits({&y}, [&] {
        mpTensor Y = y.tensor();
        return mpUnary(mpUnaryKind(k), &X, &Y, MP_F32);
      }, why);
    for (int k = MP_RELU_GRAD; k <= MP_SIGMOID_GRAD; ++k)
      sweepOk &= sameBits({&y}, [&] {
        mpTensor Y = y.tensor();
        return mpActivationGrad(mpActivationGradKind(k), &DY, &X, &Y, MP_F32);
      }, why);
    check(sweepOk, "unary ops and activation gradients on [-110, 90] by "
                   "2^-6 " + why);
  }

  // Broadcast forms: whole, bias row, per-row value, scalar, (i / inner) %
  // period, and general ones the fast path reads run by run.
  struct Form {
    const char *name;
    std::vector<int64_t> lhs, rhs, out;
  } forms[] = {
      {"whole", {37, 129}, {37, 129}, {37, 129}},
      {"bias row", {300, 257}, {257}, {300, 257}},
      {"long bias row", {7, 3000}, {3000}, {7, 3000}},
      {"per-row value", {300, 257}, {300, 1}, {300, 257}},
      {"scalar", {}, {1001, 3}, {1001, 3}},
      {"middle", {5, 7, 300}, {7, 1}, {5, 7, 300}},
      {"general", {9, 1, 400}, {1, 11, 1}, {9, 11, 400}},
      {"attention mask", {2, 3, 37, 37}, {2, 1, 1, 37}, {2, 3, 37, 37}},
  };
  for (const Form &f : forms) {
    bool ok = true;
    for (int k = MP_ADD; k <= MP_MINIMUM; ++k)
      for (mpElementType lt : kTypes)
        for (mpElementType compute : kTypes) {
          mpElementType rt = kTypes[rng() % 3], ot = kTypes[rng() % 3];
          Buffer l(lt, f.lhs), r(rt, f.rhs), o(ot, f.out);
          fill(l, rng);
          fill(r, rng);
          mpTensor L = l.tensor(), R = r.tensor();
          ok &= sameBits({&o}, [&] {
            mpTensor O = o.tensor();
            return mpBinary(mpBinaryKind(k), &L, &R, &O, compute);
          }, why);
        }
    // f32 throughout, where operands are read and the result written in
    // place; and in place, the result over an operand of its shape.
    for (int k = MP_ADD; k <= MP_MINIMUM; ++k) {
      Buffer l(MP_F32, f.lhs), r(MP_F32, f.rhs), o(MP_F32, f.out);
      fill(l, rng);
      fill(r, rng);
      mpTensor L = l.tensor(), R = r.tensor();
      ok &= sameBits({&o}, [&] {
        mpTensor O = o.tensor();
        return mpBinary(mpBinaryKind(k), &L, &R, &O, MP_F32);
      }, why);
      for (mpElementType t : kTypes)
        for (int over = 0; over < 2; ++over) {
          if ((over ? f.rhs : f.lhs) != f.out)
            continue;
          Buffer li(t, f.lhs), ri(t, f.rhs);
          fill(li, rng);
          fill(ri, rng);
          ok &= sameBits({over ? &ri : &li}, [&] {
            mpTensor LI = li.tensor(), RI = ri.tensor();
            return mpBinary(mpBinaryKind(k), &LI, &RI, over ? &RI : &LI,
                            MP_F32);
          }, why);
        }
    }
    // bf16 and f16 throughout, computed in f32 or in the storage type (on
    // whole operands and bias rows, one loop widens, combines and rounds:
    // Elementwise.cpp).
    for (int k = MP_ADD; k <= MP_MINIMUM; ++k)
      for (mpElementType t : {MP_BF16, MP_F16})
        for (mpElementType compute : {MP_F32, t}) {
          Buffer l(t, f.lhs), r(t, f.rhs), o(t, f.out);
          fill(l, rng);
          fill(r, rng);
          mpTensor L = l.tensor(), R = r.tensor();
          ok &= sameBits({&o}, [&] {
            mpTensor O = o.tensor();
            return mpBinary(mpBinaryKind(k), &L, &R, &O, compute);
          }, why);
        }
    check(ok, std::string("every binary op, broadcast form '") + f.name +
                  "', every type, f32, bf16 and f16 throughout, in place " +
                  why);
  }
  // Select: the condition in the first form, the chosen-when-true value in
  // the second, the other one whole (then as a scalar, as masks use it).
  // A select only moves values, so the bytes must agree exactly, NaNs
  // included, signalling ones among them.
  for (const Form &f : forms) {
    bool ok = true;
    for (mpElementType t : kTypes)
      for (bool scalarFalse : {false, true}) {
        Buffer c(MP_I1, f.lhs), a(t, f.rhs), b(t, scalarFalse
                                                 ? std::vector<int64_t>{}
                                                 : f.out),
            o(t, f.out);
        for (unsigned char &byte : c.bytes)
          byte = rng() % 3 == 0 ? 0 : uint8_t(1 + rng() % 2);
        for (Buffer *v : {&a, &b}) {
          fill(*v, rng);
          size_t size = mpElementSize(t);
          uint32_t signalling = t == MP_F32   ? 0x7f800001u
                                : t == MP_F16 ? 0x7c01u
                                              : 0x7f81u;
          for (int64_t i = 0; i < v->count(); i += 5)
            std::memcpy(&v->bytes[size_t(i) * size], &signalling, size);
        }
        mpTensor C = c.tensor(), A = a.tensor(), B = b.tensor();
        std::vector<unsigned char> fast;
        for (int library : {1, 0}) {
          mpUseLibraryKernels(library);
          std::fill(o.bytes.begin(), o.bytes.end(), 0);
          mpTensor O = o.tensor();
          ok &= mpSelect(&C, &A, &B, &O) == MP_OK;
          if (library)
            fast = o.bytes;
        }
        mpUseLibraryKernels(1);
        ok &= fast == o.bytes;
      }
    check(ok, std::string("select, broadcast form '") + f.name +
                  "', every type, bit for bit");
  }
}

//===----------------------------------------------------------------------===//
// Reductions, softmax, layer norm, transpose
//===----------------------------------------------------------------------===//

void testRows(std::mt19937_64 &rng) {
  std::string why;
  bool ok = true;
  struct Axes {
    std::vector<int64_t> shape, axes;
  } reductions[] = {{{300, 257}, {0}},    {{300, 257}, {1}},
                    {{6, 50, 130}, {1}},  {{6, 50, 130}, {0, 1}},
                    {{6, 50, 130}, {1, 2}}, {{6, 50, 130}, {0, 1, 2}},
                    {{3, 4000}, {0}},     {{2000, 3}, {0}},
                    // Two runs: NCHW's bias gradient, a leading kept run,
                    // kept blocks of 8 and not, dimensions of size 1 that
                    // join a run; then three runs (the reference loops).
                    {{8, 256, 8, 8}, {0, 2, 3}}, {{3, 5, 7, 9}, {1, 3}},
                    {{4, 13, 6}, {0, 2}},  {{5, 3, 1, 20}, {0, 3}},
                    {{2, 9, 3, 1}, {0, 2}}, {{4, 1, 6}, {0, 2}},
                    {{3, 5, 7, 9, 2}, {1, 3}},
                    // Two runs with an empty one (a mean of nothing is
                    // NaN), and rows longer than a converted piece.
                    {{4, 0, 3, 5}, {1, 3}}, {{0, 4, 3, 5}, {1, 3}},
                    {{4, 3, 0}, {0, 2}}, {{2, 3, 1500}, {0, 2}}};
  for (const Axes &r : reductions)
    for (int kind = MP_REDUCE_SUM; kind <= MP_REDUCE_MAX; ++kind)
      for (mpElementType t : kTypes) {
        std::vector<int64_t> kept;
        for (size_t d = 0; d < r.shape.size(); ++d)
          if (std::find(r.axes.begin(), r.axes.end(), int64_t(d)) ==
              r.axes.end())
            kept.push_back(r.shape[d]);
        Buffer in(t, r.shape), out(kTypes[rng() % 3], kept);
        fill(in, rng, /*specials=*/kind == MP_REDUCE_MAX);
        mpTensor I = in.tensor();
        ok &= sameBits({&out}, [&] {
          mpTensor O = out.tensor();
          return mpReduce(mpReduceKind(kind), &I, &O, r.axes.data(),
                          int32_t(r.axes.size()), MP_F32);
        }, why);
      }
  check(ok, "reduce sum, mean and max over leading, trailing, middle, all "
            "and two runs of axes " + why);

  ok = true;
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{3, 10}, {64, 257}, {4, 8, 256}})
    for (int log = 0; log <= 1; ++log)
      for (mpElementType t : kTypes) {
        int64_t axis = int64_t(shape.size()) - 1;
        Buffer x(t, shape), y(t, shape), dy(t, shape), dx(t, shape);
        fill(x, rng, false);
        fill(dy, rng, false);
        mpTensor X = x.tensor(), DY = dy.tensor();
        ok &= sameBits({&y}, [&] {
          mpTensor Y = y.tensor();
          return mpSoftmax(&X, &Y, axis, log, MP_F32);
        }, why);
        mpTensor Y = y.tensor();
        ok &= sameBits({&dx}, [&] {
          mpTensor DX = dx.tensor();
          return mpSoftmaxGrad(&DY, &Y, &DX, axis, log, MP_F32);
        }, why);
        // In place, as a buffer plan that reuses a dead operand's buffer
        // makes: the result over x, dx over dy.
        Buffer xIn = x, dyIn = dy;
        ok &= sameBits({&xIn}, [&] {
          mpTensor XI = xIn.tensor();
          return mpSoftmax(&XI, &XI, axis, log, MP_F32);
        }, why);
        ok &= sameBits({&dyIn}, [&] {
          mpTensor DI = dyIn.tensor();
          return mpSoftmaxGrad(&DI, &Y, &DI, axis, log, MP_F32);
        }, why);
        Buffer yIn = y;
        ok &= sameBits({&yIn}, [&] {
          mpTensor YI = yIn.tensor();
          return mpSoftmaxGrad(&DY, &YI, &YI, axis, log, MP_F32);
        }, why);
        // An f32 result (written in place) from x stored as t.
        Buffer yF32(MP_F32, shape);
        ok &= sameBits({&yF32}, [&] {
          mpTensor YF = yF32.tensor();
          return mpSoftmax(&X, &YF, axis, log, MP_F32);
        }, why);
      }
  check(ok, "softmax, log-softmax and their gradients over the last axis, "
            "also in place " + why);

  // Rows as attention masks and large logits make them: a causal mask's
  // -inf entries, a fully masked row (NaN both ways), logits of +-1e30 and
  // around exp's overflow at 88.7.
  ok = true;
  for (mpElementType t : kTypes)
    for (int log = 0; log <= 1; ++log) {
      int64_t rows = 67, cols = 67;
      Buffer x(t, {rows, cols}), y(t, {rows, cols}), dy(t, {rows, cols}),
          dx(t, {rows, cols});
      fill(x, rng, false);
      fill(dy, rng, false);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          if (r < 40 && c > r)
            x.set(r * cols + c, -INFINITY);
          if (r == 40)
            x.set(r * cols + c, -INFINITY);
          if (r > 40 && c % 5 == 0)
            x.set(r * cols + c, r % 2 ? 1e30f : -1e30f);
          if (r > 50 && c % 7 == 1)
            x.set(r * cols + c, 88.0f + float(c % 3));
        }
      mpTensor X = x.tensor(), DY = dy.tensor();
      ok &= sameBits({&y}, [&] {
        mpTensor Y = y.tensor();
        return mpSoftmax(&X, &Y, 1, log, MP_F32);
      }, why);
      mpTensor Y = y.tensor();
      ok &= sameBits({&dx}, [&] {
        mpTensor DX = dx.tensor();
        return mpSoftmaxGrad(&DY, &Y, &DX, 1, log, MP_F32);
      }, why);
    }
  check(ok, "softmax on masked rows, a fully masked row and large logits " +
                why);

  // Softmax cross-entropy and its gradient, with ignored labels (-100).
  ok = true;
  for (int64_t rows : {int64_t(1), int64_t(37), int64_t(1024)})
    for (int64_t classes : {int64_t(3), int64_t(1000)})
      for (mpElementType t : kTypes) {
        Buffer logits(t, {rows, classes}), dlogits(t, {rows, classes});
        Buffer loss(MP_F32, {}), dloss(MP_F32, {});
        fill(logits, rng, /*specials=*/false);
        dloss.set(0, 1.5f);
        std::vector<int64_t> ids(rows);
        for (int64_t &id : ids)
          id = rng() % 8 == 0 ? -100 : int64_t(rng() % classes);
        mpTensor L = logits.tensor(), D = dloss.tensor(), Y{};
        Y.data = ids.data();
        Y.elementType = MP_I64;
        Y.rank = 1;
        Y.shape[0] = rows;
        ok &= sameBits({&loss}, [&] {
          mpTensor O = loss.tensor();
          return mpSoftmaxCrossEntropy(&L, &Y, &O, MP_F32);
        }, why);
        ok &= sameBits({&dlogits}, [&] {
          mpTensor DL = dlogits.tensor();
          return mpSoftmaxCrossEntropyGrad(&D, &L, &Y, &DL, MP_F32);
        }, why);
      }
  check(ok, "softmax cross-entropy and its gradient " + why);

  // i32 labels; labels past the classes and negative ones (ignored); every
  // label ignored (the mean over no rows is 0); -inf and large logits.
  ok = true;
  for (int all = 0; all <= 1; ++all)
    for (mpElementType t : kTypes) {
      int64_t rows = 300, classes = 50;
      Buffer logits(t, {rows, classes}), dlogits(t, {rows, classes});
      Buffer loss(MP_F32, {}), dloss(MP_F32, {});
      fill(logits, rng, /*specials=*/false);
      for (int64_t i = 0; i < rows * classes; i += 13)
        logits.set(i, i % 2 ? -INFINITY : 1e30f);
      dloss.set(0, 0.75f);
      std::vector<int32_t> ids(rows);
      for (int32_t &id : ids)
        id = all ? int32_t(classes + rng() % 3)
                 : int32_t(rng() % (classes + 10)) - 5;
      mpTensor L = logits.tensor(), D = dloss.tensor(), Y{};
      Y.data = ids.data();
      Y.elementType = MP_I32;
      Y.rank = 1;
      Y.shape[0] = rows;
      ok &= sameBits({&loss}, [&] {
        mpTensor O = loss.tensor();
        return mpSoftmaxCrossEntropy(&L, &Y, &O, MP_F32);
      }, why);
      ok &= sameBits({&dlogits}, [&] {
        mpTensor DL = dlogits.tensor();
        return mpSoftmaxCrossEntropyGrad(&D, &L, &Y, &DL, MP_F32);
      }, why);
    }
  check(ok, "softmax cross-entropy with i32 labels, labels out of range, "
            "every label ignored " + why);

  ok = true;
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{1, 7}, {64, 512}, {2, 300, 65}, {5, 3000},
        {1100, 40}}) // 69 blocks of 16 rows: two waves of the gradient
    for (mpElementType t : kTypes) {
      std::vector<int64_t> cols = {shape.back()},
                           rows(shape.begin(), shape.end() - 1);
      int64_t axis = int64_t(shape.size()) - 1;
      Buffer x(t, shape), scale(MP_F32, cols), bias(MP_F32, cols),
          y(t, shape), mean(MP_F32, rows), rstd(MP_F32, rows), dy(t, shape),
          dx(t, shape), ds(MP_F32, cols), db(MP_F32, cols);
      for (Buffer *b : {&x, &scale, &bias, &dy})
        fill(*b, rng, false);
      mpTensor X = x.tensor(), S = scale.tensor(), B = bias.tensor(),
               DY = dy.tensor();
      ok &= sameBits({&y, &mean, &rstd}, [&] {
        mpTensor Y = y.tensor(), M = mean.tensor(), R = rstd.tensor();
        return mpLayerNorm(&X, &S, &B, &Y, &M, &R, axis, 1e-5f, MP_F32);
      }, why);
      mpTensor M = mean.tensor(), R = rstd.tensor();
      ok &= sameBits({&dx, &ds, &db}, [&] {
        mpTensor DX = dx.tensor(), DS = ds.tensor(), DB = db.tensor();
        return mpLayerNormGrad(&DY, &X, &S, &M, &R, &DX, &DS, &DB, axis,
                               MP_F32);
      }, why);
      // In place: y over x, dx over dy.
      Buffer xIn = x, dyIn = dy;
      ok &= sameBits({&xIn, &mean, &rstd}, [&] {
        mpTensor XI = xIn.tensor(), M = mean.tensor(), R = rstd.tensor();
        return mpLayerNorm(&XI, &S, &B, &XI, &M, &R, axis, 1e-5f, MP_F32);
      }, why);
      ok &= sameBits({&dyIn, &ds, &db}, [&] {
        mpTensor DI = dyIn.tensor(), DS = ds.tensor(), DB = db.tensor();
        return mpLayerNormGrad(&DI, &X, &S, &M, &R, &DI, &DS, &DB, axis,
                               MP_F32);
      }, why);
      Buffer xIn2 = x;
      ok &= sameBits({&xIn2, &ds, &db}, [&] {
        mpTensor XI = xIn2.tensor(), DS = ds.tensor(), DB = db.tensor();
        return mpLayerNormGrad(&DY, &XI, &S, &M, &R, &XI, &DS, &DB, axis,
                               MP_F32);
      }, why);
      // f32 results (written in place) from x and dy stored as t.
      Buffer yF32(MP_F32, shape), dxF32(MP_F32, shape);
      ok &= sameBits({&yF32, &mean, &rstd}, [&] {
        mpTensor YF = yF32.tensor(), M = mean.tensor(), R = rstd.tensor();
        return mpLayerNorm(&X, &S, &B, &YF, &M, &R, axis, 1e-5f, MP_F32);
      }, why);
      ok &= sameBits({&dxF32, &ds, &db}, [&] {
        mpTensor DF = dxF32.tensor(), DS = ds.tensor(), DB = db.tensor();
        return mpLayerNormGrad(&DY, &X, &S, &M, &R, &DF, &DS, &DB, axis,
                               MP_F32);
      }, why);
    }
  check(ok, "layer norm and its gradient (dx, dscale, dbias), also in "
            "place " + why);

  ok = true;
  struct Perm {
    std::vector<int64_t> shape, perm;
  } perms[] = {{{300, 257}, {1, 0}},
               {{8, 256, 8, 64}, {0, 2, 1, 3}},
               {{8, 8, 256, 64}, {0, 1, 3, 2}},
               {{5, 6, 7}, {2, 0, 1}},
               // The input's last dimension moving elsewhere: attention's
               // keys and their gradient, NHWC to NCHW and back, others.
               {{8, 128, 4, 64}, {0, 2, 3, 1}},
               {{8, 4, 64, 128}, {0, 3, 1, 2}},
               {{2, 8, 8, 256}, {0, 3, 1, 2}},
               {{2, 3, 64, 64}, {0, 2, 3, 1}},
               {{3, 37, 41, 5}, {3, 2, 1, 0}},
               {{2, 33, 3, 40}, {1, 3, 0, 2}},
               {{1, 300}, {1, 0}},
               {{3, 1, 40}, {0, 2, 1}},
               {{4, 0, 9}, {0, 2, 1}},
               {{0, 5}, {1, 0}}};
  for (const Perm &p : perms)
    for (mpElementType t : {MP_F16, MP_BF16, MP_F32, MP_F64}) {
      std::vector<int64_t> outShape;
      for (int64_t d : p.perm)
        outShape.push_back(p.shape[d]);
      Buffer in(t, p.shape), out(t, outShape);
      fill(in, rng);
      mpTensor I = in.tensor();
      ok &= sameBits({&out}, [&] {
        mpTensor O = out.tensor();
        return mpTranspose(&I, &O, p.perm.data());
      }, why);
    }
  check(ok, "transposes of 2, 4 and 8-byte elements, the last dimension "
            "moving or not, with dimensions of size 0 and 1 " + why);

  ok = true;
  struct Broadcast {
    std::vector<int64_t> in, out;
  } broadcasts[] = {{{257}, {300, 257}},
                    {{300, 1}, {300, 257}},
                    {{32, 64, 1, 1}, {32, 64, 8, 8}},
                    {{5, 1, 7}, {3, 5, 6, 7}}};
  for (const Broadcast &b : broadcasts)
    for (mpElementType t : {MP_F16, MP_F32, MP_F64}) {
      Buffer in(t, b.in), out(t, b.out);
      fill(in, rng);
      mpTensor I = in.tensor();
      ok &= sameBits(
          {&out},
          [&] {
            mpTensor O = out.tensor();
            return mpBroadcastTo(&I, &O);
          },
          why);
    }
  check(ok, "broadcasts of rows, columns and inner dimensions " + why);

  // Slices and their gradients: a q/k/v chunk of the last dimension, a
  // class token, strides in the inner and outer dimensions, one element.
  ok = true;
  struct Slice {
    std::vector<int64_t> in, out, offsets, strides;
  } slices[] = {{{520, 768}, {520, 256}, {0, 256}, {1, 1}},
                {{8, 65, 256}, {8, 1, 256}, {0, 0, 0}, {1, 1, 1}},
                {{6, 9, 40}, {3, 4, 13}, {1, 0, 2}, {2, 2, 3}},
                {{4, 300}, {2, 100}, {1, 5}, {2, 1}},
                {{7}, {1}, {6}, {1}},
                {{6, 40}, {0, 40}, {7, 0}, {1, 1}},
                {{6, 40}, {6, 0}, {0, 3}, {1, 1}},
                {{6, 40}, {1, 20}, {5, 1}, {INT64_MAX, 2}}};
  for (const Slice &c : slices)
    for (mpElementType t : {MP_F16, MP_BF16, MP_F32, MP_F64}) {
      Buffer in(t, c.in), out(t, c.out), dx(t, c.in);
      fill(in, rng);
      fill(out, rng);
      fill(dx, rng);
      mpTensor I = in.tensor();
      ok &= sameBits({&out}, [&] {
        mpTensor O = out.tensor();
        return mpSlice(&I, &O, c.offsets.data(), c.strides.data());
      }, why);
      mpTensor DY = out.tensor();
      ok &= sameBits({&dx}, [&] {
        mpTensor DX = dx.tensor();
        return mpSliceGrad(&DY, &DX, c.offsets.data(), c.strides.data());
      }, why);
    }
  check(ok, "slices and slice gradients, with and without strides, empty "
            "ones and a size-1 dimension's unbounded stride " + why);

  // A stride whose (count - 1) * stride overflows int64 is out of bounds,
  // not a wrapped-around offset inside them.
  {
    Buffer in(MP_F32, {6, 40}), out(MP_F32, {3, 20}), dx(MP_F32, {6, 40});
    int64_t offsets[] = {1, 0}, huge[] = {INT64_MAX, 2},
            wraps[] = {INT64_MAX / 2 + 1, 2};
    mpTensor I = in.tensor(), O = out.tensor(), DX = dx.tensor();
    bool rejected = true;
    for (const int64_t *st : {huge, wraps}) {
      rejected &= mpSlice(&I, &O, offsets, st) == MP_ERROR_INVALID_ARGUMENT;
      rejected &=
          mpSliceGrad(&O, &DX, offsets, st) == MP_ERROR_INVALID_ARGUMENT;
    }
    check(rejected, "slices whose extent overflows int64 are rejected");
  }

  // Copies (reshapes), in chunks across threads when large.
  ok = true;
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(700001)}) {
    Buffer in(MP_F32, {n}), out(MP_F32, {n});
    fill(in, rng);
    mpTensor I = in.tensor();
    ok &= sameBits({&out}, [&] {
      mpTensor O = out.tensor();
      return mpCopy(&I, &O);
    }, why);
    ok &= out.bytes == in.bytes;
  }
  check(ok, "copies " + why);

  // Copies between overlapping parts of one buffer move like memmove.
  ok = true;
  for (int64_t shift : {int64_t(-3), int64_t(5), int64_t(-262147)}) {
    int64_t n = 700001, span = n + (shift < 0 ? -shift : shift);
    Buffer buf(MP_F32, {span});
    fill(buf, rng);
    std::vector<unsigned char> expect = buf.bytes;
    int64_t from = shift < 0 ? -shift : 0, to = shift < 0 ? 0 : shift;
    std::memmove(&expect[to * 4], &buf.bytes[from * 4], size_t(n) * 4);
    auto part = [&](int64_t at) {
      mpTensor t{};
      t.data = buf.bytes.data() + at * 4;
      t.elementType = MP_F32;
      t.rank = 1;
      t.shape[0] = n;
      return t;
    };
    ok &= sameBits({&buf}, [&] {
      mpTensor I = part(from), O = part(to);
      return mpCopy(&I, &O);
    }, why);
    ok &= buf.bytes == expect;
  }
  check(ok, "copies between overlapping parts of a buffer " + why);

  // Concats, rows split across threads when large: each result row holds
  // the inputs' pieces of it in turn.
  ok = true;
  for (auto [outer, inner] : {std::pair<int64_t, int64_t>{3, 5}, {520, 256}}) {
    std::vector<Buffer> ins;
    for (int64_t width : {1, 2, 1})
      ins.emplace_back(MP_F32, std::vector<int64_t>{outer, width, inner});
    Buffer out(MP_F32, {outer, 4, inner});
    std::vector<mpTensor> views;
    for (Buffer &b : ins) {
      fill(b, rng);
      views.push_back(b.tensor());
    }
    std::vector<unsigned char> expect;
    for (int64_t o = 0; o < outer; ++o)
      for (Buffer &b : ins) {
        size_t row = b.bytes.size() / size_t(outer);
        expect.insert(expect.end(), b.bytes.begin() + o * row,
                      b.bytes.begin() + (o + 1) * row);
      }
    ok &= sameBits({&out}, [&] {
      mpTensor O = out.tensor();
      return mpConcat(int32_t(views.size()), views.data(), &O, 1);
    }, why);
    ok &= out.bytes == expect;
  }
  check(ok, "concats " + why);

  // Embedding gradients: repeated ids (summed in position order), negative
  // ones (counted from the end), out-of-range ones on either side
  // (dropped), i32 and i64 ids, rows longer than a tile, every storage type
  // of the gradient and the table.
  ok = true;
  for (auto [rows, row] :
       {std::pair<int64_t, int64_t>{1, 3}, {50, 7}, {1000, 96}, {9, 1500}})
    for (mpElementType g : kTypes)
      for (mpElementType t : kTypes) {
        int64_t n = 64;
        mpElementType idType = (g == t) ? MP_I32 : MP_I64;
        Buffer ids(idType, {n / 2, 2}), grad(g, {n / 2, 2, row}),
            table(t, {rows, row});
        for (int64_t i = 0; i < n; ++i) {
          int64_t distinct = std::min<int64_t>(rows, 40);
          int64_t id = int64_t(rng() % uint64_t(distinct)) *
                       std::max<int64_t>(1, rows / 40);
          id = i % 13 == 5   ? -1 - id
               : i % 17 == 3 ? rows + id
               : i % 19 == 7 ? -rows - 1 - id
                             : id;
          if (idType == MP_I32) {
            int32_t narrow = int32_t(id);
            std::memcpy(&ids.bytes[i * 4], &narrow, 4);
          } else {
            std::memcpy(&ids.bytes[i * 8], &id, 8);
          }
        }
        fill(grad, rng);
        fill(table, rng);
        mpTensor I = ids.tensor(), G = grad.tensor();
        ok &= sameBits(
            {&table},
            [&] {
              mpTensor T = table.tensor();
              return mpGatherGrad(&G, &I, &T, MP_F32);
            },
            why);
      }
  check(ok, "gather gradients " + why);
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

void testBatchNorm(std::mt19937_64 &rng) {
  std::string why;
  bool ok = true;
  // (n, c, h, w), NCHW and NHWC, channel counts that leave a partial
  // block (NHWC blocks are 16-channel multiples up to 256) and a partial
  // 16-channel chunk, and rows enough (3200) that the NHWC passes take
  // their chunks one or two at a time (groupSize); a fifth 1 puts NaNs and
  // infinities into x and dy.
  // y (and dy) may have another type than x (and dx): AMP stores a norm's
  // output in the type its consumers read.
  for (std::vector<int64_t> d :
       {std::vector<int64_t>{2, 3, 5, 7}, {8, 37, 9, 9}, {1, 1, 1, 3},
        {2, 300, 3, 5}, {1, 600, 2, 3}, {2, 96, 40, 40}, {2, 40, 3, 5, 1}})
    for (int last = 0; last <= 1; ++last)
      for (mpElementType t : kTypes)
      for (mpElementType u : kTypes) {
        std::vector<int64_t> shape =
            last ? std::vector<int64_t>{d[0], d[2], d[3], d[1]}
                 : std::vector<int64_t>{d[0], d[1], d[2], d[3]};
        std::vector<int64_t> ch = {d[1]};
        Buffer x(t, shape), y(u, shape), dy(u, shape), dx(t, shape),
            scale(MP_F32, ch), bias(MP_F32, ch), rm(MP_F32, ch), rv(MP_F32, ch),
            mean(MP_F32, ch), rstd(MP_F32, ch), nrm(MP_F32, ch),
            nrv(MP_F32, ch), ds(MP_F32, ch), db(MP_F32, ch);
        for (Buffer *b : {&x, &dy, &scale, &bias, &rm})
          fill(*b, rng, d.size() > 4 && (b == &x || b == &dy));
        for (int64_t i = 0; i < rv.count(); ++i)
          rv.set(i, 0.5f + float(rng() % 100) / 50);
        mpTensor X = x.tensor(), S = scale.tensor(), B = bias.tensor(),
                 RM = rm.tensor(), RV = rv.tensor(), DY = dy.tensor();
        ok &= sameBits(
            {&y, &mean, &rstd, &nrm, &nrv},
            [&] {
              mpTensor Y = y.tensor(), M = mean.tensor(), R = rstd.tensor(),
                       NM = nrm.tensor(), NV = nrv.tensor();
              return mpBatchNorm(&X, &S, &B, &RM, &RV, &Y, &M, &R, &NM, &NV,
                                 1e-5f, 0.1f, last, MP_F32);
            },
            why);
        ok &= sameBits(
            {&y},
            [&] {
              mpTensor Y = y.tensor();
              return mpBatchNormInference(&X, &S, &B, &RM, &RV, &Y, 1e-5f, last,
                                          MP_F32);
            },
            why);
        mpTensor M = mean.tensor(), R = rstd.tensor();
        ok &= sameBits(
            {&dx, &ds, &db},
            [&] {
              mpTensor DX = dx.tensor(), DS = ds.tensor(), DB = db.tensor();
              return mpBatchNormGrad(&DY, &X, &S, &M, &R, &DX, &DS, &DB, last,
                                     MP_F32);
            },
            why);
      }
  check(ok, "batch norm (training, inference) and its gradient, NCHW and "
            "NHWC, x and y of every pair of types " +
                why);
}

/// The filter gradient of depthwise NHWC convolutions (Conv.cpp's lanes of
/// channels, which leave 3 x 3 filters to oneDNN) against the reference
/// loop: 5 x 5 with stride 2 and padding (EfficientNet's), 5 x 5 dilated
/// with asymmetric padding, 7 x 7 on a map smaller than the filter, 1 x 1;
/// channel counts with a partial 16-lane chunk; f32 and bf16 activations,
/// every filter type; NaNs and infinities in the activations of the last.
void testDepthwise(std::mt19937_64 &rng) {
  std::string why;
  bool ok = true;
  struct Case {
    int64_t n, c, h, w, k, stride, dilation;
    std::array<int64_t, 4> padding; // top, left, bottom, right
    bool specials;
  } cases[] = {
      {8, 144, 8, 8, 5, 2, 1, {2, 2, 2, 2}, false},
      {2, 37, 9, 7, 5, 1, 2, {1, 2, 3, 0}, false},
      {1, 16, 3, 4, 7, 1, 1, {3, 3, 3, 3}, false},
      {3, 20, 5, 5, 1, 1, 1, {0, 0, 0, 0}, false},
      {2, 40, 6, 6, 5, 2, 1, {2, 1, 1, 2}, true},
  };
  for (const Case &k : cases)
    for (mpElementType t : {MP_F32, MP_BF16})
      for (mpElementType f : kTypes) {
        mpWindow win{};
        win.strides[0] = win.strides[1] = k.stride;
        win.dilations[0] = win.dilations[1] = k.dilation;
        for (int i = 0; i < 4; ++i)
          win.padding[i] = k.padding[i];
        win.groups = k.c;
        win.channelsLast = 1;
        int64_t span = (k.k - 1) * k.dilation + 1;
        int64_t oh = (k.h + k.padding[0] + k.padding[2] - span) / k.stride + 1;
        int64_t ow = (k.w + k.padding[1] + k.padding[3] - span) / k.stride + 1;
        Buffer x(t, {k.n, k.h, k.w, k.c}), dy(t, {k.n, oh, ow, k.c}),
            df(f, {k.c, 1, k.k, k.k});
        fill(x, rng, k.specials);
        fill(dy, rng, k.specials);
        mpTensor X = x.tensor(), DY = dy.tensor();
        ok &= sameBits({&df}, [&] {
          mpTensor DF = df.tensor();
          return mpConv2dGradFilter(&DY, &X, &DF, &win, MP_F32);
        }, why);
      }
  check(ok, "depthwise NHWC filter gradients (5x5 strided, 5x5 dilated, "
            "7x7, 1x1; f32 and bf16 activations) " + why);
}

//===----------------------------------------------------------------------===//
// Optimizers and loss scaling
//===----------------------------------------------------------------------===//

void testUpdates(std::mt19937_64 &rng) {
  std::string why;
  bool ok = true;
  for (int64_t n : kSizes)
    for (mpElementType g : kTypes) {
      Buffer p(MP_F32, {n}), grad(g, {n}), buf(MP_F32, {n}), m(MP_F32, {n}),
          v(MP_F32, {n}), step(MP_I64, {});
      fill(p, rng, false);
      fill(grad, rng, false);
      fill(buf, rng, false);
      mpTensor G = grad.tensor();
      // Each loop the fast path picks: plain, momentum, Nesterov momentum;
      // with and without weight decay.
      for (int variant = 0; variant < 3; ++variant)
        for (float decay : {0.0f, 1e-4f})
          ok &= sameBits({&p, &buf}, [&] {
            mpTensor P = p.tensor(), Bf = buf.tensor();
            return mpSgdUpdate(&P, &G, variant ? &Bf : nullptr, nullptr, 0.1f,
                               variant ? 0.9f : 0.0f, decay, variant == 2);
          }, why);
      for (float decay : {0.0f, 0.01f})
        ok &= sameBits({&p, &m, &v, &step}, [&] {
          mpTensor P = p.tensor(), M = m.tensor(), V = v.tensor(),
                   S = step.tensor();
          return mpAdamUpdate(&P, &G, &M, &V, &S, nullptr, 1e-3f, 0.9f,
                              0.999f, 1e-8f, decay);
        }, why);
    }
  check(ok, "sgd (plain, momentum, nesterov; with and without weight decay) "
            "and adam (with and without) updates " + why);

  // The updates that also write a rounded copy of the new parameter: the
  // same parameter and state bits as without it, and a copy that is the
  // parameter converted, on both paths; a skipped step copies the
  // parameter as it is.
  // The last size writes its copy with streaming stores (Optimizers.cpp).
  ok = true;
  for (int64_t n : {int64_t(1), int64_t(15), int64_t(1000), int64_t(1025),
                    int64_t(70001), (int64_t(1) << 19) + 7})
    for (mpElementType c : {MP_F16, MP_BF16})
      for (bool skipping : {false, true}) {
        // bf16 gradients (an AMP step's) or f32 ones (read in place).
        mpElementType gradType = skipping == (n % 2 == 0) ? MP_BF16 : MP_F32;
        Buffer p(MP_F32, {n}), grad(gradType, {n}), buf(MP_F32, {n}),
            m(MP_F32, {n}), v(MP_F32, {n}), step(MP_I64, {}), copy(c, {n}),
            skip(MP_I1, {}), expect(c, {n});
        fill(p, rng, false);
        fill(grad, rng, false);
        fill(buf, rng, false);
        skip.bytes[0] = skipping;
        mpTensor G = grad.tensor(), S = skip.tensor();
        for (int adam = 0; adam < 2; ++adam) {
          // The same update without the copy, from the same start.
          Buffer p0 = p, buf0 = buf, m0 = m, v0 = v, step0 = step;
          auto update = [&](Buffer &pb, Buffer &bb, Buffer &mb, Buffer &vb,
                            Buffer &tb, Buffer *cb) {
            mpTensor P = pb.tensor(), Bf = bb.tensor(), M = mb.tensor(),
                     V = vb.tensor(), T = tb.tensor(), C{};
            if (cb)
              C = cb->tensor();
            mpTensor *out = cb ? &C : nullptr;
            return adam ? mpAdamUpdateWithCopy(&P, &G, &M, &V, &T, &S, out,
                                               1e-3f, 0.9f, 0.999f, 1e-8f,
                                               0.01f)
                        : mpSgdUpdateWithCopy(&P, &G, &Bf, &S, out, 0.1f,
                                              0.9f, 1e-4f, 1);
          };
          ok &= sameBits({&p, &buf, &m, &v, &step, &copy}, [&] {
            return update(p, buf, m, v, step, &copy);
          }, why);
          ok &= update(p0, buf0, m0, v0, step0, nullptr) == MP_OK;
          mpConvert(p.bytes.data(), MP_F32, expect.bytes.data(), c, n);
          std::string what = "size " + std::to_string(n) +
                             (adam ? " adam" : " sgd") +
                             (skipping ? " skipped" : "");
          if (ok && (p.bytes != p0.bytes || buf.bytes != buf0.bytes ||
                     m.bytes != m0.bytes || v.bytes != v0.bytes ||
                     step.bytes != step0.bytes)) {
            why = what + ": the update differs from the one without a copy";
            ok = false;
          }
          if (ok && expect.bytes != copy.bytes) {
            why = what + ": the copy is not the new parameter converted";
            ok = false;
          }
        }
      }
  check(ok, "sgd and adam updates with a rounded copy of the parameter " +
                why);

  ok = true;
  for (float scale : {1024.0f, 1.0f / 65536})
    for (mpElementType g : kTypes) {
      Buffer a(g, {70001}), b(MP_F16, {1025}), ua(g, {70001}),
          ub(MP_F16, {1025}), s(MP_F32, {}), inf(MP_I1, {});
      fill(a, rng);
      fill(b, rng, false);
      s.set(0, scale);
      mpTensor grads[2] = {a.tensor(), b.tensor()}, S = s.tensor();
      ok &= sameBits({&ua, &ub, &inf}, [&] {
        mpTensor outs[2] = {ua.tensor(), ub.tensor()}, I = inf.tensor();
        return mpUnscaleGrads(2, grads, outs, &S, &I);
      }, why);
    }
  check(ok, "unscale_grads, with overflow to f16 and non-finite inputs " +
                why);

  // One non-finite gradient, or none, anywhere in a tile: the flag must say
  // so on both paths, wherever it falls in the vector lanes.
  ok = true;
  for (int64_t n : kSizes)
    for (mpElementType g : kTypes)
      for (int64_t at : {int64_t(-1), n / 2, n - 1}) {
        Buffer a(g, {n}), ua(g, {n}), s(MP_F32, {}), inf(MP_I1, {});
        fill(a, rng, false);
        if (at >= 0)
          a.set(at, at % 2 ? std::numeric_limits<float>::quiet_NaN()
                           : -std::numeric_limits<float>::infinity());
        s.set(0, 1024.0f);
        mpTensor G = a.tensor(), S = s.tensor();
        ok &= sameBits({&ua, &inf}, [&] {
          mpTensor U = ua.tensor(), I = inf.tensor();
          return mpUnscaleGrads(1, &G, &U, &S, &I);
        }, why);
        if (ok && inf.bytes[0] != (at >= 0 ? 1 : 0)) {
          why = "size " + std::to_string(n) + ": overflow flag " +
                std::to_string(inf.bytes[0]) + " with the non-finite at " +
                std::to_string(at);
          ok = false;
        }
      }
  check(ok, "unscale_grads' overflow flag, finite gradients or one "
            "non-finite " +
                why);
}

} // namespace

//===----------------------------------------------------------------------===//
// Math.h's functions against libm in double
//===----------------------------------------------------------------------===//

/// |got - want| in units in the last place of `want` rounded to f32 (the
/// smallest subnormal's below the normal range); 0 when both are the same
/// infinity or both NaN.
double ulps(float got, double want) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got) ? 0 : 1e30;
  float w = float(want);
  if (std::isinf(w) || std::isinf(got))
    return got == w ? 0 : 1e30;
  double ulp = std::fabs(double(std::nextafter(w, INFINITY)) - double(w));
  if (std::fabs(w) < 1.1754944e-38f)
    ulp = std::ldexp(1.0, -149);
  return std::fabs(double(got) - want) / ulp;
}

void testMath() {
  struct Fn {
    const char *name;
    float (*f)(float);
    double (*ref)(double);
    double bound;
    double worst = 0;
    float at = 0;
  } fns[] = {
      {"exp", mp::rt::expF, [](double x) { return std::exp(x); }, 1},
      {"erf", mp::rt::erfF, [](double x) { return std::erf(x); }, 3},
      {"tanh", mp::rt::tanhF, [](double x) { return std::tanh(x); }, 2},
      {"normal cdf", mp::rt::normalCdfF,
       [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }, 8},
  };
  auto probe = [&](float x) {
    for (Fn &f : fns) {
      double e = ulps(f.f(x), f.ref(x));
      if (e > f.worst) {
        f.worst = e;
        f.at = x;
      }
    }
  };
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4099) {
    float x;
    uint32_t bits = uint32_t(u);
    std::memcpy(&x, &bits, 4);
    probe(x);
  }
  for (float x = -20; x <= 20; x += 1.0f / 1024)
    probe(x);
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72f, 88.73f,
                  -103.9f, -87.3f, 1.0f, -1.0f, 0.5f, 0.25f, 12.0f, 17.0f})
    probe(x);
  for (Fn &f : fns) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "%s within %g ulp of libm's double (worst %.2f, at %g)",
                  f.name, f.bound, f.worst, double(f.at));
    check(f.worst <= f.bound, line);
  }
  // The GELU functions the fast paths build from these, against the same
  // formulas in double at the same f32 input. A sum's error is counted in
  // ulps of its terms' magnitudes (the gradients cross zero), and the
  // tanh form's bound grows with |u|: u = sqrt(2 / pi) (x + 0.044715 x^3)
  // takes five f32 roundings, and a relative error d in u is one of about
  // 2 |u| d in e^-2u.
  struct Worst {
    const char *what;
    double bound;
    double worst = 0;
    float at = 0;
    void probe(float x, double error) {
      if (error > worst) {
        worst = error;
        at = x;
      }
    }
  } pdf{"normal density within 4 ulp", 4},
      gelu{"gelu gradient within 16 ulp of its terms", 16},
      geluTanh{"gelu-tanh within 8 + 8 |u| ulp", 1},
      geluTanhGrad{"gelu-tanh gradient within 8 + 8 |u| ulp of its terms", 1};
  auto ulpsOf = [](float got, double want, double scale) {
    return std::fabs(double(got) - want) /
           std::max(std::ldexp(std::fabs(scale), -23), std::ldexp(1.0, -149));
  };
  for (float x = -20; x <= 20; x += 1.0f / 4096) {
    double xd = x, p = std::exp(-0.5 * xd * xd) / std::sqrt(2 * M_PI);
    double c = 0.5 * std::erfc(-xd / std::sqrt(2.0));
    mp::rt::CdfPdf<float> n = mp::rt::normalCdfPdfF(x);
    pdf.probe(x, ulps(n.pdf, p));
    gelu.probe(x, ulpsOf(n.cdf + x * n.pdf, c + xd * p, c + std::fabs(xd * p)));
    double u = 0.79788456080286535588 * (xd + 0.044715 * xd * xd * xd);
    double s = 1 / (1 + std::exp(-2 * u)), sc = 1 / (1 + std::exp(2 * u));
    double du = 0.79788456080286535588 * (1 + 3 * 0.044715 * xd * xd);
    double slope = 2 * xd * s * sc * du;
    double grow = 8 + 8 * std::fabs(u);
    geluTanh.probe(x, ulps(mp::rt::geluTanh(x), xd * s) / grow);
    geluTanhGrad.probe(x, ulpsOf(mp::rt::geluTanhGrad(1.0f, x), s + slope,
                                 s + std::fabs(slope)) /
                              grow);
  }
  for (Worst *w : {&pdf, &gelu, &geluTanh, &geluTanhGrad}) {
    char line[160];
    std::snprintf(line, sizeof line, "%s (worst %.2f, at %g)", w->what,
                  w->worst, double(w->at));
    check(w->worst <= w->bound, line);
  }
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10)
                           : std::random_device{}();
  std::printf("seed %" PRIu64 "\n", seed);
  mpCpuInfo cpu = mpGetCpuInfo();
  std::printf("cpu: avx2 %d, f16c %d, avx512 %d, avx512bf16 %d, amx %d, "
              "bf16 gemm %d, %d threads\n",
              cpu.avx2, cpu.f16c, cpu.avx512, cpu.avx512bf16, cpu.amx,
              cpu.bf16Gemm, cpu.threads);
  std::mt19937_64 rng(seed);
  testConversions(rng);
  testElementwise(rng);
  testRows(rng);
  testBatchNorm(rng);
  testDepthwise(rng);
  testUpdates(rng);
  testMath();
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
