//===- TGBase.td - tg dialect definition and shared constraints -*- tablegen -*-===//
//
// The `tg` (training graph) dialect: its definition, the type constraints every
// op shares, and the enums used by the precision interface.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_IR_TGBASE_TD
#define MP_DIALECT_TG_IR_TGBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def TG_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::mp::tg";
  let summary = "A training-graph dialect for automatic mixed precision";
  let description = [{
    The `tg` dialect expresses one step of neural-network training, the forward
    pass, the loss, the backward pass and the optimizer update, on ranked
    tensors with static shapes. It is the input of the auto-mixed-precision
    (AMP) pass and of the loss-scaling pass, and it is lowered to calls into
    the mp runtime.

    Two notions of precision are kept apart:

    * the *storage* type of a value is the element type of its tensor type
      (`f32`, `f16`, `bf16`, or `f64` for reference runs);
    * the *compute* type of an op is the precision it computes and
      accumulates in. Ops that do floating-point arithmetic carry an optional
      `compute` clause; when it is absent the op computes in the storage type
      of its data operands.

    A matmul that reads `f16`, accumulates in `f32` and writes `f16` is written

    ```mlir
    %c = tg.matmul %a, %b compute(f32)
        : (tensor<64x128xf16>, tensor<128x32xf16>) -> tensor<64x32xf16>
    ```

    Precision behaviour is exposed through `TG_PrecisionOpInterface` (default
    list class, compute type, operand roles), so passes never look at op names
    and ops of other dialects opt in through external models.

    A training step is a `func.func` carrying the `tg.train_step` attribute;
    its arguments and results are annotated with their roles (`tg.param`,
    `tg.state`, `tg.input`, `tg.label`, `tg.loss`, `tg.update`, `tg.output`).
    See `docs/TrainingStep.md`. A forward function (`tg.forward`) has the
    same argument roles and returns its loss or its logits;
    `tg-make-train-step` differentiates it into a training step
    (`docs/Autodiff.md`).
  }];
  let hasConstantMaterializer = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Names of the discardable attributes of the training-step convention.
    static constexpr ::llvm::StringLiteral kTrainStepAttr = "tg.train_step";
    static constexpr ::llvm::StringLiteral kForwardAttr = "tg.forward";
    static constexpr ::llvm::StringLiteral kParamAttr = "tg.param";
    static constexpr ::llvm::StringLiteral kStateAttr = "tg.state";
    static constexpr ::llvm::StringLiteral kInputAttr = "tg.input";
    static constexpr ::llvm::StringLiteral kLabelAttr = "tg.label";
    static constexpr ::llvm::StringLiteral kLossAttr = "tg.loss";
    static constexpr ::llvm::StringLiteral kUpdateAttr = "tg.update";
    static constexpr ::llvm::StringLiteral kOutputAttr = "tg.output";
    static constexpr ::llvm::StringLiteral kInitAttr = "tg.init";
    /// On a state argument: it holds the named parameter rounded to its
    /// element type (a tg-shadow-weights shadow), set by the runtime from
    /// the parameter whenever the parameter is set from outside the step.
    static constexpr ::llvm::StringLiteral kShadowOfAttr = "tg.shadow_of";
    /// What tg-check-numerics watches in a step (docs/Numerics.md).
    static constexpr ::llvm::StringLiteral kNumericsAttr = "tg.numerics";
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def TG_PrecisionClass : I32EnumAttr<"PrecisionClass",
    "the list an op belongs to for automatic mixed precision", [
      I32EnumAttrCase<"Allow", 0, "allow">,
      I32EnumAttrCase<"Infer", 1, "infer">,
      I32EnumAttrCase<"Clear", 2, "clear">,
      I32EnumAttrCase<"Deny", 3, "deny">
    ]> {
  let cppNamespace = "::mp::tg";
  let genSpecializedAttr = 0;
}

def TG_OperandRole : I32EnumAttr<"OperandRole",
    "what an operand is to the precision decisions of its op", [
      // Floating-point activations and gradients: their storage follows the
      // precision the op is given.
      I32EnumAttrCase<"Data", 0, "data">,
      // Floating-point weights or state (norm scale and bias, parameters and
      // optimizer state of an update, the loss scale): storage independent of
      // the data operands.
      I32EnumAttrCase<"Parameter", 1, "parameter">,
      // Integer or boolean operands: labels, ids, counters, predicates.
      I32EnumAttrCase<"Index", 2, "index">
    ]> {
  let cppNamespace = "::mp::tg";
  let genSpecializedAttr = 0;
}

def TG_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "the relation tg.compare tests", [
      I32EnumAttrCase<"eq", 0>,
      I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>,
      I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>,
      I32EnumAttrCase<"ge", 5>
    ]> {
  let cppNamespace = "::mp::tg";
}

def TG_CollectiveReduction : I32EnumAttr<"CollectiveReduction",
    "how tg.all_reduce combines the ranks' tensors", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"mean", 1>
    ]> {
  let cppNamespace = "::mp::tg";
}

def TG_Activation : I32EnumAttr<"Activation",
    "the activation a fused matmul epilogue applies", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"relu", 1>,
      // x * Phi(x), with erf.
      I32EnumAttrCase<"gelu", 2>,
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
      I32EnumAttrCase<"gelu_tanh", 3>
    ]> {
  let cppNamespace = "::mp::tg";
}

def TG_MatmulOperand : I32EnumAttr<"MatmulOperand",
    "an operand of a matmul", [
      I32EnumAttrCase<"lhs", 0>,
      I32EnumAttrCase<"rhs", 1>
    ]> {
  let cppNamespace = "::mp::tg";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def TG_FloatElement : AnyTypeOf<[F16, BF16, F32, F64],
                                "f16, bf16, f32 or f64">;
def TG_IntElement : AnyTypeOf<[I32, I64], "i32 or i64">;

def TG_FloatTensor : StaticShapeTensorOf<[TG_FloatElement]>;
def TG_IntTensor : StaticShapeTensorOf<[TG_IntElement]>;
def TG_AnyTensor : StaticShapeTensorOf<[TG_FloatElement, TG_IntElement, I1]>;
def TG_MaskTensor : StaticShapeTensorOf<[I1]>;

def TG_FloatScalar : 0DTensorOf<[TG_FloatElement]>;
def TG_F32Scalar : 0DTensorOf<[F32]>;
def TG_CounterScalar : 0DTensorOf<[I64]>;
def TG_Predicate : 0DTensorOf<[I1]>;

def TG_ComputeTypeAttr : TypeAttrOf<TG_FloatElement>;

def TG_PositiveF32Attr : ConfinedAttr<F32Attr, [AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValue()"
          ".isNegative() == false && !::llvm::cast<::mlir::FloatAttr>($_self).getValue().isZero()">,
    "whose value is positive">]>;

def TG_NonNegI64Attr : ConfinedAttr<I64Attr, [IntNonNegative]>;

#endif // MP_DIALECT_TG_IR_TGBASE_TD
