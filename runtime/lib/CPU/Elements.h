//===- Elements.h - element access for the CPU kernels ----------*- C++ -*-===//
//
// Loading any floating-point storage type as f32 and storing f32 back with
// the runtime's exact conversions. Kernels compute in f32 (or f64) and use
// these at the edges, so every storage type goes through one definition of
// rounding.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_ELEMENTS_H
#define MP_RUNTIME_CPU_ELEMENTS_H

#include "mp/Runtime/MPRuntime.h"

#include "../Checks.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mp::rt {


inline double load(const void *data, mpElementType type, int64_t i) {
  switch (type) {
  case MP_F32:
    return static_cast<const float *>(data)[i];
  case MP_F16:
    return mpF16ToF32(static_cast<const uint16_t *>(data)[i]);
  case MP_BF16:
    return mpBF16ToF32(static_cast<const uint16_t *>(data)[i]);
  case MP_F64:
    return static_cast<const double *>(data)[i];
  default:
    return 0;
  }
}

/// Stores `value` (already rounded to f32 unless the storage is f64).
/// `value` rounded to f32 by round-to-odd (towards zero, then the last bit
/// set if anything was dropped). Rounding that to f16 or bf16 to nearest
/// gives the correctly rounded f64 -> f16/bf16 conversion, which a plain
/// f64 -> f32 -> f16 chain does not (it can round twice).
inline float roundToOddF32(double value) {
  float f = static_cast<float>(value);
  if (static_cast<double>(f) == value || f != f)
    return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(value))
    f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof(bits));
  return f;
}

inline void store(void *data, mpElementType type, int64_t i, double value) {
  switch (type) {
  case MP_F32:
    static_cast<float *>(data)[i] = static_cast<float>(value);
    break;
  case MP_F16:
    static_cast<uint16_t *>(data)[i] = mpF32ToF16(roundToOddF32(value));
    break;
  case MP_BF16:
    static_cast<uint16_t *>(data)[i] = mpF32ToBF16(roundToOddF32(value));
    break;
  case MP_F64:
    static_cast<double *>(data)[i] = value;
    break;
  default:
    break;
  }
}

/// An element of any type: integers and i1 exactly, floating-point values
/// as double.
struct AnyValue {
  bool integer;
  int64_t i;
  double f;
};

inline AnyValue loadAny(const void *data, mpElementType type, int64_t i) {
  switch (type) {
  case MP_I1: return {true, static_cast<const uint8_t *>(data)[i] != 0, 0};
  case MP_I32: return {true, static_cast<const int32_t *>(data)[i], 0};
  case MP_I64: return {true, static_cast<const int64_t *>(data)[i], 0};
  default: return {false, 0, load(data, type, i)};
  }
}

/// Stores `v` converted to `type` (mpConvert's rules: integers truncate
/// and saturate, NaN giving 0; i1 is v != 0).
inline void storeAny(void *data, mpElementType type, int64_t i, AnyValue v) {
  auto toInteger = [&](int64_t lo, int64_t hi) -> int64_t {
    if (v.integer)
      return v.i < lo ? lo : v.i > hi ? hi : v.i;
    if (v.f != v.f)
      return 0;
    if (v.f <= double(lo))
      return lo;
    if (v.f >= double(hi))
      return hi;
    return static_cast<int64_t>(v.f);
  };
  switch (type) {
  case MP_I1:
    static_cast<uint8_t *>(data)[i] = v.integer ? v.i != 0 : v.f != 0;
    return;
  case MP_I32:
    static_cast<int32_t *>(data)[i] =
        static_cast<int32_t>(toInteger(INT32_MIN, INT32_MAX));
    return;
  case MP_I64:
    static_cast<int64_t *>(data)[i] = toInteger(INT64_MIN, INT64_MAX);
    return;
  default:
    store(data, type, i, v.integer ? double(v.i) : v.f);
    return;
  }
}

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_ELEMENTS_H
