//===- Matmul.cpp - tg.matmul through cuBLASLt ----------------------------===//
//
// Row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T
// op(A)^T, so cuBLASLt's "A" is the op's rhs and its "B" the lhs, with no
// copies. f16 and bf16 operands run on tensor cores with f32 accumulation
// (CUBLAS_COMPUTE_32F) and write f16, bf16 or f32 directly; f32 operands
// use strict f32 (no TF32), f64 operands f64. Batch dimensions become one
// strided-batched call when each operand is either fully batched or not
// batched at all (stride 0); an unbatched rhs with a plain lhs folds the
// batch into M; other broadcasts issue one call per batch entry. Matmul
// descriptors and the heuristic's algorithm are cached per shape, type and
// pointer alignment.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Kernels.h"
#include "Libraries.h"

#include "../Entry.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

using namespace mp;
using namespace mp::cuda;

namespace {

cudaDataType_t dataType(mpElementType type) {
  switch (type) {
  case MP_F16: return CUDA_R_16F;
  case MP_BF16: return CUDA_R_16BF;
  case MP_F64: return CUDA_R_64F;
  default: return CUDA_R_32F;
  }
}

/// One column-major GEMM (batched): D[m x n] = opA(A) opB(B).
struct GemmShape {
  int64_t m, n, k;
  bool transA, transB;
  int64_t batch, strideA, strideB, strideD;
  mpElementType abType, dType;
  int alignA, alignB, alignD;
  /// The epilogue (bias and activation) and whether C (the residual) is
  /// added; alignD covers C as well.
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  bool addC = false;

  auto key() const {
    return std::make_tuple(m, n, k, transA, transB, batch, strideA, strideB,
                           strideD, int(abType), int(dType), alignA, alignB,
                           alignD, int(epilogue), addC);
  }
  bool operator<(const GemmShape &other) const { return key() < other.key(); }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (desc)
      lt().cublasLtMatmulDescDestroy(desc);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l)
        lt().cublasLtMatrixLayoutDestroy(l);
  }
};

int alignmentOf(const void *p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  int a = 1;
  while (a < 256 && v % (2 * a) == 0)
    a *= 2;
  return a;
}

bool makeLayout(cublasLtMatrixLayout_t &layout, mpElementType type,
                int64_t rows, int64_t cols, int64_t batch, int64_t stride) {
  if (!ok(lt().cublasLtMatrixLayoutCreate(&layout, dataType(type), rows, cols,
                                     rows),
          "cublasLtMatrixLayoutCreate"))
    return false;
  if (batch == 1)
    return true;
  int32_t count = int32_t(batch);
  return ok(lt().cublasLtMatrixLayoutSetAttribute(
                layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                sizeof(count)),
            "cublasLtMatrixLayoutSetAttribute") &&
         ok(lt().cublasLtMatrixLayoutSetAttribute(
                layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                sizeof(stride)),
            "cublasLtMatrixLayoutSetAttribute");
}

/// The cached plan for `s`, or null with a detail.
const Plan *planFor(Context &c, const GemmShape &s) {
  static std::map<GemmShape, std::unique_ptr<Plan>> cache;
  auto it = cache.find(s);
  if (it != cache.end())
    return it->second.get();
  auto plan = std::make_unique<Plan>();
  bool f64 = s.abType == MP_F64;
  cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = f64 ? CUDA_R_64F : CUDA_R_32F;
  cublasOperation_t opA = s.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (!ok(lt().cublasLtMatmulDescCreate(&plan->desc, compute, scale),
          "cublasLtMatmulDescCreate") ||
      !ok(lt().cublasLtMatmulDescSetAttribute(plan->desc,
                                         CUBLASLT_MATMUL_DESC_TRANSA, &opA,
                                         sizeof(opA)),
          "cublasLtMatmulDescSetAttribute") ||
      !ok(lt().cublasLtMatmulDescSetAttribute(plan->desc,
                                         CUBLASLT_MATMUL_DESC_TRANSB, &opB,
                                         sizeof(opB)),
          "cublasLtMatmulDescSetAttribute") ||
      !ok(lt().cublasLtMatmulDescSetAttribute(plan->desc,
                                         CUBLASLT_MATMUL_DESC_EPILOGUE,
                                         &s.epilogue, sizeof(s.epilogue)),
          "cublasLtMatmulDescSetAttribute"))
    return nullptr;
  // A is m x k (k x m stored when transposed), B is k x n (n x k).
  if (!makeLayout(plan->a, s.abType, s.transA ? s.k : s.m,
                  s.transA ? s.m : s.k, s.batch, s.strideA) ||
      !makeLayout(plan->b, s.abType, s.transB ? s.n : s.k,
                  s.transB ? s.k : s.n, s.batch, s.strideB) ||
      !makeLayout(plan->d, s.dType, s.m, s.n, s.batch, s.strideD))
    return nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  if (!ok(lt().cublasLtMatmulPreferenceCreate(&preference),
          "cublasLtMatmulPreferenceCreate"))
    return nullptr;
  uint64_t workspace = c.workspaceSize;
  uint32_t alignA = s.alignA, alignB = s.alignB, alignD = s.alignD;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  bool good =
      ok(lt().cublasLtMatmulPreferenceSetAttribute(
             preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
             sizeof(workspace)),
         "cublasLtMatmulPreferenceSetAttribute") &&
      ok(lt().cublasLtMatmulPreferenceSetAttribute(
             preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA,
             sizeof(alignA)),
         "cublasLtMatmulPreferenceSetAttribute") &&
      ok(lt().cublasLtMatmulPreferenceSetAttribute(
             preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB,
             sizeof(alignB)),
         "cublasLtMatmulPreferenceSetAttribute") &&
      ok(lt().cublasLtMatmulPreferenceSetAttribute(
             preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignD,
             sizeof(alignD)),
         "cublasLtMatmulPreferenceSetAttribute") &&
      ok(lt().cublasLtMatmulPreferenceSetAttribute(
             preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignD,
             sizeof(alignD)),
         "cublasLtMatmulPreferenceSetAttribute") &&
      ok(lt().cublasLtMatmulAlgoGetHeuristic(c.lt, plan->desc, plan->a, plan->b,
                                        plan->d, plan->d, preference, 1,
                                        &result, &found),
         "cublasLtMatmulAlgoGetHeuristic");
  lt().cublasLtMatmulPreferenceDestroy(preference);
  if (!good)
    return nullptr;
  if (!found) {
    rt::setDetail("cuBLASLt has no algorithm for this GEMM");
    return nullptr;
  }
  plan->algo = result.algo;
  return (cache[s] = std::move(plan)).get();
}

/// D = epilogue(alpha op(A) op(B) + C), with C = `addend` (D's layout) when
/// given and the bias vector `bias` (D's rows) where `s.epilogue` has one
/// (cuBLASLt adds it after alpha and C).
/// A fused call (an epilogue or C) that cuBLASLt refuses returns
/// MP_ERROR_UNSUPPORTED, for the caller's fallback.
mpStatus gemm(Context &c, GemmShape s, const void *a, const void *b, void *d,
              const void *addend = nullptr, const void *bias = nullptr,
              double alpha = 1) {
  s.alignA = alignmentOf(a);
  s.alignB = alignmentOf(b);
  s.alignD = std::min({alignmentOf(d), addend ? alignmentOf(addend) : 256,
                       bias ? alignmentOf(bias) : 256});
  s.addC = addend != nullptr;
  bool fused = s.addC || s.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
  const Plan *plan = planFor(c, s);
  if (!plan)
    return fused ? MP_ERROR_UNSUPPORTED : MP_ERROR_BACKEND;
  // The bias pointer is an attribute of the cached descriptor; the calls
  // run in order on one stream, so setting it per call is safe.
  if (bias && !ok(lt().cublasLtMatmulDescSetAttribute(
                      plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                      sizeof(bias)),
                  "cublasLtMatmulDescSetAttribute"))
    return MP_ERROR_BACKEND;
  float alpha32 = float(alpha), beta32 = addend ? 1 : 0;
  double alpha64 = alpha, beta64 = addend ? 1 : 0;
  bool f64 = s.abType == MP_F64;
  cublasStatus_t status = lt().cublasLtMatmul(
      c.lt, plan->desc, f64 ? static_cast<const void *>(&alpha64) : &alpha32,
      a, plan->a, b, plan->b,
      f64 ? static_cast<const void *>(&beta64) : &beta32,
      addend ? addend : d, plan->d, d, plan->d, &plan->algo, c.workspace,
      c.workspaceSize, c.stream);
  if (fused && status == CUBLAS_STATUS_NOT_SUPPORTED)
    return MP_ERROR_UNSUPPORTED;
  if (!ok(status, "cublasLtMatmul"))
    return MP_ERROR_BACKEND;
  return MP_OK;
}

/// Whether cuBLASLt writes `out` from `in` operands directly.
bool writesDirectly(mpElementType in, mpElementType out) {
  return in == out || ((in == MP_F16 || in == MP_BF16) && out == MP_F32);
}

/// What a fused matmul asks of cuBLASLt: its epilogue, the bias vector,
/// the residual (added as C) and the product's scale.
struct Fusion {
  cublasLtEpilogue_t epilogue;
  const void *bias, *residual;
  double alpha;
};

/// The product of mpMatmul, with `fusion`'s epilogue where given: then
/// MP_ERROR_UNSUPPORTED, with nothing written, when cuBLASLt cannot apply
/// it in the one call the shapes take.
mpStatus product(const mpTensor *lhs, const mpTensor *rhs, mpTensor *out,
                 int32_t transposeLhs, int32_t transposeRhs,
                 mpElementType compute, const Fusion *fusion) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!validFloat(lhs) || !validFloat(rhs) || !validFloat(out) ||
      lhs->elementType != rhs->elementType || !isFloatType(compute) ||
      lhs->rank < 2 || rhs->rank < 2 || out->rank < 2)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t m = lhs->shape[lhs->rank - (transposeLhs ? 1 : 2)];
  int64_t k = lhs->shape[lhs->rank - (transposeLhs ? 2 : 1)];
  int64_t k2 = rhs->shape[rhs->rank - (transposeRhs ? 1 : 2)];
  int64_t n = rhs->shape[rhs->rank - (transposeRhs ? 2 : 1)];
  if (k != k2 || out->shape[out->rank - 2] != m ||
      out->shape[out->rank - 1] != n)
    return MP_ERROR_INVALID_ARGUMENT;
  // Batch dimensions, right-aligned and broadcast.
  int32_t batchRank = out->rank - 2;
  if (lhs->rank - 2 > batchRank || rhs->rank - 2 > batchRank)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t batch = 1;
  bool lhsFull = true, lhsNone = true, rhsFull = true, rhsNone = true;
  std::vector<int64_t> lhsStride(batchRank), rhsStride(batchRank);
  int64_t ls = m * k, rs = k * n;
  for (int32_t d = batchRank - 1; d >= 0; --d) {
    int32_t ld = d - (batchRank - (lhs->rank - 2));
    int32_t rd = d - (batchRank - (rhs->rank - 2));
    int64_t lsz = ld >= 0 ? lhs->shape[ld] : 1;
    int64_t rsz = rd >= 0 ? rhs->shape[rd] : 1;
    int64_t osz = out->shape[d];
    if ((lsz != osz && lsz != 1) || (rsz != osz && rsz != 1))
      return MP_ERROR_INVALID_ARGUMENT;
    lhsFull &= lsz == osz;
    lhsNone &= lsz == 1;
    rhsFull &= rsz == osz;
    rhsNone &= rsz == 1;
    lhsStride[d] = lsz == 1 ? 0 : ls;
    rhsStride[d] = rsz == 1 ? 0 : rs;
    ls *= lsz;
    rs *= rsz;
    batch *= osz;
  }
  if (!batch || !m || !n)
    return MP_OK;

  mpElementType in = lhs->elementType;
  mpElementType direct = writesDirectly(in, out->elementType)
                             ? out->elementType
                             : (in == MP_F64 ? MP_F64 : MP_F32);
  bool folds = rhsNone && !transposeLhs && lhsFull;
  bool strided = (lhsFull || lhsNone) && (rhsFull || rhsNone);
  if (fusion && (direct != out->elementType || in == MP_F64 || !k ||
                 !(folds || strided)))
    return MP_ERROR_UNSUPPORTED;
  const void *addend = fusion ? fusion->residual : nullptr;
  const void *bias = fusion ? fusion->bias : nullptr;
  double alpha = fusion ? fusion->alpha : 1;
  int64_t outCount = batch * m * n;
  std::unique_ptr<Scratch> staging;
  void *d = out->data;
  if (direct != out->elementType) {
    staging = std::make_unique<Scratch>(size_t(outCount) *
                                        mpElementSize(direct));
    if (!*staging)
      return MP_ERROR_OUT_OF_MEMORY;
    d = staging->get();
  }
  if (!k) {
    MP_CUDA_TRY(cudaMemsetAsync(d, 0, size_t(outCount) * mpElementSize(direct),
                                c->stream));
  } else {
    // cuBLASLt's A = rhs (n x k), B = lhs (k x m), D = out^T (n x m).
    GemmShape s{};
    s.m = n;
    s.n = m;
    s.k = k;
    s.transA = transposeRhs;
    s.transB = transposeLhs;
    s.abType = in;
    s.dType = direct;
    if (fusion)
      s.epilogue = fusion->epilogue;
    if (folds) {
      s.n = m * batch; // fold the batch into M
      s.batch = 1;
      if (mpStatus st =
              gemm(*c, s, rhs->data, lhs->data, d, addend, bias, alpha))
        return st;
    } else if (strided) {
      s.batch = batch;
      s.strideA = rhsNone ? 0 : k * n;
      s.strideB = lhsNone ? 0 : m * k;
      s.strideD = m * n;
      if (mpStatus st =
              gemm(*c, s, rhs->data, lhs->data, d, addend, bias, alpha))
        return st;
    } else {
      s.batch = 1;
      size_t abSize = mpElementSize(in), dSize = mpElementSize(direct);
      for (int64_t b = 0; b < batch; ++b) {
        int64_t lo = 0, ro = 0, rest = b;
        for (int32_t dim = batchRank - 1; dim >= 0; --dim) {
          int64_t idx = rest % out->shape[dim];
          rest /= out->shape[dim];
          lo += idx * lhsStride[dim];
          ro += idx * rhsStride[dim];
        }
        if (mpStatus st = gemm(
                *c, s, static_cast<const char *>(rhs->data) + ro * abSize,
                static_cast<const char *>(lhs->data) + lo * abSize,
                static_cast<char *>(d) + b * m * n * dSize))
          return st;
      }
    }
  }
  if (staging)
    return mp::cuda::mpConvert(d, direct, out->data, out->elementType,
                               outCount);
  return MP_OK;
}

/// The cuBLASLt epilogue for `activation` with or without a bias; false
/// where cuBLASLt has none (its GELU is the tanh approximation, so an exact
/// GELU takes the fallback).
bool epilogueFor(mpActivation activation, bool bias, cublasLtEpilogue_t &e) {
  switch (activation) {
  case MP_ACTIVATION_NONE:
    e = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    return true;
  case MP_ACTIVATION_RELU:
    e = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    return true;
  case MP_ACTIVATION_GELU_TANH:
    e = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    return true;
  default:
    return false;
  }
}

} // namespace

mpStatus mp::cuda::mpMatmul(const mpTensor *lhs, const mpTensor *rhs,
                            mpTensor *out, int32_t transposeLhs,
                            int32_t transposeRhs, mpElementType compute) {
  return product(lhs, rhs, out, transposeLhs, transposeRhs, compute, nullptr);
}

mpStatus mp::cuda::mpFusedMatmul(const mpTensor *lhs, const mpTensor *rhs,
                                 const mpTensor *bias, const mpTensor *residual,
                                 mpTensor *out, int32_t transposeLhs,
                                 int32_t transposeRhs, int32_t activationValue,
                                 double alpha, mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  if (!validFloat(out) || out->rank < 2 ||
      (compute != MP_F32 && compute != MP_F64) ||
      activationValue < MP_ACTIVATION_NONE ||
      activationValue > MP_ACTIVATION_GELU_TANH || !std::isfinite(alpha) ||
      (compute == MP_F32 && !std::isfinite(float(alpha))))
    return MP_ERROR_INVALID_ARGUMENT;
  auto activation = static_cast<mpActivation>(activationValue);
  int64_t n = out->shape[out->rank - 1];
  if (bias && (!validFloat(bias) || bias->rank != 1 || bias->shape[0] != n))
    return MP_ERROR_INVALID_ARGUMENT;
  if (residual) {
    if (!validFloat(residual) || residual->elementType != out->elementType ||
        residual->rank != out->rank)
      return MP_ERROR_INVALID_ARGUMENT;
    for (int32_t d = 0; d < out->rank; ++d)
      if (residual->shape[d] != out->shape[d])
        return MP_ERROR_INVALID_ARGUMENT;
  }
  // One cuBLASLt call where its epilogue does it all: f32 accumulation, a
  // bias of the output's type.
  Fusion fusion{CUBLASLT_EPILOGUE_DEFAULT, bias ? bias->data : nullptr,
                residual ? residual->data : nullptr, alpha};
  if (compute == MP_F32 &&
      epilogueFor(activation, bias != nullptr, fusion.epilogue) &&
      (!bias || bias->elementType == out->elementType)) {
    mpStatus st = product(lhs, rhs, out, transposeLhs, transposeRhs, compute,
                          &fusion);
    if (st != MP_ERROR_UNSUPPORTED)
      return st;
    rt::setDetail(""); // cuBLASLt's refusal is not an error
  }
  // Otherwise the product in the compute type, then the epilogue kernel.
  int64_t count = mpNumElements(out);
  Scratch acc(size_t(count ? count : 1) * mpElementSize(compute));
  if (!acc)
    return MP_ERROR_OUT_OF_MEMORY;
  mpTensor accumulators = *out;
  accumulators.elementType = compute;
  accumulators.data = acc.get();
  if (mpStatus st = product(lhs, rhs, &accumulators, transposeLhs,
                            transposeRhs, compute, nullptr))
    return st;
  return applyEpilogue(acc.get(), compute, alpha, bias, residual, out,
                       activation);
}

// The bias gradient is a reduction of its own after the product (mpReduce's
// kernel); cuBLASLt's BGRADA/BGRADB epilogues, which sum the operand in the
// GEMM, are to be measured on a device first.
mpStatus mp::cuda::mpFusedMatmulBiasGrad(
    const mpTensor *lhs, const mpTensor *rhs, const mpTensor *bias,
    const mpTensor *residual, mpTensor *out, mpTensor *biasGrad,
    int32_t biasGradOf, int32_t transposeLhs, int32_t transposeRhs,
    int32_t activation, double alpha, mpElementType compute) {
  const mpTensor *summed;
  int64_t axis;
  if (!validFloat(biasGrad) ||
      !rt::planBiasGrad(lhs, rhs, biasGrad, biasGradOf, transposeLhs != 0,
                        transposeRhs != 0, summed, axis))
    return MP_ERROR_INVALID_ARGUMENT;
  if (mpStatus st =
          cuda::mpFusedMatmul(lhs, rhs, bias, residual, out, transposeLhs,
                              transposeRhs, activation, alpha, compute))
    return st;
  return cuda::mpReduce(MP_REDUCE_SUM, summed, biasGrad, &axis, 1, compute);
}
