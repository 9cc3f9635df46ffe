//===- TGConvOps.cpp - convolution, pooling and batch norm ----------------===//
//
// Shape inference and verifiers of the ops in TGConvOps.td. One function
// computes the output size of a window sweep; the forward ops infer their
// result types from it and the gradients check theirs against it.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mp::tg;

namespace {

/// A rank-4 activation seen as N, C, H, W whatever its layout.
struct Activation {
  int64_t n, c, h, w;
};

FailureOr<Activation> activation(std::optional<Location> loc, Type type,
                                 bool channelsLast, StringRef what) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || t.getRank() != 4)
    return emitOptionalError(loc, what, " must be a rank-4 tensor, got ",
                             type);
  ArrayRef<int64_t> s = t.getShape();
  return channelsLast ? Activation{s[0], s[3], s[1], s[2]}
                      : Activation{s[0], s[1], s[2], s[3]};
}

SmallVector<int64_t> layoutShape(const Activation &a, bool channelsLast) {
  if (channelsLast)
    return {a.n, a.h, a.w, a.c};
  return {a.n, a.c, a.h, a.w};
}

/// The number of window positions along one axis, or failure.
FailureOr<int64_t> sweep(std::optional<Location> loc, int64_t size,
                         int64_t before, int64_t after, int64_t window,
                         int64_t stride, int64_t dilation, StringRef axis) {
  if (stride < 1 || dilation < 1 || window < 1 || before < 0 || after < 0)
    return emitOptionalError(loc, "strides, dilations and the window must be "
                                  "positive and the padding non-negative");
  int64_t extent = (window - 1) * dilation + 1;
  int64_t padded = size + before + after;
  if (padded < extent)
    return emitOptionalError(loc, "the window (", extent, ") does not fit in ",
                             axis, " (", size, " plus padding ",
                             before + after, ")");
  return (padded - extent) / stride + 1;
}

/// The output activation of a convolution.
FailureOr<Activation> convOutput(std::optional<Location> loc, Type inputType,
                                 Type filterType, ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations, int64_t groups,
                                 bool channelsLast) {
  auto in = activation(loc, inputType, channelsLast, "input");
  if (failed(in))
    return failure();
  auto filter = dyn_cast<RankedTensorType>(filterType);
  if (!filter || filter.getRank() != 4)
    return emitOptionalError(loc, "filter must be a rank-4 tensor "
                                  "[O, C / groups, KH, KW], got ",
                             filterType);
  ArrayRef<int64_t> f = filter.getShape();
  if (in->c % groups != 0 || f[0] % groups != 0)
    return emitOptionalError(loc, "groups = ", groups,
                             " must divide the input channels (", in->c,
                             ") and the output channels (", f[0], ")");
  if (f[1] * groups != in->c)
    return emitOptionalError(loc, "filter ", shapeStr(f), " expects ",
                             f[1] * groups, " input channels with groups = ",
                             groups, ", the input has ", in->c);
  auto oh = sweep(loc, in->h, padding[0], padding[2], f[2], strides[0],
                  dilations[0], "the height");
  auto ow = sweep(loc, in->w, padding[1], padding[3], f[3], strides[1],
                  dilations[1], "the width");
  if (failed(oh) || failed(ow))
    return failure();
  return Activation{in->n, f[0], *oh, *ow};
}

FailureOr<Activation> poolOutput(std::optional<Location> loc, Type inputType,
                                 ArrayRef<int64_t> window,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding, bool channelsLast) {
  auto in = activation(loc, inputType, channelsLast, "input");
  if (failed(in))
    return failure();
  if (padding[0] >= window[0] || padding[2] >= window[0] ||
      padding[1] >= window[1] || padding[3] >= window[1])
    return emitOptionalError(loc, "padding must be smaller than the window");
  auto oh = sweep(loc, in->h, padding[0], padding[2], window[0], strides[0], 1,
                  "the height");
  auto ow = sweep(loc, in->w, padding[1], padding[3], window[1], strides[1], 1,
                  "the width");
  if (failed(oh) || failed(ow))
    return failure();
  return Activation{in->n, in->c, *oh, *ow};
}

/// Checks that `actual` is the shape `expected` describes.
LogicalResult expectShape(Operation *op, Type actual, const Activation &a,
                          bool channelsLast, StringRef what) {
  SmallVector<int64_t> shape = layoutShape(a, channelsLast);
  if (cast<RankedTensorType>(actual).getShape() != ArrayRef<int64_t>(shape))
    return op->emitOpError() << what << " must have shape "
                             << shapeStr(shape) << ", got " << actual;
  return success();
}

/// Checks a per-channel tensor ([C]).
LogicalResult expectChannels(Operation *op, Value v, int64_t channels,
                             StringRef what) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() != 1 || t.getDimSize(0) != channels)
    return op->emitOpError() << what << " must have shape [" << channels
                             << "] (one value per channel), got " << t;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &out) {
  bool last = adaptor.getChannelsLast();
  auto result = convOutput(loc, adaptor.getInput().getType(),
                           adaptor.getFilter().getType(), adaptor.getStrides(),
                           adaptor.getPadding(), adaptor.getDilations(),
                           adaptor.getGroups(), last);
  if (failed(result))
    return failure();
  out.push_back(RankedTensorType::get(
      layoutShape(*result, last),
      cast<RankedTensorType>(adaptor.getInput().getType()).getElementType()));
  return success();
}

bool Conv2dOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return haveSameShapes(l, r);
}

LogicalResult Conv2dGradInputOp::verify() {
  auto out = convOutput(getLoc(), getResult().getType(),
                        getFilter().getType(), getStrides(), getPadding(),
                        getDilations(), getGroups(), getChannelsLast());
  if (failed(out))
    return failure();
  return expectShape(*this, getGrad().getType(), *out, getChannelsLast(),
                     "grad (the forward result)");
}

LogicalResult Conv2dGradFilterOp::verify() {
  auto out = convOutput(getLoc(), getInput().getType(), getResult().getType(),
                        getStrides(), getPadding(), getDilations(),
                        getGroups(), getChannelsLast());
  if (failed(out))
    return failure();
  return expectShape(*this, getGrad().getType(), *out, getChannelsLast(),
                     "grad (the forward result)");
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

template <typename Op>
static LogicalResult inferPool(std::optional<Location> loc,
                               typename Op::Adaptor adaptor,
                               SmallVectorImpl<Type> &out) {
  bool last = adaptor.getChannelsLast();
  auto result =
      poolOutput(loc, adaptor.getInput().getType(), adaptor.getWindow(),
                 adaptor.getStrides(), adaptor.getPadding(), last);
  if (failed(result))
    return failure();
  out.push_back(RankedTensorType::get(
      layoutShape(*result, last),
      cast<RankedTensorType>(adaptor.getInput().getType()).getElementType()));
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &out) {
  return inferPool<MaxPool2dOp>(loc, adaptor, out);
}

bool MaxPool2dOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return l == r;
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &out) {
  return inferPool<AvgPool2dOp>(loc, adaptor, out);
}

bool AvgPool2dOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return l == r;
}

template <typename Op> static LogicalResult verifyPoolGrad(Op op) {
  auto out = poolOutput(op.getLoc(), op.getResult().getType(), op.getWindow(),
                        op.getStrides(), op.getPadding(),
                        op.getChannelsLast());
  if (failed(out))
    return failure();
  return expectShape(op, op.getGrad().getType(), *out, op.getChannelsLast(),
                     "grad (the forward result)");
}

LogicalResult MaxPool2dGradOp::verify() { return verifyPoolGrad(*this); }
LogicalResult AvgPool2dGradOp::verify() { return verifyPoolGrad(*this); }

//===----------------------------------------------------------------------===//
// Batch normalisation
//===----------------------------------------------------------------------===//

/// The channel count of a batch norm's activation, after checking the
/// per-channel operands.
static FailureOr<int64_t> checkBatchNorm(Operation *op, Value input,
                                         bool channelsLast,
                                         ArrayRef<std::pair<Value, StringRef>>
                                             perChannel) {
  auto a = activation(op->getLoc(), input.getType(), channelsLast, "input");
  if (failed(a))
    return failure();
  for (auto [v, what] : perChannel)
    if (failed(expectChannels(op, v, a->c, what)))
      return failure();
  return a->c;
}

LogicalResult BatchNormOp::verify() {
  if (getMomentum().isNegative() || getMomentum() > APFloat(1.0f))
    return emitOpError() << "momentum must be in [0, 1]";
  return checkBatchNorm(*this, getInput(), getChannelsLast(),
                        {{getScale(), "scale"},
                         {getRunningMean(), "running_mean"},
                         {getMean(), "mean"}});
}

bool BatchNormOp::isDataResult(unsigned index) { return index == 0; }

OperandRole BatchNormOp::getOperandRole(unsigned index) {
  return index == 0 ? OperandRole::Data : OperandRole::Parameter;
}

bool BatchNormOp::isDifferentiableResult(unsigned index) {
  // The batch statistics and running statistics are not values a loss
  // depends on through the parameters.
  return index == 0;
}

LogicalResult BatchNormInferenceOp::verify() {
  return checkBatchNorm(*this, getInput(), getChannelsLast(),
                        {{getScale(), "scale"}, {getMean(), "mean"}});
}

OperandRole BatchNormInferenceOp::getOperandRole(unsigned index) {
  return index == 0 ? OperandRole::Data : OperandRole::Parameter;
}

LogicalResult BatchNormGradOp::verify() {
  return checkBatchNorm(*this, getInput(), getChannelsLast(),
                        {{getScale(), "scale"},
                         {getMean(), "mean"},
                         {getScaleGrad(), "scale_grad"},
                         {getBiasGrad(), "bias_grad"}});
}

OperandRole BatchNormGradOp::getOperandRole(unsigned index) {
  return index < 2 ? OperandRole::Data : OperandRole::Parameter;
}
