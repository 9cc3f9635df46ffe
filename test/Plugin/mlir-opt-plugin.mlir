// The dialect and the AMP pass loaded into a stock mlir-opt as plugins.
// REQUIRES: mlir-opt-plugin
// Passes of a plugin are named through --pass-pipeline (the pass flags are
// built before plugins load).
// RUN: mlir-opt %s --load-dialect-plugin=%mp_obj_root/lib/MPPlugin.so --load-pass-plugin=%mp_obj_root/lib/MPPlugin.so --pass-pipeline="builtin.module(tg-auto-mixed-precision{compute-type=bf16})" | FileCheck %s

// CHECK-LABEL: func @f
// CHECK: %[[X:.*]] = tg.cast %arg0 : tensor<4x4xf32> to tensor<4x4xbf16>
// CHECK: tg.matmul %[[X]], %[[X]] compute(f32) : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xf32>
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tg.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// The pipeline and the lowering are registered too: a step goes from tg to
// the LLVM dialect in a stock mlir-opt.
// RUN: mlir-opt %s --load-dialect-plugin=%mp_obj_root/lib/MPPlugin.so --load-pass-plugin=%mp_obj_root/lib/MPPlugin.so --pass-pipeline="builtin.module(tg-mixed-precision{compute-type=bf16}, tg-lower-to-llvm)" | FileCheck %s --check-prefix=LOWERED
// LOWERED: llvm.func @f(
// LOWERED: llvm.call @mprt_matmul
// LOWERED-NOT: tg.
