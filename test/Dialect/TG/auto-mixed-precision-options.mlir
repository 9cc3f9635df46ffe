// Every option of tg-auto-mixed-precision.
// RUN: mp-opt %s --tg-auto-mixed-precision="compute-type=bf16" | FileCheck %s --check-prefix=BF16
// RUN: mp-opt %s --tg-auto-mixed-precision="add-deny=tg.tanh" | FileCheck %s --check-prefix=ADD-DENY
// RUN: mp-opt %s --tg-auto-mixed-precision="remove-allow=tg.matmul" | FileCheck %s --check-prefix=NO-ALLOW
// RUN: mp-opt %s --tg-auto-mixed-precision="remove-infer=tg.tanh add-allow=tg.exp" | FileCheck %s --check-prefix=EDITS
// RUN: mp-opt %s --tg-auto-mixed-precision="remove-clear=tg.relu add-clear=tg.tanh remove-deny=tg.exp add-infer=tg.exp" | FileCheck %s --check-prefix=EDITS2
// RUN: mp-opt %s --tg-auto-mixed-precision="level=infer-as-deny" | FileCheck %s --check-prefix=INFER-AS-DENY
// RUN: mp-opt %s --tg-auto-mixed-precision="level=force-all" | FileCheck %s --check-prefix=FORCE-ALL
// RUN: mp-opt %s --tg-auto-mixed-precision="policy=%S/Inputs/policy.json" | FileCheck %s --check-prefix=POLICY
// RUN: mp-opt %s --tg-auto-mixed-precision="target=sm_90 compute-type=bf16" | FileCheck %s --check-prefix=BF16
// RUN: mp-opt %s --tg-auto-mixed-precision="target=sm_75 compute-type=bf16" 2>&1 | FileCheck %s --check-prefix=NO-FAST-PATH
// RUN: mp-opt %s --tg-auto-mixed-precision="target=cpu" 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: mp-opt %s --tg-auto-mixed-precision="target=sm_75" | FileCheck %s --check-prefix=SM75
// RUN: mp-opt %s --split-input-file --tg-auto-mixed-precision="change-signature=true" 2>/dev/null | FileCheck %s --check-prefix=SIGNATURE
// RUN: mp-opt %s --split-input-file --tg-auto-mixed-precision="change-signature=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=SIGNATURE-REMARK

func.func @step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("block0.fc")
  %1 = tg.tanh %0 : tensor<4x8xf32> loc("block0.act")
  %2 = tg.gelu %1 : tensor<4x8xf32> loc("block1.act")
  %3 = tg.matmul %2, %v : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("block1.fc")
  %4 = tg.exp %3 : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("head.exp")
  %5 = tg.relu %4 : tensor<4x8xf32> loc("head.relu")
  %6 = tg.matmul %5, %v : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("head")
  return %6 : tensor<4x8xf32>
}

// BF16: tg.matmul {{.*}} compute(f32) : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// BF16: tg.tanh {{.*}} compute(bf16) : tensor<4x8xbf16>

// Put on the deny list, tanh stays f32 between the matmuls.
// ADD-DENY: tg.matmul {{.*}} -> tensor<4x8xf32>
// ADD-DENY: tg.tanh %{{.*}} : tensor<4x8xf32>

// With matmul on no list, nothing is low precision and nothing changes.
// NO-ALLOW-NOT: tg.cast
// NO-ALLOW-NOT: compute(

// tanh is on no list (left as it is); exp becomes allow.
// EDITS: tg.tanh %{{.*}} : tensor<4x8xf32>
// EDITS: tg.exp %{{.*}} compute(f32) : (tensor<4x8xf16>) -> tensor<4x8xf16>
// EDITS: tg.relu %{{.*}} compute(f16) : tensor<4x8xf16>

// tanh is clear (and low, next to the matmul); relu is on no list, so exp,
// now infer, has only an f32 consumer and computes in f32.
// EDITS2: tg.tanh %{{.*}} compute(f16) : tensor<4x8xf16>
// EDITS2: tg.exp %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// EDITS2: tg.relu %{{.*}} : tensor<4x8xf32>

// INFER-AS-DENY: tg.tanh %{{.*}} : tensor<4x8xf32>
// INFER-AS-DENY: tg.gelu %{{.*}} : tensor<4x8xf32>

// FORCE-ALL: tg.tanh {{.*}} compute(f32) : tensor<4x8xf16>
// FORCE-ALL: tg.exp {{.*}} compute(f32) : (tensor<4x8xf16>) -> tensor<4x8xf16>
// FORCE-ALL: tg.relu {{.*}} compute(f32) : tensor<4x8xf16>

// The policy file puts gelu on the deny list, takes tanh off the infer list,
// pins "head" to f32 and forces "block1.*" to low precision.
// POLICY: tg.tanh %{{.*}} : tensor<4x8xf32>
// POLICY: tg.gelu %{{.*}} compute(f32) : tensor<4x8xf16>
// POLICY: tg.matmul {{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8x8xf16>)
// POLICY: tg.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>

// NO-FAST-PATH: remark: tg-auto-mixed-precision: target sm_75 has no fast bf16 path; the graph stays in f32 (use compute-type=f16)
// NO-FAST-PATH-NOT: tg.cast
// CPU: remark: tg-auto-mixed-precision: target cpu has no fast f16 path; the graph stays in f32 (use target=cpu-avx512bf16 on a CPU with AVX512-BF16, or target=generic to emulate)
// SM75: tg.matmul {{.*}} compute(f32) : (tensor<4x8xf16>

// -----

// With change-signature, an input used only in low precision is taken in
// f16 and a low-precision output is returned as f16; the parameter stays f32.
// SIGNATURE-LABEL: func @entry
// SIGNATURE-SAME: (%[[X:.*]]: tensor<4x4xf16> {tg.input = "x"}, %[[W:.*]]: tensor<4x4xf32> {tg.param = "w"}) -> (tensor<4x4xf16> {tg.output = "y"}, tensor<4x4xf32> {tg.output = "z"})
// SIGNATURE: %[[WH:.*]] = tg.cast %[[W]]
// SIGNATURE-NOT: tg.cast
// SIGNATURE: tg.matmul %[[X]], %[[WH]]
// SIGNATURE: return %{{.*}}, %{{.*}} : tensor<4x4xf16>, tensor<4x4xf32>
func.func @entry(%x: tensor<4x4xf32> {tg.input = "x"}, %w: tensor<4x4xf32> {tg.param = "w"})
    -> (tensor<4x4xf32> {tg.output = "y"}, tensor<4x4xf32> {tg.output = "z"}) {
  %0 = tg.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = tg.relu %0 : tensor<4x4xf32>
  %2 = tg.matmul %1, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %1, %2 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A function that is called keeps its signature.
// SIGNATURE-REMARK: remark: tg-auto-mixed-precision: the signature of a function that is called is not changed
// SIGNATURE-LABEL: func @callee
// SIGNATURE-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<4x4xf32>
func.func @callee(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tg.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
func.func @caller(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = func.call @callee(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
