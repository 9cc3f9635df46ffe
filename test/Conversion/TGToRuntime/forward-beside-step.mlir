// A forward function lowered beside its training step: its arguments' tg
// roles become mp names, so it loses tg.forward, whose verifier reads them
// (it kept the attribute and the lowered module did not verify; found by
// mp-mlir-fuzzer, test/Fuzz/Inputs/mp-mlir-fuzzer/forward-beside-step.mlir).
// RUN: mp-opt %s --tg-lower-to-llvm | FileCheck %s

// CHECK: llvm.func @f(
// CHECK-NOT: tg.forward
// CHECK: llvm.func @step(
func.func @f(%x: tensor<4x3xf32> {tg.input = "x"}, %y: tensor<4xi32> {tg.label = "y"}, %w: tensor<3x3xf32> {tg.param = "w"})
    -> (tensor<4x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

func.func @step(%x: tensor<4x3xf32> {tg.input = "x"}) -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  %0 = tg.reduce_sum %x axes = [0, 1] : (tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
