// RUN: mp-opt %s --tg-make-train-step="optimizer=none" | FileCheck %s

// Ops of another dialect take part through external models of the
// differentiation interface: here arith.mulf, arith.addf and arith.negf
// (attached by the test library, test/lib/Dialect/TG), mixed with tg ops.
// loss = sum(-(w * x) + b)
// CHECK-LABEL: func.func @arith
// CHECK: %[[MUL:.*]] = arith.mulf %arg1, %arg0 : tensor<4xf32>
// CHECK: %[[NEG:.*]] = arith.negf %[[MUL]]
// CHECK: %[[ADD:.*]] = arith.addf %[[NEG]], %arg2
// CHECK: %[[LOSS:.*]] = tg.reduce_sum %[[ADD]]
// CHECK: %[[DY:.*]] = tg.broadcast_to
// CHECK: %[[DNEG:.*]] = arith.negf %[[DY]]
// CHECK: %[[DW:.*]] = arith.mulf %[[DNEG]], %arg0
// CHECK: return %[[LOSS]], %[[DW]], %[[DY]], %arg1, %arg2
func.func @arith(%x: tensor<4xf32> {tg.input = "x"}, %w: tensor<4xf32> {tg.param = "w"},
                 %b: tensor<4xf32> {tg.param = "b"})
    -> tensor<f32> attributes {tg.forward} {
  %0 = arith.mulf %w, %x : tensor<4xf32>
  %1 = arith.negf %0 : tensor<4xf32>
  %2 = arith.addf %1, %b : tensor<4xf32>
  %3 = tg.reduce_sum %2 axes = [0] : (tensor<4xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}
