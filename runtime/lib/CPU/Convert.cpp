//===- Convert.cpp - exact f32 <-> f16/bf16 conversions -------------------===//
//
// Integer implementations of IEEE round-to-nearest-even, independent of the
// host's floating-point environment (no reliance on F16C, on the rounding
// mode, or on denormals being kept). test/Runtime checks them exhaustively
// against a table-based reference. Bulk conversions between f32, f16 and
// bf16 (mpConvert, every tg.cast) go through the vectorised versions in
// Vector.cpp, which give the same bits.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Elements.h"
#include "Tiles.h"

#include <cstring>

static uint32_t bitsOf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  return x;
}

static float floatOf(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof(f));
  return f;
}

extern "C" uint16_t mpF32ToF16(float value) {
  uint32_t x = bitsOf(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) // NaN: keep the top payload bits, force quiet.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) // >= 65520 rounds to infinity (and infinity).
    return static_cast<uint16_t>(sign | 0x7c00u);
  int32_t exp = static_cast<int32_t>(abs >> 23) - 127;
  uint32_t mant = abs & 0x7fffffu;
  if (exp >= -14) {
    // Normal f16: keep 10 mantissa bits, round the 13 dropped ones.
    uint32_t half = (static_cast<uint32_t>(exp + 15) << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
      ++half; // may carry into the exponent, which is the right result
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal f16 (or zero): the value in units of 2^-24.
  if (exp < -25)
    return static_cast<uint16_t>(sign);
  uint32_t full = mant | 0x800000u; // 1.mant as an integer, times 2^-23
  uint32_t shift = static_cast<uint32_t>(-exp - 14 + 13);
  uint32_t half = full >> shift;
  uint32_t rest = full & ((1u << shift) - 1u);
  uint32_t mid = 1u << (shift - 1);
  if (rest > mid || (rest == mid && (half & 1u)))
    ++half; // may become the smallest normal, which is right
  return static_cast<uint16_t>(sign | half);
}

extern "C" float mpF16ToF32(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) // infinity or NaN
    return floatOf(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return floatOf(sign);
    // Subnormal: normalise.
    int32_t e = -14;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --e;
    }
    mant &= 0x3ffu;
    return floatOf(sign | (static_cast<uint32_t>(e + 127) << 23) |
                   (mant << 13));
  }
  return floatOf(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

extern "C" uint16_t mpF32ToBF16(float value) {
  uint32_t x = bitsOf(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: quiet, keep sign and payload
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

extern "C" float mpBF16ToF32(uint16_t bits) {
  return floatOf(static_cast<uint32_t>(bits) << 16);
}

extern "C" mpStatus mpConvert(const void *src, mpElementType srcType,
                              void *dst, mpElementType dstType,
                              int64_t count) {
  using namespace mp::rt;
  if (!mpElementSize(srcType) || !mpElementSize(dstType) || count < 0 ||
      (count > 0 && (!src || !dst)))
    return MP_ERROR_INVALID_ARGUMENT;
  if (srcType == dstType && src == dst)
    return MP_OK; // in place: nothing to convert
  if (!isFloatType(srcType) || !isFloatType(dstType)) {
    for (int64_t i = 0; i < count; ++i)
      storeAny(dst, dstType, i, loadAny(src, srcType, i));
    return MP_OK;
  }
  if (libraryKernelsEnabled() && isTileType(srcType) && isTileType(dstType)) {
    forEachTile(count, 16, [&](int64_t i, int64_t n) {
      // One side f32 (every cast AMP inserts): convert straight between
      // the buffers, without the tile in between.
      if (srcType == MP_F32)
        return storeF32(static_cast<const float *>(src) + i, n, dst, dstType,
                        i);
      if (dstType == MP_F32)
        return loadF32(src, srcType, i, n, static_cast<float *>(dst) + i);
      float x[kTile];
      loadF32(src, srcType, i, n, x);
      storeF32(x, n, dst, dstType, i);
    });
    return MP_OK;
  }
  // f64 -> f16/bf16 rounds once: store() goes through f32 by round-to-odd.
  for (int64_t i = 0; i < count; ++i)
    store(dst, dstType, i, load(src, srcType, i));
  return MP_OK;
}
