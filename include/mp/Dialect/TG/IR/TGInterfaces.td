//===- TGInterfaces.td - precision interface of the tg dialect -*- tablegen -*-===//
//
// The precision interface is how the mixed-precision passes see an op: which
// list class it belongs to by default, which precision it computes in, and
// what each operand is. Passes never switch on op names, so ops of other
// dialects take part by attaching an external model.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_IR_TGINTERFACES_TD
#define MP_DIALECT_TG_IR_TGINTERFACES_TD

include "mlir/IR/OpBase.td"

def TG_PrecisionOpInterface : OpInterface<"PrecisionOpInterface"> {
  let cppNamespace = "::mp::tg";
  let description = [{
    An op whose precision the mixed-precision passes may decide.

    * `getDefaultPrecisionClass` names the list the op is on when the user
      has not edited the lists: allow (runs in low precision), infer (follows
      its neighbours), clear (precision-agnostic data movement) or deny (stays
      in f32).
    * `getComputeType` is the floating-point type the op computes and
      accumulates in, or a null type for ops that do no arithmetic.
      `setComputeType` records a decision.
    * `getOperandRole` says whether an operand is data (its storage follows
      the op's precision), a parameter (weights and state, whose storage is
      independent) or an index (integer and boolean operands).
    * `hasIndependentResultStorage` says whether results may be stored in
      another type than the data operands, and
      `isPrecisionSensitiveOperand` whether a data operand must be read in
      full precision (loss inputs, optimizer gradients);
      `hasSameDataOperandStorage` whether such an op's data operands must
      still share one storage type (matmul); `accumulatesTerms` whether an
      op off the allow list still sums several terms per result element,
      and so computes in f32 when its storage is low.
  }];

  let methods = [
    StaticInterfaceMethod<
      "The list class of this op when the user has not edited the lists.",
      "::mp::tg::PrecisionClass", "getDefaultPrecisionClass", (ins), [{}], [{
        return ConcreteOp::kDefaultPrecisionClass;
      }]>,
    StaticInterfaceMethod<
      "Whether the op does floating-point arithmetic (has a compute type).",
      "bool", "hasComputeType", (ins), [{}], [{
        return ::llvm::is_contained(ConcreteOp::getAttributeNames(),
                                    ::llvm::StringRef("compute"));
      }]>,
    InterfaceMethod<
      "The type the op computes and accumulates in; null if it does no "
      "arithmetic.",
      "::mlir::FloatType", "getComputeType", (ins), [{}], [{
        if (!$_op.hasComputeType())
          return {};
        return ::mp::tg::detail::getComputeTypeOrDefault(
            $_op.getOperation(), ::mp::tg::detail::getComputeTypeAttr($_op));
      }]>,
    InterfaceMethod<
      "Records the compute type; a null type clears it (the op then computes "
      "in its storage type).",
      "void", "setComputeType", (ins "::mlir::FloatType":$type), [{}], [{
        ::mp::tg::detail::setComputeTypeAttr($_op, type);
      }]>,
    StaticInterfaceMethod<
      "Whether the op's floating-point results may be stored in another "
      "type than its data operands (a deny-list op that reads f16 and writes "
      "f32, or a matmul writing its f32 accumulators).",
      "bool", "hasIndependentResultStorage", (ins), [{}], [{
        return ConcreteOp::template hasTrait<
            ::mp::tg::OpTrait::IndependentResultStorage>();
      }]>,
    StaticInterfaceMethod<
      "Whether each result element sums several terms (average pooling, "
      "pooling gradients): in low precision the op still computes in f32.",
      "bool", "accumulatesTerms", (ins), [{}], [{
        return ConcreteOp::template hasTrait<
            ::mp::tg::OpTrait::AccumulatesTerms>();
      }]>,
    StaticInterfaceMethod<
      "Whether the data operands must share one storage type although the "
      "results may be stored in another (the lhs and rhs of a matmul).",
      "bool", "hasSameDataOperandStorage", (ins), [{}], [{
        return ConcreteOp::template hasTrait<
            ::mp::tg::OpTrait::SameDataOperandStorage>();
      }]>,
    InterfaceMethod<
      "Whether data operand `index` must be read in full precision (the "
      "logits of a loss, the gradient of an optimizer update).",
      "bool", "isPrecisionSensitiveOperand", (ins "unsigned":$index), [{}], [{
        return ConcreteOp::template hasTrait<
                   ::mp::tg::OpTrait::FullPrecisionDataOperands>() &&
               $_op.getOperandRole(index) == ::mp::tg::OperandRole::Data;
      }]>,
    InterfaceMethod<
      "Whether result `index` is data, whose storage the mixed-precision "
      "passes may change (not an updated parameter, optimizer state or "
      "saved statistics).",
      "bool", "isDataResult", (ins "unsigned":$index), [{}], [{
        return ::llvm::isa<::mlir::FloatType>(::mlir::getElementTypeOrSelf(
            $_op->getResult(index).getType()));
      }]>,
    InterfaceMethod<
      "The role of operand `index`.",
      "::mp::tg::OperandRole", "getOperandRole", (ins "unsigned":$index),
      [{}], [{
        return ::mp::tg::detail::getDefaultOperandRole(
            $_op.getOperation(), index);
      }]>,
  ];
}

def TG_LossGradientOpInterface : OpInterface<"LossGradientOpInterface"> {
  let cppNamespace = "::mp::tg";
  let description = [{
    An op that starts the backward pass from the gradient of the loss (the
    seed, `d loss / d loss`). Loss scaling multiplies the seed by the scale.
  }];
  let methods = [
    InterfaceMethod<"The operand holding the loss gradient (the seed).",
      "::mlir::OpOperand &", "getSeedOperand">,
  ];
}

def TG_OptimizerOpInterface : OpInterface<"OptimizerOpInterface"> {
  let cppNamespace = "::mp::tg";
  let description = [{
    A parameter update. Loss scaling feeds it the unscaled gradient and the
    device-side predicate that skips the update on overflow.
  }];
  let methods = [
    InterfaceMethod<"The gradient operand.", "::mlir::OpOperand &",
      "getGradOperand">,
    InterfaceMethod<"The skip predicate, or null.", "::mlir::Value",
      "getSkipPredicate">,
    InterfaceMethod<"Sets the skip predicate.", "void", "setSkipPredicate",
      (ins "::mlir::Value":$predicate)>,
  ];
}

def TG_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mp::tg";
  let description = [{
    An op that reverse-mode automatic differentiation (`tg-make-train-step`)
    can propagate gradients through: given the adjoints of its results (the
    gradients of the loss with respect to them), it builds the adjoints of
    its operands out of tg ops, at the builder's insertion point.

    * `isDifferentiableOperand` / `isDifferentiableResult` say which
      operands and results carry adjoints: floating-point ones by default;
      integer and boolean values (labels, ids, counters) never do, and an op
      may exclude more (the statistics `tg.layer_norm` saves for its
      backward pass).
    * `buildAdjoints` receives one adjoint per result (null where none flows
      back) and a mask of the operands whose adjoints are wanted; it appends
      one value per operand to `operandAdjoints`, of the operand's type, or
      null where none was wanted. It reads the forward op's operands and
      results (saved activations) rather than recomputing them. On failure
      it emits a diagnostic on the op.

    Ops without the interface are not differentiable: the pass reports one
    on the path from a parameter to the loss as a located error. Ops of
    other dialects take part by attaching an external model.
  }];
  let methods = [
    InterfaceMethod<
      "Whether operand `index` can carry an adjoint.",
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), [{}], [{
        return ::llvm::isa<::mlir::FloatType>(::mlir::getElementTypeOrSelf(
            $_op->getOperand(index).getType()));
      }]>,
    InterfaceMethod<
      "Whether result `index` can carry an adjoint.",
      "bool", "isDifferentiableResult", (ins "unsigned":$index), [{}], [{
        return ::llvm::isa<::mlir::FloatType>(::mlir::getElementTypeOrSelf(
            $_op->getResult(index).getType()));
      }]>,
    InterfaceMethod<
      "Builds the adjoints of the operands marked in `wanted` from the "
      "adjoints of the results (null where none flows back), appending one "
      "value (or null) per operand to `operandAdjoints`.",
      "::llvm::LogicalResult", "buildAdjoints",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultAdjoints,
           "::llvm::ArrayRef<bool>":$wanted,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandAdjoints)>,
  ];
}

#endif // MP_DIALECT_TG_IR_TGINTERFACES_TD
