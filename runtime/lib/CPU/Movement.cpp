//===- Movement.cpp - data movement on the CPU ----------------------------===//
//
// Byte copies with index arithmetic: these ops move elements of any type
// unchanged. gather_grad is the exception: it accumulates, in the compute
// type. Transposes and broadcasts, with the fast kernels on, copy whole
// output rows with a typed strided loop, rows split across threads; a
// transpose that moves the last dimension goes by 32 x 32 blocks instead.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Compute.h"
#include "Parallel.h"
#include "Vector.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace mp::rt;

namespace {

bool validAny(const mpTensor *t) {
  return t && (t->data || mpNumElements(t) == 0) &&
         mpElementSize(t->elementType) > 0 && mpNumElements(t) >= 0;
}

int64_t idAt(const mpTensor *ids, int64_t i) {
  return ids->elementType == MP_I32 ? static_cast<const int32_t *>(ids->data)[i]
                                    : static_cast<const int64_t *>(ids->data)[i];
}

bool validIds(const mpTensor *ids) {
  return ids && ids->data &&
         (ids->elementType == MP_I32 || ids->elementType == MP_I64) &&
         mpNumElements(ids) >= 0;
}

/// Element k of a buffer, as the unsigned integer E of the element's size.
/// The copies below move float (or any) storage unchanged; reading and
/// writing it through memcpy keeps them clear of type-based aliasing, and
/// the compiler turns each into one load or store.
template <typename E> inline E loadBits(const void *p, int64_t k) {
  E v;
  std::memcpy(&v, static_cast<const char *>(p) + k * sizeof(E), sizeof(E));
  return v;
}
template <typename E> inline void storeBits(void *p, int64_t k, E v) {
  std::memcpy(static_cast<char *>(p) + k * sizeof(E), &v, sizeof(E));
}

/// Row-major strides of `t`, in elements.
void strides(const mpTensor *t, int64_t *s) {
  int64_t acc = 1;
  for (int32_t d = t->rank - 1; d >= 0; --d) {
    s[d] = acc;
    acc *= t->shape[d];
  }
}

/// Copies `n` elements of type E from `src` (every `stride` elements; 0
/// repeats one) to consecutive `dst`.
template <typename E>
void gatherRow(const void *src, int64_t stride, int64_t n, void *dst) {
  for (int64_t k = 0; k < n; ++k)
    storeBits<E>(dst, k, loadBits<E>(src, k * stride));
}

/// Copies `n` consecutive elements of type E from `src` to `dst`, every
/// `stride` elements.
template <typename E>
void scatterRow(const void *src, int64_t n, void *dst, int64_t stride) {
  for (int64_t k = 0; k < n; ++k)
    storeBits<E>(dst, k * stride, loadBits<E>(src, k));
}

/// Moves whole rows between a dense tensor `dense` and a strided view of
/// another buffer: `view` points at the view's first element, and output
/// dimension d of `dense` steps `step[d]` elements of it (0 where it
/// broadcasts). Gathers (view to dense) unless `scatter`. Rows are split
/// across threads; a scatter needs the view's elements to be distinct,
/// which a slice's positive strides give.
bool fastStridedRows(const mpTensor *dense, char *view, const int64_t *step,
                     bool scatter) {
  size_t size = mpElementSize(dense->elementType);
  int32_t rank = dense->rank;
  if (!libraryKernelsEnabled() || rank == 0 ||
      (size != 1 && size != 2 && size != 4 && size != 8))
    return false;
  int64_t len = dense->shape[rank - 1];
  int64_t stride = step[rank - 1];
  int64_t rows = len ? mpNumElements(dense) / len : 0;
  char *flat = static_cast<char *>(dense->data);
  parallelFor(rows, std::max<int64_t>(1, 8 * kTile / (len + 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  int64_t rest = r, at = 0;
                  for (int32_t d = rank - 2; d >= 0; --d) {
                    at += (rest % dense->shape[d]) * step[d];
                    rest /= dense->shape[d];
                  }
                  char *row = view + at * size;
                  char *line = flat + r * len * size;
                  if (stride == 1) {
                    if (scatter)
                      std::memcpy(row, line, len * size);
                    else
                      std::memcpy(line, row, len * size);
                  } else if (scatter) {
                    if (size == 2)
                      scatterRow<uint16_t>(line, len, row, stride);
                    else if (size == 4)
                      scatterRow<uint32_t>(line, len, row, stride);
                    else if (size == 8)
                      scatterRow<uint64_t>(line, len, row, stride);
                    else
                      scatterRow<uint8_t>(line, len, row, stride);
                  } else if (size == 2) {
                    gatherRow<uint16_t>(row, stride, len, line);
                  } else if (size == 4) {
                    gatherRow<uint32_t>(row, stride, len, line);
                  } else if (size == 8) {
                    gatherRow<uint64_t>(row, stride, len, line);
                  } else {
                    gatherRow<uint8_t>(row, stride, len, line);
                  }
                }
              });
  return true;
}

/// Copies `in` to `out` where output dimension d steps `from[d]` elements
/// of `in` (0 where it broadcasts).
bool fastStridedCopy(const mpTensor *in, mpTensor *out, const int64_t *from) {
  if (!disjoint(in, out))
    return false;
  return fastStridedRows(out, static_cast<char *>(in->data), from,
                         /*scatter=*/false);
}

#ifdef MP_X86
/// Transposes the 8 x 8 block of 32-bit elements at `in` (rows `ldIn`
/// elements apart) into `out` (rows `ldOut` apart) in AVX registers:
/// unpacks, shuffles and lane permutes, which move bits unchanged.
__attribute__((target("avx2"))) inline void
transpose8x8x32(const char *in, int64_t ldIn, char *out, int64_t ldOut) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i)
    r[i] = _mm256_loadu_ps(reinterpret_cast<const float *>(in + i * ldIn * 4));
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(reinterpret_cast<float *>(out + i * ldOut * 4),
                     _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float *>(out + (i + 4) * ldOut * 4),
                     _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}

/// The same for 16-bit elements, in SSE registers: unpacks of 16, 32 and
/// 64-bit parts.
__attribute__((target("avx2"))) inline void
transpose8x8x16(const char *in, int64_t ldIn, char *out, int64_t ldOut) {
  __m128i a[8], b[8], c[8];
  for (int i = 0; i < 8; ++i)
    a[i] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i * ldIn * 2));
  for (int i = 0; i < 8; i += 2) {
    b[i] = _mm_unpacklo_epi16(a[i], a[i + 1]);
    b[i + 1] = _mm_unpackhi_epi16(a[i], a[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    c[i] = _mm_unpacklo_epi32(b[i], b[i + 2]);
    c[i + 1] = _mm_unpackhi_epi32(b[i], b[i + 2]);
    c[i + 2] = _mm_unpacklo_epi32(b[i + 1], b[i + 3]);
    c[i + 3] = _mm_unpackhi_epi32(b[i + 1], b[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + 2 * i * ldOut * 2),
                     _mm_unpacklo_epi64(c[i], c[i + 4]));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + (2 * i + 1) * ldOut * 2),
                     _mm_unpackhi_epi64(c[i], c[i + 4]));
  }
}

/// Transposes an [nr, nc] block of E (2 or 4 bytes) from `in` (rows `ldIn`
/// elements apart) into `out` (rows `ldOut` apart) by 8 x 8 register
/// transposes, the ragged edges element by element.
template <typename E>
__attribute__((target("avx2"))) void
transposeTileAvx2(const char *in, int64_t ldIn, char *out, int64_t ldOut,
                  int64_t nr, int64_t nc) {
  constexpr int64_t s = sizeof(E);
  static_assert(s == 2 || s == 4, "register transposes of 2 or 4 bytes");
  int64_t fr = nr & ~int64_t(7), fc = nc & ~int64_t(7);
  for (int64_t r = 0; r < fr; r += 8)
    for (int64_t c = 0; c < fc; c += 8) {
      const char *from = in + (r * ldIn + c) * s;
      char *to = out + (c * ldOut + r) * s;
      if constexpr (s == 4)
        transpose8x8x32(from, ldIn, to, ldOut);
      else
        transpose8x8x16(from, ldIn, to, ldOut);
    }
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t c = r < fr ? fc : 0; c < nc; ++c)
      std::memcpy(out + (c * ldOut + r) * s, in + (r * ldIn + c) * s, s);
}
#endif

/// One matrix of a batch of transposes: where it starts in the input and
/// where its transpose starts in the output, in elements.
struct MatrixAt {
  int64_t in, out;
};

/// Transposes `batch` [rows, cols] matrices of element type E into [cols,
/// rows]: matrix b starts at element at(b).in of `in`, its rows `ldIn`
/// elements apart and its columns adjacent, and its transpose at at(b).out
/// of `out`, rows `ldOut` apart. A 32 x 32 block at a time, so that both
/// the reads and the writes stay within a few cache lines (a row-at-a-time
/// gather reads one element per line). With AVX2, 2 and 4-byte elements
/// move by 8 x 8 register transposes; otherwise through a padded tile on
/// the stack, so that the block's rows are read and the transposed rows
/// written as runs of consecutive elements, the strided half of the move
/// staying in the tile. (Moving elements straight from one matrix to the
/// other writes 32 lines a row apart at once, which for a power-of-two row,
/// a [1024, 256] weight, fall in one set of the L1 cache and evict each
/// other.) Blocks of rows are split across threads.
template <typename E, typename At>
void transposeBlocks(const void *in, void *out, int64_t batch, int64_t rows,
                     int64_t cols, int64_t ldIn, int64_t ldOut, At at) {
  constexpr int64_t kBlock = 32;
  int64_t rowBlocks = (rows + kBlock - 1) / kBlock;
#ifdef MP_X86
  bool registers = sizeof(E) != 8 && cpuFeatures().avx2;
#endif
  parallelFor(batch * rowBlocks,
              std::max<int64_t>(1, 8 * kTile / (kBlock * (cols + 1))),
              [&](int64_t begin, int64_t end) {
                // Locals, so that the byte stores below cannot alias them
                // (a captured reference would be reloaded after each).
                const char *from = static_cast<const char *>(in);
                char *to = static_cast<char *>(out);
                const int64_t nRows = rows, nCols = cols, li = ldIn,
                              lo = ldOut;
                E tile[kBlock][kBlock + 1];
                for (int64_t t = begin; t < end; ++t) {
                  MatrixAt m = at(t / rowBlocks);
                  int64_t r0 = (t % rowBlocks) * kBlock;
                  int64_t nr = std::min(nRows - r0, kBlock);
                  for (int64_t c0 = 0; c0 < nCols; c0 += kBlock) {
                    int64_t nc = std::min(nCols - c0, kBlock);
                    int64_t src = m.in + r0 * li + c0;
                    int64_t dst = m.out + c0 * lo + r0;
#ifdef MP_X86
                    if constexpr (sizeof(E) != 8) {
                      if (registers) {
                        transposeTileAvx2<E>(from + src * sizeof(E), li,
                                             to + dst * sizeof(E), lo, nr,
                                             nc);
                        continue;
                      }
                    }
#endif
                    for (int64_t r = 0; r < nr; ++r)
                      for (int64_t c = 0; c < nc; ++c)
                        tile[c][r] = loadBits<E>(from, src + r * li + c);
                    for (int64_t c = 0; c < nc; ++c)
                      for (int64_t r = 0; r < nr; ++r)
                        storeBits<E>(to, dst + c * lo + r, tile[c][r]);
                  }
                }
              });
}

/// The permutations that move the input's last dimension, as a batch of
/// matrix transposes: each matrix's rows run along the output's last
/// dimension (`ldIn` apart in the input) and its columns along the one the
/// input's last dimension became (adjacent in the input, `ldOut` apart in
/// the output); the other dimensions make the batch. Swapping the last two
/// ([1, 0], [0, 2, 1], ...) is the simplest case; attention's keys
/// ([B, T, H, D] to [B, H, D, T], [0, 2, 3, 1]) and NHWC to NCHW and back
/// are others, which a row-at-a-time gather read one element per cache
/// line.
bool fastInnerTranspose(const mpTensor *in, mpTensor *out,
                        const int64_t *permutation) {
  int32_t rank = in->rank;
  size_t size = mpElementSize(in->elementType);
  if (!libraryKernelsEnabled() || rank < 2 || !disjoint(in, out) ||
      permutation[rank - 1] == rank - 1 ||
      (size != 2 && size != 4 && size != 8) || mpNumElements(out) == 0)
    return false;
  int64_t is[MP_MAX_RANK], os[MP_MAX_RANK];
  strides(in, is);
  strides(out, os);
  int32_t q = rank - 1, p = 0;
  while (permutation[p] != rank - 1)
    ++p;
  // The batch dimensions, innermost first, with their steps in both.
  int64_t dims[MP_MAX_RANK], inStep[MP_MAX_RANK], outStep[MP_MAX_RANK];
  int32_t nDims = 0;
  int64_t batch = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    if (d == p || d == q)
      continue;
    dims[nDims] = out->shape[d];
    inStep[nDims] = is[permutation[d]];
    outStep[nDims++] = os[d];
    batch *= out->shape[d];
  }
  auto at = [&](int64_t b) {
    MatrixAt m{0, 0};
    for (int32_t k = 0; k < nDims; ++k) {
      int64_t c = b % dims[k];
      b /= dims[k];
      m.in += c * inStep[k];
      m.out += c * outStep[k];
    }
    return m;
  };
  int64_t rows = out->shape[q], cols = out->shape[p];
  int64_t ldIn = is[permutation[q]], ldOut = os[p];
  if (size == 2)
    transposeBlocks<uint16_t>(in->data, out->data, batch, rows, cols, ldIn,
                              ldOut, at);
  else if (size == 4)
    transposeBlocks<uint32_t>(in->data, out->data, batch, rows, cols, ldIn,
                              ldOut, at);
  else
    transposeBlocks<uint64_t>(in->data, out->data, batch, rows, cols, ldIn,
                              ldOut, at);
  return true;
}

/// The strided view of `full` that a non-empty slice `part` reads (or its
/// gradient writes): returns its first element's offset, in elements, and
/// sets `step[d]`, the elements of `full` one step along dimension d of
/// `part` moves. The callers' bounds checks (sliceFits) keep every product
/// in range: (shape - 1) * stride + offset < full's shape. A dimension of
/// size 1 steps 0, since its stride (which those checks leave unbounded) is
/// never taken.
int64_t sliceView(const mpTensor *full, const mpTensor *part,
                  const int64_t *offsets, const int64_t *strides_,
                  int64_t *step) {
  int64_t fs[MP_MAX_RANK];
  strides(full, fs);
  int64_t base = 0;
  for (int32_t d = 0; d < full->rank; ++d) {
    base += offsets[d] * fs[d];
    step[d] = part->shape[d] == 1 ? 0 : (strides_ ? strides_[d] : 1) * fs[d];
  }
  return base;
}

/// Zeroes `t`, split across threads when it is large.
void zeroFill(mpTensor *t) {
  size_t bytes = size_t(mpNumElements(t)) * mpElementSize(t->elementType);
  constexpr size_t kChunk = size_t(1) << 18;
  char *data = static_cast<char *>(t->data);
  parallelFor(int64_t((bytes + kChunk - 1) / kChunk), 1,
              [&](int64_t begin, int64_t end) {
                size_t from = size_t(begin) * kChunk;
                size_t to = std::min(bytes, size_t(end) * kChunk);
                std::memset(data + from, 0, to - from);
              });
}

/// mpGatherGrad for f32 compute with the fast kernels on. The positions
/// of each id are grouped by a sort (ascending within an id), and each
/// touched row is summed in f32 in position order, the reference's order,
/// so the bits are the same, by one thread, and stored once; the other rows
/// are zeroed. The reference accumulates the whole table in a vector of its
/// own on one thread: for BERT's 30522 x 768 word embeddings that was 40 ms
/// of a step.
bool fastGatherGrad(const mpTensor *grad, const mpTensor *ids, mpTensor *table,
                    mpElementType compute) {
  if (!libraryKernelsEnabled() || compute != MP_F32 ||
      !isTileType(grad->elementType) || !isTileType(table->elementType) ||
      table->shape[0] == 0 || !disjoint(grad, table))
    return false;
  int64_t rows = table->shape[0];
  int64_t row = mpNumElements(table) / rows;
  // (id, position) of every id in range: sorted, each id's run lists its
  // positions in ascending order.
  std::vector<std::pair<int64_t, int64_t>> hits;
  hits.reserve(size_t(mpNumElements(ids)));
  for (int64_t i = 0, n = mpNumElements(ids); i < n; ++i) {
    int64_t id = idAt(ids, i);
    if (id < 0)
      id += rows;
    if (id >= 0 && id < rows)
      hits.push_back({id, i});
  }
  std::sort(hits.begin(), hits.end());
  std::vector<size_t> runs; // where each id's run starts, then the end
  for (size_t j = 0; j < hits.size(); ++j)
    if (j == 0 || hits[j].first != hits[j - 1].first)
      runs.push_back(j);
  runs.push_back(hits.size());
  zeroFill(table);
  int64_t runCount = int64_t(runs.size()) - 1;
  parallelFor(runCount, std::max<int64_t>(1, kTile / (row + 1)),
              [&](int64_t begin, int64_t end) {
                float acc[kTile], g[kTile];
                for (int64_t r = begin; r < end; ++r) {
                  int64_t id = hits[runs[r]].first;
                  for (int64_t c = 0; c < row; c += kTile) {
                    int64_t m = std::min(kTile, row - c);
                    std::fill(acc, acc + m, 0.0f);
                    for (size_t j = runs[r]; j < runs[r + 1]; ++j) {
                      loadF32(grad->data, grad->elementType,
                              hits[j].second * row + c, m, g);
                      for (int64_t k = 0; k < m; ++k)
                        acc[k] = acc[k] + g[k];
                    }
                    storeF32(acc, m, table->data, table->elementType,
                             id * row + c);
                  }
                }
              });
  return true;
}

} // namespace

extern "C" mpStatus mpGather(const mpTensor *table, const mpTensor *ids,
                             mpTensor *out) {
  if (!validAny(table) || table->rank < 1 || !validIds(ids) ||
      !validAny(out) || out->elementType != table->elementType ||
      out->rank != ids->rank + table->rank - 1)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t rows = table->shape[0];
  int64_t row = rows ? mpNumElements(table) / rows : 0;
  if (mpNumElements(out) != mpNumElements(ids) * row || rows == 0)
    return rows == 0 && mpNumElements(out) == 0 ? MP_OK
                                                : MP_ERROR_INVALID_ARGUMENT;
  size_t bytes = row * mpElementSize(table->elementType);
  for (int64_t i = 0, n = mpNumElements(ids); i < n; ++i) {
    int64_t id = idAt(ids, i);
    id = id < -rows ? 0 : id < 0 ? id + rows : id >= rows ? rows - 1 : id;
    std::memcpy(static_cast<char *>(out->data) + i * bytes,
                static_cast<const char *>(table->data) + id * bytes, bytes);
  }
  return MP_OK;
}

extern "C" mpStatus mpGatherGrad(const mpTensor *grad, const mpTensor *ids,
                                 mpTensor *table, mpElementType compute) {
  if (!validAny(grad) || !isFloatType(grad->elementType) || !validIds(ids) ||
      !validAny(table) || !isFloatType(table->elementType) ||
      table->rank < 1 || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t rows = table->shape[0];
  int64_t row = rows ? mpNumElements(table) / rows : 0;
  if (mpNumElements(grad) != mpNumElements(ids) * row)
    return MP_ERROR_INVALID_ARGUMENT;
  if (fastGatherGrad(grad, ids, table, compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    std::vector<T> acc(mpNumElements(table), T(0));
    for (int64_t i = 0, n = mpNumElements(ids); i < n; ++i) {
      int64_t id = idAt(ids, i);
      if (id < 0)
        id += rows;
      if (id < 0 || id >= rows)
        continue;
      for (int64_t k = 0; k < row; ++k)
        acc[id * row + k] = a.add(acc[id * row + k], a.in(grad, i * row + k));
    }
    for (size_t j = 0; j < acc.size(); ++j)
      a.out(table, j, acc[j]);
  });
  return MP_OK;
}

extern "C" mpStatus mpTranspose(const mpTensor *in, mpTensor *out,
                                const int64_t *permutation) {
  if (!validAny(in) || !validAny(out) || in->elementType != out->elementType ||
      in->rank != out->rank || (in->rank && !permutation))
    return MP_ERROR_INVALID_ARGUMENT;
  bool seen[MP_MAX_RANK] = {};
  for (int32_t d = 0; d < in->rank; ++d) {
    int64_t p = permutation[d];
    if (p < 0 || p >= in->rank || seen[p] || out->shape[d] != in->shape[p])
      return MP_ERROR_INVALID_ARGUMENT;
    seen[p] = true;
  }
  if (fastInnerTranspose(in, out, permutation))
    return MP_OK;
  int64_t is[MP_MAX_RANK];
  strides(in, is);
  int64_t from[MP_MAX_RANK];
  for (int32_t d = 0; d < in->rank; ++d)
    from[d] = is[permutation[d]];
  if (fastStridedCopy(in, out, from))
    return MP_OK;
  size_t size = mpElementSize(in->elementType);
  for (int64_t i = 0, n = mpNumElements(out); i < n; ++i) {
    int64_t rest = i, src = 0;
    for (int32_t d = out->rank - 1; d >= 0; --d) {
      src += (rest % out->shape[d]) * is[permutation[d]];
      rest /= out->shape[d];
    }
    std::memcpy(static_cast<char *>(out->data) + i * size,
                static_cast<const char *>(in->data) + src * size, size);
  }
  return MP_OK;
}

extern "C" mpStatus mpCopy(const mpTensor *in, mpTensor *out) {
  if (!validAny(in) || !validAny(out) || in->elementType != out->elementType ||
      mpNumElements(in) != mpNumElements(out))
    return MP_ERROR_INVALID_ARGUMENT;
  if (in->data == out->data)
    return MP_OK;
  size_t bytes = size_t(mpNumElements(in)) * mpElementSize(in->elementType);
  char *to = static_cast<char *>(out->data);
  const char *from = static_cast<const char *>(in->data);
  // Disjoint buffers (the usual case: a reshape into a buffer of its own)
  // are copied in chunks across threads; overlapping ones by one memmove.
  if (libraryKernelsEnabled() && disjoint(in, out)) {
    constexpr size_t kChunk = size_t(1) << 18;
    parallelFor(int64_t((bytes + kChunk - 1) / kChunk), 1,
                [&](int64_t begin, int64_t end) {
                  size_t lo = size_t(begin) * kChunk;
                  size_t hi = std::min(bytes, size_t(end) * kChunk);
                  std::memcpy(to + lo, from + lo, hi - lo);
                });
    return MP_OK;
  }
  std::memmove(to, from, bytes);
  return MP_OK;
}

extern "C" mpStatus mpBroadcastTo(const mpTensor *in, mpTensor *out) {
  if (!validAny(in) || !validAny(out) || in->elementType != out->elementType ||
      in->rank > out->rank)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t is[MP_MAX_RANK], step[MP_MAX_RANK];
  strides(in, is);
  int32_t off = out->rank - in->rank;
  for (int32_t d = 0; d < out->rank; ++d) {
    int64_t isz = d >= off ? in->shape[d - off] : 1;
    if (isz != out->shape[d] && isz != 1)
      return MP_ERROR_INVALID_ARGUMENT;
    step[d] = d >= off && isz != 1 ? is[d - off] : 0;
  }
  if (fastStridedCopy(in, out, step))
    return MP_OK;
  size_t size = mpElementSize(in->elementType);
  for (int64_t i = 0, n = mpNumElements(out); i < n; ++i) {
    int64_t rest = i, src = 0;
    for (int32_t d = out->rank - 1; d >= 0; --d) {
      src += (rest % out->shape[d]) * step[d];
      rest /= out->shape[d];
    }
    std::memcpy(static_cast<char *>(out->data) + i * size,
                static_cast<const char *>(in->data) + src * size, size);
  }
  return MP_OK;
}

extern "C" mpStatus mpConcat(int32_t count, const mpTensor *inputs,
                             mpTensor *out, int64_t axis) {
  if (count < 1 || !inputs || !validAny(out) || axis < 0 || axis >= out->rank)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t outer = 1, inner = 1, total = 0;
  for (int32_t d = 0; d < out->rank; ++d)
    if (d < axis)
      outer *= out->shape[d];
    else if (d > axis)
      inner *= out->shape[d];
  for (int32_t k = 0; k < count; ++k) {
    const mpTensor &t = inputs[k];
    if (!validAny(&t) || t.elementType != out->elementType ||
        t.rank != out->rank)
      return MP_ERROR_INVALID_ARGUMENT;
    for (int32_t d = 0; d < out->rank; ++d)
      if (d != axis && t.shape[d] != out->shape[d])
        return MP_ERROR_INVALID_ARGUMENT;
    total += t.shape[axis];
  }
  if (total != out->shape[axis])
    return MP_ERROR_INVALID_ARGUMENT;
  size_t size = mpElementSize(out->elementType);
  // Each of the `outer` rows of the result is a piece of every input in
  // turn; with the fast kernels on, rows are split across threads when
  // they hold enough bytes.
  int64_t rowBytes = int64_t(out->shape[axis] * inner * size);
  int64_t grain =
      libraryKernelsEnabled()
          ? std::max<int64_t>(1, (int64_t(1) << 16) / (rowBytes + 1))
          : outer;
  parallelFor(outer, grain,
              [&](int64_t begin, int64_t end) {
                for (int64_t o = begin; o < end; ++o) {
                  int64_t at = 0;
                  for (int32_t k = 0; k < count; ++k) {
                    const mpTensor &t = inputs[k];
                    size_t chunk = t.shape[axis] * inner * size;
                    std::memcpy(static_cast<char *>(out->data) +
                                    (o * out->shape[axis] + at) * inner * size,
                                static_cast<const char *>(t.data) + o * chunk,
                                chunk);
                    at += t.shape[axis];
                  }
                }
              });
  return MP_OK;
}

extern "C" mpStatus mpSlice(const mpTensor *in, mpTensor *out,
                            const int64_t *offsets, const int64_t *strides_) {
  if (!validAny(in) || !validAny(out) || in->elementType != out->elementType ||
      in->rank != out->rank || (in->rank && !offsets))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t is[MP_MAX_RANK];
  strides(in, is);
  for (int32_t d = 0; d < in->rank; ++d)
    if (!sliceFits(offsets[d], out->shape[d], strides_ ? strides_[d] : 1,
                   in->shape[d]))
      return MP_ERROR_INVALID_ARGUMENT;
  size_t size = mpElementSize(in->elementType);
  if (mpNumElements(out) > 0 && disjoint(in, out)) {
    int64_t step[MP_MAX_RANK];
    int64_t base = sliceView(in, out, offsets, strides_, step);
    if (fastStridedRows(out, static_cast<char *>(in->data) + base * size, step,
                        /*scatter=*/false))
      return MP_OK;
  }
  for (int64_t i = 0, n = mpNumElements(out); i < n; ++i) {
    int64_t rest = i, src = 0;
    for (int32_t d = out->rank - 1; d >= 0; --d) {
      int64_t st = strides_ ? strides_[d] : 1;
      src += (offsets[d] + (rest % out->shape[d]) * st) * is[d];
      rest /= out->shape[d];
    }
    std::memcpy(static_cast<char *>(out->data) + i * size,
                static_cast<const char *>(in->data) + src * size, size);
  }
  return MP_OK;
}

extern "C" mpStatus mpSliceGrad(const mpTensor *dy, mpTensor *dx,
                                const int64_t *offsets,
                                const int64_t *strides_) {
  if (!validAny(dy) || !validAny(dx) || dy->elementType != dx->elementType ||
      dy->rank != dx->rank || (dx->rank && !offsets))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t xs[MP_MAX_RANK];
  strides(dx, xs);
  for (int32_t d = 0; d < dx->rank; ++d)
    if (!sliceFits(offsets[d], dy->shape[d], strides_ ? strides_[d] : 1,
                   dx->shape[d]))
      return MP_ERROR_INVALID_ARGUMENT;
  size_t size = mpElementSize(dx->elementType);
  if (libraryKernelsEnabled() && mpNumElements(dy) > 0 && disjoint(dy, dx)) {
    int64_t step[MP_MAX_RANK];
    int64_t base = sliceView(dx, dy, offsets, strides_, step);
    zeroFill(dx);
    if (fastStridedRows(dy, static_cast<char *>(dx->data) + base * size, step,
                        /*scatter=*/true))
      return MP_OK;
  }
  std::memset(dx->data, 0, size_t(mpNumElements(dx)) * size);
  for (int64_t i = 0, n = mpNumElements(dy); i < n; ++i) {
    int64_t rest = i, dst = 0;
    for (int32_t d = dy->rank - 1; d >= 0; --d) {
      int64_t st = strides_ ? strides_[d] : 1;
      dst += (offsets[d] + (rest % dy->shape[d]) * st) * xs[d];
      rest /= dy->shape[d];
    }
    std::memcpy(static_cast<char *>(dx->data) + dst * size,
                static_cast<const char *>(dy->data) + i * size, size);
  }
  return MP_OK;
}
