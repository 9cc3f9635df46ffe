//===- Math.h - f32 exp, erf, tanh the compiler can vectorise ---*- C++ -*-===//
//
// libm's expf, erff and tanhf are calls: a loop over them runs one element
// at a time, which made the GELU of a transformer's feed-forward layer, and
// its gradient, the slowest elementwise kernels of a training step. These
// are the same functions written as straight-line float arithmetic (bit
// tricks and selects, no branches or calls), so the element loops of the
// fast paths vectorise. The reference loops call the same functions for
// f32/f16/bf16 compute, so both give the same bits; f64 compute keeps
// libm's double functions.
//
// Accuracy against libm's double functions, over every 4099th f32 (the
// `math` case of mp-fast-path-tests checks these bounds on a sweep): expF
// within 1 ulp, erfF within 3, tanhF within 2, normalCdfF within 8 (of the
// result, including the far negative tail, where 0.5 (1 + erf(x / sqrt 2))
// loses all its bits to cancellation).
//
// Every polynomial is evaluated by Horner's rule in fused multiply-adds
// (fmaF), one rounding a step; they made the GELU and its gradient 1.3x (AVX2)
// to 1.4x (AVX-512) as fast as separate products and sums.
//
// Method: exp is Cephes' expf (round x / ln 2, a degree-5 polynomial of the
// remainder, the exponent assembled in two halves so subnormal results
// round once). erf(z) is its Maclaurin series for |z| <= 1; erfc(z) for
// z >= 1/2 is the Chebyshev fit of Numerical Recipes (2nd ed., 6.2;
// fractional error below 1.2e-7) with exp(-z^2) evaluated as
// exp(-h^2) exp(-(z - h)(z + h)), h being z rounded to 12 bits, so that
// z^2 is exact. The normal CDF needs only one exponential, which the GELU
// gradient shares with the density: 1 - cdf(|x|) = 0.5 t P(t) e^(-x^2 / 2)
// with t = 1 / (1 + |x| / 2 sqrt 2) and P a degree-10 polynomial fitted
// here to erfc(z) e^(z^2) / t (z = |x| / sqrt 2), the exponent split like
// erfc's. tanh is its Maclaurin series for |x| < 1/4 and
// 1 - 2 / (e^2x + 1) beyond.
//
// The bits assume the default floating-point environment (round to
// nearest, subnormals kept: no FTZ/DAZ in MXCSR) on every thread. A host
// that sets FTZ on its own thread only would get different bits from the
// elements the calling thread evaluates than from the OpenMP workers'.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_MATH_H
#define MP_RUNTIME_CPU_MATH_H

#include "Vector.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mp::rt {

// Every function here is MP_INLINE, so that a fast path's loop, compiled
// for its instruction set, holds the whole evaluation and vectorises it
// (left to itself, GCC kept expSumF out of line once it held fmaf calls).

MP_INLINE uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

MP_INLINE float floatOf(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

/// c ? a : b, by masking bits: both values are computed, so no branch is
/// left for the compiler to move their arithmetic into (with trapping math
/// it may not speculate a division out of a branch, and the loop would not
/// vectorise).
MP_INLINE float selectF(bool c, float a, float b) {
  uint32_t mask = 0u - uint32_t(c);
  return floatOf((bitsOf(a) & mask) | (bitsOf(b) & ~mask));
}

/// c ? a : b for the double reference paths, which need not vectorise.
MP_INLINE double selectF(bool c, double a, double b) { return c ? a : b; }

/// a b + c rounded once. The fast paths' element loops are compiled for
/// AVX2 with FMA or for AVX-512, where this is one instruction that
/// vectorises; the baseline and the reference loops call libm's fmaf,
/// which rounds the same way (glibc runs the instruction where the CPU has
/// it), so every variant gives the same bits.
MP_INLINE float fmaF(float a, float b, float c) {
  return std::fma(a, b, c);
}

/// |x| with the sign bit cleared (NaN stays NaN).
MP_INLINE float absF(float x) { return floatOf(bitsOf(x) & 0x7fffffffu); }

/// x with the sign of s.
MP_INLINE float withSignOf(float x, float s) {
  return floatOf((bitsOf(x) & 0x7fffffffu) | (bitsOf(s) & 0x80000000u));
}

/// e^(a + c) with a reduced exactly and c added after: a may be a large
/// exact value (-x^2 / 2 from a 12-bit x) and c the small remainder that
/// rounding a + c would lose. a - k ln 2 (high part) is exact when c is
/// small beside a, as for the normal CDF's |c| < 2^-11 |a|: k is then a's
/// own nearest multiple of ln 2 (8 bits, times ln 2's 9-bit high part),
/// the classic Cody-Waite reduction; with c = 0 this is expF.
MP_INLINE float expSumF(float a, float c) {
  // Past 88.8, e^x is infinite; below -104 it rounds to zero, which is
  // selected at the end while the lane computes e^0: computing it would
  // make a subnormal product, and each such multiply costs a microcode
  // assist (a softmax row with a causal mask has half its entries there).
  // NaN compares false and passes through.
  float x = a + c;
  bool zero = x < -104.0f;
  bool huge = x > 88.8f;
  a = selectF(huge, 88.8f, selectF(zero, 0.0f, a));
  c = selectF(huge || zero, 0.0f, c);
  // n = round(x / ln 2), read from the low bits of a float with 2^23 in
  // its exponent: integer arithmetic only, whatever x is.
  const float shifter = 12582912.0f; // 1.5 * 2^23
  float t = fmaF(a + c, 1.44269504088896341f, shifter);
  uint32_t n = bitsOf(t) - bitsOf(shifter);
  float k = t - shifter;
  float r = fmaF(k, -0.693359375f, a); // ln 2, high part (exact product)
  r = fmaF(k, 2.12194440e-4f, r);      // ln 2, low part
  r = r + c;
  float z = r * r;
  float p = 1.9875691500e-4f;
  p = fmaF(p, r, 1.3981999507e-3f);
  p = fmaF(p, r, 8.3334519073e-3f);
  p = fmaF(p, r, 4.1665795894e-2f);
  p = fmaF(p, r, 1.6666665459e-1f);
  p = fmaF(p, r, 5.0000001201e-1f);
  p = fmaF(p, z, r) + 1.0f;
  // 2^n as 2^(n/2) 2^(n - n/2), n in [-150, 129]: both halves are normal
  // floats, and a subnormal result is rounded once, by the last product.
  uint32_t half = uint32_t(int32_t(n) >> 1);
  float s1 = floatOf((half + 127u) << 23);
  float s2 = floatOf((n - half + 127u) << 23);
  return selectF(zero, 0.0f, p * s1 * s2);
}

/// e^x.
MP_INLINE float expF(float x) { return expSumF(x, 0.0f); }

/// erf(z) / z for |z| <= 1: its Maclaurin series, 2/sqrt(pi) times
/// (-1)^n z^2n / (n! (2n + 1)) for n up to 11 (the next term is below
/// 1e-10 at |z| = 1).
MP_INLINE float erfSmallOverZ(float z) {
  float s = z * z;
  float p = -1.22905552e-09f;
  p = fmaF(p, s, 1.48071928e-08f);
  p = fmaF(p, s, -1.63658441e-07f);
  p = fmaF(p, s, 1.64621144e-06f);
  p = fmaF(p, s, -1.49256502e-05f);
  p = fmaF(p, s, 1.20553326e-04f);
  p = fmaF(p, s, -8.54832702e-04f);
  p = fmaF(p, s, 5.22397785e-03f);
  p = fmaF(p, s, -2.68661715e-02f);
  p = fmaF(p, s, 1.12837918e-01f);
  p = fmaF(p, s, -3.76126379e-01f);
  p = fmaF(p, s, 1.12837923e+00f);
  return p;
}

/// erfc(z) for z >= 1/2, given z^2 as hi + lo with hi the exact square of
/// z's first 12 bits: exp(-z^2) is exp(-hi) exp(-lo), without the error
/// that rounding z^2 would give it (z^2 ulps of e^-z^2).
MP_INLINE float erfcLarge(float z, float hi, float lo) {
  float t = 1.0f / (1.0f + 0.5f * z);
  float q = 0.17087277f;
  q = fmaF(q, t, -0.82215223f);
  q = fmaF(q, t, 1.48851587f);
  q = fmaF(q, t, -1.13520398f);
  q = fmaF(q, t, 0.27886807f);
  q = fmaF(q, t, -0.18628806f);
  q = fmaF(q, t, 0.09678418f);
  q = fmaF(q, t, 0.37409196f);
  q = fmaF(q, t, 1.00002368f);
  q = fmaF(q, t, -1.26551223f);
  return t * expF(-hi) * expF(q - lo);
}

/// x's first 12 bits: their square is exact.
MP_INLINE float high12(float x) {
  return floatOf(bitsOf(x) & 0xfffff000u);
}

/// erf(z).
MP_INLINE float erfF(float z) {
  float a = absF(z);
  float small = z * erfSmallOverZ(selectF(a > 1.0f, 1.0f, a));
  // erfc is 0 in f32 past 10.06; clamping keeps infinities out of it.
  float b = selectF(a < 1.0f, 1.0f, selectF(a > 12.0f, 12.0f, a));
  float h = high12(b);
  float tail = erfcLarge(b, h * h, (b - h) * (b + h));
  float large = withSignOf(1.0f - tail, z);
  return selectF(a <= 1.0f, small, large);
}

/// erfc(z) e^(z^2) / t with t = 1 / (1 + z / 2), for z >= 0 (|x| / sqrt 2
/// up to 17 / sqrt 2): a degree-10 polynomial in t, fitted for relative
/// error (3.4e-8 with these f32 coefficients; its terms never cancel by
/// more than a factor of 2.2). It runs from 1 at z = 0 to 1 / (2 sqrt pi)
/// as z grows.
MP_INLINE float erfcxOverT(float t) {
  float p = 3.911756352e-02f;
  p = fmaF(p, t, -2.106787413e-01f);
  p = fmaF(p, t, 4.318269193e-01f);
  p = fmaF(p, t, -3.639399707e-01f);
  p = fmaF(p, t, 4.766031727e-02f);
  p = fmaF(p, t, -7.719788235e-03f);
  p = fmaF(p, t, 7.272148877e-02f);
  p = fmaF(p, t, 1.807397306e-01f);
  p = fmaF(p, t, 2.460083514e-01f);
  p = fmaF(p, t, 2.821723223e-01f);
  p = fmaF(p, t, 2.820918262e-01f);
  return p;
}

/// The standard normal CDF and density at x: cdf = 0.5 (1 + erf(x /
/// sqrt 2)) and pdf = e^(-x^2 / 2) / sqrt(2 pi), sharing the exponential.
/// 1 - cdf(|x|) = 0.5 erfc(|x| / sqrt 2) = (t / 2) erfcxOverT(t)
/// e^(-x^2 / 2) has no cancellation, so negative x, where the formula
/// above loses every bit, is as accurate as positive; the exponent -x^2 / 2 is
/// split into the exact square of x's first 12 bits and a small remainder
/// (rounding x^2 would cost x^2 ulps).
template <typename T> struct CdfPdf { T cdf, pdf; };
MP_INLINE CdfPdf<float> normalCdfPdfF(float x) {
  float ax = absF(x);
  // Past 17 the tail is below f32's smallest subnormal; the clamp keeps
  // infinities out (NaN passes through).
  float b = selectF(ax > 17.0f, 17.0f, ax);
  // 1 / (1 + b / 2 sqrt 2)
  float t = 1.0f / fmaF(b, 0.35355339059327376f, 1.0f);
  float h = high12(b);
  float e = expSumF(-0.5f * (h * h), -0.5f * ((b - h) * (b + h)));
  float tail = (0.5f * t * erfcxOverT(t)) * e; // 0.5 erfc(b / sqrt 2)
  return {selectF(x < 0.0f, tail, 1.0f - tail), 0.39894228040143268f * e};
}

/// The standard normal CDF.
MP_INLINE float normalCdfF(float x) { return normalCdfPdfF(x).cdf; }

/// tanh(x).
MP_INLINE float tanhF(float x) {
  float a = absF(x);
  // tanh x / x, its Maclaurin series to x^20 (the next term is below 1e-11
  // at |x| = 1/2).
  float s = x * x;
  float p = 9.69153796e-05f;
  p = fmaF(p, s, -2.39129114e-04f);
  p = fmaF(p, s, 5.90027441e-04f);
  p = fmaF(p, s, -1.45583439e-03f);
  p = fmaF(p, s, 3.59212804e-03f);
  p = fmaF(p, s, -8.86323553e-03f);
  p = fmaF(p, s, 2.18694885e-02f);
  p = fmaF(p, s, -5.39682540e-02f);
  p = fmaF(p, s, 1.33333333e-01f);
  p = fmaF(p, s, -3.33333333e-01f);
  p = fmaF(p, s, 1.0f);
  float small = x * p;
  // 1 - 2 / (e^2a + 1): 1 once e^2a overflows (a past 44), as it must.
  float large = withSignOf(1.0f - 2.0f / (expF(2.0f * a) + 1.0f), x);
  return selectF(a < 0.5f, small, large);
}

/// e[k] = expF(x[k] - shift) for k < n, compiled for the CPU's vector
/// instructions (Elementwise.cpp).
void expShifted(const float *x, float shift, float *e, int64_t n);

/// The kernels' functions by compute type: these for float, libm's for
/// double.
MP_INLINE float mathExp(float x) { return expF(x); }
MP_INLINE double mathExp(double x) { return std::exp(x); }
MP_INLINE float mathTanh(float x) { return tanhF(x); }
MP_INLINE double mathTanh(double x) { return std::tanh(x); }
MP_INLINE float mathErf(float x) { return erfF(x); }
MP_INLINE double mathErf(double x) { return std::erf(x); }
MP_INLINE float mathNormalCdf(float x) { return normalCdfF(x); }
MP_INLINE double mathNormalCdf(double x) {
  return 0.5 * std::erfc(-x * 0.70710678118654752440);
}
MP_INLINE CdfPdf<float> mathNormalCdfPdf(float x) {
  return normalCdfPdfF(x);
}
MP_INLINE CdfPdf<double> mathNormalCdfPdf(double x) {
  return {mathNormalCdf(x), 0.39894228040143268 * std::exp(-0.5 * x * x)};
}

/// GELU's tanh approximation, 0.5 x (1 + tanh u) with u = sqrt(2 / pi)
/// (x + 0.044715 x^3), as x s with s = 0.5 (1 + tanh u) the logistic
/// function of 2u: one exponential and one division, and no cancellation
/// where tanh u nears -1. With e = e^(-2 |u|), which never overflows,
/// s = 1 / (1 + e) and 1 - s = e / (1 + e) for u >= 0, the other way round
/// below.
template <typename T> struct Logistic {
  T s, complement; // s and 1 - s, each without cancellation
};
template <typename T> MP_INLINE Logistic<T> logisticOf2u(T u) {
  T e = mathExp(T(-2) * std::fabs(u));
  T r = T(1) / (T(1) + e);
  T er = e * r;
  bool up = u >= T(0); // selects, not a branch: the loops must vectorise
  return {selectF(up, r, er), selectF(up, er, r)};
}
template <typename T> MP_INLINE T geluTanhInner(T x) {
  return T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
}
template <typename T> MP_INLINE T geluTanh(T x) {
  return x * logisticOf2u(geluTanhInner(x)).s;
}

/// dy times GELU-tanh's derivative at x: s + 2 x s (1 - s) du/dx.
template <typename T> MP_INLINE T geluTanhGrad(T dy, T x) {
  Logistic<T> l = logisticOf2u(geluTanhInner(x));
  T du = T(0.79788456080286535588) * (T(1) + T(3 * 0.044715) * x * x);
  return dy * (l.s + T(2) * x * l.s * l.complement * du);
}

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_MATH_H
