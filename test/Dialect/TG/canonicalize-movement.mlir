// RUN: mp-opt %s --split-input-file --canonicalize | FileCheck %s

// The canonicalization patterns of the data movement ops
// (lib/Dialect/TG/IR/TGCanonicalize.cpp). make-train-step-split.mlir has the
// concat tg-make-train-step builds for the adjoint of a split.

// PyTorch's split of a fused QKV projection: a transpose of the whole
// product, then slices. The slices move above the transpose and the
// reshape, and the transposes of the slices, which only move dimensions of
// size 1, become reshapes: no copy of the whole product is left.
// CHECK-LABEL: func @qkv_split
// CHECK-SAME: (%[[X:.*]]: tensor<5x2x6xf32>)
// CHECK-NOT: tg.transpose
// CHECK: %[[R:.*]] = tg.reshape %[[X]] : (tensor<5x2x6xf32>) -> tensor<1x5x2x3x2xf32>
// CHECK: %[[Q:.*]] = tg.slice %[[R]] offsets = [0, 0, 0, 0, 0] sizes = [1, 5, 2, 1, 2]
// CHECK: tg.reshape %[[Q]] : (tensor<1x5x2x1x2xf32>) -> tensor<1x5x2x2xf32>
// CHECK: %[[K:.*]] = tg.slice %[[R]] offsets = [0, 0, 0, 1, 0] sizes = [1, 5, 2, 1, 2]
// CHECK: tg.reshape %[[K]]
// CHECK: %[[V:.*]] = tg.slice %[[R]] offsets = [0, 0, 0, 2, 0] sizes = [1, 5, 2, 1, 2]
// CHECK: tg.reshape %[[V]]
// CHECK-NOT: tg.transpose
// CHECK: return
func.func @qkv_split(%x: tensor<5x2x6xf32>)
    -> (tensor<1x5x2x2xf32>, tensor<1x5x2x2xf32>, tensor<1x5x2x2xf32>) {
  %0 = tg.reshape %x : (tensor<5x2x6xf32>) -> tensor<1x5x2x3x2xf32>
  %1 = tg.transpose %0 permutation = [3, 1, 2, 0, 4]
      : (tensor<1x5x2x3x2xf32>) -> tensor<3x5x2x1x2xf32>
  %2 = tg.reshape %1 : (tensor<3x5x2x1x2xf32>) -> tensor<3x5x2x2xf32>
  %q = tg.slice %2 offsets = [0, 0, 0, 0] sizes = [1, 5, 2, 2]
      : (tensor<3x5x2x2xf32>) -> tensor<1x5x2x2xf32>
  %k = tg.slice %2 offsets = [1, 0, 0, 0] sizes = [1, 5, 2, 2]
      : (tensor<3x5x2x2xf32>) -> tensor<1x5x2x2xf32>
  %v = tg.slice %2 offsets = [2, 0, 0, 0] sizes = [1, 5, 2, 2]
      : (tensor<3x5x2x2xf32>) -> tensor<1x5x2x2xf32>
  return %q, %k, %v
      : tensor<1x5x2x2xf32>, tensor<1x5x2x2xf32>, tensor<1x5x2x2xf32>
}

// -----

// A slice of a transpose reads the transpose's input, its selection
// permuted (strides too).
// CHECK-LABEL: func @slice_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK: %[[S:.*]] = tg.slice %[[X]] offsets = [1, 2] sizes = [2, 3] strides = [2, 1] : (tensor<4x6xf32>) -> tensor<2x3xf32>
// CHECK: %[[T:.*]] = tg.transpose %[[S]] permutation = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK: return %[[T]]
func.func @slice_of_transpose(%x: tensor<4x6xf32>) -> tensor<3x2xf32> {
  %0 = tg.transpose %x permutation = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %1 = tg.slice %0 offsets = [2, 1] sizes = [3, 2] strides = [1, 2]
      : (tensor<6x4xf32>) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// The transpose stays where something else reads it (the slice would be
// an extra copy), and where the slices together select more than all of
// it.
// CHECK-LABEL: func @transpose_kept
// CHECK: %[[T:.*]] = tg.transpose
// CHECK: tg.slice %[[T]]
// CHECK: tg.neg %[[T]]
// CHECK: %[[U:.*]] = tg.transpose
// CHECK: tg.slice %[[U]]
// CHECK: tg.slice %[[U]]
func.func @transpose_kept(%x: tensor<4x6xf32>)
    -> (tensor<3x4xf32>, tensor<6x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>) {
  %0 = tg.transpose %x permutation = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %1 = tg.slice %0 offsets = [0, 0] sizes = [3, 4]
      : (tensor<6x4xf32>) -> tensor<3x4xf32>
  %2 = tg.neg %0 : tensor<6x4xf32>
  %3 = tg.transpose %x permutation = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %4 = tg.slice %3 offsets = [0, 0] sizes = [5, 4]
      : (tensor<6x4xf32>) -> tensor<5x4xf32>
  %5 = tg.slice %3 offsets = [1, 0] sizes = [5, 4]
      : (tensor<6x4xf32>) -> tensor<5x4xf32>
  return %1, %2, %4, %5
      : tensor<3x4xf32>, tensor<6x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>
}

// -----

// A transpose that keeps the order of the dimensions larger than 1 is a
// reshape; one that reorders them is not.
// CHECK-LABEL: func @transpose_of_unit_dims
// CHECK: tg.reshape %{{.*}} : (tensor<1x4x1x6xf32>) -> tensor<4x1x6x1xf32>
// CHECK: tg.transpose %{{.*}} permutation = [3, 0, 1, 2]
func.func @transpose_of_unit_dims(%x: tensor<1x4x1x6xf32>)
    -> (tensor<4x1x6x1xf32>, tensor<6x1x4x1xf32>) {
  %0 = tg.transpose %x permutation = [1, 0, 3, 2]
      : (tensor<1x4x1x6xf32>) -> tensor<4x1x6x1xf32>
  %1 = tg.transpose %x permutation = [3, 0, 1, 2]
      : (tensor<1x4x1x6xf32>) -> tensor<6x1x4x1xf32>
  return %0, %1 : tensor<4x1x6x1xf32>, tensor<6x1x4x1xf32>
}

// -----

// A slice of a reshape that only adds or drops dimensions of size 1 reads
// the reshape's input; a reshape that splits a dimension keeps its slice.
// CHECK-LABEL: func @slice_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<4x1x6xf32>)
// CHECK: %[[S:.*]] = tg.slice %[[X]] offsets = [1, 0, 2] sizes = [2, 1, 3] : (tensor<4x1x6xf32>) -> tensor<2x1x3xf32>
// CHECK: tg.reshape %[[S]] : (tensor<2x1x3xf32>) -> tensor<1x2x3xf32>
// CHECK: %[[R:.*]] = tg.reshape %[[X]] : (tensor<4x1x6xf32>) -> tensor<4x2x3xf32>
// CHECK: tg.slice %[[R]]
func.func @slice_of_reshape(%x: tensor<4x1x6xf32>)
    -> (tensor<1x2x3xf32>, tensor<2x2x3xf32>) {
  %0 = tg.reshape %x : (tensor<4x1x6xf32>) -> tensor<1x4x6xf32>
  %1 = tg.slice %0 offsets = [0, 1, 2] sizes = [1, 2, 3]
      : (tensor<1x4x6xf32>) -> tensor<1x2x3xf32>
  %2 = tg.reshape %x : (tensor<4x1x6xf32>) -> tensor<4x2x3xf32>
  %3 = tg.slice %2 offsets = [0, 0, 0] sizes = [2, 2, 3]
      : (tensor<4x2x3xf32>) -> tensor<2x2x3xf32>
  return %1, %3 : tensor<1x2x3xf32>, tensor<2x2x3xf32>
}

// -----

// Slice gradients that tile their result along one dimension, summed, are
// a concat of their gradients in offset order.
// CHECK-LABEL: func @slice_grads_tile
// CHECK-SAME: (%[[A:.*]]: tensor<4x1xf32>, %[[B:.*]]: tensor<4x2xf32>, %[[C:.*]]: tensor<4x3xf32>)
// CHECK-NOT: tg.add
// CHECK: %[[R:.*]] = tg.concat %[[A]], %[[B]], %[[C]] axis = 1 : (tensor<4x1xf32>, tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
// CHECK: return %[[R]]
func.func @slice_grads_tile(%a: tensor<4x1xf32>, %b: tensor<4x2xf32>,
                            %c: tensor<4x3xf32>) -> tensor<4x6xf32> {
  %0 = tg.slice_grad %c offsets = [0, 3] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %1 = tg.slice_grad %a offsets = [0, 0] : (tensor<4x1xf32>) -> tensor<4x6xf32>
  %2 = tg.add %0, %1 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = tg.slice_grad %b offsets = [0, 1] : (tensor<4x2xf32>) -> tensor<4x6xf32>
  %4 = tg.add %2, %3 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %4 : tensor<4x6xf32>
}

// -----

// No concat where the slices leave a gap, overlap, are strided, split two
// dimensions, where a slice gradient has another use, or where the add
// computes in a type narrower than the values (f16 rounds an f32 and can
// overflow).
// CHECK-LABEL: func @slice_grads_do_not_tile
// CHECK-NOT: tg.concat
// CHECK: return
func.func @slice_grads_do_not_tile(%a: tensor<4x2xf32>, %b: tensor<4x3xf32>,
                                   %c: tensor<2x6xf32>, %d: tensor<2x3xf32>)
    -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>,
        tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  // A gap: columns [2, 3).
  %0 = tg.slice_grad %a offsets = [0, 0] : (tensor<4x2xf32>) -> tensor<4x6xf32>
  %1 = tg.slice_grad %b offsets = [0, 3] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %gap = tg.add %0, %1 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  // Overlap: column 2 twice.
  %2 = tg.slice_grad %b offsets = [0, 0] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %3 = tg.slice_grad %b offsets = [0, 2] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %4 = tg.slice_grad %a offsets = [0, 4] : (tensor<4x2xf32>) -> tensor<4x6xf32>
  %5 = tg.add %2, %3 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %overlap = tg.add %5, %4 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  // Strided: even and odd columns.
  %6 = tg.slice_grad %b offsets = [0, 0] strides = [1, 2] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %7 = tg.slice_grad %b offsets = [0, 1] strides = [1, 2] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %strided = tg.add %6, %7 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  // Two dimensions: rows [0, 2) and columns [3, 6).
  %8 = tg.slice_grad %c offsets = [0, 0] : (tensor<2x6xf32>) -> tensor<4x6xf32>
  %9 = tg.slice_grad %d offsets = [2, 3] : (tensor<2x3xf32>) -> tensor<4x6xf32>
  %two = tg.add %8, %9 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  // %10 is also returned.
  %10 = tg.slice_grad %b offsets = [0, 0] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %11 = tg.slice_grad %b offsets = [0, 3] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %shared = tg.add %10, %11 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  // Computed in f16.
  %12 = tg.slice_grad %b offsets = [0, 0] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %13 = tg.slice_grad %b offsets = [0, 3] : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %narrow = tg.add %12, %13 compute(f16) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %gap, %overlap, %strided, %two, %shared, %10, %narrow
      : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>,
        tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
