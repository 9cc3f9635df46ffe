// Invalid tg-assign-layout options are errors, never crashes.
// RUN: not mp-opt %s --tg-assign-layout=layout=nchwc 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: not mp-opt %s --tg-assign-layout=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not mp-opt %s --tg-assign-layout="layout=nhwc report=%t/no/such/dir/r.json" 2>&1 | FileCheck %s --check-prefix=REPORT

// LAYOUT: error: tg-assign-layout: layout 'nchwc' is not auto, nhwc, nchw or off
// TARGET: error: tg-assign-layout: target 'tpu' is not cpu or cuda
// REPORT: error: tg-assign-layout: report: {{.*}}r.json
func.func @f(%x: tensor<2x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  return %c : tensor<2x4x8x8xf32>
}
