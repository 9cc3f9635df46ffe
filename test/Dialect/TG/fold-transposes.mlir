// RUN: mp-opt %s --split-input-file --tg-fold-transposes --verify-each | FileCheck %s
// A second run finds nothing more to fold.
// RUN: mp-opt %s --split-input-file --tg-fold-transposes > %t.once.mlir
// RUN: mp-opt %t.once.mlir --split-input-file --tg-fold-transposes | diff - %t.once.mlir
// Folded before epilogue fusion, the flags carry into the fused op.
// RUN: mp-opt %s --split-input-file --tg-fold-transposes --tg-fuse-epilogues --verify-each | FileCheck %s --check-prefix=FUSED

// A linear layer as PyTorch exports it, x W^T: the weight's transpose
// becomes the rhs flag; its gradient, a product transposed afterwards,
// becomes one matmul of the swapped operands. No transpose is left.
// CHECK-LABEL: func @linear
// CHECK-NOT: tg.transpose
// CHECK: %[[Y:.*]] = tg.matmul %arg0, %arg1 transpose_rhs : (tensor<32x64xf32>, tensor<128x64xf32>) -> tensor<32x128xf32>
// CHECK: %[[G:.*]] = tg.matmul %arg2, %arg0 transpose_lhs : (tensor<32x128xf32>, tensor<32x64xf32>) -> tensor<128x64xf32>
// CHECK-NOT: tg.transpose
// CHECK: return %[[Y]], %[[G]]
func.func @linear(%x: tensor<32x64xf32>, %w: tensor<128x64xf32>, %dy: tensor<32x128xf32>) -> (tensor<32x128xf32>, tensor<128x64xf32>) {
  %wt = tg.transpose %w permutation = [1, 0] : (tensor<128x64xf32>) -> tensor<64x128xf32>
  %y = tg.matmul %x, %wt : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  %g = tg.matmul %x, %dy transpose_lhs : (tensor<32x64xf32>, tensor<32x128xf32>) -> tensor<64x128xf32>
  %gt = tg.transpose %g permutation = [1, 0] : (tensor<64x128xf32>) -> tensor<128x64xf32>
  return %y, %gt : tensor<32x128xf32>, tensor<128x64xf32>
}

// -----

// A flag already set flips back off; the lhs folds too; the compute type
// and the storage types stay.
// CHECK-LABEL: func @flags_flip
// CHECK: tg.matmul %arg1, %arg0 transpose_lhs compute(f32) : (tensor<4x8xbf16>, tensor<4x6xbf16>) -> tensor<8x6xbf16>
func.func @flags_flip(%w: tensor<4x6xbf16>, %x: tensor<4x8xbf16>) -> tensor<8x6xbf16> {
  %wt = tg.transpose %w permutation = [1, 0] : (tensor<4x6xbf16>) -> tensor<6x4xbf16>
  %y = tg.matmul %x, %wt transpose_lhs transpose_rhs compute(f32) : (tensor<4x8xbf16>, tensor<6x4xbf16>) -> tensor<8x6xbf16>
  return %y : tensor<8x6xbf16>
}

// -----

// The lhs folds; one transpose read as both operands folds into both; a
// swap of a swap folds through both (the flag flips twice), and the inner
// swap, read only by the outer one and a folded matmul, goes too.
// CHECK-LABEL: func @lhs_both_chain
// CHECK-NOT: tg.transpose
// CHECK: %[[A:.*]] = tg.matmul %arg0, %arg1 transpose_lhs : (tensor<4x8xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
// CHECK: %[[B:.*]] = tg.matmul %arg2, %arg2 transpose_lhs : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
// CHECK: %[[C:.*]] = tg.matmul %arg3, %arg0 transpose_lhs transpose_rhs : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK-NOT: tg.transpose
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @lhs_both_chain(%a: tensor<4x8xf32>, %w: tensor<4x6xf32>, %s: tensor<5x5xf32>, %u: tensor<8x4xf32>) -> (tensor<8x6xf32>, tensor<5x5xf32>, tensor<4x4xf32>) {
  %at = tg.transpose %a permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %x = tg.matmul %at, %w : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %st = tg.transpose %s permutation = [1, 0] : (tensor<5x5xf32>) -> tensor<5x5xf32>
  %y = tg.matmul %st, %st transpose_rhs : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
  %at2 = tg.transpose %at permutation = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %ut = tg.transpose %u permutation = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %z = tg.matmul %ut, %at2 transpose_rhs : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  return %x, %y, %z : tensor<8x6xf32>, tensor<5x5xf32>, tensor<4x4xf32>
}

// -----

// Attention's K^T, [0, 1, 3, 2] of a rank-4 operand: batch dimensions stay.
// CHECK-LABEL: func @attention_scores
// CHECK-NOT: tg.transpose
// CHECK: tg.matmul %arg0, %arg1 transpose_rhs : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
func.func @attention_scores(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32> {
  %kt = tg.transpose %k permutation = [0, 1, 3, 2] : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
  %s = tg.matmul %q, %kt : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  return %s : tensor<2x4x16x16xf32>
}

// -----

// Batched products swap when both operands carry the batch; a batched
// activation times a rank-2 weight stays (it runs as one GEMM with the batch
// folded into M; swapped, the weight on the left, it would not).
// CHECK-LABEL: func @batched_products
// CHECK: %[[S:.*]] = tg.matmul %arg1, %arg0 transpose_lhs transpose_rhs : (tensor<2x4x6xf32>, tensor<2x8x4xf32>) -> tensor<2x6x8xf32>
// CHECK: %[[Y:.*]] = tg.matmul %arg0, %arg2 : (tensor<2x8x4xf32>, tensor<4x6xf32>) -> tensor<2x8x6xf32>
// CHECK: %[[T:.*]] = tg.transpose %[[Y]] permutation = [0, 2, 1]
// CHECK: return %[[S]], %[[T]]
func.func @batched_products(%x: tensor<2x8x4xf32>, %v: tensor<2x4x6xf32>, %w: tensor<4x6xf32>) -> (tensor<2x6x8xf32>, tensor<2x6x8xf32>) {
  %a = tg.matmul %x, %v : (tensor<2x8x4xf32>, tensor<2x4x6xf32>) -> tensor<2x8x6xf32>
  %at = tg.transpose %a permutation = [0, 2, 1] : (tensor<2x8x6xf32>) -> tensor<2x6x8xf32>
  %y = tg.matmul %x, %w : (tensor<2x8x4xf32>, tensor<4x6xf32>) -> tensor<2x8x6xf32>
  %t = tg.transpose %y permutation = [0, 2, 1] : (tensor<2x8x6xf32>) -> tensor<2x6x8xf32>
  return %at, %t : tensor<2x6x8xf32>, tensor<2x6x8xf32>
}

// -----

// What stays: a permutation that moves a batch dimension; a product with
// another use (it would be computed twice); a transpose read by something
// besides a matmul (the matmul still reads its input through the flag).
// CHECK-LABEL: func @kept
// CHECK: %[[P:.*]] = tg.transpose %arg0 permutation = [1, 0, 2]
// CHECK: tg.matmul %[[P]], %arg1 :
// CHECK: %[[Y:.*]] = tg.matmul %arg0, %arg2 :
// CHECK: %[[YT:.*]] = tg.transpose %[[Y]] permutation = [0, 2, 1]
// CHECK: %[[WT:.*]] = tg.transpose %arg3 permutation = [1, 0]
// CHECK: tg.matmul %arg4, %arg3 transpose_rhs :
// CHECK: return {{.*}}, %[[Y]], %[[YT]], {{.*}}, %[[WT]]
func.func @kept(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %v: tensor<4x4xf32>, %u: tensor<6x4xf32>, %z: tensor<3x4xf32>)
    -> (tensor<3x2x5xf32>, tensor<2x3x4xf32>, tensor<2x4x3xf32>, tensor<3x6xf32>, tensor<4x6xf32>) {
  %p = tg.transpose %x permutation = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %a = tg.matmul %p, %w : (tensor<3x2x4xf32>, tensor<4x5xf32>) -> tensor<3x2x5xf32>
  %y = tg.matmul %x, %v : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %yt = tg.transpose %y permutation = [0, 2, 1] : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %ut = tg.transpose %u permutation = [1, 0] : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %b = tg.matmul %z, %ut : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  return %a, %y, %yt, %b, %ut : tensor<3x2x5xf32>, tensor<2x3x4xf32>, tensor<2x4x3xf32>, tensor<3x6xf32>, tensor<4x6xf32>
}

// -----

// A fused matmul's operands fold; its result, with a bias along the last
// dimension, is not swapped.
// CHECK-LABEL: func @fused
// CHECK: %[[Y:.*]] = tg.fused_matmul %arg0, %arg1 transpose_rhs bias(%arg2) activation(relu)
// CHECK: tg.transpose %[[Y]] permutation = [1, 0]
// FUSED-LABEL: func @fused
// FUSED: tg.fused_matmul %arg0, %arg1 transpose_rhs bias(%arg2) activation(relu)
func.func @fused(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<3x8xf32> {
  %wt = tg.transpose %w permutation = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %y = tg.fused_matmul %x, %wt bias(%b) activation(relu) : (tensor<8x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %t = tg.transpose %y permutation = [1, 0] : (tensor<8x3xf32>) -> tensor<3x8xf32>
  return %t : tensor<3x8xf32>
}

// -----

// A plain matmul, a bias add and a ReLU after a folded weight transpose
// fuse into one op with the flag.
// FUSED-LABEL: func @then_fused
// FUSED-NOT: tg.transpose
// FUSED: tg.fused_matmul %arg0, %arg1 transpose_rhs bias(%arg2) activation(relu) : (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<8x3xf32>
func.func @then_fused(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<8x3xf32> {
  %wt = tg.transpose %w permutation = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %mm = tg.matmul %x, %wt : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %z = tg.add %mm, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %h = tg.relu %z : tensor<8x3xf32>
  return %h : tensor<8x3xf32>
}

// -----

// After tg-fuse-epilogues has moved a scaling into alpha: the keys'
// transpose folds into the fused matmul, and a transposed scaled product
// (the keys' gradient) swaps, alpha kept. One with a bias does not swap.
// CHECK-LABEL: func @fused_scaled
// CHECK-NEXT: %[[S:.*]] = tg.fused_matmul %arg0, %arg1 transpose_rhs {alpha = 1.250000e-01 : f64}
// CHECK-NEXT: %[[DK:.*]] = tg.fused_matmul %arg0, %arg2 transpose_lhs transpose_rhs {alpha = 1.250000e-01 : f64} : (tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT: %[[B:.*]] = tg.fused_matmul %arg2, %arg0 bias(%arg3) {alpha = 1.250000e-01 : f64}
// CHECK-NEXT: %[[BT:.*]] = tg.transpose %[[B]]
// CHECK-NEXT: return %[[S]], %[[DK]], %[[BT]]
func.func @fused_scaled(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %ds: tensor<2x4x4xf32>, %b: tensor<8xf32>) -> (tensor<2x4x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
  %kt = tg.transpose %k permutation = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = tg.fused_matmul %q, %kt {alpha = 1.250000e-01 : f64} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = tg.fused_matmul %ds, %q {alpha = 1.250000e-01 : f64} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dk = tg.transpose %p permutation = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %pb = tg.fused_matmul %ds, %q bias(%b) {alpha = 1.250000e-01 : f64} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %bt = tg.transpose %pb permutation = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  return %s, %dk, %bt : tensor<2x4x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>
}
