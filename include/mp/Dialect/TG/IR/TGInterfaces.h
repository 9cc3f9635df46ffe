//===- TGInterfaces.h - precision interface of tg ---------------*- C++ -*-===//
//
// The precision interface (list class, compute type, operand roles) and the
// C++ trait that gives each tg op its default list class.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_IR_TGINTERFACES_H
#define MP_DIALECT_TG_IR_TGINTERFACES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

#include "mp/Dialect/TG/IR/TGEnums.h.inc"

namespace mp::tg {
namespace detail {
/// `recorded` if set, else the storage type of the first floating-point data
/// operand of `op` (first floating-point result if it has none).
mlir::FloatType getComputeTypeOrDefault(mlir::Operation *op,
                                        mlir::TypeAttr recorded);

template <typename OpT>
using HasComputeAttr = decltype(std::declval<OpT &>().getComputeAttr());

/// The `compute` attribute of `op`, through its generated accessor (no
/// attribute-name lookup); null for ops without one.
template <typename OpT>
mlir::TypeAttr getComputeTypeAttr(OpT op) {
  if constexpr (llvm::is_detected<HasComputeAttr, OpT>::value)
    return op.getComputeAttr();
  else
    return {};
}

/// Records `type` as the compute type of `op`; null clears it.
template <typename OpT>
void setComputeTypeAttr(OpT op, mlir::FloatType type) {
  if constexpr (llvm::is_detected<HasComputeAttr, OpT>::value)
    op.setComputeAttr(type ? mlir::TypeAttr::get(type) : mlir::TypeAttr());
}
/// Floating-point operands are data, all others are indices.
OperandRole getDefaultOperandRole(mlir::Operation *op, unsigned index);
/// Fails with a diagnostic when an operand or result of `op` is a tensor of
/// more than `kMaxTensorElements` elements.
llvm::LogicalResult verifyBoundedTensorSizes(mlir::Operation *op);
} // namespace detail

/// The largest number of elements a tg tensor may hold (2^48).
constexpr int64_t kMaxTensorElements = int64_t(1) << 48;

namespace OpTrait {
/// Gives an op its default list class for automatic mixed precision.
template <PrecisionClass Class>
struct DefaultPrecisionClass {
  template <typename ConcreteOp>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteOp, Impl> {
  public:
    static constexpr PrecisionClass kDefaultPrecisionClass = Class;
  };
};

/// Marks ops whose results may be stored in another floating-point type than
/// their data operands.
template <typename ConcreteOp>
class IndependentResultStorage
    : public mlir::OpTrait::TraitBase<ConcreteOp, IndependentResultStorage> {};

/// Marks ops whose data operands must share one storage type even though
/// their results may be stored in another (matmul's lhs and rhs).
template <typename ConcreteOp>
class SameDataOperandStorage
    : public mlir::OpTrait::TraitBase<ConcreteOp, SameDataOperandStorage> {};

/// Marks infer- and clear-list ops whose result elements each sum several
/// terms: in low precision they compute in f32.
template <typename ConcreteOp>
class AccumulatesTerms
    : public mlir::OpTrait::TraitBase<ConcreteOp, AccumulatesTerms> {};

/// Marks ops whose data operands must be read in full precision.
template <typename ConcreteOp>
class FullPrecisionDataOperands
    : public mlir::OpTrait::TraitBase<ConcreteOp, FullPrecisionDataOperands> {
};

/// Bounds the size of every tensor operand and result (see
/// kMaxTensorElements).
template <typename ConcreteOp>
class BoundedTensorSizes
    : public mlir::OpTrait::TraitBase<ConcreteOp, BoundedTensorSizes> {
public:
  static llvm::LogicalResult verifyTrait(mlir::Operation *op) {
    return detail::verifyBoundedTensorSizes(op);
  }
};
} // namespace OpTrait
} // namespace mp::tg

#include "mp/Dialect/TG/IR/TGInterfaces.h.inc"

#endif // MP_DIALECT_TG_IR_TGINTERFACES_H
