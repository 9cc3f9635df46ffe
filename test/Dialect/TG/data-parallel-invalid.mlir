// Bad tg-data-parallel options and steps it cannot parallelise are errors
// with a location, never crashes.
// RUN: not mp-opt %s --tg-data-parallel=bucket-mb=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not mp-opt %s --tg-data-parallel=bucket-mb=nan 2>&1 | FileCheck %s --check-prefix=NAN
// RUN: not mp-opt %s --tg-data-parallel=bucket-mb=lots 2>&1 | FileCheck %s --check-prefix=WORD
// RUN: not mp-opt %s --split-input-file --tg-data-parallel 2>&1 | FileCheck %s --check-prefix=NOUPDATE
// RUN: not mp-opt %s --split-input-file --tg-data-parallel 2>&1 | FileCheck %s --check-prefix=UNSCALED

// NEGATIVE: error: tg-data-parallel: option 'bucket-mb' = -1.00 must be a finite number of MiB, at least 0
// NAN: error: tg-data-parallel: option 'bucket-mb' = nan must be a finite number of MiB, at least 0
// WORD: 'lots'
// NOUPDATE: data-parallel-invalid.mlir:[[# @LINE + 1]]:1: error: tg-data-parallel: a training step needs optimizer updates whose gradients it can average
func.func @no_update(%w: tensor<3xf32> {tg.param = "w"}, %x: tensor<3xf32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss}, tensor<3xf32> {tg.update = "w"})
    attributes {tg.train_step} {
  %p = tg.mul %w, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %loss = tg.reduce_sum %p axes = [0] : (tensor<3xf32>) -> tensor<f32>
  return %loss, %w : tensor<f32>, tensor<3xf32>
}

// -----

// UNSCALED: data-parallel-invalid.mlir:[[# @LINE + 9]]:9: error: tg-data-parallel: in a loss-scaled step every update must read its gradient from tg.unscale_grads
func.func @partly_scaled(%w: tensor<3xf32> {tg.param = "w"}, %v: tensor<3xf32> {tg.param = "v"},
                         %x: tensor<3xf32> {tg.input = "x"}, %s: tensor<f32> {tg.input = "s"})
    -> (tensor<f32> {tg.loss}, tensor<3xf32> {tg.update = "w"}, tensor<3xf32> {tg.update = "v"})
    attributes {tg.train_step} {
  %p = tg.mul %w, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %loss = tg.reduce_sum %p axes = [0] : (tensor<3xf32>) -> tensor<f32>
  %u, %inf = tg.unscale_grads %x by %s : (tensor<3xf32>, tensor<f32>) -> (tensor<3xf32>, tensor<i1>)
  %w1 = tg.sgd_update %w, %u skip_if(%inf) {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<i1>) -> tensor<3xf32>
  %v1 = tg.sgd_update %v, %x {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %loss, %w1, %v1 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
