//===- Conv.cu - convolution, pooling and batch norm on the GPU -----------===//
//
// Direct kernels, the CPU reference loops (runtime/lib/CPU/Conv.cpp) on the
// GPU: one thread per output element, sums in a fixed order, no atomics,
// so results are deterministic and agree with the CPU backend up to the
// order-independent rounding of each step. The gradient of the input is
// gathered (each input element sums the outputs it reached) rather than
// scattered. Batch norm runs one block per channel. cuDNN is not used yet:
// these kernels are for correctness, not speed (docs/Runtime.md).
//
//===----------------------------------------------------------------------===//

#include "../Checks.h"
#include "Common.cuh"
#include "Kernels.h"

using namespace mp;
using namespace mp::cuda;

namespace {

/// What the kernels need of an activation: N, C, H, W and the layout.
struct Dims {
  int64_t n, c, h, w;
  bool last;
  __device__ int64_t at(int64_t b, int64_t ch, int64_t y, int64_t x) const {
    return last ? ((b * h + y) * w + x) * c + ch
                : ((b * c + ch) * h + y) * w + x;
  }
  /// The coordinates of element `i`.
  __device__ void coords(int64_t i, int64_t &b, int64_t &ch, int64_t &y,
                         int64_t &x) const {
    if (last) {
      ch = i % c;
      i /= c;
      x = i % w;
      i /= w;
      y = i % h;
      b = i / h;
    } else {
      x = i % w;
      i /= w;
      y = i % h;
      i /= h;
      ch = i % c;
      b = i / c;
    }
  }
};

Dims dimsOf(const rt::Act &a) { return {a.n, a.c, a.h, a.w, a.channelsLast}; }

struct Geometry {
  int64_t kh, kw, sh, sw, pt, pl, dh, dw, groups;
};

Geometry geometryOf(const rt::ConvShape &s, const mpWindow *w) {
  return {s.kh,          s.kw,           w->strides[0], w->strides[1],
          w->padding[0], w->padding[1],  w->dilations[0], w->dilations[1],
          s.groups};
}

template <typename C>
__global__ void convKernel(const void *in, int inType, const void *f,
                           int fType, void *out, int outType, Dims id,
                           Dims od, Geometry g, int compute) {
  int64_t total = od.n * od.c * od.h * od.w;
  int64_t cg = id.c / g.groups, og = od.c / g.groups;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, o, oy, ox;
    od.coords(i, n, o, oy, ox);
    int64_t grp = o / og;
    C acc = 0;
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        int64_t y = oy * g.sh - g.pt + ky * g.dh;
        if (y < 0 || y >= id.h)
          continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t x = ox * g.sw - g.pl + kx * g.dw;
          if (x < 0 || x >= id.w)
            continue;
          C a = roundCompute(compute,
                             loadAs<C>(in, inType, id.at(n, grp * cg + ci, y, x)));
          C b = roundCompute(
              compute, loadAs<C>(f, fType, ((o * cg + ci) * g.kh + ky) * g.kw + kx));
          acc = roundCompute(compute, acc + roundCompute(compute, a * b));
        }
      }
    storeAs<C>(out, outType, i, acc);
  }
}

template <typename C>
__global__ void convGradInputKernel(const void *dy, int dyType, const void *f,
                                    int fType, void *dx, int dxType, Dims id,
                                    Dims od, Geometry g, int compute) {
  int64_t total = id.n * id.c * id.h * id.w;
  int64_t cg = id.c / g.groups, og = od.c / g.groups;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, y, x;
    id.coords(i, n, c, y, x);
    int64_t grp = c / cg, ci = c % cg;
    C acc = 0;
    for (int64_t o = grp * og; o < (grp + 1) * og; ++o)
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        int64_t ty = y + g.pt - ky * g.dh;
        if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= od.h)
          continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t tx = x + g.pl - kx * g.dw;
          if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= od.w)
            continue;
          C d = roundCompute(
              compute, loadAs<C>(dy, dyType, od.at(n, o, ty / g.sh, tx / g.sw)));
          C w = roundCompute(
              compute, loadAs<C>(f, fType, ((o * cg + ci) * g.kh + ky) * g.kw + kx));
          acc = roundCompute(compute, acc + roundCompute(compute, d * w));
        }
      }
    storeAs<C>(dx, dxType, id.at(n, c, y, x), acc);
  }
}

template <typename C>
__global__ void convGradFilterKernel(const void *dy, int dyType,
                                     const void *in, int inType, void *df,
                                     int dfType, Dims id, Dims od, Geometry g,
                                     int compute) {
  int64_t cg = id.c / g.groups, og = od.c / g.groups;
  int64_t total = od.c * cg * g.kh * g.kw;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t kx = i % g.kw, ky = (i / g.kw) % g.kh, ci = (i / (g.kw * g.kh)) % cg,
            o = i / (g.kw * g.kh * cg);
    int64_t grp = o / og;
    C acc = 0;
    for (int64_t n = 0; n < od.n; ++n)
      for (int64_t oy = 0; oy < od.h; ++oy) {
        int64_t y = oy * g.sh - g.pt + ky * g.dh;
        if (y < 0 || y >= id.h)
          continue;
        for (int64_t ox = 0; ox < od.w; ++ox) {
          int64_t x = ox * g.sw - g.pl + kx * g.dw;
          if (x < 0 || x >= id.w)
            continue;
          C d = roundCompute(compute, loadAs<C>(dy, dyType, od.at(n, o, oy, ox)));
          C a = roundCompute(
              compute, loadAs<C>(in, inType, id.at(n, grp * cg + ci, y, x)));
          acc = roundCompute(compute, acc + roundCompute(compute, d * a));
        }
      }
    storeAs<C>(df, dfType, i, acc);
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolGeometry {
  int64_t kh, kw, sh, sw, pt, pl, pb, pr;
  int kind;
};

/// The in-bounds window [ya, yb) x [xa, xb) and the divisor of an average.
__device__ void poolSpan(const Dims &id, const PoolGeometry &g, int64_t oy,
                         int64_t ox, int64_t &ya, int64_t &yb, int64_t &xa,
                         int64_t &xb, int64_t &divisor) {
  int64_t y0 = oy * g.sh - g.pt, x0 = ox * g.sw - g.pl;
  ya = y0 > 0 ? y0 : 0;
  yb = y0 + g.kh < id.h ? y0 + g.kh : id.h;
  xa = x0 > 0 ? x0 : 0;
  xb = x0 + g.kw < id.w ? x0 + g.kw : id.w;
  if (g.kind == MP_POOL_AVG_INCLUDE_PAD) {
    int64_t ye = y0 + g.kh < id.h + g.pb ? y0 + g.kh : id.h + g.pb;
    int64_t xe = x0 + g.kw < id.w + g.pr ? x0 + g.kw : id.w + g.pr;
    divisor = (ye - y0) * (xe - x0);
  } else {
    divisor = (yb - ya) * (xb - xa);
  }
}

template <typename C>
__global__ void poolKernel(const void *in, int inType, void *out, int outType,
                           Dims id, Dims od, PoolGeometry g, int compute) {
  int64_t total = od.n * od.c * od.h * od.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oy, ox, ya, yb, xa, xb, divisor;
    od.coords(i, n, c, oy, ox);
    poolSpan(id, g, oy, ox, ya, yb, xa, xb, divisor);
    C acc = g.kind == MP_POOL_MAX ? C(-INFINITY) : C(0);
    for (int64_t y = ya; y < yb; ++y)
      for (int64_t x = xa; x < xb; ++x) {
        C v = roundCompute(compute, loadAs<C>(in, inType, id.at(n, c, y, x)));
        if (g.kind != MP_POOL_MAX)
          acc = roundCompute(compute, acc + v);
        else if (v > acc || isnan(v))
          acc = v;
      }
    if (g.kind != MP_POOL_MAX)
      acc = divisor > 0 ? roundCompute(compute, acc / C(divisor)) : C(0);
    storeAs<C>(out, outType, od.at(n, c, oy, ox), acc);
  }
}

/// Each input element gathers the gradients of the windows that chose it
/// (max) or contain it (averages).
template <typename C>
__global__ void poolGradKernel(const void *dy, int dyType, const void *in,
                               int inType, void *dx, int dxType, Dims id,
                               Dims od, PoolGeometry g, int compute) {
  int64_t total = id.n * id.c * id.h * id.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, y, x;
    id.coords(i, n, c, y, x);
    int64_t self = id.at(n, c, y, x);
    // The windows containing (y, x): oy * sh - pt <= y < oy * sh - pt + kh.
    int64_t oyLo = y + g.pt - g.kh + 1, oxLo = x + g.pl - g.kw + 1;
    oyLo = oyLo > 0 ? (oyLo + g.sh - 1) / g.sh : 0;
    oxLo = oxLo > 0 ? (oxLo + g.sw - 1) / g.sw : 0;
    int64_t oyHi = (y + g.pt) / g.sh, oxHi = (x + g.pl) / g.sw;
    C acc = 0;
    for (int64_t oy = oyLo; oy <= oyHi && oy < od.h; ++oy)
      for (int64_t ox = oxLo; ox <= oxHi && ox < od.w; ++ox) {
        int64_t ya, yb, xa, xb, divisor;
        poolSpan(id, g, oy, ox, ya, yb, xa, xb, divisor);
        C d = roundCompute(compute, loadAs<C>(dy, dyType, od.at(n, c, oy, ox)));
        if (g.kind == MP_POOL_MAX) {
          int64_t best = -1;
          C top = C(-INFINITY);
          for (int64_t yy = ya; yy < yb; ++yy)
            for (int64_t xx = xa; xx < xb; ++xx) {
              C v = loadAs<C>(in, inType, id.at(n, c, yy, xx));
              if (best < 0 || v > top) {
                best = id.at(n, c, yy, xx);
                top = v;
              }
            }
          if (best == self)
            acc = roundCompute(compute, acc + d);
        } else if (divisor > 0) {
          acc = roundCompute(compute,
                             acc + roundCompute(compute, d / C(divisor)));
        }
      }
    storeAs<C>(dx, dxType, self, acc);
  }
}

//===----------------------------------------------------------------------===//
// Batch norm: one block per channel
//===----------------------------------------------------------------------===//

template <typename C>
__device__ C blockSum(C v) {
  __shared__ C shared[kThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (int(threadIdx.x) < step)
      shared[threadIdx.x] += shared[threadIdx.x + step];
    __syncthreads();
  }
  C total = shared[0];
  __syncthreads();
  return total;
}

/// Element k of channel c.
__device__ int64_t channelElement(const Dims &d, int64_t c, int64_t k) {
  int64_t x = k % d.w, y = (k / d.w) % d.h, n = k / (d.w * d.h);
  return d.at(n, c, y, x);
}

struct BatchNormArgs {
  const void *x, *scale, *bias, *runningMean, *runningVar;
  int xType, pType, rType;
  void *y, *mean, *rstd, *newMean, *newVar;
  int yType, sType;
  float epsilon, momentum;
};

template <typename C>
__global__ void batchNormKernel(BatchNormArgs a, Dims d, int compute) {
  int64_t c = blockIdx.x, count = d.n * d.h * d.w;
  C sum = 0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x)
    sum += loadAs<C>(a.x, a.xType, channelElement(d, c, k));
  C mu = roundCompute(compute, blockSum(sum) / C(count));
  C sq = 0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    C v = loadAs<C>(a.x, a.xType, channelElement(d, c, k)) - mu;
    sq += v * v;
  }
  C total = blockSum(sq);
  C var = roundCompute(compute, total / C(count));
  C r = roundCompute(compute, C(1) / sqrt(var + C(a.epsilon)));
  C g = loadAs<C>(a.scale, a.pType, c), b = loadAs<C>(a.bias, a.pType, c);
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    int64_t i = channelElement(d, c, k);
    C v = (loadAs<C>(a.x, a.xType, i) - mu) * r * g + b;
    storeAs<C>(a.y, a.yType, i, roundCompute(compute, v));
  }
  if (threadIdx.x == 0) {
    C unbiased = count > 1 ? total / C(count - 1) : var;
    C m = C(a.momentum), keep = C(1) - C(a.momentum);
    C oldMean = loadAs<C>(a.runningMean, a.rType, c),
      oldVar = loadAs<C>(a.runningVar, a.rType, c);
    storeAs<C>(a.mean, a.sType, c, mu);
    storeAs<C>(a.rstd, a.sType, c, r);
    storeAs<C>(a.newMean, a.rType, c, keep * oldMean + m * mu);
    storeAs<C>(a.newVar, a.rType, c, keep * oldVar + m * unbiased);
  }
}

template <typename C>
__global__ void batchNormInferenceKernel(const void *x, int xType,
                                         const void *scale, const void *bias,
                                         int pType, const void *mean,
                                         const void *variance, int sType,
                                         void *y, int yType, Dims d,
                                         float epsilon, int compute) {
  int64_t total = d.n * d.c * d.h * d.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, yy, xx;
    d.coords(i, n, c, yy, xx);
    C r = C(1) / sqrt(loadAs<C>(variance, sType, c) + C(epsilon));
    C v = (loadAs<C>(x, xType, i) - loadAs<C>(mean, sType, c)) * r *
              loadAs<C>(scale, pType, c) +
          loadAs<C>(bias, pType, c);
    storeAs<C>(y, yType, i, roundCompute(compute, v));
  }
}

struct BatchNormGradArgs {
  const void *dy, *x, *scale, *mean, *rstd;
  int dyType, xType, pType, sType;
  void *dx, *dscale, *dbias;
  int dxType, dscaleType, dbiasType;
};

template <typename C>
__global__ void batchNormGradKernel(BatchNormGradArgs a, Dims d, int compute) {
  int64_t c = blockIdx.x, count = d.n * d.h * d.w;
  C mu = loadAs<C>(a.mean, a.sType, c), r = loadAs<C>(a.rstd, a.sType, c),
    g = loadAs<C>(a.scale, a.pType, c);
  C sumDy = 0, sumDyXhat = 0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    int64_t i = channelElement(d, c, k);
    C dy = loadAs<C>(a.dy, a.dyType, i);
    sumDy += dy;
    sumDyXhat += dy * (loadAs<C>(a.x, a.xType, i) - mu) * r;
  }
  sumDy = blockSum(sumDy);
  sumDyXhat = blockSum(sumDyXhat);
  C meanDy = sumDy / C(count), meanDyXhat = sumDyXhat / C(count);
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    int64_t i = channelElement(d, c, k);
    C xhat = (loadAs<C>(a.x, a.xType, i) - mu) * r;
    C v = g * r * (loadAs<C>(a.dy, a.dyType, i) - meanDy - xhat * meanDyXhat);
    storeAs<C>(a.dx, a.dxType, i, roundCompute(compute, v));
  }
  if (threadIdx.x == 0) {
    storeAs<C>(a.dscale, a.dscaleType, c, sumDyXhat);
    storeAs<C>(a.dbias, a.dbiasType, c, sumDy);
  }
}

bool poolArgs(const mpTensor *input, const mpTensor *out, const mpWindow *w,
              rt::Act &in, rt::Act &o) {
  return w && in.init(input, w->channelsLast) &&
         o.init(out, w->channelsLast) && in.c == o.c &&
         w->dilations[0] == 1 && w->dilations[1] == 1 &&
         w->padding[0] < w->window[0] && w->padding[2] < w->window[0] &&
         w->padding[1] < w->window[1] && w->padding[3] < w->window[1] &&
         rt::windowShape(in, o, w->window[0], w->window[1], w);
}

PoolGeometry poolGeometry(const mpWindow *w, mpPoolKind kind) {
  return {w->window[0],  w->window[1],  w->strides[0], w->strides[1],
          w->padding[0], w->padding[1], w->padding[2], w->padding[3],
          int(kind)};
}

} // namespace

mpStatus mp::cuda::mpConv2d(const mpTensor *input, const mpTensor *filter,
                            mpTensor *out, const mpWindow *w,
                            mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  rt::ConvShape s;
  if (!s.init(input, filter, out, w) || !isFloatType(compute) ||
      input->elementType != filter->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  MP_LAUNCH_COMPUTE(compute, convKernel, gridFor(mpNumElements(out)),
                    input->data, input->elementType, filter->data,
                    filter->elementType, out->data, out->elementType,
                    dimsOf(s.in), dimsOf(s.out), geometryOf(s, w), compute);
  return launched("convolution kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpConv2dGradInput(const mpTensor *dy,
                                     const mpTensor *filter, mpTensor *dx,
                                     const mpWindow *w,
                                     mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  rt::ConvShape s;
  if (!s.init(dx, filter, dy, w) || !isFloatType(compute) ||
      dy->elementType != filter->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  MP_LAUNCH_COMPUTE(compute, convGradInputKernel, gridFor(mpNumElements(dx)),
                    dy->data, dy->elementType, filter->data,
                    filter->elementType, dx->data, dx->elementType,
                    dimsOf(s.in), dimsOf(s.out), geometryOf(s, w), compute);
  return launched("convolution input-gradient kernel") ? MP_OK
                                                        : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpConv2dGradFilter(const mpTensor *dy,
                                      const mpTensor *input,
                                      mpTensor *dfilter, const mpWindow *w,
                                      mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  rt::ConvShape s;
  if (!s.init(input, dfilter, dy, w) || !isFloatType(compute) ||
      dy->elementType != input->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  MP_LAUNCH_COMPUTE(compute, convGradFilterKernel,
                    gridFor(mpNumElements(dfilter)), dy->data, dy->elementType,
                    input->data, input->elementType, dfilter->data,
                    dfilter->elementType, dimsOf(s.in), dimsOf(s.out),
                    geometryOf(s, w), compute);
  return launched("convolution filter-gradient kernel") ? MP_OK
                                                         : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpPool2d(mpPoolKind kind, const mpTensor *input,
                            mpTensor *out, const mpWindow *w,
                            mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  rt::Act in, o;
  if (kind < MP_POOL_MAX || kind > MP_POOL_AVG_INCLUDE_PAD ||
      !poolArgs(input, out, w, in, o) || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  MP_LAUNCH_COMPUTE(compute, poolKernel, gridFor(mpNumElements(out)),
                    input->data, input->elementType, out->data,
                    out->elementType, dimsOf(in), dimsOf(o),
                    poolGeometry(w, kind), compute);
  return launched("pooling kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpPool2dGrad(mpPoolKind kind, const mpTensor *dy,
                                const mpTensor *input, mpTensor *dx,
                                const mpWindow *w, mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  rt::Act in, o;
  if (kind < MP_POOL_MAX || kind > MP_POOL_AVG_INCLUDE_PAD ||
      !poolArgs(dx, dy, w, in, o) || !isFloatType(compute) ||
      (kind == MP_POOL_MAX &&
       (!input || !input->data || mpNumElements(input) != mpNumElements(dx))))
    return MP_ERROR_INVALID_ARGUMENT;
  MP_LAUNCH_COMPUTE(compute, poolGradKernel, gridFor(mpNumElements(dx)),
                    dy->data, dy->elementType, input ? input->data : nullptr,
                    input ? input->elementType : MP_F32, dx->data,
                    dx->elementType, dimsOf(in), dimsOf(o),
                    poolGeometry(w, kind), compute);
  return launched("pooling gradient kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpBatchNorm(const mpTensor *x, const mpTensor *scale,
                               const mpTensor *bias,
                               const mpTensor *runningMean,
                               const mpTensor *runningVar, mpTensor *y,
                               mpTensor *mean, mpTensor *rstd,
                               mpTensor *newRunningMean,
                               mpTensor *newRunningVar, float epsilon,
                               float momentum, int32_t channelsLast,
                               mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  rt::Act act;
  if (!rt::batchNormShape(x, y,
                          {scale, bias, runningMean, runningVar, mean, rstd,
                           newRunningMean, newRunningVar},
                          channelsLast, act) ||
      !isFloatType(compute) || !(epsilon > 0) || !(momentum >= 0) ||
      momentum > 1 || scale->elementType != bias->elementType ||
      runningMean->elementType != runningVar->elementType ||
      newRunningMean->elementType != runningMean->elementType ||
      newRunningVar->elementType != runningMean->elementType ||
      mean->elementType != rstd->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  BatchNormArgs a{x->data,           scale->data,         bias->data,
                  runningMean->data, runningVar->data,    x->elementType,
                  scale->elementType, runningMean->elementType,
                  y->data,           mean->data,          rstd->data,
                  newRunningMean->data, newRunningVar->data, y->elementType,
                  mean->elementType, epsilon,             momentum};
  MP_LAUNCH_COMPUTE(compute, batchNormKernel, unsigned(act.c), a, dimsOf(act),
                    compute);
  return launched("batch norm kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpBatchNormInference(const mpTensor *x,
                                        const mpTensor *scale,
                                        const mpTensor *bias,
                                        const mpTensor *mean,
                                        const mpTensor *variance, mpTensor *y,
                                        float epsilon, int32_t channelsLast,
                                        mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  rt::Act act;
  if (!rt::batchNormShape(x, y, {scale, bias, mean, variance}, channelsLast,
                          act) ||
      !isFloatType(compute) || !(epsilon > 0) ||
      scale->elementType != bias->elementType ||
      mean->elementType != variance->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  MP_LAUNCH_COMPUTE(compute, batchNormInferenceKernel,
                    gridFor(mpNumElements(y)), x->data, x->elementType,
                    scale->data, bias->data, scale->elementType, mean->data,
                    variance->data, mean->elementType, y->data,
                    y->elementType, dimsOf(act), epsilon, compute);
  return launched("batch norm inference kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpBatchNormGrad(const mpTensor *dy, const mpTensor *x,
                                   const mpTensor *scale, const mpTensor *mean,
                                   const mpTensor *rstd, mpTensor *dx,
                                   mpTensor *dscale, mpTensor *dbias,
                                   int32_t channelsLast,
                                   mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  rt::Act act, grad;
  if (!rt::batchNormShape(x, dx, {scale, mean, rstd, dscale, dbias},
                          channelsLast, act) ||
      !grad.init(dy, channelsLast) || grad.n != act.n || grad.c != act.c ||
      grad.h != act.h || grad.w != act.w || !isFloatType(compute) ||
      mean->elementType != rstd->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  BatchNormGradArgs a{dy->data,          x->data,           scale->data,
                      mean->data,        rstd->data,        dy->elementType,
                      x->elementType,    scale->elementType, mean->elementType,
                      dx->data,          dscale->data,      dbias->data,
                      dx->elementType,   dscale->elementType,
                      dbias->elementType};
  MP_LAUNCH_COMPUTE(compute, batchNormGradKernel, unsigned(act.c), a,
                    dimsOf(act), compute);
  return launched("batch norm gradient kernel") ? MP_OK : MP_ERROR_BACKEND;
}
