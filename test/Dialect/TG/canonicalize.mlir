// RUN: mp-opt %s --split-input-file --canonicalize | FileCheck %s

// Folders of the tg ops.

// CHECK-LABEL: func @cast_identity
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]]
func.func @cast_identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.cast %x : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Exact round trips fold: every f16 and every bf16 value is an f32 value.
// CHECK-LABEL: func @cast_exact_round_trips
// CHECK-SAME: (%[[H:.*]]: tensor<4xf16>, %[[B:.*]]: tensor<4xbf16>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NOT: tg.cast
// CHECK: return %[[H]], %[[B]], %[[I]]
func.func @cast_exact_round_trips(%h: tensor<4xf16>, %b: tensor<4xbf16>, %i: tensor<4xi32>)
    -> (tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>) {
  %0 = tg.cast %h : tensor<4xf16> to tensor<4xf32>
  %1 = tg.cast %0 : tensor<4xf32> to tensor<4xf16>
  %2 = tg.cast %b : tensor<4xbf16> to tensor<4xf32>
  %3 = tg.cast %2 : tensor<4xf32> to tensor<4xbf16>
  %4 = tg.cast %i : tensor<4xi32> to tensor<4xi64>
  %5 = tg.cast %4 : tensor<4xi64> to tensor<4xi32>
  return %1, %3, %5 : tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>
}

// -----

// Lossy round trips never fold: f32 -> f16 rounds, f16 <-> bf16 lose range or
// precision in each direction.
// CHECK-LABEL: func @cast_lossy_round_trips
// CHECK: %[[A:.*]] = tg.cast %{{.*}} : tensor<4xf32> to tensor<4xf16>
// CHECK: %[[B:.*]] = tg.cast %[[A]] : tensor<4xf16> to tensor<4xf32>
// CHECK: %[[C:.*]] = tg.cast %{{.*}} : tensor<4xf16> to tensor<4xbf16>
// CHECK: %[[D:.*]] = tg.cast %[[C]] : tensor<4xbf16> to tensor<4xf16>
// CHECK: %[[E:.*]] = tg.cast %{{.*}} : tensor<4xi64> to tensor<4xi32>
// CHECK: %[[F:.*]] = tg.cast %[[E]] : tensor<4xi32> to tensor<4xi64>
// CHECK: return %[[B]], %[[D]], %[[F]]
func.func @cast_lossy_round_trips(%x: tensor<4xf32>, %h: tensor<4xf16>, %i: tensor<4xi64>)
    -> (tensor<4xf32>, tensor<4xf16>, tensor<4xi64>) {
  %0 = tg.cast %x : tensor<4xf32> to tensor<4xf16>
  %1 = tg.cast %0 : tensor<4xf16> to tensor<4xf32>
  %2 = tg.cast %h : tensor<4xf16> to tensor<4xbf16>
  %3 = tg.cast %2 : tensor<4xbf16> to tensor<4xf16>
  %4 = tg.cast %i : tensor<4xi64> to tensor<4xi32>
  %5 = tg.cast %4 : tensor<4xi32> to tensor<4xi64>
  return %1, %3, %5 : tensor<4xf32>, tensor<4xf16>, tensor<4xi64>
}

// -----

// A round trip through a third type is not a round trip of one cast pair.
// CHECK-LABEL: func @cast_chain_not_round_trip
// CHECK-COUNT-2: tg.cast
func.func @cast_chain_not_round_trip(%h: tensor<4xf16>) -> tensor<4xf64> {
  %0 = tg.cast %h : tensor<4xf16> to tensor<4xf32>
  %1 = tg.cast %0 : tensor<4xf32> to tensor<4xf64>
  return %1 : tensor<4xf64>
}

// -----

// Casting a constant folds to the rounded constant: 0.1 in f16 is
// 0.0999755859375, and 65520 overflows f16 to infinity (round to nearest even).
// CHECK-LABEL: func @cast_constant
// CHECK: %[[C:.*]] = tg.constant dense<[9.997550e-02, 0x7C00, -2.000000e+00]> : tensor<3xf16>
// CHECK-NOT: tg.cast
// CHECK: %[[I:.*]] = tg.constant dense<[-1, 7]> : tensor<2xi64>
// CHECK: return %[[C]], %[[I]]
func.func @cast_constant() -> (tensor<3xf16>, tensor<2xi64>) {
  %0 = tg.constant dense<[0.1, 65520.0, -2.0]> : tensor<3xf32>
  %1 = tg.cast %0 : tensor<3xf32> to tensor<3xf16>
  %2 = tg.constant dense<[-1, 7]> : tensor<2xi32>
  %3 = tg.cast %2 : tensor<2xi32> to tensor<2xi64>
  return %1, %3 : tensor<3xf16>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func @neg_neg
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @neg_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.neg %x : tensor<4xf32>
  %1 = tg.neg %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @transposes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = tg.transpose %[[X]] permutation = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[X]], %[[T]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  // Identity permutation.
  %0 = tg.transpose %x permutation = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // Two transposes compose into one.
  %1 = tg.transpose %x permutation = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %2 = tg.transpose %1 permutation = [2, 1, 0] : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  return %0, %2 : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func @reshapes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[C:.*]] = tg.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-NEXT: %[[R:.*]] = tg.reshape %[[X]] : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT: return %[[X]], %[[R]], %[[C]]
func.func @reshapes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<24xf32>, tensor<2x2xi32>) {
  %0 = tg.reshape %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = tg.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %2 = tg.reshape %1 : (tensor<6x4xf32>) -> tensor<24xf32>
  %3 = tg.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %4 = tg.reshape %3 : (tensor<4xi32>) -> tensor<2x2xi32>
  return %0, %2, %4 : tensor<2x3x4xf32>, tensor<24xf32>, tensor<2x2xi32>
}

// -----

// CHECK-LABEL: func @broadcasts
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[C:.*]] = tg.constant dense<2.500000e+00> : tensor<3x4xf32>
// CHECK-NEXT: return %[[X]], %[[C]]
func.func @broadcasts(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  %0 = tg.broadcast_to %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = tg.constant dense<2.5> : tensor<4xf32>
  %2 = tg.broadcast_to %1 : (tensor<4xf32>) -> tensor<3x4xf32>
  return %0, %2 : tensor<4xf32>, tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func @slices_and_concat
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[S:.*]] = tg.slice %[[X]] offsets = [0, 0] sizes = [4, 4] strides = [1, 2]
// CHECK-NEXT: return %[[X]], %[[X]], %[[S]]
func.func @slices_and_concat(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>) {
  %0 = tg.slice %x offsets = [0, 0] sizes = [4, 8] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tg.concat %x axis = 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // A strided slice is not the identity.
  %2 = tg.slice %x offsets = [0, 0] sizes = [4, 4] strides = [1, 2] : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>
}

// -----

// Ops without folders and with uses are kept; unused pure ops are removed.
// CHECK-LABEL: func @dead_code
// CHECK-NEXT: %[[M:.*]] = tg.matmul
// CHECK-NEXT: return %[[M]]
func.func @dead_code(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = tg.matmul %a, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = tg.softmax %0 axis = 1 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// A select by a splat constant condition is the branch it picks, broadcast
// to the result (the And of an attention mask with an all-true pattern).
// CHECK-LABEL: func @select_splat_condition
// CHECK-SAME: (%[[M:.*]]: tensor<4x1x1x16xi1>, %[[A:.*]]: tensor<4x16xf32>, %[[B:.*]]: tensor<4x16xf32>)
// CHECK-NOT: tg.select
// CHECK: %[[W:.*]] = tg.broadcast_to %[[M]] : (tensor<4x1x1x16xi1>) -> tensor<4x1x16x16xi1>
// CHECK: return %[[W]], %[[B]]
func.func @select_splat_condition(%m: tensor<4x1x1x16xi1>, %a: tensor<4x16xf32>, %b: tensor<4x16xf32>)
    -> (tensor<4x1x16x16xi1>, tensor<4x16xf32>) {
  %true = tg.constant dense<true> : tensor<1x1x16x1xi1>
  %false = tg.constant dense<false> : tensor<i1>
  %0 = tg.select %true, %m, %false : (tensor<1x1x16x1xi1>, tensor<4x1x1x16xi1>, tensor<i1>) -> tensor<4x1x16x16xi1>
  %no = tg.constant dense<false> : tensor<4x16xi1>
  %1 = tg.select %no, %a, %b : (tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0, %1 : tensor<4x1x16x16xi1>, tensor<4x16xf32>
}

// -----

// A condition known only at run time stays.
// CHECK-LABEL: func @select_runtime_condition
// CHECK: tg.select
func.func @select_runtime_condition(%c: tensor<4xi1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  %zero = tg.constant dense<0.0> : tensor<f32>
  %0 = tg.select %c, %a, %zero : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
