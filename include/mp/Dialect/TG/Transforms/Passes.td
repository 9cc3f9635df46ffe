//===- Passes.td - tg transformation passes -----------------*- tablegen -*-===//

#ifndef MP_DIALECT_TG_TRANSFORMS_PASSES_TD
#define MP_DIALECT_TG_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGAutoMixedPrecision : Pass<"tg-auto-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Decide per op whether a training step runs in f16/bf16 or f32";
  let description = [{
    Colours every function of the module the way TensorFlow's Grappler AMP
    does, from the allow / infer / clear / deny lists of the precision
    interface, in time linear in ops plus edges:

    1. allow-list ops are low precision;
    2. deny spreads forward through infer and clear ops along paths that end
       at a deny or infer op;
    3. infer and clear ops lying between allow ops become low precision;
    4. an infer op fed by a low-precision op and by no deny op becomes low
       precision;
    5. low precision spreads through clear ops in both directions.

    It then rewrites the function with as few casts as it can:

    * low-precision ops read and write `compute-type` storage; allow ops
      (matmul) accumulate in f32, infer and clear ops compute in the low
      type;
    * deny-list ops compute in f32 but read whatever storage their operands
      have, and write low-precision storage when every consumer wants it;
    * a matmul writes f32 when a consumer needs f32 (the logits of the loss,
      the gradient of an optimizer update);
    * one cast per (value, type), placed right after the value's definition
      and shared by all users: a parameter is cast once per step for its
      forward and backward uses; exact round trips fold away;
    * parameters, optimizer state, function arguments and results keep
      their types.

    Before:

    ```mlir
    %h = tg.matmul %x, %w : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %y = tg.relu %h : tensor<32x128xf32>
    ```

    After (`compute-type=f16`):

    ```mlir
    %xh = tg.cast %x : tensor<32x64xf32> to tensor<32x64xf16>
    %wh = tg.cast %w : tensor<64x128xf32> to tensor<64x128xf16>
    %h = tg.matmul %xh, %wh compute(f32) : (tensor<32x64xf16>, tensor<64x128xf16>) -> tensor<32x128xf16>
    %y = tg.relu %h compute(f16) : tensor<32x128xf16>
    ```

    `report=<file>` writes every decision as JSON and `report-dot=<file>`
    the graph coloured by precision; see docs/MixedPrecision.md.
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"computeType", "compute-type", "std::string", /*default=*/"\"f16\"",
           "The low-precision type: f16 or bf16">,
    ListOption<"addAllow", "add-allow", "std::string",
               "Op names to put on the allow list">,
    ListOption<"addInfer", "add-infer", "std::string",
               "Op names to put on the infer list">,
    ListOption<"addClear", "add-clear", "std::string",
               "Op names to put on the clear list">,
    ListOption<"addDeny", "add-deny", "std::string",
               "Op names to put on the deny list">,
    ListOption<"removeAllow", "remove-allow", "std::string",
               "Op names to take off the allow list">,
    ListOption<"removeInfer", "remove-infer", "std::string",
               "Op names to take off the infer list">,
    ListOption<"removeClear", "remove-clear", "std::string",
               "Op names to take off the clear list">,
    ListOption<"removeDeny", "remove-deny", "std::string",
               "Op names to take off the deny list">,
    Option<"policyFile", "policy", "std::string", /*default=*/"\"\"",
           "JSON file with list edits and per-op overrides">,
    Option<"level", "level", "std::string", /*default=*/"\"default\"",
           "default, infer-as-deny (treat infer ops as deny) or force-all "
           "(every listed op in low precision)">,
    Option<"target", "target", "std::string", /*default=*/"\"generic\"",
           "The hardware: generic, cpu, sm_70, sm_75, sm_80, sm_86, sm_89, "
           "sm_90, sm_100 or sm_120">,
    Option<"reportFile", "report", "std::string", /*default=*/"\"\"",
           "Write the precision report (JSON) to this file">,
    Option<"reportDotFile", "report-dot", "std::string", /*default=*/"\"\"",
           "Write the graph coloured by precision (Graphviz DOT) to this "
           "file">,
  ];
}

#endif // MP_DIALECT_TG_TRANSFORMS_PASSES_TD
