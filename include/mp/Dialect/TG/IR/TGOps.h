//===- TGOps.h - tg dialect operations --------------------------*- C++ -*-===//
//
// The operations of the tg dialect and the shape rules they share.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_IR_TGOPS_H
#define MP_DIALECT_TG_IR_TGOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mp/Dialect/TG/IR/TGDialect.h"
#include "mp/Dialect/TG/IR/TGInterfaces.h"

namespace mp::tg {
/// The numpy broadcast of two shapes, or failure when some pair of aligned
/// dimensions differs and neither is 1.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// Result type of an elementwise binary op: the broadcast shape with the
/// element type of `lhs`.
llvm::LogicalResult inferBroadcastType(std::optional<mlir::Location> loc,
                                       mlir::Type lhs, mlir::Type rhs,
                                       llvm::SmallVectorImpl<mlir::Type> &out);

/// Result type of a reduction of `input` over `axes`.
llvm::LogicalResult inferReduceType(std::optional<mlir::Location> loc,
                                    mlir::RankedTensorType input,
                                    llvm::ArrayRef<int64_t> axes,
                                    bool keepDims,
                                    llvm::SmallVectorImpl<mlir::Type> &out);

/// Whether `lhs` and `rhs` are ranked tensors of pairwise equal shapes (the
/// element types may differ).
bool haveSameShapes(mlir::TypeRange lhs, mlir::TypeRange rhs);

/// Whether transposing a tensor of `shape` by `perm` keeps its elements in
/// memory order, so that the transpose is a reshape: the dimensions larger
/// than 1 keep their order.
bool isReshapeTranspose(llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<int64_t> perm);

/// A shape as `[2, 3, 4]`, for diagnostics.
std::string shapeStr(llvm::ArrayRef<int64_t> dims);

/// Checks that attribute `name` = `axis` lies in [0, rank).
llvm::LogicalResult verifyAxis(mlir::Operation *op, llvm::StringRef name,
                               int64_t axis, int64_t rank);
} // namespace mp::tg

#define GET_OP_CLASSES
#include "mp/Dialect/TG/IR/TGOps.h.inc"

#endif // MP_DIALECT_TG_IR_TGOPS_H
