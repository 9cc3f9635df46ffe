// Invalid tg-fuse-epilogues options are errors, never crashes.
// RUN: not mp-opt %s --tg-fuse-epilogues=activation=maybe 2>&1 | FileCheck %s --check-prefix=BOOL
// RUN: not mp-opt %s --tg-fuse-epilogues=bias=false 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not mp-opt %s --tg-fuse-epilogues=bias-grad=maybe 2>&1 | FileCheck %s --check-prefix=BIASGRAD

// BOOL: for the --activation option: 'maybe' is invalid value for boolean argument
// UNKNOWN: no such option bias
// BIASGRAD: for the --bias-grad option: 'maybe' is invalid value for boolean argument
func.func @f(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>) -> tensor<8x3xf32> {
  %y = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
