//===- Compute.h - arithmetic in a compute type -----------------*- C++ -*-===//
//
// `Arith<T>` evaluates in T (float for f32/f16/bf16 compute, double for f64)
// and rounds each result to the compute type when it is f16 or bf16, so a
// kernel written once honours every compute type.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_COMPUTE_H
#define MP_RUNTIME_CPU_COMPUTE_H

#include "Elements.h"
#include "Math.h"

#include <cmath>

namespace mp::rt {

template <typename T>
struct Arith {
  mpElementType compute;

  T r(T x) const {
    if (compute == MP_F16)
      return mpF16ToF32(mpF32ToF16(float(x)));
    if (compute == MP_BF16)
      return mpBF16ToF32(mpF32ToBF16(float(x)));
    return x;
  }
  T in(const mpTensor *t, int64_t i) const {
    return r(T(load(t->data, t->elementType, i)));
  }
  void out(mpTensor *t, int64_t i, T v) const {
    store(t->data, t->elementType, i, v);
  }
  T add(T a, T b) const { return r(a + b); }
  T sub(T a, T b) const { return r(a - b); }
  T mul(T a, T b) const { return r(a * b); }
  T div(T a, T b) const { return r(a / b); }
  T exp(T a) const { return r(mathExp(a)); }
  T log(T a) const { return r(std::log(a)); }
  T sqrt(T a) const { return r(std::sqrt(a)); }
};

/// Runs `body(Arith<T>)` with T = double for f64 compute, float otherwise.
template <typename Body>
void withCompute(mpElementType compute, Body body) {
  if (compute == MP_F64)
    body(Arith<double>{compute});
  else
    body(Arith<float>{compute});
}

/// The view [outer, len, inner] of a tensor around `axis`.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
  bool init(const mpTensor *t, int64_t axis) {
    if (axis < 0 || axis >= t->rank)
      return false;
    for (int32_t d = 0; d < t->rank; ++d)
      (d < axis ? outer : d == axis ? len : inner) *= t->shape[d];
    return true;
  }
  int64_t index(int64_t o, int64_t k, int64_t i) const {
    return (o * len + k) * inner + i;
  }
};

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_COMPUTE_H
