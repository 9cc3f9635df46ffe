// RUN: mp-opt %s --split-input-file --verify-roundtrip | FileCheck %s

// Valid forms of the training-step convention (docs/TrainingStep.md).

// The smallest step: a parameter, an input, a label, the loss and the update.
// CHECK-LABEL: func @minimal
// CHECK-SAME: {tg.param = "w"}
// CHECK-SAME: {tg.input = "x"}
// CHECK-SAME: {tg.label = "y"}
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"})
// CHECK-SAME: attributes {tg.train_step}
func.func @minimal(%w: tensor<4x3xf32> {tg.param = "w"},
                   %x: tensor<8x4xf32> {tg.input = "x"},
                   %y: tensor<8xi32> {tg.label = "y"})
    -> (tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"})
    attributes {tg.train_step} {
  %logits = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %loss = tg.softmax_cross_entropy %logits, %y : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
  %seed = tg.constant dense<1.0> : tensor<f32>
  %dl = tg.softmax_cross_entropy_grad %seed, %logits, %y : (tensor<f32>, tensor<8x3xf32>, tensor<8xi32>) -> tensor<8x3xf32>
  %dw = tg.matmul %x, %dl transpose_lhs : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %loss, %w1 : tensor<f32>, tensor<4x3xf32>
}

// -----

// State of any element type (an integer step counter), results in any order,
// extra outputs, and a step with no label (regression with mse).
// CHECK-LABEL: func @state_and_outputs
// CHECK-SAME: -> (tensor<i64> {tg.update = "t"}, tensor<8x3xf32> {tg.output = "prediction"}, tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"})
func.func @state_and_outputs(%t: tensor<i64> {tg.state = "t"},
                             %w: tensor<4x3xf32> {tg.param = "w"},
                             %x: tensor<8x4xf32> {tg.input = "x"},
                             %target: tensor<8x3xf32> {tg.input = "target"})
    -> (tensor<i64> {tg.update = "t"}, tensor<8x3xf32> {tg.output = "prediction"},
        tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"})
    attributes {tg.train_step} {
  %p = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %loss = tg.mse_loss %p, %target : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<f32>
  return %t, %p, %loss, %w : tensor<i64>, tensor<8x3xf32>, tensor<f32>, tensor<4x3xf32>
}

// -----

// Role attributes without tg.train_step are only checked one by one.
// CHECK-LABEL: func @not_a_step
// CHECK-SAME: {tg.param = "w"}
// CHECK-NOT: tg.train_step
func.func @not_a_step(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}
