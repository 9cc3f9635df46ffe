//===- Gemm.h - the runtime's own f32 GEMM ----------------------*- C++ -*-===//
//
// Internal to the CPU backend. An f32 product packed and blocked the way
// BLIS structures one: a register tile of accumulators (14 x 32 on
// AVX-512, 6 x 16 on AVX2 with FMA), operands packed into panels per block
// of 256 along k, the rows of the output split between threads
// (Gemm.cpp). Matmul.cpp calls it for the f32 products oneDNN 2.6 runs
// slowest (benchmarks/README.md).
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_GEMM_H
#define MP_RUNTIME_CPU_GEMM_H

#include <cstdint>

namespace mp::rt {

/// A matrix read in place: element (i, j) is data[i * rowStep + j *
/// colStep], one of the two steps 1 (a matrix with its rows, or its
/// columns, contiguous: a dense one or its transpose, rows possibly
/// padded).
struct GemmOperand {
  const float *data;
  int64_t rowStep, colStep;
};

/// Whether packedGemm takes an m x n x k product on this CPU: AVX2 with FMA
/// and no AVX-512 (as MP_CPU_ISA leaves them; AVX-512 too with
/// MP_PACKED_GEMM=1, none with MP_PACKED_GEMM=0), the library kernels
/// enabled, every dimension positive and the product large enough to pay
/// for packing its operands.
bool packedGemmTakes(int64_t m, int64_t n, int64_t k);

/// Whether packedGemm takes a batch of `count` m x n x k products whole
/// matrices per thread, each multiplied by its thread alone: the CPU as for
/// packedGemmTakes, the threads about evenly loaded (no fewer than 80% of
/// them busy on average), each matrix large enough to pay for its packing
/// and all of them for the parallel region. For a batch it takes, that
/// runs faster than multiplying the matrices in turn on all threads, which
/// costs two barriers per block along k (benchmarks/README.md).
bool packedGemmBatchTakes(int64_t count, int64_t m, int64_t n, int64_t k);

/// c[i * ldc + j] = alpha times the sum over x < k of a(i, x) b(x, j), for
/// i < m and j < n, plus bias[j] where `bias` is given, plus
/// addend[i * ldc + j] where `addend` is given: c itself to accumulate, or
/// a residual laid out as c, which then need not be copied into c first;
/// f32 accumulation in blocks of up to 256 along k, each block's sums
/// scaled by alpha (no multiply where alpha is 1) as it is added. Where
/// `aSums` is given, aSums[i] = the sum over x of a(i, x), for i < m; where
/// `bSums` is, bSums[j] = the sum over x of b(x, j), for j < n: each added
/// in order along k, unscaled, as the operand is packed. Only for products
/// packedGemmTakes or packedGemmBatchTakes took; c must not overlap a, b,
/// bias, the sums or an addend other than itself. Called on a thread of a
/// parallel region, it runs on that thread alone.
void packedGemm(int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b,
                float *c, int64_t ldc, const float *bias, const float *addend,
                float alpha = 1.0f, float *aSums = nullptr,
                float *bSums = nullptr);

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_GEMM_H
