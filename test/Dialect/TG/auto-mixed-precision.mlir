// RUN: mp-opt %s --split-input-file --tg-auto-mixed-precision | FileCheck %s
// Running the pass twice gives the same IR as running it once.
// RUN: mp-opt %s --split-input-file --tg-auto-mixed-precision > %t.once.mlir
// RUN: mp-opt %s --split-input-file --tg-auto-mixed-precision --tg-auto-mixed-precision > %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir

// One case per rule of the colouring and the rewrite (docs/MixedPrecision.md).

// Rule: allow-list ops read and write the low type and accumulate in f32;
// function arguments and results keep their types.
// CHECK-LABEL: func @allow_list
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x2xf32>) -> tensor<4x2xf32>
// CHECK-DAG: %[[BH:.*]] = tg.cast %[[B]] : tensor<8x2xf32> to tensor<8x2xf16>
// CHECK-DAG: %[[AH:.*]] = tg.cast %[[A]] : tensor<4x8xf32> to tensor<4x8xf16>
// CHECK: %[[M:.*]] = tg.matmul %[[AH]], %[[BH]] compute(f32) : (tensor<4x8xf16>, tensor<8x2xf16>) -> tensor<4x2xf32>
// CHECK-NOT: tg.cast
// CHECK: return %[[M]] : tensor<4x2xf32>
func.func @allow_list(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %0 = tg.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// Rule: infer and clear ops between allow ops become low precision and
// compute in the low type.
// CHECK-LABEL: func @between_allow_ops
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: %[[S:.*]] = tg.add %[[M]], %{{.*}} compute(f16) : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
// CHECK: %[[R:.*]] = tg.relu %[[S]] compute(f16) : tensor<4x8xf16>
// CHECK: tg.matmul %[[R]], %{{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8x2xf16>)
func.func @between_allow_ops(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>,
                             %v: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = tg.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = tg.relu %1 : tensor<4x8xf32>
  %3 = tg.matmul %2, %v : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %3 : tensor<4x2xf32>
}

// -----

// Rule: deny spreads forward through clear and infer ops on paths that end
// at a deny or infer op. The matmul stays low precision; as every consumer
// of its result is now f32, it writes its f32 accumulators directly.
// CHECK-LABEL: func @deny_spread
// CHECK: %[[M:.*]] = tg.matmul {{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf32>
// CHECK: %[[E:.*]] = tg.exp %[[M]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[R:.*]] = tg.relu %[[E]] : tensor<4x8xf32>
// CHECK: %[[S:.*]] = tg.add %[[R]], %[[M]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: tg.log %[[S]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @deny_spread(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = tg.exp %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tg.relu %1 : tensor<4x8xf32>
  %3 = tg.add %2, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = tg.log %3 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// Rule: an infer op fed by a low-precision op (and by no deny op) follows
// it, and so does a chain of them; the function result is cast back.
// CHECK-LABEL: func @infer_follows_allow
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: %[[T:.*]] = tg.tanh %[[M]] compute(f16) : tensor<4x8xf16>
// CHECK: %[[S:.*]] = tg.sigmoid %[[T]] compute(f16) : tensor<4x8xf16>
// CHECK: %[[C:.*]] = tg.cast %[[S]] : tensor<4x8xf16> to tensor<4x8xf32>
// CHECK: return %[[C]]
func.func @infer_follows_allow(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = tg.tanh %0 : tensor<4x8xf32>
  %2 = tg.sigmoid %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Rule: an infer op with a deny producer stays in f32, even if another
// producer is low precision; a deny op reads f16 directly.
// The first matmul has an f32 consumer (the mul), so it writes f32 and one
// cast feeds the second matmul.
// CHECK-LABEL: func @infer_with_deny_producer
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x8xf32>
// CHECK: %[[MH:.*]] = tg.cast %[[M]] : tensor<4x8xf32> to tensor<4x8xf16>
// CHECK: %[[E:.*]] = tg.exp %[[M]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[P:.*]] = tg.mul %[[E]], %[[M]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[PH:.*]] = tg.cast %[[P]] : tensor<4x8xf32> to tensor<4x8xf16>
// CHECK: tg.matmul %[[MH]], %[[PH]]
func.func @infer_with_deny_producer(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>) -> tensor<4x4xf32> {
  %0 = tg.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = tg.exp %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tg.mul %1, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tg.matmul %0, %2 transpose_rhs : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// -----

// Rule: low precision spreads through clear ops in both directions: the
// transpose before the matmul casts first and moves f16 data, and so does
// the slice after it (whose consumer is a deny op that reads any storage).
// CHECK-LABEL: func @clear_both_directions
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>
// CHECK: %[[XH:.*]] = tg.cast %[[X]] : tensor<8x4xf32> to tensor<8x4xf16>
// CHECK: %[[T:.*]] = tg.transpose %[[XH]] permutation = [1, 0] : (tensor<8x4xf16>) -> tensor<4x8xf16>
// CHECK: %[[M:.*]] = tg.matmul %[[T]]
// CHECK: %[[S:.*]] = tg.slice %[[M]] offsets = [0, 0] sizes = [2, 8] : (tensor<4x8xf16>) -> tensor<2x8xf16>
// CHECK: tg.softmax %[[S]] axis = 1 compute(f32) : (tensor<2x8xf16>) -> tensor<2x8xf32>
func.func @clear_both_directions(%x: tensor<8x4xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %0 = tg.transpose %x permutation = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %1 = tg.matmul %0, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %2 = tg.slice %1 offsets = [0, 0] sizes = [2, 8] : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %3 = tg.softmax %2 axis = 1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}

// -----

// Rule: a low-precision clear or infer op whose users all need f32, and
// whose inputs come in f32 without a cast, computes in f32 instead.
// CHECK-LABEL: func @demoted_when_users_need_f32
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x8xf32>
// CHECK: %[[R:.*]] = tg.reshape %[[M]] : (tensor<4x8xf32>) -> tensor<32xf32>
// CHECK-NOT: tg.cast
// CHECK: return %[[R]]
func.func @demoted_when_users_need_f32(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<32xf32> {
  %1 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %2 = tg.reshape %1 : (tensor<4x8xf32>) -> tensor<32xf32>
  return %2 : tensor<32xf32>
}

// -----

// Rule: a deny op between two matmuls reads f16, computes in f32 and writes
// f16 (no cast); its saved statistics stay f32.
// CHECK-LABEL: func @deny_between_matmuls
// CHECK-COUNT-3: tg.cast %arg
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = tg.layer_norm %[[M]], %{{.*}}, %{{.*}} axis = 1 epsilon = {{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NOT: tg.cast
// CHECK: tg.matmul %[[Y]]
// CHECK-NOT: tg.cast
func.func @deny_between_matmuls(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %g: tensor<8xf32>,
                                %v: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1:3 = tg.layer_norm %0, %g, %g axis = 1 epsilon = 1.0e-05
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %2 = tg.matmul %1#0, %v : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}

// -----

// Rule: the logits feeding the loss are consumed in f32, written as f32 by
// the matmul itself; the loss gradient is written in f16 for the backward
// matmul that consumes it.
// CHECK-LABEL: func @logits_in_f32
// CHECK: %[[L:.*]] = tg.matmul {{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf32>
// CHECK: tg.softmax_cross_entropy %[[L]], %{{.*}} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
// CHECK: %[[D:.*]] = tg.softmax_cross_entropy_grad %{{.*}}, %[[L]], %{{.*}} compute(f32) : (tensor<f32>, tensor<4x3xf32>, tensor<4xi32>) -> tensor<4x3xf16>
// CHECK: tg.matmul %{{.*}}, %[[D]] transpose_lhs compute(f32) : (tensor<4x8xf16>, tensor<4x3xf16>) -> tensor<8x3xf32>
func.func @logits_in_f32(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %y: tensor<4xi32>,
                         %seed: tensor<f32>) -> (tensor<f32>, tensor<8x3xf32>) {
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = tg.softmax_cross_entropy %0, %y : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  %2 = tg.softmax_cross_entropy_grad %seed, %0, %y : (tensor<f32>, tensor<4x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  %3 = tg.matmul %x, %2 transpose_lhs : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  return %1, %3 : tensor<f32>, tensor<8x3xf32>
}

// -----

// Rule: the bias add of the output layer computes in f32 when all its users
// need f32 and its inputs come in f32 for free (the matmul writes f32).
// CHECK-LABEL: func @output_layer_in_f32
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x3xf32>
// CHECK: %[[Z:.*]] = tg.add %[[M]], %{{.*}} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK: tg.softmax_cross_entropy %[[Z]]
func.func @output_layer_in_f32(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>,
                               %y: tensor<4xi32>) -> tensor<f32> {
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = tg.add %0, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %2 = tg.softmax_cross_entropy %1, %y : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Rule: a parameter is cast once per step, and the cast is shared by its
// forward and backward uses; its gradient reaches the f32 optimizer in f32.
// CHECK-LABEL: func @parameter_cast_once
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x8xf32> {tg.param = "w"}
// CHECK: %[[WH:.*]] = tg.cast %[[W]] : tensor<8x8xf32> to tensor<8x8xf16>
// CHECK-NOT: tg.cast %[[W]]
// CHECK: tg.matmul %{{.*}}, %[[WH]] compute(f32)
// CHECK: %[[DW:.*]] = tg.matmul {{.*}} transpose_lhs compute(f32) : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<8x8xf32>
// CHECK: tg.matmul %{{.*}}, %[[WH]] transpose_rhs compute(f32)
// CHECK: tg.sgd_update %[[W]], %[[DW]] {lr = {{.*}}} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
func.func @parameter_cast_once(%w: tensor<8x8xf32> {tg.param = "w"}, %x: tensor<4x8xf32> {tg.input = "x"},
                               %dy: tensor<4x8xf32> {tg.input = "dy"})
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) {
  %y = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %dw = tg.matmul %x, %dy transpose_lhs : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %dx = tg.matmul %dy, %w transpose_rhs : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %y, %dx, %w1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}

// -----

// Rule: one cast per (value, type), shared by all users.
// CHECK-LABEL: func @one_cast_per_value
// CHECK: %[[XH:.*]] = tg.cast %arg0 : tensor<4x4xf32> to tensor<4x4xf16>
// CHECK-NOT: tg.cast
// CHECK: tg.matmul %[[XH]], %[[XH]]
// CHECK: tg.matmul %[[XH]],
// CHECK: tg.matmul %{{.*}}, %[[XH]] transpose_rhs
// CHECK: tg.exp %arg0
// CHECK: tg.tanh %arg0
func.func @one_cast_per_value(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = tg.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = tg.matmul %x, %0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = tg.matmul %1, %x transpose_rhs : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = tg.exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = tg.tanh %x : tensor<4x4xf32>
  return %2, %3, %4 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Rule: a constant used in low precision is converted, not cast.
// CHECK-LABEL: func @constants_fold
// CHECK: %[[C:.*]] = tg.constant dense<1.250000e-01> : tensor<f16>
// CHECK: tg.mul %{{.*}}, %[[C]] compute(f16) : (tensor<4x4xf16>, tensor<f16>) -> tensor<4x4xf16>
func.func @constants_fold(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %s = tg.constant dense<0.125> : tensor<f32>
  %0 = tg.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = tg.mul %0, %s : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %2 = tg.matmul %1, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

// Rule: ops on no list, and ops of other dialects without the interface,
// are left exactly as they are; arith.addf takes part through the external
// model the test library attaches (infer list).
// CHECK-LABEL: func @other_dialects
// CHECK: %[[XH:.*]] = tg.cast %arg0
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x4xf16>
// CHECK: %[[A:.*]] = arith.addf %[[M]], %[[M]] : tensor<4x4xf16>
// CHECK: %[[N:.*]] = tg.matmul %[[A]], %[[XH]] compute(f32) : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf32>
// CHECK: arith.subf %[[N]], %[[N]] : tensor<4x4xf32>
func.func @other_dialects(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tg.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = arith.addf %0, %0 : tensor<4x4xf32>
  %2 = tg.matmul %1, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = arith.subf %2, %2 : tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// -----

// Rule: f64 reference graphs are left alone.
// CHECK-LABEL: func @f64_untouched
// CHECK-NOT: tg.cast
// CHECK: tg.matmul %arg0, %arg0 : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
func.func @f64_untouched(%x: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %0 = tg.matmul %x, %x : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
  return %0 : tensor<4x4xf64>
}

// -----

// Rule: an op that reads a constant beyond the low type's range stays in
// f32: here the add of an attention mask whose fill value, f32's lowest,
// is -inf in f16 (a row with nothing to attend to would become NaN after
// the softmax). The mask (tg.select) is on no list and keeps its type.
// CHECK-LABEL: func @mask_fill_out_of_range
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x8xf32>
// CHECK: %[[F:.*]] = tg.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xi1>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK: tg.add %[[M]], %[[F]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @mask_fill_out_of_range(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>,
                                  %keep: tensor<4x8xi1>) -> tensor<4x8xf32> {
  %0 = tg.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %zero = tg.constant dense<0.0> : tensor<f32>
  %lowest = tg.constant dense<-3.40282347E+38> : tensor<f32>
  %fill = tg.select %keep, %zero, %lowest : (tensor<4x8xi1>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = tg.add %0, %fill : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tg.softmax %1 axis = 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// A fill value f16 holds (-1e4, as some exporters use) does not pin the
// add: it follows the matmul into f16.
// CHECK-LABEL: func @mask_fill_in_range
// CHECK: %[[M:.*]] = tg.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: tg.add %[[M]], %{{.*}} compute(f16) : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
func.func @mask_fill_in_range(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>,
                              %keep: tensor<4x8xi1>) -> tensor<4x8xf32> {
  %0 = tg.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %zero = tg.constant dense<0.0> : tensor<f32>
  %low = tg.constant dense<-1.0E+4> : tensor<f32>
  %fill = tg.select %keep, %zero, %low : (tensor<4x8xi1>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = tg.add %0, %fill : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tg.softmax %1 axis = 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Pooling between two convolutions stays in f16, but the ops that sum
// several terms per element (average pooling, and the pooling gradients
// where windows overlap) accumulate in f32 like the convolutions; max
// pooling only compares, in f16.
// CHECK-LABEL: func @pooling_accumulates
// CHECK: %[[C:.*]] = tg.conv2d {{.*}} compute(f32) {{.*}} -> tensor<2x4x8x8xf16>
// CHECK: %[[M:.*]] = tg.max_pool2d %[[C]] {{.*}} compute(f16) : (tensor<2x4x8x8xf16>) -> tensor<2x4x4x4xf16>
// CHECK: %[[A:.*]] = tg.avg_pool2d %[[M]] {{.*}} compute(f32) : (tensor<2x4x4x4xf16>) -> tensor<2x4x2x2xf16>
// CHECK: tg.avg_pool2d_grad %[[A]] {{.*}} compute(f32) : (tensor<2x4x2x2xf16>) -> tensor<2x4x4x4xf16>
// CHECK: tg.max_pool2d_grad {{.*}} compute(f32) : (tensor<2x4x4x4xf16>, tensor<2x4x8x8xf16>) -> tensor<2x4x8x8xf16>
func.func @pooling_accumulates(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>,
                               %g: tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32> {
  %0 = tg.conv2d %x, %f strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %1 = tg.max_pool2d %0 window = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  %2 = tg.avg_pool2d %1 window = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] : (tensor<2x4x4x4xf32>) -> tensor<2x4x2x2xf32>
  %3 = tg.avg_pool2d_grad %2 window = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] : (tensor<2x4x2x2xf32>) -> tensor<2x4x4x4xf32>
  %4 = tg.max_pool2d_grad %3, %0 window = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] : (tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %5 = tg.conv2d %4, %g strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  return %5 : tensor<2x4x8x8xf32>
}

// -----

// A residual block: the add of two batch norms of f16 convolutions is f16,
// as is its relu, and the batch norms write f16. Their running statistics
// stay f32, and so does the f32 arithmetic on them (the mul of the running
// mean), which a batch norm's data output alone makes low.
// CHECK-LABEL: func @batch_norm_residual
// CHECK: %[[C1:.*]] = tg.conv2d {{.*}} -> tensor<2x4x8x8xf16>
// CHECK: %[[Y1:[a-z_0-9]*]], %{{.*}}, %{{.*}}, %[[RM:[a-z_0-9]*]], %{{.*}} = tg.batch_norm %[[C1]], {{.*}} compute(f32) : (tensor<2x4x8x8xf16>, {{.*}}) -> (tensor<2x4x8x8xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[C2:.*]] = tg.conv2d {{.*}} -> tensor<2x4x8x8xf16>
// CHECK: %[[Y2:[a-z_0-9]*]], {{.*}} = tg.batch_norm %[[C2]], {{.*}} -> (tensor<2x4x8x8xf16>,
// CHECK-NOT: tg.cast
// CHECK: %[[S:.*]] = tg.add %[[Y1]], %[[Y2]] compute(f16) : (tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>) -> tensor<2x4x8x8xf16>
// CHECK-NOT: tg.cast
// CHECK: %[[R:.*]] = tg.relu %[[S]] compute(f16) : tensor<2x4x8x8xf16>
// CHECK-NEXT: tg.mul %[[RM]], %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: tg.conv2d %[[R]]
func.func @batch_norm_residual(%x: tensor<2x4x8x8xf32>, %f1: tensor<4x4x3x3xf32>,
                               %f2: tensor<4x4x1x1xf32>, %f3: tensor<4x4x1x1xf32>,
                               %g: tensor<4xf32>, %b: tensor<4xf32>,
                               %rm: tensor<4xf32>, %rv: tensor<4xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<4xf32>) {
  %c1 = tg.conv2d %x, %f1 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %y1, %m1, %s1, %rm1, %rv1 = tg.batch_norm %c1, %g, %b, %rm, %rv epsilon = 1.0e-05 momentum = 1.0e-01 : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %c2 = tg.conv2d %x, %f2 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %y2, %m2, %s2, %rm2, %rv2 = tg.batch_norm %c2, %g, %b, %rm, %rv epsilon = 1.0e-05 momentum = 1.0e-01 : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %sum = tg.add %y1, %y2 : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %r = tg.relu %sum : tensor<2x4x8x8xf32>
  %avg = tg.mul %rm1, %rm2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c3 = tg.conv2d %r, %f3 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  return %c3, %avg : tensor<2x4x8x8xf32>, tensor<4xf32>
}

// -----

// The same for a layer norm: its data result, fed by a low-precision
// matmul, counts as low for the residual add after it, so the add and its
// relu run in f16 with no cast; its statistics (mean, rstd) stay f32, and so
// does the arithmetic on them.
// CHECK-LABEL: func @layer_norm_residual
// CHECK: %[[M1:.*]] = tg.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: %[[Y:[a-z_0-9]*]], %[[MEAN:[a-z_0-9]*]], %[[RSTD:[a-z_0-9]*]] = tg.layer_norm %[[M1]], {{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[M2:.*]] = tg.matmul {{.*}} -> tensor<4x8xf16>
// CHECK-NOT: tg.cast
// CHECK: %[[S:.*]] = tg.add %[[Y]], %[[M2]] compute(f16) : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT: %[[R:.*]] = tg.relu %[[S]] compute(f16) : tensor<4x8xf16>
// CHECK-NEXT: tg.mul %[[MEAN]], %[[RSTD]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: tg.matmul %[[R]]
func.func @layer_norm_residual(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>,
                               %w2: tensor<8x8xf32>, %w3: tensor<8x8xf32>,
                               %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4xf32>) {
  %m1 = tg.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y, %mean, %rstd = tg.layer_norm %m1, %g, %b axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %m2 = tg.matmul %x, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %sum = tg.add %y, %m2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = tg.relu %sum : tensor<4x8xf32>
  %stats = tg.mul %mean, %rstd : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %o = tg.matmul %r, %w3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %o, %stats : tensor<4x8xf32>, tensor<4xf32>
}
