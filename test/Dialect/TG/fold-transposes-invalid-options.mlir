// An option tg-fold-transposes does not have is an error, never a crash.
// RUN: not mp-opt %s --tg-fold-transposes=swap=false 2>&1 | FileCheck %s
// CHECK: no such option swap
func.func @f(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> tensor<8x3xf32> {
  %wt = tg.transpose %w permutation = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %y = tg.matmul %x, %wt : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
