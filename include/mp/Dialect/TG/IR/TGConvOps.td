//===- TGConvOps.td - convolution, pooling and batch norm --*- tablegen -*-===//
//
// The ops of convolutional networks, included by TGOps.td. Activations are
// rank-4, NCHW, or NHWC with `channels_last`; filters are always
// [out channels, in channels / groups, kernel height, kernel width], as in
// ONNX and PyTorch. `padding` is [top, left, bottom, right].
//
// Precision: convolutions and their gradients are on the allow list (they
// are matmuls, accumulating in the compute type); batch norm is on the deny
// list for its arithmetic but, like layer_norm, reads and writes
// activations in any storage type with f32 statistics and parameters; max
// pooling is clear (a maximum is exact in any type); average pooling is on
// the infer list (a sum of a few window elements, as Grappler's and
// autocast's lists treat it); a global average pool is tg.reduce_mean over
// the spatial axes, a reduction, denied.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_IR_TGCONVOPS_TD
#define MP_DIALECT_TG_IR_TGCONVOPS_TD

def TG_Pair : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>]>;
def TG_Padding : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<4>]>;

/// The geometry attributes of a convolution and its gradients.
defvar TG_ConvGeometry = (ins TG_Pair:$strides, TG_Padding:$padding,
                              TG_Pair:$dilations,
                              ConfinedAttr<I64Attr, [IntPositive]>:$groups,
                              UnitAttr:$channels_last);

def TG_Conv2dOp : TG_ComputeOp<"conv2d", "Allow", [
    TG_InferShape, AllElementTypesMatch<["input", "filter"]>,
    TG_IndependentResultStorage, TG_SameDataOperandStorage,
    TG_Differentiable]> {
  let summary = "2-D convolution (cross-correlation)";
  let description = [{
    `input : [N, C, H, W]` (or `[N, H, W, C]` with `channels_last`) and
    `filter : [O, C / groups, KH, KW]` give `[N, O, OH, OW]` (or
    `[N, OH, OW, O]`), with `OH = (H + top + bottom - (KH - 1) * dh - 1) /
    sh + 1` (rounded down) and likewise OW. `groups` divides C and O
    (`groups = C` with `O = C` is a depthwise convolution). Products are
    accumulated in the compute type; input and filter share one storage
    type and the result may have another, as for `tg.matmul`. A bias is a
    following `tg.add` of a `[O, 1, 1]` (or `[O]`) tensor.

    ```mlir
    %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1]
        dilations = [1, 1] groups = 1 compute(f32)
        : (tensor<8x16x32x32xf16>, tensor<32x16x3x3xf16>) -> tensor<8x32x32x32xf16>
    ```
  }];
  let arguments = !con((ins TG_FloatTensor:$input, TG_FloatTensor:$filter),
                       TG_ConvGeometry,
                       (ins OptionalAttr<TG_ComputeTypeAttr>:$compute));
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter 
    `strides` `=` $strides `padding` `=` $padding `dilations` `=` $dilations
    `groups` `=` $groups (`channels_last` $channels_last^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def TG_Conv2dGradInputOp : TG_ComputeOp<"conv2d_grad_input", "Allow", [
    AllElementTypesMatch<["grad", "filter"]>, TG_IndependentResultStorage,
    TG_SameDataOperandStorage]> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    The transposed convolution of the output gradient `grad` with `filter`:
    the gradient of the `tg.conv2d` of the same geometry with respect to
    its input, whose shape is the result type's. Accumulates in the compute
    type.
  }];
  let arguments = !con((ins TG_FloatTensor:$grad, TG_FloatTensor:$filter),
                       TG_ConvGeometry,
                       (ins OptionalAttr<TG_ComputeTypeAttr>:$compute));
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $filter 
    `strides` `=` $strides `padding` `=` $padding `dilations` `=` $dilations
    `groups` `=` $groups (`channels_last` $channels_last^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_Conv2dGradFilterOp : TG_ComputeOp<"conv2d_grad_filter", "Allow", [
    AllElementTypesMatch<["grad", "input"]>, TG_IndependentResultStorage,
    TG_SameDataOperandStorage]> {
  let summary = "gradient of conv2d with respect to its filter";
  let description = [{
    The correlation of the forward `input` with the output gradient `grad`:
    the gradient of the `tg.conv2d` of the same geometry with respect to its
    filter, whose shape is the result type's. Accumulates in the compute
    type (over the batch and every output position).
  }];
  let arguments = !con((ins TG_FloatTensor:$grad, TG_FloatTensor:$input),
                       TG_ConvGeometry,
                       (ins OptionalAttr<TG_ComputeTypeAttr>:$compute));
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input 
    `strides` `=` $strides `padding` `=` $padding `dilations` `=` $dilations
    `groups` `=` $groups (`channels_last` $channels_last^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

defvar TG_PoolGeometry = (ins TG_Pair:$window, TG_Pair:$strides,
                              TG_Padding:$padding, UnitAttr:$channels_last);

def TG_MaxPool2dOp : TG_ComputeOp<"max_pool2d", "Clear", [
    TG_InferShape, SameOperandsAndResultElementType, TG_Differentiable]> {
  let summary = "2-D max pooling";
  let description = [{
    The maximum of each `window` (padding counts as -infinity) of a rank-4
    activation, at `strides`: `OH = (H + top + bottom - KH) / sh + 1`.
    Exact in every storage type.
  }];
  let arguments = !con((ins TG_FloatTensor:$input), TG_PoolGeometry,
                       (ins OptionalAttr<TG_ComputeTypeAttr>:$compute));
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input 
    `window` `=` $window `strides` `=` $strides `padding` `=` $padding
    (`channels_last` $channels_last^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def TG_AvgPool2dOp : TG_ComputeOp<"avg_pool2d", "Infer", [
    TG_InferShape, SameOperandsAndResultElementType, TG_Differentiable,
    TG_AccumulatesTerms]> {
  let summary = "2-D average pooling";
  let description = [{
    The mean of each `window` of a rank-4 activation, at `strides`. Padded
    positions count in the divisor with `count_include_pad` (PyTorch's
    default), else not (ONNX's). Sums in the compute type, which is f32
    when the storage is low (`AccumulatesTerms`).
  }];
  let arguments = !con((ins TG_FloatTensor:$input), TG_PoolGeometry,
                       (ins UnitAttr:$count_include_pad,
                            OptionalAttr<TG_ComputeTypeAttr>:$compute));
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input 
    `window` `=` $window `strides` `=` $strides `padding` `=` $padding
    (`channels_last` $channels_last^)?
    (`count_include_pad` $count_include_pad^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def TG_MaxPool2dGradOp : TG_ComputeOp<"max_pool2d_grad", "Clear", [
    AllTypesMatch<["input", "result"]>,
    AllElementTypesMatch<["grad", "input"]>, TG_AccumulatesTerms]> {
  let summary = "gradient of max_pool2d";
  let description = [{
    Routes each window's output gradient to the window's maximum in the
    forward `input` (the first one, in row-major window order, on ties).
    Where windows overlap, an input position sums the gradients of every
    window it is the maximum of, in the compute type (f32 when the storage
    is low).
  }];
  let arguments = !con((ins TG_FloatTensor:$grad, TG_FloatTensor:$input),
                       TG_PoolGeometry,
                       (ins OptionalAttr<TG_ComputeTypeAttr>:$compute));
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input 
    `window` `=` $window `strides` `=` $strides `padding` `=` $padding
    (`channels_last` $channels_last^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AvgPool2dGradOp : TG_ComputeOp<"avg_pool2d_grad", "Infer", [
    SameOperandsAndResultElementType, TG_AccumulatesTerms]> {
  let summary = "gradient of avg_pool2d";
  let description = [{
    Spreads each window's output gradient evenly over the window's input
    positions (with the forward op's divisor), summing where windows
    overlap in the compute type (f32 when the storage is low); the result
    type gives the input's shape.
  }];
  let arguments = !con((ins TG_FloatTensor:$grad), TG_PoolGeometry,
                       (ins UnitAttr:$count_include_pad,
                            OptionalAttr<TG_ComputeTypeAttr>:$compute));
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad 
    `window` `=` $window `strides` `=` $strides `padding` `=` $padding
    (`channels_last` $channels_last^)?
    (`count_include_pad` $count_include_pad^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Batch normalisation
//===----------------------------------------------------------------------===//

def TG_BatchNormOp : TG_ComputeOp<"batch_norm", "Deny", [
    AllShapesMatch<["input", "result"]>,
    AllTypesMatch<["scale", "bias"]>,
    AllTypesMatch<["running_mean", "running_var", "new_running_mean",
                   "new_running_var"]>,
    AllTypesMatch<["mean", "rstd"]>, TG_IndependentResultStorage,
    DeclareOpInterfaceMethods<TG_DifferentiableOpInterface,
                              ["isDifferentiableResult"]>],
    ["getOperandRole", "isDataResult"]> {
  let summary = "batch normalisation in training, with running statistics";
  let description = [{
    Normalises a rank-4 activation per channel (axis 1, or 3 with
    `channels_last`) with the statistics of the batch:
    `y = (x - mean) * rstd * scale + bias`, `rstd = 1 / sqrt(var + epsilon)`
    (biased variance over N, H and W). Returns `mean` and `rstd` for the
    backward pass and the running statistics updated with `momentum`, the
    weight of the batch (PyTorch's convention):
    `new_running_mean = (1 - momentum) * running_mean + momentum * mean` and
    likewise the running variance with the unbiased batch variance.
    Parameters and statistics are `[C]` in their own storage type (f32
    under mixed precision); the activation may be f16 or bf16.

    ```mlir
    %y, %mean, %rstd, %rm, %rv = tg.batch_norm %x, %g, %b, %m, %v
        epsilon = 1.0e-05 momentum = 1.0e-01 compute(f32)
        : (tensor<8x16x32x32xf16>, tensor<16xf32>, tensor<16xf32>,
           tensor<16xf32>, tensor<16xf32>)
        -> (tensor<8x16x32x32xf16>, tensor<16xf32>, tensor<16xf32>,
            tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$scale,
                       TG_FloatTensor:$bias, TG_FloatTensor:$running_mean,
                       TG_FloatTensor:$running_var,
                       TG_PositiveF32Attr:$epsilon, F32Attr:$momentum,
                       UnitAttr:$channels_last,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result, TG_FloatTensor:$mean,
                      TG_FloatTensor:$rstd, TG_FloatTensor:$new_running_mean,
                      TG_FloatTensor:$new_running_var);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $running_mean `,` $running_var
    `epsilon` `=` $epsilon `momentum` `=` $momentum
    (`channels_last` $channels_last^)? (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_BatchNormInferenceOp : TG_ComputeOp<"batch_norm_inference", "Deny", [
    AllShapesMatch<["input", "result"]>, AllTypesMatch<["scale", "bias"]>,
    AllTypesMatch<["mean", "variance"]>, TG_IndependentResultStorage,
    TG_Differentiable],
    ["getOperandRole"]> {
  let summary = "batch normalisation with given statistics";
  let description = [{
    `y = (x - mean) / sqrt(variance + epsilon) * scale + bias` per channel,
    with the running statistics of a trained model (evaluation, or a
    frozen normalisation while fine-tuning).
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$scale,
                       TG_FloatTensor:$bias, TG_FloatTensor:$mean,
                       TG_FloatTensor:$variance, TG_PositiveF32Attr:$epsilon,
                       UnitAttr:$channels_last,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance
    `epsilon` `=` $epsilon (`channels_last` $channels_last^)?
    (`compute` `(` $compute^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_BatchNormGradOp : TG_ComputeOp<"batch_norm_grad", "Deny", [
    AllShapesMatch<["grad", "input", "input_grad"]>,
    AllTypesMatch<["mean", "rstd"]>, TG_IndependentResultStorage],
    ["getOperandRole"]> {
  let summary = "gradient of batch_norm (training)";
  let description = [{
    Given the output gradient, the forward input, the scale, and the `mean`
    and `rstd` saved by `tg.batch_norm`, returns the gradients of the
    input, the scale and the bias, each in its own storage type (as for
    `tg.layer_norm_grad`: an optimizer pinned to f16 may read one of them in
    f16).
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$scale, TG_FloatTensor:$mean,
                       TG_FloatTensor:$rstd, UnitAttr:$channels_last,
                       OptionalAttr<TG_ComputeTypeAttr>:$compute);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$scale_grad,
                      TG_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $scale `,` $mean `,` $rstd
    (`channels_last` $channels_last^)? (`compute` `(` $compute^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MP_DIALECT_TG_IR_TGCONVOPS_TD
