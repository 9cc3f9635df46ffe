// Invalid loss-scaling options are errors, never crashes.
// RUN: not mp-opt %s --tg-insert-loss-scaling=mode=sometimes 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not mp-opt %s --tg-insert-loss-scaling=init-scale=0 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not mp-opt %s --tg-insert-loss-scaling=init-scale=-4 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not mp-opt %s --tg-insert-loss-scaling=init-scale=1e39 2>&1 | FileCheck %s --check-prefix=SCALE
// 1e-50 is positive in f64 and 0 in f32; 1e-40 is subnormal in f32 and its
// reciprocal infinite: either would skip every step.
// RUN: not mp-opt %s --tg-insert-loss-scaling=init-scale=1e-50 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not mp-opt %s --tg-insert-loss-scaling=init-scale=1e-40 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not mp-opt %s --tg-mixed-precision=init-scale=1e-50 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not mp-opt %s --tg-insert-loss-scaling=backoff-factor=1e-50 2>&1 | FileCheck %s --check-prefix=BACKOFF
// RUN: not mp-opt %s --tg-insert-loss-scaling=min-scale=1e-50 2>&1 | FileCheck %s --check-prefix=MIN
// RUN: not mp-opt %s --tg-insert-loss-scaling=growth-factor=1 2>&1 | FileCheck %s --check-prefix=GROWTH
// RUN: not mp-opt %s --tg-insert-loss-scaling=backoff-factor=1 2>&1 | FileCheck %s --check-prefix=BACKOFF
// RUN: not mp-opt %s --tg-insert-loss-scaling=backoff-factor=0 2>&1 | FileCheck %s --check-prefix=BACKOFF
// RUN: not mp-opt %s --tg-insert-loss-scaling=growth-interval=0 2>&1 | FileCheck %s --check-prefix=INTERVAL
// RUN: not mp-opt %s --tg-insert-loss-scaling=min-scale=-1 2>&1 | FileCheck %s --check-prefix=MIN
// RUN: not mp-opt %s --tg-insert-loss-scaling="min-scale=8 max-scale=4" 2>&1 | FileCheck %s --check-prefix=MINMAX
// RUN: not mp-opt %s --tg-insert-loss-scaling=mode=dynamic 2>&1 | FileCheck %s --check-prefix=NO-UPDATE
// RUN: not mp-opt %s --tg-mixed-precision=loss-scaling=often 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: not mp-opt %S/Inputs/update-used-in-step.mlir --tg-insert-loss-scaling=mode=dynamic 2>&1 | FileCheck %s --check-prefix=USED

// A training step with a loss gradient but no optimizer update.
func.func @step(%x: tensor<4x3xf32> {tg.input = "x"}, %y: tensor<4xi32> {tg.label = "y"})
    -> (tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.output = "dx"}) attributes {tg.train_step} {
  %loss = tg.softmax_cross_entropy %x, %y : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  %seed = tg.constant dense<1.0> : tensor<f32>
  %0 = tg.softmax_cross_entropy_grad %seed, %x, %y : (tensor<f32>, tensor<4x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  return %loss, %0 : tensor<f32>, tensor<4x3xf32>
}

// MODE: error: tg-insert-loss-scaling: invalid mode 'sometimes'; expected auto, dynamic, static or none
// SCALE: error: tg-insert-loss-scaling: init-scale must be positive and finite in f32
// GROWTH: error: tg-insert-loss-scaling: growth-factor must be greater than 1, got 1
// BACKOFF: error: tg-insert-loss-scaling: backoff-factor must be in (0, 1)
// INTERVAL: error: tg-insert-loss-scaling: growth-interval must be at least 1, got 0
// MIN: error: tg-insert-loss-scaling: min-scale must be a normal positive f32 number (or 0 for none), got
// MINMAX: error: tg-insert-loss-scaling: min-scale 8{{.*}} exceeds max-scale 4
// NO-UPDATE: error: tg-insert-loss-scaling: a training step needs a loss gradient and an optimizer update to scale (found 1 and 0)
// PIPELINE: error: tg-insert-loss-scaling: invalid mode 'often'

// USED: error: tg-insert-loss-scaling: the result of an optimizer update may only be returned, but it is used by tg.relu
