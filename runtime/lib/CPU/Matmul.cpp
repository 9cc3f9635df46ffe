//===- Matmul.cpp - tg.matmul on the CPU ----------------------------------===//
//
// f32 accumulation goes to oneDNN's matmul (Dnnl.h): bf16 operands are
// multiplied directly on the CPU's bf16 dot-product instructions, f16
// operands (and bf16 ones on CPUs without those instructions) are widened
// once to f32 with vector conversions (exact, so the result equals a tensor
// core's f16 x f16 -> f32 product up to summation order). Large f32
// products on AVX2 CPUs go to the runtime's own packed GEMM (Gemm.h)
// instead, which runs them faster than oneDNN 2.6's jit GEMM there. f64,
// builds without oneDNN, the reference kernels (MP_REFERENCE_KERNELS=1)
// and batch broadcasts oneDNN does not take go through BLAS (OpenBLAS).
// f16/bf16 accumulation (never chosen by the AMP pass, but expressible) is
// a plain loop that rounds every product and partial sum. Batch dimensions
// broadcast: each output matrix maps to one lhs and one rhs matrix.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Dnnl.h"
#include "Elements.h"
#include "Gemm.h"
#include "Math.h"
#include "Parallel.h"
#include "Tiles.h"

#include <cblas.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace mp::rt;

namespace {

struct Batching {
  int32_t rank = 0;
  int64_t outShape[MP_MAX_RANK] = {};
  int64_t lhsStride[MP_MAX_RANK] = {}, rhsStride[MP_MAX_RANK] = {};
  int64_t count = 1;
};

/// Aligns the batch dimensions of lhs and rhs (all but the last two) from
/// the right and computes, per output batch dimension, the step in matrices
/// of each operand (0 where it broadcasts).
bool planBatches(const mpTensor *lhs, const mpTensor *rhs, Batching &b) {
  int32_t lr = lhs->rank - 2, rr = rhs->rank - 2;
  b.rank = lr > rr ? lr : rr;
  int64_t ls = 1, rs = 1;
  for (int32_t i = b.rank - 1; i >= 0; --i) {
    int32_t li = i - (b.rank - lr), ri = i - (b.rank - rr);
    int64_t ld = li >= 0 ? lhs->shape[li] : 1;
    int64_t rd = ri >= 0 ? rhs->shape[ri] : 1;
    if (ld != rd && ld != 1 && rd != 1)
      return false;
    b.outShape[i] = ld > rd ? ld : rd;
    b.lhsStride[i] = ld == 1 ? 0 : ls;
    b.rhsStride[i] = rd == 1 ? 0 : rs;
    ls *= ld;
    rs *= rd;
    b.count *= b.outShape[i];
  }
  return true;
}

/// Matrix offsets of output batch `index`.
void batchOffsets(const Batching &b, int64_t index, int64_t &l, int64_t &r) {
  l = r = 0;
  for (int32_t i = b.rank - 1; i >= 0; --i) {
    int64_t coord = index % b.outShape[i];
    index /= b.outShape[i];
    l += coord * b.lhsStride[i];
    r += coord * b.rhsStride[i];
  }
}

/// Checks the operands of a matmul writing `out` and reads off its
/// dimensions and batching; false for any mismatch.
bool planMatmul(const mpTensor *lhs, const mpTensor *rhs, const mpTensor *out,
                bool ta, bool tb, int64_t &m, int64_t &n, int64_t &k,
                Batching &b) {
  if (!lhs || !rhs || !out || !lhs->data || !rhs->data || !out->data ||
      lhs->rank < 2 || rhs->rank < 2 || out->rank < 2 ||
      lhs->elementType != rhs->elementType ||
      !isFloatType(lhs->elementType) || !isFloatType(out->elementType) ||
      mpNumElements(lhs) < 0 || mpNumElements(rhs) < 0 ||
      mpNumElements(out) < 0)
    return false;
  m = lhs->shape[lhs->rank - (ta ? 1 : 2)];
  k = lhs->shape[lhs->rank - (ta ? 2 : 1)];
  int64_t k2 = rhs->shape[rhs->rank - (tb ? 1 : 2)];
  n = rhs->shape[rhs->rank - (tb ? 2 : 1)];
  if (k != k2 || !planBatches(lhs, rhs, b) || out->rank != b.rank + 2 ||
      out->shape[b.rank] != m || out->shape[b.rank + 1] != n)
    return false;
  for (int32_t i = 0; i < b.rank; ++i)
    if (out->shape[i] != b.outShape[i])
      return false;
  return true;
}

/// `t`'s elements as `T`, converted once (or `t`'s own buffer if already T).
template <typename T>
const T *widen(const mpTensor *t, mpElementType type, std::vector<T> &tmp) {
  if (t->elementType == type)
    return static_cast<const T *>(t->data);
  int64_t n = mpNumElements(t);
  tmp.resize(n);
  if constexpr (std::is_same_v<T, float>) {
    if (libraryKernelsEnabled() && isTileType(t->elementType)) {
      forEachTile(n, 16, [&](int64_t i, int64_t len) {
        loadF32(t->data, t->elementType, i, len, tmp.data() + i);
      });
      return tmp.data();
    }
  }
  for (int64_t i = 0; i < n; ++i)
    tmp[i] = static_cast<T>(load(t->data, t->elementType, i));
  return tmp.data();
}

/// A matmul operand as f32 for oneDNN: as widen gives it, or, when `pad`,
/// copied (and widened) into rows padded by a cache line, `rowStep` set to
/// their length. The copy reads and writes the operand once; the product
/// reads it many times.
const float *matmulOperand(const mpTensor *t, bool pad,
                           std::vector<float> &kept, int64_t &rowStep) {
  if (!pad)
    return widen<float>(t, MP_F32, kept);
  int64_t length = t->shape[t->rank - 1];
  int64_t rows = mpNumElements(t) / length;
  rowStep = length + 64 / int64_t(sizeof(float));
  kept.resize(size_t(rows * rowStep));
  float *to = kept.data();
  parallelFor(rows, std::max<int64_t>(1, kTile / length),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  loadF32(t->data, t->elementType, i * length, length,
                          to + i * rowStep);
              });
  return to;
}

/// Stores `n` results computed in T into `out`.
template <typename T> void narrow(const T *c, int64_t n, mpTensor *out) {
  if constexpr (std::is_same_v<T, float>) {
    if (libraryKernelsEnabled() && isTileType(out->elementType)) {
      forEachTile(n, 16, [&](int64_t i, int64_t len) {
        storeF32(c + i, len, out->data, out->elementType, i);
      });
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    store(out->data, out->elementType, i, c[i]);
}

template <typename T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T *a,
          const T *b, T *c);

template <>
void gemm<float>(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                 const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, ta ? m : k, b,
              tb ? k : n, 0.0f, c, n);
}

template <>
void gemm<double>(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  const double *a, const double *b, double *c) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, ta ? m : k, b,
              tb ? k : n, 0.0, c, n);
}

template <typename T>
void blasMatmul(const mpTensor *lhs, const mpTensor *rhs, mpTensor *out,
                bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                const Batching &b, mpElementType type) {
  std::vector<T> lt, rt, ot;
  const T *a = widen<T>(lhs, type, lt);
  const T *w = widen<T>(rhs, type, rt);
  T *c = out->elementType == type ? static_cast<T *>(out->data)
                                  : (ot.resize(b.count * m * n), ot.data());
  for (int64_t i = 0; i < b.count; ++i) {
    int64_t lo, ro;
    batchOffsets(b, i, lo, ro);
    gemm<T>(ta, tb, m, n, k, a + lo * m * k, w + ro * k * n, c + i * m * n);
  }
  if (out->elementType != type)
    narrow(c, b.count * m * n, out);
}

/// Matrices in the batch dimensions of `t` (all but the last two).
int64_t matrices(const mpTensor *t) {
  int64_t count = 1;
  for (int32_t d = 0; d + 2 < t->rank; ++d)
    count *= t->shape[d];
  return count;
}

/// Rounds `x` to the low-precision type `t`.
float roundTo(mpElementType t, float x) {
  return t == MP_F16 ? mpF16ToF32(mpF32ToF16(x)) : mpBF16ToF32(mpF32ToBF16(x));
}

void lowPrecisionMatmul(const mpTensor *lhs, const mpTensor *rhs,
                        mpTensor *out, bool ta, bool tb, int64_t m, int64_t n,
                        int64_t k, const Batching &b, mpElementType type) {
  for (int64_t i = 0; i < b.count; ++i) {
    int64_t lo, ro;
    batchOffsets(b, i, lo, ro);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        float sum = 0;
        for (int64_t x = 0; x < k; ++x) {
          int64_t ai = lo * m * k + (ta ? x * m + r : r * k + x);
          int64_t bi = ro * k * n + (tb ? c * k + x : x * n + c);
          float a = roundTo(type, float(load(lhs->data, lhs->elementType, ai)));
          float w = roundTo(type, float(load(rhs->data, rhs->elementType, bi)));
          sum = roundTo(type, sum + roundTo(type, a * w));
        }
        store(out->data, out->elementType, (i * m + r) * n + c, sum);
      }
  }
}

/// The activation of an epilogue, in T.
template <typename T> T activate(mpActivation a, T x) {
  switch (a) {
  case MP_ACTIVATION_RELU: // NaN stays NaN, as in mpUnary
    return x > T(0) || x != x ? x : T(0);
  case MP_ACTIVATION_GELU:
    return x * mathNormalCdf(x);
  case MP_ACTIVATION_GELU_TANH:
    return geluTanh(x);
  default:
    return x;
  }
}

/// The f32 sums along k of one operand of a 2-D fused matmul
/// (mpFusedMatmulBiasGrad), which the packed GEMM adds as it packs it.
struct OperandSums {
  float *lhs = nullptr, *rhs = nullptr; // m, or n, of them
  bool done = false; // whether the product's GEMM summed them
};

/// The f32 product on packedGemm: one matrix, a batch of plain lhs
/// matrices over one rhs as one taller matrix, each matrix of a batch in
/// turn, or whole matrices per thread (packedGemmBatchTakes).
/// `l`, `r`, `o` and `addend` (the residual, when given; it may be `o`)
/// are dense f32. The caller has asked packedGemmTakes about the product
/// this runs (m rows, or m times `count` for the taller matrix), or, for
/// `wholeMatrices`, packedGemmBatchTakes about the batch. `sums` (may be
/// null) only for one matrix.
void packedMatmul(const float *l, const float *r, float *o, bool ta, bool tb,
                  int64_t m, int64_t n, int64_t k, int64_t count,
                  bool lhsShared, bool rhsShared, bool wholeMatrices,
                  const float *bias, const float *addend, float alpha,
                  OperandSums *sums) {
  if (!ta && rhsShared && !lhsShared) {
    m *= count;
    count = 1;
  }
  auto multiply = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float *lm = lhsShared ? l : l + i * m * k;
      const float *rm = rhsShared ? r : r + i * k * n;
      GemmOperand a = ta ? GemmOperand{lm, 1, m} : GemmOperand{lm, k, 1};
      GemmOperand b = tb ? GemmOperand{rm, 1, k} : GemmOperand{rm, n, 1};
      packedGemm(m, n, k, a, b, o + i * m * n, n, bias,
                 addend ? addend + i * m * n : nullptr, alpha,
                 sums ? sums->lhs : nullptr, sums ? sums->rhs : nullptr);
    }
  };
  if (sums)
    sums->done = true;
  if (wholeMatrices)
    parallelFor(count, 1, multiply);
  else
    multiply(0, count);
}

/// f32 accumulation on oneDNN or the packed GEMM, when every operand has
/// either one matrix or one per output batch (then in output order): f32
/// operands as they are,
/// bf16 ones too where the CPU has bf16 dot products (dnnlTakesBf16), else
/// widened to f32 first, as f16 operands always are (no f16 GEMM),
/// outputs oneDNN cannot write computed in f32 and narrowed. The epilogue
/// of a fused matmul (a bias, a residual, an activation; none for a plain
/// one) runs as oneDNN post-ops on the f32 accumulators; the residual goes
/// into the output first, where the sum post-op reads it (the packed GEMM
/// reads an f32 residual where it lies). oneDNN adds the
/// bias before its post-ops, so a product scaled by `alpha` with a bias is
/// only the packed GEMM's (false where it does not take it). ReLU is the
/// exception: oneDNN's ReLU post-op is max(x, 0), which maps NaN to 0, so
/// it runs after the product as the runtime's own (mpUnary), which keeps
/// NaN as the loops and the unfused op do. Rounding to the output type
/// keeps signs, so ReLU after it gives the same bits as before it. The
/// packed GEMM also adds up the operand `sums` asks for (may be null), as
/// it packs it, and marks them done.
bool libraryMatmul(const mpTensor *lhs, const mpTensor *rhs,
                   const mpTensor *bias, const mpTensor *residual,
                   mpTensor *out, bool ta, bool tb, int64_t m, int64_t n,
                   int64_t k, const Batching &b, mpActivation activation,
                   float alpha, OperandSums *sums = nullptr) {
  int64_t lc = matrices(lhs), rc = matrices(rhs);
  if (!libraryKernelsEnabled() || !isTileType(lhs->elementType) ||
      !isTileType(out->elementType) || (lc != 1 && lc != b.count) ||
      (rc != 1 && rc != b.count))
    return false;
  int64_t count = b.count * m * n;
  std::vector<float> biasF32;
  DnnlEpilogue epilogue;
  bool reluAfter = activation == MP_ACTIVATION_RELU;
  epilogue.activation = reluAfter ? MP_ACTIVATION_NONE : activation;
  epilogue.sum = residual != nullptr;
  epilogue.alpha = alpha;
  bool dnnlTakes = alpha == 1.0f || !bias;
  auto finish = [&] {
    return !reluAfter || mpUnary(MP_RELU, out, out, MP_F32) == MP_OK;
  };
  if (bias)
    epilogue.bias = widen<float>(bias, MP_F32, biasF32);
  auto residualIntoOut = [&] {
    if (residual && residual->data != out->data)
      std::memcpy(out->data, residual->data,
                  size_t(count) * mpElementSize(out->elementType));
  };
  if (lhs->elementType == MP_BF16 && out->elementType != MP_F16 &&
      dnnlTakesBf16() && dnnlTakes) {
    residualIntoOut();
    if (dnnlMatmul(lhs, rhs, out, ta, tb, m, n, k, b.count, lc == 1, rc == 1,
                   &epilogue))
      return finish();
  }
  // Kept between calls (a step multiplies the same shapes every time):
  // fresh buffers cost page faults and zeroing on each call. The lambdas
  // below run on other threads, which have thread_locals of their own: they
  // see this thread's buffers through the references.
  thread_local std::vector<float> lKept, rKept, oKept;
  std::vector<float> &lt = lKept, &rt = rKept, &ot = oKept;
  mpTensor l = *lhs, r = *rhs, o = *out;
  l.elementType = r.elementType = o.elementType = MP_F32;
  // A transposed lhs is stored [k, m], rows along m; an rhs [k, n]. A
  // batch of plain lhs matrices over one rhs goes to oneDNN as one taller
  // matrix (lookupMatmul), m rows for each.
  int64_t floatBytes = int64_t(sizeof(float)), lhsRows = 0, rhsRows = 0;
  int64_t rowsOfProduct = !ta && rc == 1 && lc > 1 ? m * b.count : m;
  // The runtime's own GEMM where it takes the product: operands dense, the
  // epilogue a bias and a residual (ReLU runs after either way).
  // A batch not taken as one taller matrix may go whole matrices per
  // thread.
  bool plain = epilogue.activation == MP_ACTIVATION_NONE;
  bool wholeMatrices = plain && rowsOfProduct == m && b.count > 1 &&
                       packedGemmBatchTakes(b.count, m, n, k);
  bool packed =
      wholeMatrices || (plain && packedGemmTakes(rowsOfProduct, n, k));
  if (!packed && !dnnlTakes)
    return false;
  l.data = const_cast<float *>(matmulOperand(
      lhs, !packed && ta && dnnlWantsPaddedRows(m * floatBytes, n), lt,
      lhsRows));
  r.data = const_cast<float *>(matmulOperand(
      rhs, !packed && !tb && dnnlWantsPaddedRows(n * floatBytes, rowsOfProduct),
      rt, rhsRows));
  // The residual in f32: widened into the output's f32 buffer, or as it
  // is, where the packed GEMM reads it and oneDNN's sum post-op from out.
  const float *addend = nullptr;
  if (out->elementType != MP_F32) {
    ot.resize(count);
    o.data = ot.data();
    if (residual) {
      forEachTile(count, 16, [&](int64_t i, int64_t len) {
        loadF32(residual->data, residual->elementType, i, len, ot.data() + i);
      });
      addend = ot.data();
    }
  } else if (residual && packed) {
    addend = static_cast<const float *>(residual->data);
  } else {
    residualIntoOut();
  }
  if (packed) {
    packedMatmul(static_cast<const float *>(l.data),
                 static_cast<const float *>(r.data),
                 static_cast<float *>(o.data), ta, tb, m, n, k, b.count,
                 lc == 1, rc == 1, wholeMatrices, epilogue.bias, addend, alpha,
                 b.count == 1 ? sums : nullptr);
  } else if (!dnnlMatmul(&l, &r, &o, ta, tb, m, n, k, b.count, lc == 1, rc == 1,
                         &epilogue, lhsRows, rhsRows)) {
    return false;
  }
  if (out->elementType != MP_F32)
    narrow(ot.data(), count, out);
  return finish();
}

/// The fused matmul anywhere else: the product in T (the compute type) into
/// a buffer of its own, then the epilogue in T, rounded once into `out`.
template <typename T>
mpStatus referenceFusedMatmul(const mpTensor *lhs, const mpTensor *rhs,
                              const mpTensor *bias, const mpTensor *residual,
                              mpTensor *out, bool ta, bool tb,
                              mpActivation activation, T alpha,
                              mpElementType compute) {
  int64_t count = mpNumElements(out), n = out->shape[out->rank - 1];
  std::vector<T> acc(count);
  mpTensor product = *out;
  product.elementType = compute;
  product.data = acc.data();
  if (mpStatus st = mpMatmul(lhs, rhs, &product, ta, tb, compute))
    return st;
  std::vector<T> biasT;
  if (bias) {
    biasT.resize(n);
    for (int64_t j = 0; j < n; ++j)
      biasT[j] = T(load(bias->data, bias->elementType, j));
  }
  parallelFor(count / (n ? n : 1), 64, [&](int64_t rowBegin, int64_t rowEnd) {
    for (int64_t i = rowBegin * n, e = rowEnd * n; i < e; ++i) {
      T v = alpha == T(1) ? acc[i] : alpha * acc[i];
      if (bias)
        v += biasT[i % n];
      if (residual)
        v += T(load(residual->data, residual->elementType, i));
      store(out->data, out->elementType, i, double(activate(activation, v)));
    }
  });
  return MP_OK;
}

/// mpFusedMatmul, whose packed GEMM also adds up the operand `sums` asks
/// for (may be null).
mpStatus fusedMatmul(const mpTensor *lhs, const mpTensor *rhs,
                     const mpTensor *bias, const mpTensor *residual,
                     mpTensor *out, bool ta, bool tb, int32_t activationValue,
                     double alpha, mpElementType compute, OperandSums *sums) {
  int64_t m, n, k;
  Batching b;
  if (!planMatmul(lhs, rhs, out, ta, tb, m, n, k, b) ||
      (compute != MP_F32 && compute != MP_F64) ||
      activationValue < MP_ACTIVATION_NONE ||
      activationValue > MP_ACTIVATION_GELU_TANH || !std::isfinite(alpha) ||
      (compute == MP_F32 && !std::isfinite(float(alpha))))
    return MP_ERROR_INVALID_ARGUMENT;
  auto activation = static_cast<mpActivation>(activationValue);
  if (bias && (!bias->data || bias->rank != 1 || bias->shape[0] != n ||
               !isFloatType(bias->elementType)))
    return MP_ERROR_INVALID_ARGUMENT;
  if (residual) {
    if (!residual->data || residual->elementType != out->elementType ||
        residual->rank != out->rank)
      return MP_ERROR_INVALID_ARGUMENT;
    for (int32_t d = 0; d < out->rank; ++d)
      if (residual->shape[d] != out->shape[d])
        return MP_ERROR_INVALID_ARGUMENT;
  }
  if (compute == MP_F32 && k > 0 && mpNumElements(out) > 0 &&
      libraryMatmul(lhs, rhs, bias, residual, out, ta, tb, m, n, k, b,
                    activation, float(alpha), sums))
    return MP_OK;
  if (compute == MP_F64)
    return referenceFusedMatmul<double>(lhs, rhs, bias, residual, out, ta, tb,
                                        activation, alpha, compute);
  return referenceFusedMatmul<float>(lhs, rhs, bias, residual, out, ta, tb,
                                     activation, float(alpha), compute);
}

} // namespace

extern "C" mpStatus mpFusedMatmul(const mpTensor *lhs, const mpTensor *rhs,
                                  const mpTensor *bias,
                                  const mpTensor *residual, mpTensor *out,
                                  int32_t transposeLhs, int32_t transposeRhs,
                                  int32_t activationValue, double alpha,
                                  mpElementType compute) {
  return fusedMatmul(lhs, rhs, bias, residual, out, transposeLhs != 0,
                     transposeRhs != 0, activationValue, alpha, compute,
                     nullptr);
}

extern "C" mpStatus
mpFusedMatmulBiasGrad(const mpTensor *lhs, const mpTensor *rhs,
                      const mpTensor *bias, const mpTensor *residual,
                      mpTensor *out, mpTensor *biasGrad, int32_t biasGradOf,
                      int32_t transposeLhs, int32_t transposeRhs,
                      int32_t activation, double alpha, mpElementType compute) {
  bool ta = transposeLhs, tb = transposeRhs;
  const mpTensor *summed;
  int64_t axis;
  if (!planBiasGrad(lhs, rhs, biasGrad, biasGradOf, ta, tb, summed, axis) ||
      !biasGrad->data)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t length = biasGrad->shape[0];
  std::vector<float> f32;
  OperandSums sums;
  if (compute == MP_F32) {
    float *to = biasGrad->elementType == MP_F32
                    ? static_cast<float *>(biasGrad->data)
                    : (f32.resize(size_t(length)), f32.data());
    (summed == lhs ? sums.lhs : sums.rhs) = to;
  }
  if (mpStatus st = fusedMatmul(lhs, rhs, bias, residual, out, ta, tb,
                                activation, alpha, compute, &sums))
    return st;
  if (!sums.done)
    return mpReduce(MP_REDUCE_SUM, summed, biasGrad, &axis, 1, compute);
  if (!f32.empty())
    for (int64_t i = 0; i < length; ++i)
      store(biasGrad->data, biasGrad->elementType, i, double(f32[i]));
  return MP_OK;
}

extern "C" mpStatus mpMatmul(const mpTensor *lhs, const mpTensor *rhs,
                             mpTensor *out, int32_t transposeLhs,
                             int32_t transposeRhs, mpElementType compute) {
  bool ta = transposeLhs, tb = transposeRhs;
  int64_t m, n, k;
  Batching b;
  if (!isFloatType(compute) || !planMatmul(lhs, rhs, out, ta, tb, m, n, k, b))
    return MP_ERROR_INVALID_ARGUMENT;
  if (b.count == 0 || m == 0 || n == 0)
    return MP_OK;
  if (k == 0) {
    for (int64_t i = 0, e = b.count * m * n; i < e; ++i)
      store(out->data, out->elementType, i, 0.0);
    return MP_OK;
  }
  switch (compute) {
  case MP_F32:
    if (libraryMatmul(lhs, rhs, nullptr, nullptr, out, ta, tb, m, n, k, b,
                      MP_ACTIVATION_NONE, 1.0f))
      break;
    blasMatmul<float>(lhs, rhs, out, ta, tb, m, n, k, b, MP_F32);
    break;
  case MP_F64:
    blasMatmul<double>(lhs, rhs, out, ta, tb, m, n, k, b, MP_F64);
    break;
  default:
    lowPrecisionMatmul(lhs, rhs, out, ta, tb, m, n, k, b, compute);
    break;
  }
  return MP_OK;
}
