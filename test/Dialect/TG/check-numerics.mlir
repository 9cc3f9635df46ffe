// tg-check-numerics: statistics after every watched value, the first-bad-op
// chain in program order, two new outputs and the tg.numerics table.
// RUN: mp-opt %s --tg-check-numerics | FileCheck %s
// RUN: mp-opt %s --tg-check-numerics=scope=backward | FileCheck %s --check-prefix=BACKWARD
// RUN: mp-opt %s --tg-check-numerics=scope=forward | FileCheck %s --check-prefix=FORWARD
// RUN: mp-opt %s --tg-check-numerics=ops=tg.exp | FileCheck %s --check-prefix=KIND
// RUN: mp-opt %s "--tg-check-numerics=ops=fc.*" | FileCheck %s --check-prefix=GLOB
// Checked twice: the second run leaves the step alone.
// RUN: mp-opt %s --tg-check-numerics --tg-check-numerics 2>%t.remark | FileCheck %s --check-prefix=TWICE
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: mp-opt %s "--tg-check-numerics=ops=nothing.*" 2>&1 | FileCheck %s --check-prefix=NONE
// The instrumented step lowers and verifies.
// RUN: mp-opt %s --tg-check-numerics --tg-lower-to-llvm | FileCheck %s --check-prefix=LOWERED

// CHECK-LABEL: func.func @step
// CHECK-SAME: tensor<i64> {tg.output = "numerics.first_nonfinite"}, tensor<11x6xf32> {tg.output = "numerics.stats"}
// CHECK-SAME: tg.numerics = [
// CHECK-SAME: {compute = f32, gradient = false, id = 0 : i64, location = "model.mlir:3:5", name = "fc.matmul", op = "tg.matmul", operand_rows = [0, 1], operand_types = [f32, f32], pin = ["fc.matmul"], result_rows = [2], result_types = [f32]}
// CHECK-SAME: {gradient = false, id = 1 : i64, location = "model.mlir:4:5", name = "fc.to_f16", op = "tg.cast", operand_rows = [2], operand_types = [f32], pin = ["act"], result_rows = [3], result_types = [f16]}
// CHECK-SAME: {compute = f32, gradient = false, id = 2 : i64, {{.*}} name = "act", op = "tg.exp"
// CHECK-SAME: {compute = f32, gradient = true, id = 6 : i64, {{.*}} name = "loss.grad", op = "tg.softmax_cross_entropy_grad", operand_rows = [7, 5, -1], operand_types = [f32, f32, i32]
// CHECK-SAME: {compute = f32, gradient = true, id = 8 : i64, {{.*}} name = "w.sgd", op = "tg.sgd_update"
// CHECK-DAG: %[[SX:.*]] = tg.tensor_stats %arg0 : tensor<4x8xf32> -> tensor<1x6xf32>
// CHECK-DAG: %[[SW:.*]] = tg.tensor_stats %arg2 : tensor<8x3xf32> -> tensor<1x6xf32>
// CHECK: %[[NOBAD:.*]] = tg.constant dense<-1> : tensor<i64>
// CHECK: %[[H:.*]] = tg.matmul %arg0, %arg2
// CHECK-NEXT: %[[SH:.*]] = tg.tensor_stats %[[H]]
// CHECK-NEXT: %[[S0:.*]] = tg.record_nonfinite %[[NOBAD]], %[[SH]] {op_id = 0 : i64}
// CHECK: %[[HH:.*]] = tg.cast %[[H]]
// CHECK-NEXT: %[[SHH:.*]] = tg.tensor_stats %[[HH]] : tensor<4x3xf16> -> tensor<1x6xf32>
// CHECK-NEXT: %[[S1:.*]] = tg.record_nonfinite %[[S0]], %[[SHH]] {op_id = 1 : i64}
// CHECK: %[[E:.*]] = tg.exp %[[HH]]
// CHECK-NEXT: tg.tensor_stats %[[E]]
// CHECK-NEXT: tg.record_nonfinite %[[S1]], %{{.*}} {op_id = 2 : i64}
// The seed constant is no checked op, but an operand of one: it has a row.
// CHECK: %[[ONE:.*]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: tg.tensor_stats %[[ONE]]
// CHECK: %[[LAST:.*]] = tg.record_nonfinite %{{.*}} {op_id = 8 : i64}
// CHECK: %[[ROWS:.*]] = tg.concat %[[SX]], %[[SW]], %[[SH]], %[[SHH]], {{.*}} axis = 0 : {{.*}} -> tensor<11x6xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[LAST]], %[[ROWS]]

// BACKWARD: tensor<i64> {tg.output = "numerics.first_nonfinite"}
// BACKWARD-NOT: name = "fc.matmul"
// BACKWARD-NOT: name = "act"
// BACKWARD: name = "loss.grad"
// BACKWARD: name = "fc.matmul.grad_rhs"
// BACKWARD: name = "w.sgd"
// BACKWARD-COUNT-3: tg.record_nonfinite

// FORWARD: name = "fc.matmul"
// FORWARD-NOT: name = "loss.grad"
// FORWARD-NOT: name = "w.sgd"
// FORWARD-COUNT-5: tg.record_nonfinite

// KIND: tg.numerics = [{compute = f32, gradient = false, id = 2 : i64, {{.*}} name = "act", op = "tg.exp", {{.*}}}]
// KIND-COUNT-1: tg.record_nonfinite
// KIND-NOT: tg.record_nonfinite

// GLOB: name = "fc.matmul"
// GLOB-SAME: name = "fc.to_f16"
// GLOB-SAME: name = "fc.matmul.grad_rhs"
// GLOB-COUNT-3: tg.record_nonfinite
// GLOB-NOT: tg.record_nonfinite

// REMARK: remark: tg-check-numerics: step is already checked
// TWICE-COUNT-8: tg.record_nonfinite
// TWICE-NOT: tg.record_nonfinite

// NONE: warning: tg-check-numerics: no op of 'step' is selected (scope=all, ops=nothing.*); the step is left unchanged
// NONE-NOT: tg.tensor_stats

// LOWERED-COUNT-8: call @mprt_record_nonfinite
// LOWERED-NOT: tg.

func.func @step(%x: tensor<4x8xf32> {tg.input = "x"},
                %y: tensor<4xi32> {tg.label = "y"},
                %w: tensor<8x3xf32> {tg.param = "w"})
    -> (tensor<f32> {tg.loss}, tensor<8x3xf32> {tg.update = "w"})
    attributes {tg.train_step} {
  %h = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("fc.matmul"("model.mlir":3:5))
  %hh = tg.cast %h : tensor<4x3xf32> to tensor<4x3xf16> loc("fc.to_f16"("model.mlir":4:5))
  %e = tg.exp %hh compute(f32) : (tensor<4x3xf16>) -> tensor<4x3xf16> loc("act"("model.mlir":5:5))
  %e32 = tg.cast %e : tensor<4x3xf16> to tensor<4x3xf32> loc("act.to_f32"("model.mlir":5:5))
  %l = tg.softmax_cross_entropy %e32, %y : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32> loc("loss"("model.mlir":6:5))
  %one = tg.constant dense<1.0> : tensor<f32> loc("seed")
  %de = tg.softmax_cross_entropy_grad %one, %e32, %y : (tensor<f32>, tensor<4x3xf32>, tensor<4xi32>) -> tensor<4x3xf32> loc("loss.grad"("model.mlir":6:5))
  %dw = tg.matmul %x, %de transpose_lhs : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32> loc("fc.matmul.grad_rhs"("model.mlir":3:5))
  %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32> loc("w.sgd"("model.mlir":2:3))
  return %l, %w1 : tensor<f32>, tensor<8x3xf32>
}
