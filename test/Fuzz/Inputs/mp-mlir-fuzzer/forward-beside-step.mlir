// Invalid tg-make-train-step options are errors, never crashes.
// RUN: not mp-opt %s --tg-make-train-step=loss=hinge 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not mp-opt %s --tg-make-train-step=optimizer=rmsprop 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not mp-opt %s --tg-make-train-step=lr=-1 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not mp-opt %s --tg-make-train-step=lr=1e39 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not mp-opt %s --tg-make-train-step=momentum=1 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// RUN: not mp-opt* %s --tg-make-train-step=nesterov=true 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not mp-opt %s --tg-make-train-step="optimizer=adam momentum=0.9" 2>&1 | FileCheck %s --check-prefix=ADAM-MOMENTUM
// RUN: not mp-opt %s --tg-make-train-step=weight-decay=-0.5 2>&1 | FileCheck %s --check-prefix=DECAY
// RUN: not mp-opt %s --tg-make-train-step="optimizer=adam beta1=1" 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not mp-opt %s --tg-make-train-step="optimizer=adam epsilon=0" 2>&1 | FileCheck %s --check-prefix=EPSILON
// RUN: not mp-opt %s --tg-make-train-step="no-decay=[" 2>&1 | FileCheck %s --check-prefix=GLOB
// RUN: not mp-opt %s --tg-make-train-step=entry=nosuch 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not mp-opt %s --tg-make-train-step=entry=step 2>&1 | FileCheck %s --check-prefix=STEP
// RUN: not mp-opt %s --tg-make-train-step="loss=mse label=nosuch" 2>&1 | FileCheck %s --check-prefix=LABEL
// RUN: not mp-opt %s --tg-make-train-step=no-such-option=1 2>&1 | FileCheck %s --check-prefix=OPTION

func.func @f(%x: tensor<4x3xf32> {tg.input = "x"}, %y: tensor<4xi32> {tg.label = "y"}, %w: tensor<3x3xf32> {tg.param = "w"})
    -> (tensor<4x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

func.func @step(%x: tensor<4x3xf32> {tg.input = "x"}) -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  %0 = tg.reduce_sum %x axes = [0, 1] : (tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// LOSS: error: tg-make-train-step: invalid loss 'hinge'; expected auto, none, softmax-cross-entropy or mse
// OPTIMIZER: error: tg-make-train-step: invalid optimizer 'rmsprop'; expected sgd, adam, adamw or none
// LR: error: tg-make-train-step: lr must be positive and finite in f32
// MOMENTUM: error: tg-make-train-step: momentum must be in [0, 1), got 1
// NESTEROV: error: tg-make-train-step: nesterov needs momentum > 0
// ADAM-MOMENTUM: error: tg-make-train-step: momentum and nesterov are sgd options; adam has beta1
// DECAY: error: tg-make-train-step: weight-decay must be non-negative and finite, got -5.000000e-01
// BETA: error: tg-make-train-step: beta1 and beta2 must be in [0, 1), got 1
// EPSILON: error: tg-make-train-step: epsilon must be positive and finite, got 0
// GLOB: error: tg-make-train-step: invalid no-decay pattern '[': invalid glob pattern, unmatched '['
// ENTRY: error: tg-make-train-step: no function named 'nosuch'
// STEP: error: tg-make-train-step: 'step' is a training step already
// LABEL: error: tg-make-train-step: loss= needs a tg.label argument named 'nosuch'
// OPTION: no-such-option
