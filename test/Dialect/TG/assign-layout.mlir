// tg-assign-layout: the layout ops change layout, the transposes sink and
// cancel, and what is left is a transpose at each edge of the region.
// RUN: mp-opt %s --split-input-file --tg-assign-layout=layout=nhwc | FileCheck %s
// RUN: mp-opt %s --split-input-file --tg-assign-layout=layout=off | FileCheck %s --check-prefix=OFF
// RUN: mp-opt %s --split-input-file --tg-assign-layout="layout=auto target=cpu" | FileCheck %s --check-prefix=CPU
// RUN: mp-opt %s --split-input-file --tg-assign-layout="layout=auto target=cuda" | FileCheck %s --check-prefix=CUDA
// The training step of the first function: every forward and gradient op
// is NHWC and the input image is the only transpose.
// RUN: mp-opt %s --tg-make-train-step --tg-assign-layout="layout=nhwc report=%t.json" | FileCheck %s --check-prefix=STEP
// RUN: FileCheck %s --input-file=%t.json --check-prefix=REPORT

// CHECK-LABEL: func.func @cnn
// CHECK-NOT: tg.transpose
// CHECK: %[[X:.*]] = tg.transpose %arg0 permutation = [0, 2, 3, 1] : (tensor<2x3x8x8xf32>) -> tensor<2x8x8x3xf32>
// CHECK-NOT: tg.transpose
// CHECK: tg.conv2d %[[X]], %arg1 {{.*}} channels_last : (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x8x8x4xf32>
// CHECK: tg.batch_norm {{.*}} channels_last : (tensor<2x8x8x4xf32>,
// CHECK: tg.relu %{{.*}} : tensor<2x8x8x4xf32>
// CHECK: tg.max_pool2d {{.*}} channels_last : (tensor<2x8x8x4xf32>) -> tensor<2x4x4x4xf32>
// CHECK: tg.conv2d {{.*}} channels_last
// CHECK: tg.add {{.*}} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
// The global average pool reduces the NHWC tensor's H and W.
// CHECK: tg.reduce_mean %{{.*}} axes = [1, 2] : (tensor<2x4x4x4xf32>) -> tensor<2x4xf32>
// CHECK-NOT: tg.transpose
// CHECK: return

// OFF-LABEL: func.func @cnn
// OFF-NOT: tg.transpose
// OFF-NOT: channels_last
// OFF: return

// CPU-LABEL: func.func @cnn
// CPU: tg.conv2d {{.*}} channels_last

// The CUDA backend keeps NCHW (its direct kernels are written for it).
// CUDA-LABEL: func.func @cnn
// CUDA-NOT: channels_last
// CUDA: return

// STEP-LABEL: func.func @cnn
// STEP: tg.transpose %arg0 permutation = [0, 2, 3, 1]
// STEP-NOT: tg.transpose
// STEP: tg.conv2d_grad_filter {{.*}} channels_last
// STEP-NOT: tg.transpose
// STEP: tg.batch_norm_grad {{.*}} channels_last
// STEP-NOT: tg.transpose
// STEP: tg.conv2d_grad_filter {{.*}} channels_last
// STEP-NOT: tg.transpose
// STEP: return

// REPORT: "function": "cnn"
// REPORT: "layout": "nhwc"
// REPORT: "transposes":
// REPORT-NEXT: "after": 1,
// REPORT-NEXT: "before": 0,
// REPORT-NEXT: "elements_after": 384,
func.func @cnn(%x: tensor<2x3x8x8xf32> {tg.input = "x"},
               %w1: tensor<4x3x3x3xf32> {tg.param = "w1"},
               %g: tensor<4xf32> {tg.param = "g"},
               %b: tensor<4xf32> {tg.param = "b"},
               %rm: tensor<4xf32> {tg.state = "rm"},
               %rv: tensor<4xf32> {tg.state = "rv"},
               %w2: tensor<4x4x3x3xf32> {tg.param = "w2"},
               %fc: tensor<4x10xf32> {tg.param = "fc"},
               %labels: tensor<2xi32> {tg.label = "labels"})
    -> (tensor<2x10xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %c = tg.conv2d %x, %w1 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %y, %m, %s, %nrm, %nrv = tg.batch_norm %c, %g, %b, %rm, %rv epsilon = 1.0e-05 momentum = 1.0e-01 : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = tg.relu %y : tensor<2x4x8x8xf32>
  %p = tg.max_pool2d %r window = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  %c2 = tg.conv2d %p, %w2 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x4x4xf32>
  %sum = tg.add %c2, %p : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %r2 = tg.relu %sum : tensor<2x4x4x4xf32>
  %gap = tg.reduce_mean %r2 axes = [2, 3] : (tensor<2x4x4x4xf32>) -> tensor<2x4xf32>
  %logits = tg.matmul %gap, %fc : (tensor<2x4xf32>, tensor<4x10xf32>) -> tensor<2x10xf32>
  return %logits : tensor<2x10xf32>
}

// -----

// Dropout draws by element position: the transposes stay around it.
// CHECK-LABEL: func.func @dropout
// CHECK: tg.conv2d {{.*}} channels_last
// CHECK: %[[BACK:.*]] = tg.transpose %{{.*}} permutation = [0, 3, 1, 2]
// CHECK: %[[D:.*]] = tg.dropout %[[BACK]]
// CHECK: tg.transpose %[[D]] permutation = [0, 2, 3, 1]
// CHECK: tg.conv2d {{.*}} channels_last
func.func @dropout(%x: tensor<2x4x8x8xf32>, %w: tensor<4x4x1x1xf32>,
                   %seed: tensor<i64>) -> tensor<2x4x8x8xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %d = tg.dropout %c, %seed rate = 0.5 stream = 0 : (tensor<2x4x8x8xf32>, tensor<i64>) -> tensor<2x4x8x8xf32>
  %c2 = tg.conv2d %d, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  return %c2 : tensor<2x4x8x8xf32>
}

// -----

// A model already in NHWC keeps it; layout=nchw would turn it around.
// CHECK-LABEL: func.func @already_last
// CHECK-NOT: tg.transpose
// CHECK: return
// CUDA-LABEL: func.func @already_last
// CUDA: tg.transpose
// CUDA: tg.conv2d
// CUDA-NOT: channels_last
func.func @already_last(%x: tensor<2x8x8x4xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<2x8x8x4xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 channels_last : (tensor<2x8x8x4xf32>, tensor<4x4x3x3xf32>) -> tensor<2x8x8x4xf32>
  %r = tg.relu %c : tensor<2x8x8x4xf32>
  return %r : tensor<2x8x8x4xf32>
}

// -----

// A scalar operand moves with the transpose for free; on CUDA bf16
// convolutions stay NCHW too.
// CHECK-LABEL: func.func @bf16
// CHECK: tg.conv2d {{.*}} channels_last compute(f32)
// CHECK: tg.add %{{.*}}, %{{.*}} : (tensor<2x8x8x4xbf16>, tensor<bf16>)
// CHECK: tg.transpose
// CHECK-NEXT: return
// CUDA-LABEL: func.func @bf16
// CUDA-NOT: channels_last
// CUDA: return
func.func @bf16(%x: tensor<2x4x8x8xbf16>, %w: tensor<4x4x3x3xbf16>, %s: tensor<bf16>) -> tensor<2x4x8x8xbf16> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 compute(f32) : (tensor<2x4x8x8xbf16>, tensor<4x4x3x3xbf16>) -> tensor<2x4x8x8xbf16>
  %a = tg.add %c, %s : (tensor<2x4x8x8xbf16>, tensor<bf16>) -> tensor<2x4x8x8xbf16>
  return %a : tensor<2x4x8x8xbf16>
}

// -----

// Squeeze-excite and a bias: a per-sample-and-channel scale [N, C, 1, 1]
// and a [C, 1, 1] bias (broadcast from the trailing dimensions) permute as
// reshapes, so nothing is left between the convolutions.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK: tg.transpose %arg0
// CHECK-NOT: tg.transpose
// CHECK: tg.reduce_mean %{{.*}} axes = [1, 2] keep_dims : (tensor<2x8x8x4xf32>) -> tensor<2x1x1x4xf32>
// CHECK: tg.reshape %arg2 : (tensor<4x1x1xf32>) -> tensor<1x1x1x4xf32>
// CHECK-NOT: tg.transpose
// CHECK: tg.conv2d {{.*}} channels_last
// CHECK-NEXT: tg.transpose
// CHECK-NEXT: return
func.func @squeeze_excite(%x: tensor<2x4x8x8xf32>, %w: tensor<4x4x1x1xf32>, %bias: tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %m = tg.reduce_mean %c axes = [2, 3] keep_dims : (tensor<2x4x8x8xf32>) -> tensor<2x4x1x1xf32>
  %s = tg.sigmoid %m : tensor<2x4x1x1xf32>
  %e = tg.mul %c, %s : (tensor<2x4x8x8xf32>, tensor<2x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %b = tg.add %e, %bias : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %c2 = tg.conv2d %b, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  return %c2 : tensor<2x4x8x8xf32>
}
