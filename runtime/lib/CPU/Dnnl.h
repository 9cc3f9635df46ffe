//===- Dnnl.h - oneDNN behind the CPU kernels -------------------*- C++ -*-===//
//
// Internal to the CPU backend. Convolutions and f32/bf16 matmuls go to oneDNN
// (Debian's libdnnl, through its C API) when the build has it, the storage
// types are f32 or bf16 and the compute type is f32 (oneDNN accumulates in
// f32); it uses AVX-512, AVX512_BF16 and AMX where the CPU has them. Otherwise,
// or when mpUseLibraryKernels(0) asked for the reference loops, the caller runs
// its own loops.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_DNNL_H
#define MP_RUNTIME_CPU_DNNL_H

#include "Vector.h"

namespace mp::rt {

enum class DnnlConv { Forward, BackwardData, BackwardWeights };

/// Whether oneDNN is given bf16 operands: where the CPU has bf16 dot
/// products (AVX512_BF16 or AMX, as MP_CPU_ISA leaves them). Elsewhere
/// callers widen bf16 to f32 first.
bool dnnlTakesBf16();

/// Runs one convolution pass: Forward reads `src` and `weights` and writes
/// `dst`; BackwardData reads `dst` (dy) and `weights` and writes `src`
/// (dx); BackwardWeights reads `src` and `dst` (dy) and writes `weights`
/// (dw). Returns false, having written nothing, when oneDNN does not take
/// the call.
bool dnnlConv2d(DnnlConv kind, const mpTensor *src, const mpTensor *weights,
                const mpTensor *dst, const mpWindow *w, mpElementType compute);

/// Runs one convolution pass as in dnnlConv2d, as an im2col GEMM against
/// the plain filter (ConvGemm.cpp): NHWC, ungrouped, f32 or bf16 storage
/// computing in f32, few output positions for the output channels (or
/// MP_CONV_GEMM=always). Returns false, having written nothing, otherwise.
bool gemmConv2d(DnnlConv kind, const mpTensor *src, const mpTensor *weights,
                const mpTensor *dst, const mpWindow *w, mpElementType compute);

/// A matmul epilogue as oneDNN post-ops: out = activation(product + bias +
/// (sum ? out : 0)), in f32 on the accumulators.
struct DnnlEpilogue {
  float alpha = 1.0f;          // the product's scale (none without a bias)
  const float *bias = nullptr; // n elements, or null
  mpActivation activation = MP_ACTIVATION_NONE;
  bool sum = false; // add what `out` holds (the residual, copied there)
};

/// out[b] = op(lhs[b]) op(rhs[b]) for `batches` matrices, accumulating in
/// f32: lhs and rhs both bf16 with out bf16 or f32, or all three f32. An
/// operand with one matrix is shared by every batch; otherwise each has
/// `batches`. With `epilogue`, its bias, sum and activation are applied
/// before the result is stored. `lhsRows` and `rhsRows` are the elements
/// from one stored row of an operand to the next (0: its row length, dense;
/// more: padded rows, each matrix rows times that long). Returns false,
/// having written nothing, when oneDNN does not take the call.
bool dnnlMatmul(const mpTensor *lhs, const mpTensor *rhs, mpTensor *out,
                bool transposeLhs, bool transposeRhs, int64_t m, int64_t n,
                int64_t k, int64_t batches, bool lhsShared, bool rhsShared,
                const DnnlEpilogue *epilogue = nullptr, int64_t lhsRows = 0,
                int64_t rhsRows = 0);

/// Whether dnnlMatmul runs faster from a copy of an f32 operand with its
/// rows padded: a transposed lhs (stored [k, m]) or an rhs (stored [k, n])
/// whose stored rows are `rowBytes` long, in a product whose other output
/// dimension (n for that lhs, m for that rhs) is `across`. So where oneDNN
/// runs its jit GEMM (below AVX-512, or capped there by DNNL_MAX_CPU_ISA),
/// for rows a multiple of 2 KB long and `across` up to 512: a weight
/// gradient [520, 1024]^T [520, 256] took 1.9-2.1x as long as from rows
/// padded by a cache line, [256, 520] [520, 1024] 1.8-2x. With `across`
/// 520 or more, or rows along k, padding gained nothing
/// (benchmarks/README.md). Its brgemm kernels (AVX-512 and up) run at one
/// speed either way.
bool dnnlWantsPaddedRows(int64_t rowBytes, int64_t across);

/// Whether dnnlMatmul takes an unbatched product of `in` operands into an
/// `out` result with these transposes and sizes (creating and caching its
/// primitive): a caller that must prepare an operand first asks before it
/// does.
bool dnnlMatmulAvailable(mpElementType in, mpElementType out,
                         bool transposeLhs, bool transposeRhs, int64_t m,
                         int64_t n, int64_t k);

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_DNNL_H
