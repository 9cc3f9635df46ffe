// Bad options are errors with a message, never crashes.
// RUN: not mp-opt %s --tg-auto-mixed-precision="compute-type=f8" 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not mp-opt %s --tg-auto-mixed-precision="level=aggressive" 2>&1 | FileCheck %s --check-prefix=LEVEL
// RUN: not mp-opt %s --tg-auto-mixed-precision="target=sm_10" 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not mp-opt %s --tg-auto-mixed-precision="add-allow=tg.conv3d" 2>&1 | FileCheck %s --check-prefix=UNKNOWN-OP
// RUN: not mp-opt %s --tg-auto-mixed-precision="add-deny=func.return" 2>&1 | FileCheck %s --check-prefix=NO-INTERFACE
// RUN: not mp-opt %s --tg-auto-mixed-precision="add-deny=tg.gelu add-allow=tg.gelu" 2>&1 | FileCheck %s --check-prefix=TWO-LISTS
// RUN: not mp-opt %s --tg-auto-mixed-precision="policy=%t.missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not mp-opt %s --tg-auto-mixed-precision="policy=%S/Inputs/policy-truncated.json" 2>&1 | FileCheck %s --check-prefix=TRUNCATED
// RUN: not mp-opt %s --tg-auto-mixed-precision="policy=%S/Inputs/policy-bad-list.json" 2>&1 | FileCheck %s --check-prefix=BAD-LIST
// RUN: not mp-opt %s --tg-auto-mixed-precision="policy=%S/Inputs/policy-bad-op.json" 2>&1 | FileCheck %s --check-prefix=BAD-OP
// RUN: not mp-opt %s --tg-auto-mixed-precision="policy=%S/Inputs/policy-bad-override.json" 2>&1 | FileCheck %s --check-prefix=BAD-OVERRIDE
// RUN: not mp-opt %s --tg-auto-mixed-precision="policy=%S/Inputs/policy-bad-precision.json" 2>&1 | FileCheck %s --check-prefix=BAD-PRECISION
// RUN: not mp-opt %s --tg-auto-mixed-precision="report=%t.no/such/dir/r.json" 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: not mp-opt %s --tg-auto-mixed-precision="no-such-option=1" 2>&1 | FileCheck %s --check-prefix=OPTION

func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tg.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// TYPE: error: tg-auto-mixed-precision: invalid compute-type 'f8'; expected f16 or bf16
// LEVEL: error: tg-auto-mixed-precision: invalid level 'aggressive'; expected default, infer-as-deny or force-all
// TARGET: error: tg-auto-mixed-precision: invalid target 'sm_10'; expected generic, cpu
// UNKNOWN-OP: error: tg-auto-mixed-precision: add-allow: unknown op 'tg.conv3d'
// NO-INTERFACE: error: tg-auto-mixed-precision: add-deny: op 'func.return' does not implement the precision interface
// TWO-LISTS: error: tg-auto-mixed-precision: add-deny: op 'tg.gelu' is put on both the allow and the deny lists
// MISSING: error: tg-auto-mixed-precision: cannot read policy file '{{.*}}missing.json': No such file or directory
// TRUNCATED: error: tg-auto-mixed-precision: policy file '{{.*}}policy-truncated.json' is not valid JSON: [1:29, byte=29]: Expected , or } after object property
// BAD-LIST: error: tg-auto-mixed-precision: policy file '{{.*}}': add: unknown list 'sometimes'; expected allow, infer, clear or deny
// BAD-OP: error: tg-auto-mixed-precision: policy file '{{.*}}': remove: unknown op 'tg.conv3d'
// BAD-OVERRIDE: error: tg-auto-mixed-precision: policy file '{{.*}}': overrides[0] needs "precision" and exactly one of "name" and "pattern", all strings
// BAD-PRECISION: error: tg-auto-mixed-precision: policy file '{{.*}}': overrides[0]: invalid precision 'f8'; expected f32, low or the compute type
// REPORT: error: tg-auto-mixed-precision: report: cannot write '{{.*}}r.json':
// OPTION: no-such-option
