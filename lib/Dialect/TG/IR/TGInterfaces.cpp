//===- TGInterfaces.cpp - precision interface of tg -----------------------===//
//
// Default behaviour of the precision interface: the compute type lives in
// the op's inherent `compute` attribute and falls back to the storage type of
// the data operands; floating-point operands are data unless an op says
// otherwise.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TGInterfaces.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mp::tg;

#include "mp/Dialect/TG/IR/TGEnums.cpp.inc"
#include "mp/Dialect/TG/IR/TGInterfaces.cpp.inc"

FloatType mp::tg::detail::getComputeTypeOrDefault(Operation *op,
                                                  TypeAttr recorded) {
  if (recorded)
    return dyn_cast<FloatType>(recorded.getValue());
  auto iface = cast<PrecisionOpInterface>(op);
  for (OpOperand &operand : op->getOpOperands())
    if (iface.getOperandRole(operand.getOperandNumber()) == OperandRole::Data)
      if (auto f = dyn_cast<FloatType>(getElementTypeOrSelf(operand.get())))
        return f;
  for (Value result : op->getResults())
    if (auto f = dyn_cast<FloatType>(getElementTypeOrSelf(result)))
      return f;
  return {};
}

OperandRole mp::tg::detail::getDefaultOperandRole(Operation *op,
                                                  unsigned index) {
  Type elem = getElementTypeOrSelf(op->getOperand(index).getType());
  return isa<FloatType>(elem) ? OperandRole::Data : OperandRole::Index;
}

LogicalResult mp::tg::detail::verifyBoundedTensorSizes(Operation *op) {
  auto check = [&](Type type, StringRef what, unsigned index) -> LogicalResult {
    auto shaped = dyn_cast<RankedTensorType>(type);
    if (!shaped || !shaped.hasStaticShape())
      return success();
    // Multiply with an overflow check: dimensions may be as large as int64.
    int64_t n = 1;
    for (int64_t d : shaped.getShape()) {
      if (d != 0 && n > kMaxTensorElements / d)
        return op->emitOpError()
               << what << " #" << index << " of type " << type
               << " has more than 2^48 elements";
      n *= d;
    }
    return success();
  };
  for (auto [i, t] : llvm::enumerate(op->getOperandTypes()))
    if (failed(check(t, "operand", i)))
      return failure();
  for (auto [i, t] : llvm::enumerate(op->getResultTypes()))
    if (failed(check(t, "result", i)))
      return failure();
  return success();
}
