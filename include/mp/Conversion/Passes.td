//===- Passes.td - mp conversion passes --------------------*- tablegen -*-===//
//
// Conversions out of the tg dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MP_CONVERSION_PASSES
#define MP_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertTGToRuntime : Pass<"convert-tg-to-runtime", "mlir::ModuleOp"> {
  let summary = "Lower tg training steps to buffers and runtime calls";
  let description = [{
    Rewrites every function of tensors of `tg` ops (training steps and
    plain functions alike) into a function of memrefs that calls the mp
    runtime: each op becomes one `func.call @mprt_<entry>` whose only
    operand is a pointer to an argument block on the stack (data pointers,
    element types, shapes, attributes and the compute type, as listed in
    `runtime/include/mp/Runtime/MPCompiled.h`).

    Buffers. Results of ops are `memref.alloc`s, freed right after their last
    use in the block (the lowering to LLVM routes both to the runtime's
    caching allocator). Constants become `memref.global`s. Results are
    returned through destination buffers appended to the arguments
    (`mp.result` names which); the function returns nothing. The result
    of a training step that updates a `tg.param` or `tg.state` argument is
    written into that argument's buffer: an optimizer or loss-scale update
    of the argument runs in place when nothing reads the argument after it,
    otherwise the new value is copied back at the end of the step.

    ```mlir
    // Before
    func.func @f(%a: tensor<4x8xf16>, %b: tensor<8x2xf16>) -> tensor<4x2xf32> {
      %c = tg.matmul %a, %b compute(f32)
          : (tensor<4x8xf16>, tensor<8x2xf16>) -> tensor<4x2xf32>
      return %c : tensor<4x2xf32>
    }
    // After
    func.func @f(%a: memref<4x8xf16>, %b: memref<8x2xf16>,
                 %out: memref<4x2xf32> {mp.result = 0 : i64}) {
      memref.alloca_scope {
        %block = memref.alloca() : memref<19xi64>
        ... stores of the block's words ...
        func.call @mprt_matmul(%ptr) : (!llvm.ptr) -> ()
      }
      return
    }
    ```

    Ops of other dialects, functions with more than one block, ranks above
    the runtime's maximum and dynamic shapes are errors naming the op.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::func::FuncDialect",
    "mlir::LLVM::LLVMDialect",
    "mlir::memref::MemRefDialect",
  ];
}

#endif // MP_CONVERSION_PASSES
