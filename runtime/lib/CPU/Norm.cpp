//===- Norm.cpp - layer normalisation on the CPU --------------------------===//
//
// Rows are the leading dimensions [:axis], columns the normalised ones.
// Mean and variance are accumulated in the compute type; the backward pass
// uses the saved statistics:
//   xhat = (x - mean) * rstd, g = dy * scale
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   dscale = sum over rows of dy * xhat, dbias = sum over rows of dy,
// summed in blocks of kNormRowBlock rows (in row order), the blocks' sums
// then added in block order.
//
// With the fast kernels on and f32 compute, rows are split across threads,
// read in place when stored as f32 (converted whole otherwise), and
// computed by loops compiled for the CPU's vector instructions. The
// gradient is one pass, which reads dy and x once: threads take blocks of
// rows, summing each block's dscale and dbias terms apart. The sums along
// a row (the mean, the squared deviations, the gradient's sums of g and
// g * xhat) go in eight interleaved lanes (laneReduce, Tiles.h) in both the
// fast path and the reference loops. Every value is the reference loop's
// expression in the reference order, so the bits agree.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Compute.h"
#include "Tiles.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <vector>

using namespace mp::rt;

namespace {

bool valid(const mpTensor *t) {
  return t && t->data && isFloatType(t->elementType) && mpNumElements(t) >= 0;
}

/// The rows whose dscale and dbias terms the gradient adds up before adding
/// them to the sums of the rows above: a fixed number, so that the sums do
/// not depend on the number of threads, which take blocks.
constexpr int64_t kNormRowBlock = 16;

/// The fast paths' loops over one row (or one block of a row), each over
/// f32 buffers that do not overlap (__restrict: no run-time alias checks
/// stand between them and the vector unit), each the reference loop's
/// expression in its order. Compiled for AVX-512, AVX2 and the baseline.
/// * normaliseRow: y = (x - mean) * rstd * scale + bias, and the row's
///   mean and rstd into stats[0, 1];
/// * gradientRow: dx, given the row's mean and rstd;
/// * gradientColumns: adds a row's dy * xhat and dy into its block's sums
///   for dscale and dbias.
#define MP_LAYER_NORM_LOOPS(SUFFIX, TARGET)                                    \
  TARGET void normaliseRow##SUFFIX(                                            \
      const float *__restrict x, const float *__restrict sc,                   \
      const float *__restrict bi, float epsilon, int64_t n,                    \
      float *__restrict y, float *stats) {                                     \
    float mu = laneSum(x, n) / float(n);                                       \
    float var = laneSquares(x, mu, n) / float(n);                              \
    float rs = 1.0f / std::sqrt(var + epsilon);                                \
    for (int64_t c = 0; c < n; ++c)                                            \
      y[c] = (x[c] - mu) * rs * sc[c] + bi[c];                                 \
    stats[0] = mu;                                                             \
    stats[1] = rs;                                                             \
  }                                                                            \
  TARGET void gradientRow##SUFFIX(                                             \
      const float *__restrict dy, const float *__restrict x,                   \
      const float *__restrict sc, float mu, float rs, int64_t n,               \
      float *__restrict g, float *__restrict xh, float *__restrict dx) {       \
    /* xhat and g, with laneSum(g) and laneDot(g, xh) in the same pass */    \
    F32Lanes sumG = {}, sumGX = {}, xv, dyv, scv;                              \
    int64_t k = 0;                                                             \
    for (; k + kLanes <= n; k += kLanes) {                                     \
      loadLanes(xv, x + k);                                                    \
      loadLanes(dyv, dy + k);                                                  \
      loadLanes(scv, sc + k);                                                  \
      F32Lanes xhat = (xv - mu) * rs, gv = dyv * scv;                          \
      storeLanes(xh + k, xhat);                                                \
      storeLanes(g + k, gv);                                                   \
      sumG = sumG + gv;                                                        \
      sumGX = sumGX + gv * xhat;                                               \
    }                                                                          \
    for (int64_t c = k; c < n; ++c) {                                          \
      xh[c] = (x[c] - mu) * rs;                                                \
      g[c] = dy[c] * sc[c];                                                    \
    }                                                                          \
    std::plus<float> add;                                                      \
    float meanG =                                                              \
        finishLanes(sumG, k, n, [g](int64_t c) { return g[c]; }, add) /        \
        float(n);                                                              \
    float meanGX = finishLanes(                                                \
                       sumGX, k, n,                                            \
                       [g, xh](int64_t c) { return g[c] * xh[c]; }, add) /     \
                   float(n);                                                   \
    for (int64_t c = 0; c < n; ++c)                                            \
      dx[c] = rs * ((g[c] - meanG) - xh[c] * meanGX);                          \
  }                                                                            \
  TARGET void gradientColumns##SUFFIX(                                         \
      const float *__restrict dy, const float *__restrict x, float mu,         \
      float rs, int64_t n, float *__restrict ds, float *__restrict db) {       \
    for (int64_t j = 0; j < n; ++j) {                                          \
      float xhat = (x[j] - mu) * rs;                                           \
      ds[j] = ds[j] + dy[j] * xhat;                                            \
      db[j] = db[j] + dy[j];                                                   \
    }                                                                          \
  }
MP_LAYER_NORM_LOOPS(Avx512, MP_TARGET_AVX512)
MP_LAYER_NORM_LOOPS(Avx2, MP_TARGET_AVX2)
MP_LAYER_NORM_LOOPS(Base, )
#undef MP_LAYER_NORM_LOOPS

bool fastLayerNorm(const mpTensor *x, const mpTensor *scale,
                   const mpTensor *bias, mpTensor *y, mpTensor *mean,
                   mpTensor *rstd, int64_t rows, int64_t cols, float epsilon,
                   mpElementType compute) {
  if (!f32FastPath(compute, {x, scale, bias, y, mean, rstd}))
    return false;
  std::vector<float> sc(cols), bi(cols);
  loadF32(scale->data, scale->elementType, 0, cols, sc.data());
  loadF32(bias->data, bias->elementType, 0, cols, bi.data());
  auto normaliseRow =
      forIsa(normaliseRowAvx512, normaliseRowAvx2, normaliseRowBase);
  parallelFor(rows, rowGrain(cols), [&](int64_t begin, int64_t end) {
    float *in = scratchRow(0, cols), *buf = scratchRow(1, cols);
    for (int64_t r = begin; r < end; ++r) {
      float *out = outRowF32(y, r * cols, buf, {x});
      float stats[2];
      normaliseRow(rowF32(x, r * cols, cols, in), sc.data(), bi.data(),
                   epsilon, cols, out, stats);
      storeRowF32(out, cols, y, r * cols);
      storeF32(&stats[0], 1, mean->data, mean->elementType, r);
      storeF32(&stats[1], 1, rstd->data, rstd->elementType, r);
    }
  });
  return true;
}

bool fastLayerNormGrad(const mpTensor *dy, const mpTensor *x,
                       const mpTensor *scale, const mpTensor *mean,
                       const mpTensor *rstd, mpTensor *dx, mpTensor *dscale,
                       mpTensor *dbias, int64_t rows, int64_t cols,
                       mpElementType compute) {
  if (!f32FastPath(compute, {dy, x, scale, mean, rstd, dx, dscale, dbias}))
    return false;
  std::vector<float> sc(cols), mus(rows), rss(rows);
  loadF32(scale->data, scale->elementType, 0, cols, sc.data());
  loadF32(mean->data, mean->elementType, 0, rows, mus.data());
  loadF32(rstd->data, rstd->elementType, 0, rows, rss.data());
  // One pass: each block of kNormRowBlock rows adds its dscale and dbias
  // terms into partial sums of its own, row by row, and writes dx, each
  // row after its terms (dx may overwrite dy or x: the reference loop too
  // reads each row before it writes it). The partials are added in block
  // order, after each wave of blocks (which bounds their memory; the
  // wave's size does not change the order), and dscale and dbias stored
  // after dx, in case they are what dy or x views.
  const int64_t kWave = std::max<int64_t>(64, 4 * kernelThreads());
  int64_t blocks = (rows + kNormRowBlock - 1) / kNormRowBlock;
  std::vector<float> partial(size_t(2 * std::min(blocks, kWave) * cols));
  std::vector<float> ds(cols, 0.0f), db(cols, 0.0f);
  auto gradientColumns =
      forIsa(gradientColumnsAvx512, gradientColumnsAvx2, gradientColumnsBase);
  auto gradientRow =
      forIsa(gradientRowAvx512, gradientRowAvx2, gradientRowBase);
  for (int64_t wave = 0; wave < blocks; wave += kWave) {
    int64_t n = std::min(kWave, blocks - wave);
    std::fill(partial.begin(), partial.end(), 0.0f);
    parallelFor(n, 1, [&](int64_t begin, int64_t end) {
      float *dyIn = scratchRow(0, cols), *xIn = scratchRow(1, cols);
      float *g = scratchRow(2, cols), *xh = scratchRow(3, cols);
      float *buf = scratchRow(4, cols);
      for (int64_t b = begin; b < end; ++b) {
        float *bs = partial.data() + b * cols;
        float *bb = partial.data() + (n + b) * cols;
        for (int64_t r = (wave + b) * kNormRowBlock,
                     e = std::min(rows, r + kNormRowBlock);
             r < e; ++r) {
          const float *dyRow = rowF32(dy, r * cols, cols, dyIn);
          const float *xRow = rowF32(x, r * cols, cols, xIn);
          gradientColumns(dyRow, xRow, mus[r], rss[r], cols, bs, bb);
          float *out = outRowF32(dx, r * cols, buf, {dy, x});
          gradientRow(dyRow, xRow, sc.data(), mus[r], rss[r], cols, g, xh,
                      out);
          storeRowF32(out, cols, dx, r * cols);
        }
      }
    });
    for (int64_t b = 0; b < n; ++b) {
      addRow(ds.data(), partial.data() + b * cols, cols);
      addRow(db.data(), partial.data() + (n + b) * cols, cols);
    }
  }
  storeF32(ds.data(), cols, dscale->data, dscale->elementType, 0);
  storeF32(db.data(), cols, dbias->data, dbias->elementType, 0);
  return true;
}

} // namespace

extern "C" mpStatus mpLayerNorm(const mpTensor *x, const mpTensor *scale,
                                const mpTensor *bias, mpTensor *y,
                                mpTensor *mean, mpTensor *rstd, int64_t axis,
                                float epsilon, mpElementType compute) {
  int64_t rows, cols;
  if (!valid(x) || !valid(scale) || !valid(bias) || !valid(y) ||
      !valid(mean) || !valid(rstd) || !sameShape(x, y) ||
      !sameShape(scale, bias) || !isFloatType(compute) || !(epsilon > 0) ||
      !layerNormShape(x, scale, mean, axis, rows, cols) ||
      mpNumElements(rstd) != rows)
    return MP_ERROR_INVALID_ARGUMENT;
  if (fastLayerNorm(x, scale, bias, y, mean, rstd, rows, cols, epsilon,
                    compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t r = 0; r < rows; ++r) {
      auto add = [&](T p, T q) { return a.add(p, q); };
      T sum = laneReduce(
          cols, T(0), [&](int64_t c) { return a.in(x, r * cols + c); }, add);
      T mu = a.div(sum, T(cols));
      T var = laneReduce(
          cols, T(0),
          [&](int64_t c) {
            T d = a.sub(a.in(x, r * cols + c), mu);
            return a.mul(d, d);
          },
          add);
      var = a.div(var, T(cols));
      T rs = a.div(T(1), a.sqrt(a.add(var, a.r(T(epsilon)))));
      for (int64_t c = 0; c < cols; ++c) {
        T xhat = a.mul(a.sub(a.in(x, r * cols + c), mu), rs);
        a.out(y, r * cols + c,
              a.add(a.mul(xhat, a.in(scale, c)), a.in(bias, c)));
      }
      a.out(mean, r, mu);
      a.out(rstd, r, rs);
    }
  });
  return MP_OK;
}

extern "C" mpStatus mpLayerNormGrad(const mpTensor *dy, const mpTensor *x,
                                    const mpTensor *scale,
                                    const mpTensor *mean, const mpTensor *rstd,
                                    mpTensor *dx, mpTensor *dscale,
                                    mpTensor *dbias, int64_t axis,
                                    mpElementType compute) {
  int64_t rows, cols;
  if (!valid(dy) || !valid(x) || !valid(scale) || !valid(mean) ||
      !valid(rstd) || !valid(dx) || !valid(dscale) || !valid(dbias) ||
      !sameShape(dy, x) || !sameShape(dx, x) || !sameShape(dscale, scale) ||
      !sameShape(dbias, scale) || !isFloatType(compute) ||
      !layerNormShape(x, scale, mean, axis, rows, cols) || mpNumElements(rstd) != rows)
    return MP_ERROR_INVALID_ARGUMENT;
  if (fastLayerNormGrad(dy, x, scale, mean, rstd, dx, dscale, dbias, rows, cols,
                        compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    std::vector<T> ds(cols, T(0)), db(cols, T(0));
    std::vector<T> blockDs(cols), blockDb(cols);
    for (int64_t r = 0; r < rows; ++r) {
      if (r % kNormRowBlock == 0) {
        std::fill(blockDs.begin(), blockDs.end(), T(0));
        std::fill(blockDb.begin(), blockDb.end(), T(0));
      }
      T mu = a.in(mean, r), rs = a.in(rstd, r);
      auto xhatAt = [&](int64_t c) {
        return a.mul(a.sub(a.in(x, r * cols + c), mu), rs);
      };
      auto gAt = [&](int64_t c) {
        return a.mul(a.in(dy, r * cols + c), a.in(scale, c));
      };
      auto add = [&](T p, T q) { return a.add(p, q); };
      T sumG = laneReduce(cols, T(0), gAt, add);
      T sumGX = laneReduce(
          cols, T(0), [&](int64_t c) { return a.mul(gAt(c), xhatAt(c)); },
          add);
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = r * cols + c;
        blockDs[c] = a.add(blockDs[c], a.mul(a.in(dy, i), xhatAt(c)));
        blockDb[c] = a.add(blockDb[c], a.in(dy, i));
      }
      if (r % kNormRowBlock == kNormRowBlock - 1 || r == rows - 1)
        for (int64_t c = 0; c < cols; ++c) {
          ds[c] = a.add(ds[c], blockDs[c]);
          db[c] = a.add(db[c], blockDb[c]);
        }
      T meanG = a.div(sumG, T(cols)), meanGX = a.div(sumGX, T(cols));
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = r * cols + c;
        T xhat = a.mul(a.sub(a.in(x, i), mu), rs);
        T g = a.mul(a.in(dy, i), a.in(scale, c));
        a.out(dx, i, a.mul(rs, a.sub(a.sub(g, meanG), a.mul(xhat, meanGX))));
      }
    }
    for (int64_t c = 0; c < cols; ++c) {
      a.out(dscale, c, ds[c]);
      a.out(dbias, c, db[c]);
    }
  });
  return MP_OK;
}
