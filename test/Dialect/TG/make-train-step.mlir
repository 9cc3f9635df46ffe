// RUN: mp-opt %s --split-input-file --tg-make-train-step="lr=0.1" | FileCheck %s
// RUN: mp-opt %s --split-input-file --tg-make-train-step="optimizer=sgd lr=0.05 momentum=0.9 nesterov=true weight-decay=0.0001 no-decay=*.bias" | FileCheck %s --check-prefix=MOMENTUM
// RUN: mp-opt %s --split-input-file --tg-make-train-step="optimizer=adamw no-decay=*.bias" | FileCheck %s --check-prefix=ADAMW
// RUN: mp-opt %s --split-input-file --tg-make-train-step="optimizer=adam weight-decay=0.01" | FileCheck %s --check-prefix=ADAM
// RUN: mp-opt %s --split-input-file --tg-make-train-step="optimizer=none" | FileCheck %s --check-prefix=NONE
// RUN: mp-opt %s --split-input-file --tg-make-train-step --tg-mixed-precision | FileCheck %s --check-prefix=AMP
// RUN: mp-opt %s --split-input-file --tg-make-train-step --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=NAMES

// A forward MLP returning its logits: loss=auto adds softmax cross-entropy
// (integer labels); the backward pass reads the forward's activations, the
// seed feeds the loss gradient, and every parameter gets an update.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<8x3xf32> {tg.output = "logits"}, tensor<4x5xf32> {tg.update = "fc1.weight"}, tensor<5xf32> {tg.update = "fc1.bias"}, tensor<5x3xf32> {tg.update = "head.weight"})
// CHECK-SAME: attributes {tg.train_step}
// CHECK:      %[[H:.*]] = tg.matmul %arg0, %arg2
// CHECK:      %[[Z:.*]] = tg.add %[[H]], %arg3
// CHECK:      %[[A:.*]] = tg.relu %[[Z]]
// CHECK:      %[[L:.*]] = tg.matmul %[[A]], %arg4
// CHECK:      %[[LOSS:.*]] = tg.softmax_cross_entropy %[[L]], %arg1
// CHECK:      %[[SEED:.*]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK:      %[[DL:.*]] = tg.softmax_cross_entropy_grad %[[SEED]], %[[L]], %arg1
// CHECK-DAG:  %[[DA:.*]] = tg.matmul %[[DL]], %arg4 transpose_rhs
// CHECK-DAG:  %[[DW2:.*]] = tg.matmul %[[A]], %[[DL]] transpose_lhs
// CHECK:      %[[DZ:.*]] = tg.relu_grad %[[DA]], %[[Z]]
// CHECK-DAG:  %[[DB1:.*]] = tg.reduce_sum %[[DZ]] axes = [0] : (tensor<8x5xf32>) -> tensor<5xf32>
// CHECK-DAG:  %[[DW1:.*]] = tg.matmul %arg0, %[[DZ]] transpose_lhs
// The input's gradient is never built.
// CHECK-NOT:  tg.matmul %[[DZ]], %arg2
// CHECK:      %[[W1:.*]] = tg.sgd_update %arg2, %[[DW1]] {lr = 1.000000e-01 : f32}
// CHECK:      %[[B1:.*]] = tg.sgd_update %arg3, %[[DB1]]
// CHECK:      %[[W2:.*]] = tg.sgd_update %arg4, %[[DW2]]
// CHECK:      return %[[LOSS]], %[[L]], %[[W1]], %[[B1]], %[[W2]]

// SGD with momentum: a zero-initialised buffer per parameter, as state.
// MOMENTUM-LABEL: func.func @mlp
// MOMENTUM-SAME: %arg5: tensor<4x5xf32> {tg.init = dense<0.000000e+00> : tensor<4x5xf32>, tg.state = "fc1.weight.momentum"}
// MOMENTUM-SAME: tensor<4x5xf32> {tg.update = "fc1.weight.momentum"}
// MOMENTUM: tg.sgd_update %arg2, %{{.*}} momentum_buffer(%arg5) {lr = 5.000000e-02 : f32, momentum = 0.899999976 : f32, nesterov, weight_decay = 9.99999974E-5 : f32}
// Biases get no weight decay.
// MOMENTUM: tg.sgd_update %arg3, %{{.*}} momentum_buffer(%arg6) {lr = 5.000000e-02 : f32, momentum = 0.899999976 : f32, nesterov}

// AdamW: moments and a step counter per parameter; decoupled decay (0.01 by
// default), none on biases.
// ADAMW-LABEL: func.func @mlp
// ADAMW-SAME: tg.state = "fc1.weight.exp_avg"
// ADAMW-SAME: tg.state = "fc1.weight.exp_avg_sq"
// ADAMW-SAME: %arg7: tensor<i64> {tg.init = dense<0> : tensor<i64>, tg.state = "fc1.weight.step"}
// ADAMW: tg.adam_update %arg2, %{{.*}}, %arg5, %arg6, %arg7 {lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32}
// ADAMW: tg.adam_update %arg3, %{{.*}} {lr = 1.000000e-03 : f32}

// Adam's weight decay is L2: added to the gradient, not decoupled.
// ADAM-LABEL: func.func @mlp
// ADAM: %[[WD:.*]] = tg.constant dense<0.00999999977> : tensor<f32>
// ADAM: %[[T:.*]] = tg.mul %arg2, %[[WD]]
// ADAM: %[[G:.*]] = tg.add %{{.*}}, %[[T]]
// ADAM: tg.adam_update %arg2, %[[G]], {{.*}} {lr = 1.000000e-03 : f32}

// Without an optimizer the gradients are outputs.
// NONE-LABEL: func.func @mlp
// NONE-SAME: tensor<4x5xf32> {tg.output = "grad.fc1.weight"}
// NONE-SAME: tensor<4x5xf32> {tg.update = "fc1.weight"}
// NONE-NOT: sgd_update

// Backward ops are named after the forward op and the operand ("fc1.matmul"
// -> "fc1.matmul.grad_rhs"), updates after the parameter.
// NAMES-LABEL: func.func @mlp
// NAMES: tg.softmax_cross_entropy {{.*}} loc("loss"
// NAMES: tg.constant {{.*}} loc("loss.seed"
// NAMES: tg.softmax_cross_entropy_grad {{.*}} loc("loss.grad"
// NAMES: tg.relu_grad {{.*}} loc("fc1.relu.grad")
// NAMES: tg.matmul {{.*}} loc("fc1.matmul.grad_rhs")
// NAMES: tg.sgd_update {{.*}} loc("fc1.weight.sgd"
// NAMES-LABEL: func.func @fanout
// NAMES: tg.add {{.*}} loc("act.grad_sum")

// The mixed-precision pipeline runs on the result like on a hand-written step.
// AMP-LABEL: func.func @mlp
// AMP: tg.matmul {{.*}} compute(f32) : (tensor<8x4xf16>, tensor<4x5xf16>)
// AMP: tg.unscale_grads
// AMP-LABEL: func.func @fanout
// AMP: %[[SCALED:.*]] = tg.apply_loss_scale
// AMP: tg.seed %[[SCALED]]
// AMP: tg.unscale_grads
func.func @mlp(%x: tensor<8x4xf32> {tg.input = "x"}, %y: tensor<8xi32> {tg.label = "y"},
               %w1: tensor<4x5xf32> {tg.param = "fc1.weight"}, %b1: tensor<5xf32> {tg.param = "fc1.bias"},
               %w2: tensor<5x3xf32> {tg.param = "head.weight"})
    -> (tensor<8x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w1 : (tensor<8x4xf32>, tensor<4x5xf32>) -> tensor<8x5xf32> loc("fc1.matmul")
  %1 = tg.add %0, %b1 : (tensor<8x5xf32>, tensor<5xf32>) -> tensor<8x5xf32> loc("fc1.bias_add")
  %2 = tg.relu %1 : tensor<8x5xf32> loc("fc1.relu")
  %3 = tg.matmul %2, %w2 : (tensor<8x5xf32>, tensor<5x3xf32>) -> tensor<8x3xf32> loc("head.matmul")
  return %3 : tensor<8x3xf32>
}

// -----

// A value used twice gets the sum of both adjoints; a loss the function
// returns itself (tg.loss) is used as is; state the forward updates (a
// running mean) is kept, and an output besides the loss stays an output.
// CHECK-LABEL: func.func @fanout
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "avg"}, tensor<4x4xf32> {tg.output = "act"}, tensor<4x4xf32> {tg.update = "w"})
// CHECK:      %[[T:.*]] = tg.tanh %[[H:.*]] : tensor<4x4xf32>
// CHECK:      %[[P:.*]] = tg.mul %[[T]], %[[T]]
// The loss is a mean, not a loss op: a tg.seed marks where the backward
// pass starts, for loss scaling.
// CHECK:      %[[SEED:.*]] = tg.constant dense<1.000000e+00>
// CHECK:      %[[MARK:.*]] = tg.seed %[[SEED]] : tensor<f32>
// CHECK:      tg.reshape %[[MARK]]
// CHECK:      %[[D1:.*]] = tg.mul %{{.*}}, %[[T]]
// CHECK:      %[[SUM:.*]] = tg.add %[[D1]], %[[D1]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK:      tg.tanh_grad %[[SUM]], %[[T]]
func.func @fanout(%x: tensor<4x4xf32> {tg.input = "x"}, %w: tensor<4x4xf32> {tg.param = "w"},
                  %avg: tensor<4xf32> {tg.state = "avg"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "avg"}, tensor<4x4xf32> {tg.output = "act"})
    attributes {tg.forward} {
  %h = tg.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("h")
  %t = tg.tanh %h : tensor<4x4xf32> loc("act")
  %p = tg.mul %t, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("sq")
  %l = tg.reduce_mean %p axes = [0, 1] : (tensor<4x4xf32>) -> tensor<f32> loc("mean")
  %m = tg.reduce_mean %x axes = [0] : (tensor<4x4xf32>) -> tensor<4xf32> loc("batch_mean")
  return %l, %m, %t : tensor<f32>, tensor<4xf32>, tensor<4x4xf32>
}

// -----

// loss=auto with float labels is MSE; the prediction becomes an output.
// CHECK-LABEL: func.func @regression
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<8x2xf32> {tg.output = "prediction"}, tensor<3x2xf32> {tg.update = "w"})
// CHECK: %[[LOSS:.*]] = tg.mse_loss %[[P:.*]], %arg1
// CHECK: tg.mse_loss_grad %{{.*}}, %[[P]], %arg1
func.func @regression(%x: tensor<8x3xf32> {tg.input = "x"}, %t: tensor<8x2xf32> {tg.label = "t"},
                      %w: tensor<3x2xf32> {tg.param = "w"})
    -> tensor<8x2xf32> attributes {tg.forward} {
  %0 = tg.matmul %x, %w : (tensor<8x3xf32>, tensor<3x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}
