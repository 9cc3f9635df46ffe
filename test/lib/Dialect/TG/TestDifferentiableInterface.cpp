//===- TestDifferentiableInterface.cpp - autodiff for another dialect -----===//
//
// Attaches the differentiation interface to `arith.addf`, `arith.mulf` and
// `arith.negf` through external models, the way a user brings ops of
// another dialect into tg-make-train-step: each rule builds its adjoints
// out of the same arith ops (on tensors, which arith accepts elementwise).
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mp::tg;

namespace {

template <typename ConcreteModel, typename OpTy>
struct ArithModel
    : public DifferentiableOpInterface::ExternalModel<ConcreteModel, OpTy> {
  bool isDifferentiableOperand(Operation *op, unsigned index) const {
    return isa<FloatType>(getElementTypeOrSelf(op->getOperand(index)));
  }
  bool isDifferentiableResult(Operation *, unsigned) const { return true; }
};

/// d(l + r) = (dy, dy).
struct AddFModel : ArithModel<AddFModel, arith::AddFOp> {
  LogicalResult buildAdjoints(Operation *, OpBuilder &, ArrayRef<Value> dys,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &out) const {
    out.assign(2, Value());
    for (unsigned k = 0; k < 2; ++k)
      if (wanted[k])
        out[k] = dys[0];
    return success();
  }
};

/// d(l * r) = (dy * r, dy * l).
struct MulFModel : ArithModel<MulFModel, arith::MulFOp> {
  LogicalResult buildAdjoints(Operation *op, OpBuilder &b, ArrayRef<Value> dys,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &out) const {
    out.assign(2, Value());
    for (unsigned k = 0; k < 2; ++k)
      if (wanted[k] && dys[0])
        out[k] = arith::MulFOp::create(b, op->getLoc(), dys[0],
                                       op->getOperand(1 - k));
    return success();
  }
};

/// d(-x) = -dy.
struct NegFModel : ArithModel<NegFModel, arith::NegFOp> {
  LogicalResult buildAdjoints(Operation *op, OpBuilder &b, ArrayRef<Value> dys,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &out) const {
    out.assign(1, Value());
    if (wanted[0] && dys[0])
      out[0] = arith::NegFOp::create(b, op->getLoc(), dys[0]);
    return success();
  }
};

} // namespace

namespace mp::test {
void registerTestDifferentiableInterface(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect>();
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    arith::AddFOp::attachInterface<AddFModel>(*ctx);
    arith::MulFOp::attachInterface<MulFModel>(*ctx);
    arith::NegFOp::attachInterface<NegFModel>(*ctx);
  });
}
} // namespace mp::test
