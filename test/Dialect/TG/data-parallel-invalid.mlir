// Bad tg-data-parallel options and steps it cannot parallelise are errors
// with a location, never crashes.
// RUN: not mp-opt %s --tg-data-parallel=bucket-mb=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not mp-opt %s --tg-data-parallel=bucket-mb=nan 2>&1 | FileCheck %s --check-prefix=NAN
// RUN: not mp-opt %s --tg-data-parallel=bucket-mb=lots 2>&1 | FileCheck %s --check-prefix=WORD
// RUN: not mp-opt %s --tg-data-parallel 2>&1 | FileCheck %s --check-prefix=NOUPDATE

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
