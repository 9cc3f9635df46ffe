// RUN: mp-opt %s --tg-auto-mixed-precision | FileCheck %s
// RUN: mp-opt %s --tg-auto-mixed-precision > %t.once.mlir
// RUN: mp-opt %s --tg-auto-mixed-precision --tg-auto-mixed-precision > %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir
// RUN: mp-opt %s --tg-auto-mixed-precision="report=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT --input-file=%t.json

// Islands in the low type (docs/MixedPrecision.md): an infer or clear op that
// the five phases leave in f32, although it reads only low-precision results
// and constants and every user wants the low type, computes in the low type
// instead of costing a cast on each side.

// The gradient of a global average pool: the matmul's gradient is broadcast
// over the pooled positions and scaled by 1/4. The broadcast only becomes low
// in phase 5, after phase 4 has looked at the mul; nothing low lies beyond the
// relu gradient for phase 3. The constant is rounded to f16 (exactly here).
// CHECK-LABEL: func @pooled_gradient
// CHECK: %[[A:.*]] = tg.relu {{.*}} compute(f16) : tensor<2x4x2x2xf16>
// CHECK: %[[B:.*]] = tg.broadcast_to {{.*}} -> tensor<2x4x2x2xf16>
// CHECK-NOT: tg.cast
// CHECK: %[[Q:.*]] = tg.constant dense<2.500000e-01> : tensor<f16>
// CHECK-NEXT: %[[M:.*]] = tg.mul %[[B]], %[[Q]] compute(f16) : (tensor<2x4x2x2xf16>, tensor<f16>) -> tensor<2x4x2x2xf16>
// CHECK-NEXT: %[[R:.*]] = tg.relu_grad %[[M]], %[[A]] compute(f16) : tensor<2x4x2x2xf16>
// CHECK-NEXT: %[[O:.*]] = tg.cast %[[R]] : tensor<2x4x2x2xf16> to tensor<2x4x2x2xf32>
// CHECK-NEXT: return %[[O]]
// REPORT: "name": "pool.grad.scale",
// REPORT-NEXT: "op": "tg.mul",
// REPORT-NEXT: "list": "infer",
// REPORT-NEXT: "precision": "f16",
// REPORT-NEXT: "compute": "f16",
// REPORT: "rule": "between low-precision values (in f32 it would need a cast on each side)"
func.func @pooled_gradient(%x: tensor<2x4x2x2xf32>, %f: tensor<4x4x1x1xf32>,
                           %dy: tensor<2x8xf32>, %w: tensor<8x4xf32>)
    -> tensor<2x4x2x2xf32> {
  %c = tg.conv2d %x, %f strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x2x2xf32>
  %a = tg.relu %c : tensor<2x4x2x2xf32>
  %g = tg.matmul %dy, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %g4 = tg.reshape %g : (tensor<2x4xf32>) -> tensor<2x4x1x1xf32>
  %b = tg.broadcast_to %g4 : (tensor<2x4x1x1xf32>) -> tensor<2x4x2x2xf32>
  %q = tg.constant dense<2.500000e-01> : tensor<f32>
  %m = tg.mul %b, %q : (tensor<2x4x2x2xf32>, tensor<f32>) -> tensor<2x4x2x2xf32> loc("pool.grad.scale")
  %r = tg.relu_grad %m, %a : tensor<2x4x2x2xf32>
  return %r : tensor<2x4x2x2xf32>
}

// A relu between each convolution and its batch norm: phase 4 counts a
// normalisation's result as low only when its input is low by then, and the
// relus only become low in phase 5. The residual add reads both batch norms
// in f16, which then write f16, and no cast is left between the convolutions.
// CHECK-LABEL: func @relu_before_batch_norm
// CHECK: tg.batch_norm {{.*}} compute(f32) : (tensor<2x4x8x8xf16>, {{.*}}) -> (tensor<2x4x8x8xf16>,
// CHECK: tg.batch_norm {{.*}} compute(f32) : (tensor<2x4x8x8xf16>, {{.*}}) -> (tensor<2x4x8x8xf16>,
// CHECK-NOT: tg.cast
// CHECK: %[[S:.*]] = tg.add {{.*}} compute(f16) : (tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>) -> tensor<2x4x8x8xf16>
// CHECK-NEXT: %[[R:.*]] = tg.relu %[[S]] compute(f16) : tensor<2x4x8x8xf16>
// CHECK-NEXT: tg.conv2d %[[R]]
// REPORT: "name": "block.add",
// REPORT-NEXT: "op": "tg.add",
// REPORT: "precision": "f16",
// REPORT: "rule": "between low-precision values (in f32 it would need a cast on each side)"
func.func @relu_before_batch_norm(%x: tensor<2x4x8x8xf32>, %f1: tensor<4x4x3x3xf32>,
                                  %f2: tensor<4x4x1x1xf32>, %f3: tensor<4x4x1x1xf32>,
                                  %g: tensor<4xf32>, %b: tensor<4xf32>,
                                  %rm: tensor<4xf32>, %rv: tensor<4xf32>)
    -> tensor<2x4x8x8xf32> {
  %c1 = tg.conv2d %x, %f1 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %a1 = tg.relu %c1 : tensor<2x4x8x8xf32>
  %y1, %m1, %s1, %rm1, %rv1 = tg.batch_norm %a1, %g, %b, %rm, %rv epsilon = 1.0e-05 momentum = 1.0e-01 : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %c2 = tg.conv2d %x, %f2 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %a2 = tg.relu %c2 : tensor<2x4x8x8xf32>
  %y2, %m2, %s2, %rm2, %rv2 = tg.batch_norm %a2, %g, %b, %rm, %rv epsilon = 1.0e-05 momentum = 1.0e-01 : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %sum = tg.add %y1, %y2 : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> loc("block.add")
  %r = tg.relu %sum : tensor<2x4x8x8xf32>
  %c3 = tg.conv2d %r, %f3 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  return %c3 : tensor<2x4x8x8xf32>
}

// Not islands: the same scaling whose result is also returned (a user wants
// f32), and two whose other operand is an f32 argument (it would need a cast
// of its own), that argument second or first. All three stay f32, and the
// report says why (not "no low-precision producer": the broadcast is low).
// CHECK-LABEL: func @not_islands
// CHECK: %[[M:.*]] = tg.mul %{{.*}}, %{{.*}} : (tensor<2x4x2x2xf32>, tensor<f32>) -> tensor<2x4x2x2xf32>
// CHECK: %[[N:.*]] = tg.mul %{{.*}}, %{{.*}} : (tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> tensor<2x4x2x2xf32>
// CHECK: tg.mul %{{.*}}, %{{.*}} : (tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> tensor<2x4x2x2xf32>
// REPORT: "name": "returned.scale",
// REPORT-NOT: "name":
// REPORT: "precision": "f32",
// REPORT-NOT: "name":
// REPORT: "rule": "low-precision inputs, but a user needs f32 (a cast either way)"
// REPORT: "name": "argument.scale",
// REPORT-NOT: "name":
// REPORT: "precision": "f32",
// REPORT-NOT: "name":
// REPORT: "rule": "low-precision and f32 inputs (a cast either way)"
// REPORT: "name": "argument.first",
// REPORT-NOT: "name":
// REPORT: "precision": "f32",
// REPORT-NOT: "name":
// REPORT: "rule": "low-precision and f32 inputs (a cast either way)"
func.func @not_islands(%x: tensor<2x4x2x2xf32>, %f: tensor<4x4x1x1xf32>,
                       %dy: tensor<2x8xf32>, %w: tensor<8x4xf32>,
                       %s: tensor<2x4x2x2xf32>)
    -> (tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>,
        tensor<2x4x2x2xf32>) {
  %c = tg.conv2d %x, %f strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x2x2xf32>
  %a = tg.relu %c : tensor<2x4x2x2xf32>
  %g = tg.matmul %dy, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %g4 = tg.reshape %g : (tensor<2x4xf32>) -> tensor<2x4x1x1xf32>
  %b = tg.broadcast_to %g4 : (tensor<2x4x1x1xf32>) -> tensor<2x4x2x2xf32>
  %q = tg.constant dense<2.500000e-01> : tensor<f32>
  %m = tg.mul %b, %q : (tensor<2x4x2x2xf32>, tensor<f32>) -> tensor<2x4x2x2xf32> loc("returned.scale")
  %r = tg.relu_grad %m, %a : tensor<2x4x2x2xf32>
  %n = tg.mul %b, %s : (tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> tensor<2x4x2x2xf32> loc("argument.scale")
  %r2 = tg.relu_grad %n, %a : tensor<2x4x2x2xf32>
  %n2 = tg.mul %s, %b : (tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> tensor<2x4x2x2xf32> loc("argument.first")
  %r3 = tg.relu_grad %n2, %a : tensor<2x4x2x2xf32>
  return %r, %m, %r2, %r3 : tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>
}

// A producer the output layer demotes: the broadcast after the matmul feeds
// only an f32 product, so it computes in f32 (the matmul writes f32), and the
// product's inputs are all f32 in the end: no low-precision producer.
// CHECK-LABEL: func @demoted_producer
// CHECK: tg.matmul {{.*}} -> tensor<8x4xf32>
// CHECK-NEXT: tg.broadcast_to {{.*}} -> tensor<2x8x4xf32>
// CHECK-NEXT: tg.mul {{.*}} -> tensor<2x8x4xf32>
// REPORT: "name": "demoted.broadcast",
// REPORT-NOT: "name":
// REPORT: "precision": "f32",
// REPORT-NOT: "name":
// REPORT: "rule": "all users need f32 (output layer in f32)"
// REPORT: "name": "demoted.scale",
// REPORT-NOT: "name":
// REPORT: "precision": "f32",
// REPORT-NOT: "name":
// REPORT: "rule": "infer op with no low-precision producer"
func.func @demoted_producer(%dy: tensor<8x6xf32>, %w: tensor<6x4xf32>,
                            %s: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %g = tg.matmul %dy, %w : (tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  %b = tg.broadcast_to %g : (tensor<8x4xf32>) -> tensor<2x8x4xf32> loc("demoted.broadcast")
  %m = tg.mul %b, %s : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32> loc("demoted.scale")
  return %m : tensor<2x8x4xf32>
}

// The broadcast straight after the matmul, without the reshape between them
// (a producer with independent storage that could write f32 for an output
// layer): islands are decided first, so the broadcast stays low for the
// scaling it feeds.
// CHECK-LABEL: func @broadcast_after_matmul
// CHECK: %[[B:.*]] = tg.broadcast_to {{.*}} -> tensor<2x8x4xf16>
// CHECK-NOT: tg.cast
// CHECK: %[[M:.*]] = tg.mul %[[B]], %{{.*}} compute(f16) : (tensor<2x8x4xf16>, tensor<f16>) -> tensor<2x8x4xf16>
// CHECK-NEXT: tg.relu_grad %[[M]], %{{.*}} compute(f16) : tensor<2x8x4xf16>
func.func @broadcast_after_matmul(%x: tensor<2x8x3xf32>, %v: tensor<2x3x4xf32>,
                                  %dy: tensor<8x6xf32>, %w: tensor<6x4xf32>)
    -> tensor<2x8x4xf32> {
  %c = tg.matmul %x, %v : (tensor<2x8x3xf32>, tensor<2x3x4xf32>) -> tensor<2x8x4xf32>
  %a = tg.relu %c : tensor<2x8x4xf32>
  %g = tg.matmul %dy, %w : (tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  %b = tg.broadcast_to %g : (tensor<8x4xf32>) -> tensor<2x8x4xf32>
  %q = tg.constant dense<5.000000e-01> : tensor<f32>
  %m = tg.mul %b, %q : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %r = tg.relu_grad %m, %a : tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}

// A constant that would underflow in f16 (below its smallest normal number,
// 2^-14) keeps the op in f32: rounded, the scale would lose its precision
// or become zero.
// CHECK-LABEL: func @constant_below_f16
// CHECK: tg.mul %{{.*}}, %{{.*}} : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
// REPORT: "name": "tiny.scale",
// REPORT: "precision": "f32",
func.func @constant_below_f16(%x: tensor<2x8x3xf32>, %v: tensor<2x3x4xf32>,
                              %dy: tensor<8x6xf32>, %w: tensor<6x4xf32>)
    -> tensor<2x8x4xf32> {
  %c = tg.matmul %x, %v : (tensor<2x8x3xf32>, tensor<2x3x4xf32>) -> tensor<2x8x4xf32>
  %a = tg.relu %c : tensor<2x8x4xf32>
  %g = tg.matmul %dy, %w : (tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  %b = tg.broadcast_to %g : (tensor<8x4xf32>) -> tensor<2x8x4xf32>
  %q = tg.constant dense<1.000000e-06> : tensor<f32>
  %m = tg.mul %b, %q : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32> loc("tiny.scale")
  %r = tg.relu_grad %m, %a : tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}
