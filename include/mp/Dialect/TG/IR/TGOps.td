//===- TGOps.td - tg dialect operations ---------------------*- tablegen -*-===//
//
// The operations of the training-graph dialect. Ops are defined through
// layered base classes: `TG_Op` gives the dialect, `TG_ComputeOp` adds the
// precision interface and the list class, and the elementwise, reduction and
// gradient families below add their operands, format and type rules, so each
// concrete op is a few lines plus its documentation.
//
// Shape rules that ODS constraints cannot say live in free functions in
// TGShapes.cpp, shared by the verifiers and by result type inference.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_IR_TGOPS_TD
#define MP_DIALECT_TG_IR_TGOPS_TD

include "mp/Dialect/TG/IR/TGBase.td"
include "mp/Dialect/TG/IR/TGInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/CastInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

/// Every tensor an op touches holds at most 2^48 elements, so element counts
/// and byte sizes never overflow in the passes or the runtime.
def TG_BoundedTensorSizes : NativeOpTrait<"BoundedTensorSizes"> {
  let cppNamespace = "::mp::tg::OpTrait";
}

class TG_Op<string mnemonic, list<Trait> traits = []>
    : Op<TG_Dialect, mnemonic, !listconcat([TG_BoundedTensorSizes], traits)>;

/// The default list class of an op, as a C++ trait that provides
/// `kDefaultPrecisionClass` to the precision interface.
class TG_ListClass<string cls>
    : ParamNativeOpTrait<"DefaultPrecisionClass",
                         "::mp::tg::PrecisionClass::" # cls> {
  let cppNamespace = "::mp::tg::OpTrait";
}

/// Results may be stored in another type than the data operands.
def TG_IndependentResultStorage : NativeOpTrait<"IndependentResultStorage"> {
  let cppNamespace = "::mp::tg::OpTrait";
}
/// Data operands share one storage type, results are independent (matmul).
def TG_SameDataOperandStorage : NativeOpTrait<"SameDataOperandStorage"> {
  let cppNamespace = "::mp::tg::OpTrait";
}
/// Each result element sums several terms (average pooling, pooling
/// gradients over overlapping windows): in low precision it still
/// accumulates in f32, like an allow-list op.
def TG_AccumulatesTerms : NativeOpTrait<"AccumulatesTerms"> {
  let cppNamespace = "::mp::tg::OpTrait";
}
/// Data operands must be read in full precision (losses, optimizer updates).
def TG_FullPrecisionDataOperands
    : NativeOpTrait<"FullPrecisionDataOperands"> {
  let cppNamespace = "::mp::tg::OpTrait";
}

/// An op reverse-mode differentiation propagates gradients through; its
/// adjoint rule (buildAdjoints) is in TGAdjoints.cpp.
defvar TG_Differentiable =
    DeclareOpInterfaceMethods<TG_DifferentiableOpInterface>;

/// An op the mixed-precision passes reason about. `cls` is its default list
/// class; `overrides` names precision-interface methods the op implements
/// itself (for example `getOperandRole`).
class TG_PrecisionOp<string mnemonic, string cls, list<Trait> traits = [],
                     list<string> overrides = []>
    : TG_Op<mnemonic, !listconcat(traits, [
        TG_ListClass<cls>,
        DeclareOpInterfaceMethods<TG_PrecisionOpInterface, overrides>])>;

/// A side-effect-free op that does floating-point arithmetic, with a
/// `compute(<type>)` clause. Concrete ops list `$compute` in `arguments` as
/// `OptionalAttr<TG_ComputeTypeAttr>:$compute`.
class TG_ComputeOp<string mnemonic, string cls, list<Trait> traits = [],
                   list<string> overrides = []>
    : TG_PrecisionOp<mnemonic, cls, !listconcat(traits, [Pure]), overrides>;

/// Elementwise binary arithmetic with numpy-style broadcasting. Both operands
/// and the result share one element type.
class TG_BinaryOp<string mnemonic, string cls, string sym>
    : TG_ComputeOp<mnemonic, cls, [
        InferTypeOpAdaptor, TG_Differentiable,
        AllElementTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "elementwise " # mnemonic # " with broadcasting";
  let description = [{
    Computes `lhs }] # sym # [{ rhs` element by element. The operand shapes
    are broadcast against each other the way numpy does: aligned from the
    trailing dimension, a dimension of 1 stretches to match the other, and
    the result has the broadcast shape. The operands and the result share
    one element type; the arithmetic is done in the compute type.

    ```mlir
    %0 = tg.}] # mnemonic # [{ %a, %b compute(f32)
        : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mp::tg::inferBroadcastType(loc, adaptor.getLhs().getType(),
                                          adaptor.getRhs().getType(), types);
    }
  }];
}

/// Result inference that fixes shapes only: the inferred element type is the
/// default a builder uses, and any floating-point element type is accepted
/// (isCompatibleReturnTypes), so an op may write another storage type than
/// it reads.
defvar TG_InferShape = InferTypeOpAdaptorWithIsCompatible;

/// Elementwise unary arithmetic: one operand, a result of the same type.
class TG_UnaryOp<string mnemonic, string cls, string formula,
                 list<Trait> traits = []>
    : TG_ComputeOp<mnemonic, cls,
                   !listconcat(traits, [SameOperandsAndResultType,
                                        TG_Differentiable])> {
  let summary = "elementwise " # mnemonic;
  let description = [{
    Computes `}] # formula # [{` element by element, in the compute type.

    ```mlir
    %0 = tg.}] # mnemonic # [{ %x : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`compute` `(` $compute^ `)`)? attr-dict `:` type($result)
  }];
}

/// Elementwise unary arithmetic on the deny list: it computes in f32 when
/// mixed precision is on, so its input and result may be stored in
/// different types (only the shapes match).
class TG_DenyUnaryOp<string mnemonic, string formula>
    : TG_ComputeOp<mnemonic, "Deny", [SameOperandsAndResultShape,
                                       TG_IndependentResultStorage,
                                       TG_Differentiable]> {
  let summary = "elementwise " # mnemonic;
  let description = [{
    Computes `}] # formula # [{` element by element, in the compute type.
    The result may be stored in another floating-point type than the input.

    ```mlir
    %0 = tg.}] # mnemonic # [{ %x compute(f32) : (tensor<8x16xf16>) -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

/// The gradient of an elementwise activation: `dx = dy * f'(...)`.
class TG_ActivationGradOp<string mnemonic, string cls, string saved,
                          string formula>
    : TG_ComputeOp<mnemonic, cls, [SameOperandsAndResultType]> {
  let summary = "gradient of an elementwise activation";
  let description = [{
    Given the gradient `dy` of the activation's output and the saved tensor
    `}] # saved # [{`, computes `}] # formula # [{` element by element.

    ```mlir
    %dx = tg.}] # mnemonic # [{ %dy, %}] # saved # [{ : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$saved,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $saved (`compute` `(` $compute^ `)`)? attr-dict `:`
    type($result)
  }];
}

/// Softmax-like ops over one axis.
class TG_AxisOp<string mnemonic, string formula>
    : TG_ComputeOp<mnemonic, "Deny", [SameOperandsAndResultShape,
                                      TG_IndependentResultStorage,
                                      TG_Differentiable]> {
  let summary = mnemonic # " along one axis";
  let description = [{
    Computes `}] # formula # [{` along `axis`, in the compute type and with
    the maximum subtracted first for stability. `axis` must lie in
    `[0, rank)`. Input and result have one shape; their storage types may
    differ.

    ```mlir
    %y = tg.}] # mnemonic # [{ %x axis = 1 compute(f32)
        : (tensor<8x10xf16>) -> tensor<8x10xf16>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_NonNegI64Attr:$axis,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mp::tg::verifyAxis(getOperation(), "axis", getAxis(),
                                  getType().getRank());
    }
  }];
}

/// The backward of a softmax-like op, given the op's output `y`.
class TG_AxisGradOp<string mnemonic, string formula>
    : TG_ComputeOp<mnemonic, "Deny", [SameOperandsAndResultShape,
                                      TG_IndependentResultStorage]> {
  let summary = "gradient of " # !subst("_grad", "", mnemonic);
  let description = [{
    Given the output gradient `dy` and the forward result `y`, computes
    `}] # formula # [{` along `axis`. All three have one shape; their
    storage types may differ.

    ```mlir
    %dx = tg.}] # mnemonic # [{ %dy, %y axis = 1
        : (tensor<8x10xf32>, tensor<8x10xf16>) -> tensor<8x10xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$output,
                       TG_NonNegI64Attr:$axis,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $output `axis` `=` $axis (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mp::tg::verifyAxis(getOperation(), "axis", getAxis(),
                                  getType().getRank());
    }
  }];
}

/// Reductions over a set of axes.
class TG_ReduceOp<string mnemonic, string what>
    : TG_ComputeOp<mnemonic, "Deny", [TG_InferShape,
                                      TG_IndependentResultStorage,
                                      TG_Differentiable]> {
  let summary = "reduction: " # what # " over axes";
  let description = [{
    Reduces `input` to its }] # what # [{ over `axes` (strictly increasing,
    each in `[0, rank)`), accumulating in the compute type. With `keep_dims`
    the reduced dimensions stay as size 1; otherwise they are removed. The
    result may be stored in another floating-point type than the input.

    ```mlir
    %s = tg.}] # mnemonic # [{ %x axes = [1] keep_dims compute(f32)
        : (tensor<8x16xbf16>) -> tensor<8x1xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keep_dims,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes (`keep_dims` $keep_dims^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mp::tg::inferReduceType(
          loc, ::llvm::dyn_cast<::mlir::RankedTensorType>(
                   adaptor.getInput().getType()),
          adaptor.getAxes(), adaptor.getKeepDims(), types);
    }
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l,
                                            ::mlir::TypeRange r) {
      return ::mp::tg::haveSameShapes(l, r);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Contraction
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_ComputeOp<"matmul", "Allow", [
    TG_InferShape, AllElementTypesMatch<["lhs", "rhs"]>,
    TG_IndependentResultStorage, TG_SameDataOperandStorage,
    TG_Differentiable]> {
  let summary = "batched matrix multiplication";
  let description = [{
    Multiplies the two innermost dimensions of `lhs` and `rhs`; every outer
    dimension is a batch dimension, broadcast numpy-style (so a rank-2
    weight multiplies every matrix of a rank-3 activation). `transpose_lhs`
    and `transpose_rhs` swap the two innermost dimensions of that operand
    before the product.

    With `lhs : [..., M, K]` and `rhs : [..., K, N]` (after the transposes)
    the result is `[..., M, N]`. The operands share one storage type; the
    result may be stored in another (an f16 matmul may write its f32
    accumulators as f32, as the output layer of a mixed-precision model
    does). Products are accumulated in the compute type, so an `f16` matmul
    that accumulates in `f32` is

    ```mlir
    %c = tg.matmul %a, %w transpose_rhs compute(f32)
        : (tensor<4x64x128xf16>, tensor<256x128xf16>) -> tensor<4x64x256xf16>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def TG_FusedMatmulOp : TG_ComputeOp<"fused_matmul", "Allow", [
    AttrSizedOperandSegments, AllElementTypesMatch<["lhs", "rhs"]>,
    TG_IndependentResultStorage, TG_SameDataOperandStorage],
    ["getOperandRole", "isDataResult"]> {
  let summary = "matrix multiplication with a bias, residual and activation epilogue";
  let description = [{
    `tg.matmul` followed by an epilogue that the GEMM libraries apply while
    the accumulators are still in registers (oneDNN post-ops on the CPU,
    cuBLASLt epilogues on CUDA):

    ```
    result = activation(alpha * (lhs x rhs) + bias + residual)
    ```

    `alpha` (default 1, finite) scales the product, as the GEMMs' own alpha
    does; `bias` (optional) is a vector of the result's last dimension,
    broadcast over the rows and the batch; `residual` (optional) has the
    result's type. The epilogue is computed in the compute type, on the
    unrounded accumulators, and the result is rounded to its storage type
    once, so a fused matmul is at least as accurate as the ops it replaces
    (which round after the product, after the bias and after the
    activation). The bias and the residual are read in whatever type they
    are stored in.

    `tg-fuse-epilogues` forms it from a matmul, the multiplications of its
    operands or its product by constant scalars, the `tg.add`s of a bias
    and a residual, and a `tg.relu` or `tg.gelu`, or from a weight gradient
    and the plain SGD update it feeds (`param - lr * grad`: alpha `-lr`, the
    parameter as the residual), late in the pipeline (after differentiation
    and mixed precision); it has no adjoint.

    ```mlir
    %h = tg.fused_matmul %x, %w bias(%b) activation(relu) compute(f32)
        : (tensor<32x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16>)
        -> tensor<32x128xbf16>
    ```

    A weight gradient can also give the bias gradient of its layer, as
    cuBLASLt's BGRADA and BGRADB epilogues do: with `bias_grad(lhs)` the
    second result `bias_grad` is the sum over k of each row of `op(lhs)` (a
    vector of the result's rows), with `bias_grad(rhs)` of each column of
    `op(rhs)` (of its columns). Each is summed in order along k in the
    compute type, as `tg.reduce_sum` sums, and rounded once to the result's
    element type; `alpha` and the epilogue do not touch it. The product is
    of two 2-D operands. `tg-fuse-epilogues` forms it from the
    `tg.reduce_sum` of the output gradient that a weight gradient reads:

    ```mlir
    // y = x w^T + b: dw = dy^T x, db = the sum of dy's rows.
    %dw, %db = tg.fused_matmul %dy, %x transpose_lhs bias_grad(lhs)
        compute(f32)
        : (tensor<512x256xf32>, tensor<512x1024xf32>)
        -> (tensor<256x1024xf32>, tensor<256xf32>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       Optional<TG_FloatTensor>:$bias,
                       Optional<TG_FloatTensor>:$residual,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       DefaultValuedAttr<TG_Activation,
                                         "::mp::tg::Activation::none">:$activation,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       OptionalAttr<TG_MatmulOperand>:$bias_grad_of,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result,
                      Optional<TG_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? (`bias` `(` $bias^ `)`)?
    (`residual` `(` $residual^ `)`)? (`activation` `(` $activation^ `)`)?
    (`bias_grad` `(` $bias_grad_of^ `)`)?
    (`compute` `(` $compute^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def TG_AddOp : TG_BinaryOp<"add", "Infer", "+"> {
  let hasCanonicalizer = 1;
}
def TG_SubOp : TG_BinaryOp<"sub", "Infer", "-">;
def TG_MulOp : TG_BinaryOp<"mul", "Infer", "*">;
def TG_DivOp : TG_BinaryOp<"div", "Infer", "/">;
def TG_MaximumOp : TG_BinaryOp<"maximum", "Infer", "max">;
def TG_MinimumOp : TG_BinaryOp<"minimum", "Infer", "min">;

def TG_NegOp : TG_UnaryOp<"neg", "Infer", "-x"> { let hasFolder = 1; }
def TG_ReluOp : TG_UnaryOp<"relu", "Clear", "max(x, 0), NaN for NaN">;
def TG_TanhOp : TG_UnaryOp<"tanh", "Infer", "tanh(x)">;
def TG_SigmoidOp : TG_UnaryOp<"sigmoid", "Infer", "1 / (1 + exp(-x))">;
def TG_ExpOp : TG_DenyUnaryOp<"exp", "exp(x)">;
def TG_LogOp : TG_DenyUnaryOp<"log", "log(x)">;
def TG_SqrtOp : TG_UnaryOp<"sqrt", "Infer", "sqrt(x)">;
def TG_RsqrtOp : TG_DenyUnaryOp<"rsqrt", "1 / sqrt(x)">;
def TG_SquareOp : TG_UnaryOp<"square", "Infer", "x * x">;
def TG_ErfOp : TG_UnaryOp<"erf", "Infer", "erf(x)">;
// Rotary embeddings take sin and cos of angles up to the sequence length:
// f16 and bf16 would lose the angle itself, so they run in f32.
def TG_SinOp : TG_DenyUnaryOp<"sin", "sin(x)">;
def TG_CosOp : TG_DenyUnaryOp<"cos", "cos(x)">;

def TG_GeluOp : TG_ComputeOp<"gelu", "Infer", [SameOperandsAndResultType,
                                               TG_Differentiable]> {
  let summary = "elementwise gaussian error linear unit";
  let description = [{
    Computes `x * Phi(x)` with `Phi` the standard normal CDF, exactly (with
    `erf`) or, with `tanh_approx`, as
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.

    ```mlir
    %y = tg.gelu %x tanh_approx : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, UnitAttr:$tanh_approx,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`tanh_approx` $tanh_approx^)? (`compute` `(` $compute^ `)`)?
    attr-dict `:` type($result)
  }];
}

def TG_DropoutOp : TG_ComputeOp<"dropout", "Infer", [
    AllTypesMatch<["input", "result"]>, TG_Differentiable]> {
  let summary = "dropout with a counter-based mask";
  let description = [{
    Zeroes each element with probability `rate` and scales the others by
    `1 / (1 - rate)` (inverted dropout). The mask is a pure function of the
    i64 `seed`, the `stream` and the element's index: Philox4x32-10 with the
    seed as key and (index / 4, stream) as counter, an element kept when
    its 24-bit uniform is at least `rate` (`mp/Runtime/Philox.h` gives the
    exact rule). No mask is stored: the gradient is the same dropout of the
    output gradient, and the CPU and CUDA backends draw the same mask for
    the same seed. Dropouts of one step read one seed and differ in
    `stream`; the step advances the seed with `tg.next_seed` and returns it
    as the update of a `tg.state` argument, so that every step draws new
    masks.

    It is on the infer list: the scaling is a multiplication, done in the
    compute type like `tg.mul`.

    ```mlir
    %y = tg.dropout %x, %seed rate = 1.0e-01 stream = 0
        : (tensor<32x256xf16>, tensor<i64>) -> tensor<32x256xf16>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_CounterScalar:$seed,
                       F32Attr:$rate, TG_NonNegI64Attr:$stream,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $seed `rate` `=` $rate `stream` `=` $stream
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_RandomUniformOp : TG_Op<"random_uniform", [Pure]> {
  let summary = "uniform random numbers from the dropout generator";
  let description = [{
    Fills the result with numbers uniform in `[low, high)`: element `i` is
    `low + (high - low) * u` with `u` the 24-bit uniform of `tg.dropout`'s
    generator for (`seed`, `stream`, `i`) (`mp/Runtime/Philox.h`), computed
    in f64 and rounded to the result type. The CPU and CUDA backends draw
    the same numbers. It reads only the seed, so it has no gradient: the
    importer makes it from ONNX's RandomUniformLike, which EfficientNet's
    stochastic depth compares with its survival rate.

    ```mlir
    %u = tg.random_uniform %seed stream = 3 low = 0.0 high = 1.0
        : (tensor<i64>) -> tensor<8x1x1x1xf32>
    ```
  }];
  let arguments = (ins TG_CounterScalar:$seed, TG_NonNegI64Attr:$stream,
                       F64Attr:$low, F64Attr:$high);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $seed `stream` `=` $stream `low` `=` $low `high` `=` $high attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_NextSeedOp : TG_Op<"next_seed", [Pure,
    AllTypesMatch<["seed", "result"]>]> {
  let summary = "the seed of the next step's dropout masks";
  let description = [{
    Returns `seed + 1` (wrapping). A step whose dropouts read the `tg.state`
    argument `s` returns `tg.next_seed` of it with `tg.update = "s"`.

    ```mlir
    %next = tg.next_seed %seed : tensor<i64>
    ```
  }];
  let arguments = (ins TG_CounterScalar:$seed);
  let results = (outs TG_CounterScalar:$result);
  let assemblyFormat = "$seed attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

def TG_CompareOp : TG_Op<"compare", [Pure, InferTypeOpAdaptor,
    AllElementTypesMatch<["lhs", "rhs"]>]> {
  let summary = "elementwise comparison with broadcasting";
  let description = [{
    Tests `lhs <predicate> rhs` element by element (`eq`, `ne`, `lt`, `le`,
    `gt`, `ge`), with numpy broadcasting, and gives an `i1` tensor. The
    operands share one element type, floating-point, integer or `i1`, and
    are compared exactly in it: a NaN is unequal to everything and neither
    less nor greater.

    Masks are built from comparisons (a padding mask from the token ids, a
    causal mask from positions). `tg.compare` has no compute type and no
    gradient, and is on none of the precision lists: mixed precision leaves
    it, and the values it reads, in the types they have.

    ```mlir
    %keep = tg.compare ne, %ids, %pad
        : (tensor<8x128xi64>, tensor<i64>) -> tensor<8x128xi1>
    ```
  }];
  let arguments = (ins TG_ComparePredicate:$predicate, TG_AnyTensor:$lhs,
                       TG_AnyTensor:$rhs);
  let results = (outs TG_MaskTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands,
    results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (::mlir::failed(::mp::tg::inferBroadcastType(
              loc, adaptor.getLhs().getType(), adaptor.getRhs().getType(),
              types)))
        return ::mlir::failure();
      types[0] = ::llvm::cast<::mlir::RankedTensorType>(types[0]).clone(
          ::mlir::IntegerType::get(context, 1));
      return ::mlir::success();
    }
  }];
}

def TG_SelectOp : TG_Op<"select", [Pure, InferTypeOpAdaptor,
    TG_Differentiable,
    AllElementTypesMatch<["on_true", "on_false", "result"]>]> {
  let summary = "elementwise choice between two tensors by a mask";
  let description = [{
    Gives `on_true` where `condition` holds and `on_false` elsewhere, with
    numpy broadcasting of the three operands. The values share one element
    type (any), and are copied unchanged.

    Attention masks fill the scores they hide with the most negative value
    of the type (`-3.4e38` in f32) or add such a value. Neither f16 nor bf16
    holds it (it rounds to `-inf`), so `tg.select` is on no precision list:
    mixed precision keeps it in the type it has, and an add it feeds stays
    in f32 too (docs/MixedPrecision.md).

    The gradient flows to `on_true` where the condition holds and to
    `on_false` elsewhere (summed over broadcast dimensions); the condition
    has none. A select by a constant condition that is the same everywhere
    canonicalizes to the branch it picks (broadcast to the result's shape),
    as the `And` of a mask with an all-true pattern imports.

    ```mlir
    %masked = tg.select %keep, %scores, %lowest
        : (tensor<8x1x1x128xi1>, tensor<8x4x128x128xf32>, tensor<f32>)
        -> tensor<8x4x128x128xf32>
    ```
  }];
  let arguments = (ins TG_MaskTensor:$condition, TG_AnyTensor:$on_true,
                       TG_AnyTensor:$on_false);
  let results = (outs TG_AnyTensor:$result);
  let hasCanonicalizeMethod = 1;
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      ::llvm::SmallVector<::mlir::Type, 1> values;
      if (::mlir::failed(::mp::tg::inferBroadcastType(
              loc, adaptor.getOnTrue().getType(),
              adaptor.getOnFalse().getType(), values)) ||
          ::mlir::failed(::mp::tg::inferBroadcastType(
              loc, values[0], adaptor.getCondition().getType(), types)))
        return ::mlir::failure();
      types[0] = ::llvm::cast<::mlir::RankedTensorType>(types[0]).clone(
          ::llvm::cast<::mlir::RankedTensorType>(values[0]).getElementType());
      return ::mlir::success();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

def TG_SoftmaxOp : TG_AxisOp<"softmax", "exp(x - max) / sum(exp(x - max))">;
def TG_LogSoftmaxOp
    : TG_AxisOp<"log_softmax", "x - max - log(sum(exp(x - max)))">;

def TG_LayerNormOp : TG_ComputeOp<"layer_norm", "Deny",
    [AllShapesMatch<["input", "result"]>, AllTypesMatch<["scale", "bias"]>,
     AllTypesMatch<["mean", "rstd"]>, TG_IndependentResultStorage,
     DeclareOpInterfaceMethods<TG_DifferentiableOpInterface,
                               ["isDifferentiableResult"]>],
    ["getOperandRole", "isDataResult"]> {
  let summary = "layer normalisation, with saved statistics";
  let description = [{
    Normalises `input` over the dimensions `[axis, rank)`:
    `y = (x - mean) * rstd * scale + bias` with
    `rstd = 1 / sqrt(var + epsilon)` (biased variance). `scale` and `bias`
    have the normalised shape `input.shape[axis:]` and may be stored in
    another precision than `input` (they are parameters); so may the
    result. The op also
    returns `mean` and `rstd`, of shape `input.shape[:axis]`, for the
    backward pass. Their storage type is independent of the input's and of
    the compute type (usually f32, so the backward pass reads the
    statistics at full precision); changing the compute type never changes
    the op's result types.

    A layer norm between two f16 matmuls reads f16, computes in f32 and
    writes f16:

    ```mlir
    %y, %mean, %rstd = tg.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-05
        compute(f32)
        : (tensor<4x64x256xf16>, tensor<256xf32>, tensor<256xf32>)
        -> (tensor<4x64x256xf16>, tensor<4x64xf32>, tensor<4x64xf32>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$scale,
                       TG_FloatTensor:$bias, TG_NonNegI64Attr:$axis,
                       TG_PositiveF32Attr:$epsilon,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result, TG_FloatTensor:$mean,
                      TG_FloatTensor:$rstd);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `axis` `=` $axis `epsilon` `=` $epsilon
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def TG_ReduceSumOp : TG_ReduceOp<"reduce_sum", "sum">;

def TG_CumSumOp : TG_ComputeOp<"cumsum", "Deny", [SameOperandsAndResultShape,
                                                 TG_IndependentResultStorage,
                                                 TG_Differentiable]> {
  let summary = "running sum along one axis";
  let description = [{
    `y[k] = x[0] + ... + x[k]` along `axis`, accumulated in the compute
    type. With `exclusive` the sum stops before `x[k]` (and `y[0]` is 0);
    with `reverse` it runs from the end of the axis. A running sum is a
    reduction, so it is on the deny list: in f16 a long prefix would swamp
    each new term.

    RoBERTa numbers positions with one over the padding mask; the importer
    runs integer running sums in f64 (exact below 2^53) and converts back.

    ```mlir
    %y = tg.cumsum %x axis = 1 exclusive compute(f32)
        : (tensor<4x16xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_NonNegI64Attr:$axis,
                       UnitAttr:$exclusive, UnitAttr:$reverse,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis (`exclusive` $exclusive^)? (`reverse` $reverse^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mp::tg::verifyAxis(getOperation(), "axis", getAxis(),
                                  getType().getRank());
    }
  }];
}
def TG_ReduceMeanOp : TG_ReduceOp<"reduce_mean", "mean">;
def TG_ReduceMaxOp : TG_ReduceOp<"reduce_max", "maximum">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Ops that move or select elements without arithmetic: no compute type, and
/// precision-agnostic (clear list) by default.
class TG_MovementOp<string mnemonic, list<Trait> traits = []>
    : TG_PrecisionOp<mnemonic, "Clear", !listconcat(traits, [Pure])>;

def TG_TransposeOp : TG_MovementOp<"transpose", [
    InferTypeOpAdaptor, AllElementTypesMatch<["input", "result"]>,
    TG_Differentiable]> {
  let summary = "permutes the dimensions of a tensor";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`; `permutation`
    must be a permutation of `[0, rank)`.

    ```mlir
    %t = tg.transpose %x permutation = [0, 2, 1, 3]
        : (tensor<2x8x4x16xf16>) -> tensor<2x4x8x16xf16>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def TG_ReshapeOp : TG_MovementOp<"reshape", [
    AllElementTypesMatch<["input", "result"]>, TG_Differentiable]> {
  let summary = "reinterprets the shape of a tensor";
  let description = [{
    Returns the elements of `input` in row-major order with the result's
    shape; both must hold the same number of elements.

    ```mlir
    %r = tg.reshape %x : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_BroadcastToOp : TG_MovementOp<"broadcast_to", [
    AllElementTypesMatch<["input", "result"]>, TG_Differentiable]> {
  let summary = "broadcasts a tensor to a larger shape";
  let description = [{
    Broadcasts `input` to the result's shape with numpy rules: dimensions
    are aligned from the right, and each input dimension must equal the
    result's or be 1.

    ```mlir
    %b = tg.broadcast_to %bias : (tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_ConcatOp : TG_MovementOp<"concat", [InferTypeOpAdaptor,
                                           TG_Differentiable]> {
  let summary = "concatenates tensors along an axis";
  let description = [{
    Joins the `inputs` along `axis`. All inputs have the same rank and
    element type and agree on every dimension but `axis`.

    ```mlir
    %c = tg.concat %a, %b axis = 1
        : (tensor<4x8xf32>, tensor<4x24xf32>) -> tensor<4x32xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_AnyTensor>:$inputs,
                       TG_NonNegI64Attr:$axis);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def TG_SliceOp : TG_MovementOp<"slice", [
    InferTypeOpAdaptor, AllElementTypesMatch<["input", "result"]>,
    TG_Differentiable]> {
  let summary = "extracts a strided box from a tensor";
  let description = [{
    Selects, in every dimension `d`, the `sizes[d]` elements starting at
    `offsets[d]` with step `strides[d]` (1 when `strides` is absent). The
    selection must lie inside the input.

    ```mlir
    %s = tg.slice %x offsets = [0, 16] sizes = [4, 16]
        : (tensor<4x64xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $input `offsets` `=` $offsets `sizes` `=` $sizes
    (`strides` `=` $strides^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def TG_GatherOp : TG_MovementOp<"gather", [
    InferTypeOpAdaptor, AllElementTypesMatch<["table", "result"]>,
    TG_Differentiable]> {
  let summary = "embedding lookup: gathers rows of a table by integer ids";
  let description = [{
    With `table : [V, D...]` and integer `ids` of any shape `[I...]`, the
    result is `[I..., D...]` and holds row `ids[i]` of the table at `i`.
    An id in `[-V, 0)` counts from the end (`id + V`), as in ONNX and
    NumPy; an id outside `[-V, V)` is undefined behaviour (the runtimes
    clamp it in the forward pass and drop its gradient).

    ```mlir
    %e = tg.gather %table[%ids]
        : (tensor<1000x64xf32>, tensor<8x16xi32>) -> tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$table, TG_IntTensor:$ids);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` functional-type(operands, results)
  }];
}

def TG_SliceGradOp : TG_MovementOp<"slice_grad", [
    AllElementTypesMatch<["grad", "result"]>, TG_Differentiable]> {
  let summary = "gradient of slice: scatters a slice into zeros";
  let description = [{
    The adjoint of `tg.slice`: a tensor of the result's shape (the shape of
    the tensor that was sliced), zero except at the selected positions,
    which hold `grad` (of the slice's shape): in every dimension `d`,
    `result[offsets[d] + i * strides[d]] = grad[i]` (strides are 1 when
    absent). The selection must lie inside the result.

    ```mlir
    %dx = tg.slice_grad %dy offsets = [0, 16] strides = [1, 2]
        : (tensor<4x8xf32>) -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$grad, DenseI64ArrayAttr:$offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $grad `offsets` `=` $offsets (`strides` `=` $strides^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Constants and casts
//===----------------------------------------------------------------------===//

def TG_ConstantOp : TG_Op<"constant", [
    ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let description = [{
    A tensor whose value is an elements attribute of the result type.

    ```mlir
    %c = tg.constant dense<1.0> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def TG_CastOp : TG_Op<"cast", [
    Pure, DeclareOpInterfaceMethods<CastOpInterface>, TG_Differentiable]> {
  let summary = "converts the element type of a tensor";
  let description = [{
    Converts each element to the result's element type; the shape does not
    change. Floating-point conversions round to nearest even; integer
    conversions sign-extend or truncate.

    `tg.cast` folds an identity cast, and a round trip `T -> U -> T` where
    every value of `T` is exact in `U` (`f16 -> f32 -> f16`); it never folds
    a lossy round trip such as `f32 -> f16 -> f32`. A cast of a constant
    folds to the converted constant.

    ```mlir
    %h = tg.cast %x : tensor<4x8xf32> to tensor<4x8xf16>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def TG_SoftmaxCrossEntropyOp
    : TG_ComputeOp<"softmax_cross_entropy", "Deny", [
        TG_IndependentResultStorage, TG_FullPrecisionDataOperands,
        TG_Differentiable]> {
  let summary = "softmax cross-entropy with integer labels, mean over batch";
  let description = [{
    With `logits : [..., C]` and integer `labels : [...]` (one class per
    position), returns the mean of `-log_softmax(logits)[label]` over the
    positions whose label lies in `[0, C)`, as a rank-0 tensor. A label
    outside that range marks an ignored position (Hugging Face and PyTorch
    use -100): it adds nothing to the sum and is not counted in the mean,
    so padding never dilutes the loss. With every position ignored the loss
    is 0. The result's element type may differ from the logits' (a loss in
    f32 from f16 logits).

    ```mlir
    %loss = tg.softmax_cross_entropy %logits, %labels compute(f32)
        : (tensor<32x10xf16>, tensor<32xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$logits, TG_IntTensor:$labels,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatScalar:$loss);
  let assemblyFormat = [{
    $logits `,` $labels (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_MseLossOp : TG_ComputeOp<"mse_loss", "Deny", [
    AllShapesMatch<["prediction", "target"]>, TG_IndependentResultStorage,
    TG_FullPrecisionDataOperands, TG_Differentiable]> {
  let summary = "mean squared error";
  let description = [{
    Returns `mean((prediction - target)^2)` over all elements as a rank-0
    tensor.

    ```mlir
    %loss = tg.mse_loss %y, %t : (tensor<32x4xf32>, tensor<32x4xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$prediction, TG_FloatTensor:$target,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatScalar:$loss);
  let assemblyFormat = [{
    $prediction `,` $target (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

def TG_ReluGradOp : TG_ActivationGradOp<"relu_grad", "Clear", "input",
                                        "dy * (x > 0 ? 1 : 0)">;
def TG_TanhGradOp : TG_ActivationGradOp<"tanh_grad", "Infer", "output",
                                        "dy * (1 - y * y)">;
def TG_SigmoidGradOp : TG_ActivationGradOp<"sigmoid_grad", "Infer", "output",
                                           "dy * y * (1 - y)">;

def TG_GeluGradOp : TG_ComputeOp<"gelu_grad", "Infer",
                                 [SameOperandsAndResultType]> {
  let summary = "gradient of gelu";
  let description = [{
    Given `dy` and the forward input `x`, computes `dy * gelu'(x)`, for the
    exact or (`tanh_approx`) approximate form, matching `tg.gelu`.

    ```mlir
    %dx = tg.gelu_grad %dy, %x : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$saved,
                       UnitAttr:$tanh_approx,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $saved (`tanh_approx` $tanh_approx^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:` type($result)
  }];
}

def TG_SoftmaxGradOp
    : TG_AxisGradOp<"softmax_grad", "y * (dy - sum(dy * y))">;
def TG_LogSoftmaxGradOp
    : TG_AxisGradOp<"log_softmax_grad", "dy - exp(y) * sum(dy)">;

def TG_LayerNormGradOp : TG_ComputeOp<"layer_norm_grad", "Deny", [
    TG_InferShape, AllShapesMatch<["grad", "input"]>,
    AllTypesMatch<["mean", "rstd"]>, TG_IndependentResultStorage],
    ["getOperandRole"]> {
  let summary = "gradient of layer_norm";
  let description = [{
    Given the output gradient `dy`, the forward `input`, `scale`, and the
    `mean` and `rstd` saved by `tg.layer_norm`, returns the gradients of the
    input, the scale and the bias. Shapes follow `tg.layer_norm` with the
    same `axis`; every operand and result may have its own storage type.

    ```mlir
    %dx, %dg, %db = tg.layer_norm_grad %dy, %x, %g, %mean, %rstd axis = 1
        : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>,
           tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$scale, TG_FloatTensor:$mean,
                       TG_FloatTensor:$rstd, TG_NonNegI64Attr:$axis,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$scale_grad,
                      TG_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $scale `,` $mean `,` $rstd `axis` `=` $axis
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def TG_SoftmaxCrossEntropyGradOp
    : TG_ComputeOp<"softmax_cross_entropy_grad", "Deny", [
        AllShapesMatch<["logits", "result"]>, TG_IndependentResultStorage,
        TG_FullPrecisionDataOperands,
        DeclareOpInterfaceMethods<TG_LossGradientOpInterface>],
    ["getOperandRole"]> {
  let summary = "gradient of softmax_cross_entropy with respect to logits";
  let description = [{
    Given the loss gradient `dloss` (rank 0, the seed of the backward pass),
    returns `dloss * (softmax(logits) - onehot(labels)) / N` where `N` is
    the number of positions with a label in `[0, C)`; ignored positions (a
    label outside that range) get a zero gradient.

    ```mlir
    %dlogits = tg.softmax_cross_entropy_grad %seed, %logits, %labels
        : (tensor<f32>, tensor<32x10xf32>, tensor<32xi32>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins TG_FloatScalar:$loss_grad, TG_FloatTensor:$logits,
                       TG_IntTensor:$labels,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $loss_grad `,` $logits `,` $labels (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_MseLossGradOp : TG_ComputeOp<"mse_loss_grad", "Deny", [
    AllShapesMatch<["prediction", "target", "result"]>,
    TG_IndependentResultStorage, TG_FullPrecisionDataOperands,
    DeclareOpInterfaceMethods<TG_LossGradientOpInterface>]> {
  let summary = "gradient of mse_loss with respect to the prediction";
  let description = [{
    Returns `dloss * 2 * (prediction - target) / numel`.

    ```mlir
    %dy = tg.mse_loss_grad %seed, %y, %t
        : (tensor<f32>, tensor<32x4xf32>, tensor<32x4xf32>) -> tensor<32x4xf32>
    ```
  }];
  let arguments = (ins TG_FloatScalar:$loss_grad, TG_FloatTensor:$prediction,
                       TG_FloatTensor:$target,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $loss_grad `,` $prediction `,` $target (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def TG_GatherGradOp : TG_ComputeOp<"gather_grad", "Deny", [
    TG_IndependentResultStorage]> {
  let summary = "gradient of gather: scatter-add of rows";
  let description = [{
    Returns a table of the result's shape `[V, D...]`, zero except that row
    `ids[i]` accumulates `grad[i]` for every position `i` (repeated ids add
    up, in the compute type). `grad` has shape `[I..., D...]` for `ids` of
    shape `[I...]`.

    ```mlir
    %dtable = tg.gather_grad %dy[%ids]
        : (tensor<8x16x64xf32>, tensor<8x16xi32>) -> tensor<1000x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_IntTensor:$ids,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `[` $ids `]` (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def TG_SgdUpdateOp : TG_ComputeOp<"sgd_update", "Deny", [
    AttrSizedOperandSegments, AllTypesMatch<["param", "new_param"]>,
    TG_FullPrecisionDataOperands,
    DeclareOpInterfaceMethods<TG_OptimizerOpInterface>],
    ["getOperandRole", "isDataResult"]> {
  let summary = "stochastic gradient descent update, optionally with momentum";
  let description = [{
    Returns the updated parameter (and momentum buffer), following
    `torch.optim.SGD`: with `g = grad + weight_decay * param`,

    * without momentum: `param' = param - lr * g`;
    * with `momentum = mu > 0` and buffer `b`: `b' = mu * b + g` and
      `param' = param - lr * b'` (or `param - lr * (g + mu * b')` with
      `nesterov`).

    `lr` is required; `momentum` and `weight_decay` default to 0 and
    `nesterov` to off, as in `torch.optim.SGD`. The `momentum_buffer`
    operand and result are present exactly when `mu` is non-zero. When the optional `skip_if` predicate is true the results
    are bit-identical copies of the inputs: the update is skipped on the
    device, with no host round trip (loss scaling uses this on overflow).

    ```mlir
    %w1, %b1 = tg.sgd_update %w, %g momentum_buffer(%b) skip_if(%found_inf)
        {lr = 0.1 : f32, momentum = 0.9 : f32}
        : (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<i1>)
        -> (tensor<64x32xf32>, tensor<64x32xf32>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       Optional<TG_FloatTensor>:$momentum_buffer,
                       Optional<TG_Predicate>:$skip_if,
                       F32Attr:$lr,
                       DefaultValuedAttr<F32Attr, "0.0f">:$momentum,
                       DefaultValuedAttr<F32Attr, "0.0f">:$weight_decay,
                       UnitAttr:$nesterov,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$new_param,
                      Optional<TG_FloatTensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad (`momentum_buffer` `(` $momentum_buffer^ `)`)?
    (`skip_if` `(` $skip_if^ `)`)? (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AdamUpdateOp : TG_ComputeOp<"adam_update", "Deny", [
    AllTypesMatch<["param", "new_param"]>,
    AllTypesMatch<["first_moment", "second_moment", "new_first_moment",
                   "new_second_moment"]>,
    AllTypesMatch<["step", "new_step"]>, TG_FullPrecisionDataOperands,
    DeclareOpInterfaceMethods<TG_OptimizerOpInterface>],
    ["getOperandRole", "isDataResult"]> {
  let summary = "Adam update, optionally with decoupled weight decay (AdamW)";
  let description = [{
    Follows `torch.optim.Adam` / `AdamW`. `step` is this parameter's count
    of applied updates; with `t = step + 1`:

    ```
    m' = beta1 * m + (1 - beta1) * g
    v' = beta2 * v + (1 - beta2) * g^2
    param' = param * (1 - lr * weight_decay)
             - lr * (m' / (1 - beta1^t)) / (sqrt(v' / (1 - beta2^t)) + epsilon)
    step' = t
    ```

    `lr` is required; the others default to `torch.optim.Adam`'s values:
    `beta1 = 0.9`, `beta2 = 0.999`, `epsilon = 1e-8`, `weight_decay = 0`.
    A non-zero `weight_decay` is decoupled (AdamW). When the optional
    `skip_if` predicate is true, every result is a bit-identical copy of the
    corresponding input, the step counter included.

    ```mlir
    %w1, %m1, %v1, %t1 = tg.adam_update %w, %g, %m, %v, %t
        {lr = 1.0e-03 : f32}
        : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
           tensor<i64>)
        -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<i64>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_FloatTensor:$first_moment,
                       TG_FloatTensor:$second_moment,
                       TG_CounterScalar:$step,
                       Optional<TG_Predicate>:$skip_if,
                       F32Attr:$lr,
                       DefaultValuedAttr<F32Attr, "0.9f">:$beta1,
                       DefaultValuedAttr<F32Attr, "0.999f">:$beta2,
                       DefaultValuedAttr<F32Attr, "1.0e-8f">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.0f">:$weight_decay,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$new_param,
                      TG_FloatTensor:$new_first_moment,
                      TG_FloatTensor:$new_second_moment,
                      TG_CounterScalar:$new_step);
  let assemblyFormat = [{
    $param `,` $grad `,` $first_moment `,` $second_moment `,` $step
    (`skip_if` `(` $skip_if^ `)`)? (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

def TG_SeedOp : TG_Op<"seed", [
    Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<TG_LossGradientOpInterface>]> {
  let summary = "the seed of the backward pass";
  let description = [{
    Returns its input: the gradient of the loss with respect to itself (a
    constant 1 of the loss's type). It marks where the backward pass starts
    when the loss is not computed by a loss op whose gradient takes the seed
    (`tg.softmax_cross_entropy`, `tg.mse_loss`), for example a loss written
    as `reduce_mean(square(...))`, so that `tg-insert-loss-scaling` scales
    exactly there. `tg-make-train-step` emits it for such losses. It has no
    folder on purpose: canonicalisation before loss scaling must keep it.

    ```mlir
    %one = tg.constant dense<1.0> : tensor<f32>
    %seed = tg.seed %one : tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatScalar:$input);
  let results = (outs TG_FloatScalar:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def TG_ApplyLossScaleOp : TG_ComputeOp<"apply_loss_scale", "Deny", [
    AllTypesMatch<["input", "result"]>], ["getOperandRole"]> {
  let summary = "multiplies a tensor by the loss scale";
  let description = [{
    Returns `input * scale` with `scale` the rank-0 f32 loss scale. The
    loss-scaling pass applies it to the seed of the backward pass, so every
    gradient carries the scale.

    ```mlir
    %seed = tg.apply_loss_scale %one, %scale : (tensor<f32>, tensor<f32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_F32Scalar:$scale,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def TG_UnscaleGradsOp : TG_ComputeOp<"unscale_grads", "Deny", [],
                                     ["getOperandRole"]> {
  let summary = "unscales gradients and checks them for non-finite values";
  let description = [{
    Multiplies every gradient by `1 / scale` (the reciprocal computed in
    double and rounded to f32, as `torch.amp.GradScaler` does) and returns
    the unscaled gradients together with `found_inf`, true when any element
    of any unscaled gradient is an infinity or a NaN. The check covers all
    gradients at once, so a runtime can do it in one pass over memory.

    ```mlir
    %g0u, %g1u, %found_inf = tg.unscale_grads %g0, %g1 by %scale
        : (tensor<64x32xf32>, tensor<32xf32>, tensor<f32>)
        -> (tensor<64x32xf32>, tensor<32xf32>, tensor<i1>)
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$grads, TG_F32Scalar:$scale,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs Variadic<TG_FloatTensor>:$unscaled,
                      TG_Predicate:$found_inf);
  let assemblyFormat = [{
    $grads `by` $scale (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_UpdateLossScaleOp : TG_ComputeOp<"update_loss_scale", "Deny", [
    AllTypesMatch<["scale", "new_scale"]>,
    AllTypesMatch<["good_steps", "new_good_steps"]>],
    ["getOperandRole", "isDataResult"]> {
  let summary = "dynamic loss-scale update";
  let description = [{
    The update of `torch.amp.GradScaler`: if `found_inf`, the scale is
    multiplied by `backoff_factor` (not below `min_scale`) and the count of
    good steps resets to 0; otherwise the count increases, and when it
    reaches `growth_interval` the scale is multiplied by `growth_factor`
    (only if the result is finite and not above `max_scale`) and the count
    resets. Requires `growth_factor > 1`, `0 < backoff_factor < 1`,
    `growth_interval >= 1` and `0 < min_scale <= max_scale` when given.

    ```mlir
    %s1, %n1 = tg.update_loss_scale %s, %n, %found_inf
        {growth_factor = 2.0 : f32, backoff_factor = 0.5 : f32,
         growth_interval = 2000 : i64}
        : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
    ```
  }];
  let arguments = (ins TG_F32Scalar:$scale, TG_CounterScalar:$good_steps,
                       TG_Predicate:$found_inf,
                       DefaultValuedAttr<F32Attr, "2.0f">:$growth_factor,
                       DefaultValuedAttr<F32Attr, "0.5f">:$backoff_factor,
                       DefaultValuedAttr<I64Attr, "2000">:$growth_interval,
                       OptionalAttr<F32Attr>:$min_scale,
                       OptionalAttr<F32Attr>:$max_scale,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_F32Scalar:$new_scale,
                      TG_CounterScalar:$new_good_steps);
  let assemblyFormat = [{
    $scale `,` $good_steps `,` $found_inf (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Numerics checks
//===----------------------------------------------------------------------===//

/// Rows of range statistics: `tensor<Kx6xf32>`, the layout of
/// `tg.tensor_stats`.
def TG_StatsRows : StaticShapeTensorOf<[F32]>;

def TG_TensorStatsOp : TG_Op<"tensor_stats", [Pure]> {
  let summary = "range and finiteness statistics of a tensor";
  let description = [{
    Returns one row of six f32 numbers about the elements of `input`, as
    they are stored:

    | column | value |
    |---|---|
    | 0 | the smallest element that is not NaN (`+inf` when there is none) |
    | 1 | the largest element that is not NaN (`-inf` when there is none) |
    | 2 | the largest magnitude that is not NaN (`0` when there is none) |
    | 3 | the smallest non-zero magnitude (`+inf` when there is none) |
    | 4 | the number of NaNs |
    | 5 | the number of infinities |

    Columns 0 to 3 are exact (every f16, bf16 and f32 value is an f32
    value; f64 values are rounded); the counts are exact up to 2^24.
    `tg-check-numerics` inserts one after every value it watches, so that a
    step reports how close each value comes to the limits of its storage
    type and where the first infinity or NaN appeared.

    ```mlir
    %stats = tg.tensor_stats %h : tensor<32x128xf16> -> tensor<1x6xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input);
  let results = (outs TG_StatsRows:$stats);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($stats)";
  let hasVerifier = 1;
}

def TG_RecordNonfiniteOp : TG_Op<"record_nonfinite", [
    Pure, AllTypesMatch<["status", "result"]>]> {
  let summary = "records the first op whose results are not finite";
  let description = [{
    Threads the id of the first op (in program order) that produced an
    infinity or a NaN through a step: returns `status` when it is already
    an op id (`>= 0`), else `op_id` when any row of `stats` (rows of
    `tg.tensor_stats`) counts a NaN or an infinity, else `status` (`-1`:
    nothing so far). `tg-check-numerics` starts the chain with
    `tg.constant dense<-1>` and places one after every op it checks, so the
    step computes the answer on the device and returns it as an output.

    ```mlir
    %s1 = tg.record_nonfinite %s0, %stats {op_id = 5 : i64}
        : (tensor<i64>, tensor<1x6xf32>) -> tensor<i64>
    ```
  }];
  let arguments = (ins TG_CounterScalar:$status,
                       Variadic<TG_StatsRows>:$stats,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$op_id);
  let results = (outs TG_CounterScalar:$result);
  let assemblyFormat = [{
    $status `,` $stats attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def TG_AllReduceOp : TG_PrecisionOp<"all_reduce", "Allow", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "sums or averages tensors across the ranks of a data-parallel run";
  let description = [{
    Every rank of a data-parallel run passes its own `inputs` and receives,
    in `results`, their elementwise sum (`sum`) or mean (`mean`) over all
    ranks. One op is one message: the inputs are a bucket that the runtime
    packs into one buffer and reduces with one collective call, so many
    small gradients cost the latency of few messages. Outside a
    data-parallel run (one rank) the results equal the inputs.

    Precision. The storage type of the inputs (all alike) is what travels
    between ranks; the compute type (`compute(f32)` for f16/bf16 data) is
    what partial sums are added in. Each transfer rounds a partial sum to
    the storage type, so an f16 reduction over `N` ranks rounds up to
    `N - 1` times. `mean` divides every contribution by the number of ranks
    (in the compute type) before it is sent, so a mean cannot overflow
    where no contribution does. It is on the allow list: under mixed
    precision the gradients are communicated in the low type (half the
    bytes), as PyTorch DDP's `fp16_compress_hook`/`bf16_compress_hook` do;
    putting `all_reduce` on the deny list of a policy keeps them in f32.

    It is not `Pure`: every rank must issue the same collectives in the same
    order, so none may be removed, merged or moved across another.
    `tg-data-parallel` inserts it between the backward pass and the
    optimizer updates.

    ```mlir
    %g0r, %g1r = tg.all_reduce mean %g0, %g1 compute(f32)
        : (tensor<64x32xf16>, tensor<32xf16>)
        -> (tensor<64x32xf16>, tensor<32xf16>)
    ```
  }];
  let arguments = (ins TG_CollectiveReduction:$reduction,
                       Variadic<TG_FloatTensor>:$inputs,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat = [{
    $reduction $inputs (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

include "mp/Dialect/TG/IR/TGConvOps.td"

#endif // MP_DIALECT_TG_IR_TGOPS_TD
