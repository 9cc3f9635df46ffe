//===- Norm.cpp - layer normalisation on the CPU --------------------------===//
//
// Rows are the leading dimensions [:axis], columns the normalised ones.
// Mean and variance are accumulated in the compute type; the backward pass
// uses the saved statistics:
//   xhat = (x - mean) * rstd, g = dy * scale
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   dscale = sum over rows of dy * xhat, dbias = sum over rows of dy.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Compute.h"

#include <vector>

using namespace mp::rt;

namespace {

bool valid(const mpTensor *t) {
  return t && t->data && isFloatType(t->elementType) && mpNumElements(t) >= 0;
}

/// rows x cols of `x` around `axis`, after checking that `scale` has the
/// normalised shape and `stat` (if given) the leading shape.
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
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t r = 0; r < rows; ++r) {
      T sum = 0;
      for (int64_t c = 0; c < cols; ++c)
        sum = a.add(sum, a.in(x, r * cols + c));
      T mu = a.div(sum, T(cols));
      T var = 0;
      for (int64_t c = 0; c < cols; ++c) {
        T d = a.sub(a.in(x, r * cols + c), mu);
        var = a.add(var, a.mul(d, d));
      }
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
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    std::vector<T> ds(cols, T(0)), db(cols, T(0));
    for (int64_t r = 0; r < rows; ++r) {
      T mu = a.in(mean, r), rs = a.in(rstd, r);
      T sumG = 0, sumGX = 0;
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = r * cols + c;
        T xhat = a.mul(a.sub(a.in(x, i), mu), rs);
        T g = a.mul(a.in(dy, i), a.in(scale, c));
        sumG = a.add(sumG, g);
        sumGX = a.add(sumGX, a.mul(g, xhat));
        ds[c] = a.add(ds[c], a.mul(a.in(dy, i), xhat));
        db[c] = a.add(db[c], a.in(dy, i));
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
