//===- Tiles.h - the tile loop of the fast elementwise paths ----*- C++ -*-===//
//
// forEachTile splits [0, n) into tiles of kTile elements, spread over threads
// in contiguous ranges. An Operand reads a tile of a tensor that broadcasts
// to the output in one of the shapes element-wise steps produce: the whole
// output, a repeated suffix (a bias row), a repeated prefix element (a
// per-row statistic [N, 1]) or both (index (i / inner) % period); any
// other broadcast is read a run of the output's last dimension at a time.
// laneReduce is the order in which row kernels (softmax, layer norm) and
// their reference loops sum a row.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_TILES_H
#define MP_RUNTIME_CPU_TILES_H

#include "Parallel.h"
#include "Vector.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <vector>

namespace mp::rt {

/// Calls `body(begin, length)` for each tile of [0, n); `tilesPerThread` is
/// the work worth a thread, in tiles.
template <typename Body>
void forEachTile(int64_t n, int64_t tilesPerThread, Body &&body) {
  int64_t tiles = (n + kTile - 1) / kTile;
  parallelFor(tiles, tilesPerThread, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t i = t * kTile;
      body(i, n - i < kTile ? n - i : kTile);
    }
  });
}

/// A tensor read through broadcast strides as output element i ->
/// element (i / inner) % period, or, for any other broadcast (`general`),
/// through its strides per output dimension, a run of the innermost
/// dimension at a time.
struct Operand {
  /// How elements become a tile's floats: converted to f32 by default;
  /// loadBits32 for moves that must keep every bit.
  void (*read)(const void *data, mpElementType t, int64_t offset, int64_t n,
               float *out) = loadF32;
  const mpTensor *t = nullptr;
  int64_t inner = 1, period = 1;
  bool general = false;
  const mpTensor *out = nullptr;
  int64_t strides[MP_MAX_RANK] = {};

  /// Fits `strides` (per output dimension, 0 where `t` broadcasts) to the
  /// (i / inner) % period form, else takes the general one.
  void init(const mpTensor *tensor, const mpTensor &result,
            const int64_t *steps) {
    general = !fit(tensor, result, steps);
    out = &result;
    for (int32_t d = 0; d < result.rank; ++d)
      strides[d] = steps[d];
  }

  bool fit(const mpTensor *tensor, const mpTensor &out,
           const int64_t *strides) {
    t = tensor;
    int32_t d = out.rank - 1;
    inner = 1;
    for (; d >= 0 && (strides[d] == 0 || out.shape[d] == 1); --d)
      inner *= out.shape[d];
    period = 1;
    for (; d >= 0 && (strides[d] == period || out.shape[d] == 1); --d)
      period *= out.shape[d];
    for (; d >= 0 && (strides[d] == 0 || out.shape[d] == 1); --d)
      ;
    return d < 0;
  }

  /// Output elements [i, i + n) where they lie, when `t` is stored as f32
  /// and they are one run of it; null otherwise (load converts them).
  const float *direct(int64_t i, int64_t n) const {
    if (general || t->elementType != MP_F32 || inner != 1 ||
        i % period + n > period)
      return nullptr;
    return static_cast<const float *>(t->data) + i % period;
  }

  /// Output elements [i, i + n) into `x` as f32.
  void load(int64_t i, int64_t n, float *x) const {
    if (general)
      return loadRuns(i, n, x);
    if (inner == 1 && period >= n && i % period + n <= period) {
      read(t->data, t->elementType, i % period, n, x);
      return;
    }
    for (int64_t j = 0; j < n;) {
      int64_t q = (i + j) / inner, r = (i + j) % inner;
      if (inner == 1) {
        // A run of consecutive elements up to the end of the period.
        int64_t at = q % period, run = period - at;
        if (run > n - j)
          run = n - j;
        read(t->data, t->elementType, at, run, x + j);
        j += run;
        continue;
      }
      float v;
      read(t->data, t->elementType, q % period, 1, &v);
      int64_t run = inner - r;
      if (run > n - j)
        run = n - j;
      for (int64_t k = 0; k < run; ++k)
        x[j + k] = v;
      j += run;
    }
  }

  /// The general form: per run of the output's last dimension, the
  /// operand's offset from the leading coordinates, then a contiguous load
  /// or a repeated value. A contiguous operand's last stride is 1, or 0
  /// where it broadcasts, so there is no other case.
  void loadRuns(int64_t i, int64_t n, float *x) const {
    int32_t last = out->rank - 1;
    int64_t len = last >= 0 ? out->shape[last] : 1;
    int64_t step = last >= 0 ? strides[last] : 0;
    for (int64_t j = 0; j < n;) {
      int64_t row = (i + j) / len, col = (i + j) % len;
      int64_t at = 0, rest = row;
      for (int32_t d = last - 1; d >= 0; --d) {
        at += (rest % out->shape[d]) * strides[d];
        rest /= out->shape[d];
      }
      int64_t run = std::min(len - col, n - j);
      if (step != 0) {
        read(t->data, t->elementType, at + col, run, x + j);
      } else {
        float v;
        read(t->data, t->elementType, at, 1, &v);
        for (int64_t k = 0; k < run; ++k)
          x[j + k] = v;
      }
      j += run;
    }
  }
};

/// A thread's scratch row of `n` floats (grown on demand, reused); slot is
/// below 6.
inline float *scratchRow(int slot, int64_t n) {
  thread_local std::vector<float> rows[6];
  if (int64_t(rows[slot].size()) < n)
    rows[slot].resize(n);
  return rows[slot].data();
}

/// Whether the storage of `out` overlaps that of any of `inputs`.
inline bool overlapsAny(const mpTensor *out,
                        std::initializer_list<const mpTensor *> inputs) {
  for (const mpTensor *t : inputs)
    if (!disjoint(out, t))
      return true;
  return false;
}

/// Elements [offset, offset + n) of `t` as f32: t's own when it is stored
/// as f32, otherwise converted into `buf`.
inline const float *rowF32(const mpTensor *t, int64_t offset, int64_t n,
                           float *buf) {
  if (t->elementType == MP_F32)
    return static_cast<const float *>(t->data) + offset;
  loadF32(t->data, t->elementType, offset, n, buf);
  return buf;
}

/// Where a row kernel writes elements [offset, ...) of `out`: out's own when
/// it is stored as f32 and overlaps none of `inputs` (which the kernel reads
/// while it writes, through __restrict pointers), otherwise `buf`, which
/// storeRowF32 then rounds into `out`.
inline float *outRowF32(mpTensor *out, int64_t offset, float *buf,
                        std::initializer_list<const mpTensor *> inputs) {
  if (out->elementType != MP_F32 || overlapsAny(out, inputs))
    return buf;
  return static_cast<float *>(out->data) + offset;
}
inline void storeRowF32(const float *row, int64_t n, mpTensor *out,
                        int64_t offset) {
  if (out->elementType != MP_F32 ||
      row != static_cast<float *>(out->data) + offset)
    storeF32(row, n, out->data, out->elementType, offset);
}

/// Whether a kernel computing in f32 may take its fast path on `tensors`:
/// the fast kernels are on and every tensor is f32, f16 or bf16.
inline bool f32FastPath(mpElementType compute,
                        std::initializer_list<const mpTensor *> tensors) {
  if (!libraryKernelsEnabled() || compute != MP_F32)
    return false;
  for (const mpTensor *t : tensors)
    if (!isTileType(t->elementType))
      return false;
  return true;
}

/// Rows of `len` elements worth a thread in a row-by-row kernel.
inline int64_t rowGrain(int64_t len) {
  return std::max<int64_t>(1, 4 * kTile / (len + 1));
}

/// Reduces get(0), ..., get(len - 1) with `op` in kLanes interleaved lanes:
/// element k goes to lane k % kLanes, each lane in order from `init`, and
/// the lanes are combined pairwise, ((0 1) (2 3)) ((4 5) (6 7)). A loop
/// of independent chains, where one running sum waits a whole add latency
/// per element; the fast paths' lanes compile to a vector register or two.
constexpr int kLanes = 8;
template <typename T, typename Get, typename Op>
inline T laneReduce(int64_t len, T init, Get get, Op op) {
  T acc[kLanes];
  for (int j = 0; j < kLanes; ++j)
    acc[j] = init;
  int64_t k = 0;
  for (; k + kLanes <= len; k += kLanes)
    for (int j = 0; j < kLanes; ++j)
      acc[j] = op(acc[j], get(k + j));
  for (; k < len; ++k)
    acc[k % kLanes] = op(acc[k % kLanes], get(k));
  for (int w = 1; w < kLanes; w *= 2)
    for (int j = 0; j < kLanes; j += 2 * w)
      acc[j] = op(acc[j], acc[j + w]);
  return acc[0];
}

/// std::max's order: NaNs are passed over, as in the softmax loops.
template <typename T> inline T maxOf(T a, T b) { return a < b ? b : a; }

/// acc[j] combined with x[j], for j < n, as the reduction loops combine:
/// a sum, or a maximum that a NaN wins.
inline void addRow(float *__restrict acc, const float *__restrict x,
                   int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    acc[j] = acc[j] + x[j];
}
inline void maxRow(float *__restrict acc, const float *__restrict x,
                   int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    acc[j] = std::isnan(x[j]) || x[j] > acc[j] ? x[j] : acc[j];
}

/// laneReduce's kLanes f32 lanes as one value (the vector extension of GCC
/// and Clang), for the row kernels: each step of the eight chains is then
/// one vector instruction. GCC vectorised laneReduce over a lambda with
/// shuffles between lanes instead, which made a layer-norm gradient row
/// take 2.6x as long. The functions below are laneReduce over values in
/// memory, in its order, so the bits are laneReduce's. Taken and passed by
/// reference: a vector argument's ABI depends on the target.
typedef float F32Lanes __attribute__((vector_size(kLanes * sizeof(float))));

inline void loadLanes(F32Lanes &v, const float *p) {
  std::memcpy(&v, p, sizeof(v));
}
inline void storeLanes(float *p, const F32Lanes &v) {
  std::memcpy(p, &v, sizeof(v));
}

/// laneReduce's end, from lanes `acc` that hold elements [0, k): the rest,
/// [k, n), into their lanes, then the pairwise combination.
template <typename Get, typename Op>
inline float finishLanes(const F32Lanes &acc, int64_t k, int64_t n, Get get,
                         Op op) {
  float lane[kLanes];
  std::memcpy(lane, &acc, sizeof(lane));
  for (; k < n; ++k)
    lane[k % kLanes] = op(lane[k % kLanes], get(k));
  for (int w = 1; w < kLanes; w *= 2)
    for (int j = 0; j < kLanes; j += 2 * w)
      lane[j] = op(lane[j], lane[j + w]);
  return lane[0];
}

/// The sum of a[0, n) in laneReduce's order.
inline float laneSum(const float *a, int64_t n) {
  F32Lanes acc = {}, v;
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    loadLanes(v, a + k);
    acc = acc + v;
  }
  return finishLanes(
      acc, k, n, [a](int64_t i) { return a[i]; }, std::plus<float>());
}

/// The sum of a[k] * b[k] in laneReduce's order.
inline float laneDot(const float *a, const float *b, int64_t n) {
  F32Lanes acc = {}, u, v;
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    loadLanes(u, a + k);
    loadLanes(v, b + k);
    acc = acc + u * v;
  }
  return finishLanes(
      acc, k, n, [a, b](int64_t i) { return a[i] * b[i]; },
      std::plus<float>());
}

/// The sum of (a[k] - mean)^2 in laneReduce's order.
inline float laneSquares(const float *a, float mean, int64_t n) {
  F32Lanes acc = {}, v;
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    loadLanes(v, a + k);
    F32Lanes d = v - mean;
    acc = acc + d * d;
  }
  return finishLanes(
      acc, k, n,
      [a, mean](int64_t i) {
        float d = a[i] - mean;
        return d * d;
      },
      std::plus<float>());
}

/// The maximum of a[0, n) (maxOf, from -inf) in laneReduce's order.
inline float laneMax(const float *a, int64_t n) {
  F32Lanes acc, v;
  for (int j = 0; j < kLanes; ++j)
    acc[j] = -INFINITY;
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    loadLanes(v, a + k);
    acc = acc < v ? v : acc;
  }
  return finishLanes(
      acc, k, n, [a](int64_t i) { return a[i]; }, maxOf<float>);
}

/// The statistics of a batch-norm channel v[0, n) (NCHW), as its reference
/// loops take them: the mean of a sum taken in order, then the sum of
/// squared deviations from it, in order.
inline void meanAndSquares(const float *v, int64_t n, float &mean,
                           float &squares) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum = sum + v[i];
  mean = sum / float(n);
  squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    float d = v[i] - mean;
    squares = squares + d * d;
  }
}

/// Whether `compute` rounds values of type `t` (it is f16 or bf16 and not t).
inline bool roundsFrom(mpElementType compute, mpElementType t) {
  return (compute == MP_F16 || compute == MP_BF16) && compute != t;
}

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_TILES_H
