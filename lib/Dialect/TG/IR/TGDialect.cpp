//===- TGDialect.cpp - the tg dialect -------------------------------------===//
//
// Dialect registration, constant materialisation, and verification of the
// discardable `tg.*` attributes that make up the training-step convention.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TGDialect.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/IR/TrainStep.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mp::tg;

#include "mp/Dialect/TG/IR/TGOpsDialect.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mp/Dialect/TG/IR/TGOps.cpp.inc"
      >();
}

Operation *TGDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

/// Checks that `attr` is a non-empty UTF-8 string: names end up in
/// checkpoint headers and JSON reports.
static LogicalResult verifyName(Operation *op, NamedAttribute attr,
                                StringRef where) {
  auto str = dyn_cast<StringAttr>(attr.getValue());
  if (!str || str.getValue().empty())
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << where << " must be a non-empty string naming it";
  if (!llvm::json::isUTF8(str.getValue()))
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << where << " must be valid UTF-8";
  return success();
}

LogicalResult TGDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kNumericsAttr) {
    // Written by tg-check-numerics; readers check the entries they use.
    auto entries = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !entries ||
        !llvm::all_of(entries, [](Attribute entry) {
          auto dict = dyn_cast<DictionaryAttr>(entry);
          return dict && dict.getAs<IntegerAttr>("id") &&
                 dict.getAs<StringAttr>("name");
        }))
      return op->emitError()
             << "'" << name
             << "' must be an array of dictionaries with an integer 'id' and "
                "a string 'name', on a function";
    return success();
  }
  if (name != kTrainStepAttr && name != kForwardAttr)
    return op->emitError() << "unknown tg attribute '" << name
                           << "' on an operation";
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << name << "' must be a unit attribute";
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitError() << "'" << name << "' applies to function ops only";
  if (name == kForwardAttr) {
    if (op->hasAttr(kTrainStepAttr))
      return op->emitError() << "a function is either a training step ('"
                             << kTrainStepAttr << "') or a forward function ('"
                             << kForwardAttr << "'), not both";
    return getForwardSignature(fn);
  }
  return getTrainStepSignature(fn);
}

LogicalResult TGDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kParamAttr || name == kStateAttr || name == kInputAttr ||
      name == kLabelAttr || name == kShadowOfAttr)
    return verifyName(op, attr, "argument #" + std::to_string(argIndex));
  if (name == kInitAttr) {
    // The initial value of a state argument, for the runtime.
    auto fn = dyn_cast<FunctionOpInterface>(op);
    // A dense elements attribute, or a dense resource (a blob, as an
    // importer writes a model's weights).
    auto init = dyn_cast<ElementsAttr>(attr.getValue());
    if (!fn || !init ||
        !isa<DenseElementsAttr, DenseResourceElementsAttr>(init) ||
        init.getType() != fn.getArgumentTypes()[argIndex])
      return op->emitError() << "'" << kInitAttr << "' on argument #"
                             << argIndex
                             << " must be a dense elements attribute or a "
                                "dense resource of the argument's type";
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(init)) {
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      auto type = cast<ShapedType>(init.getType());
      uint64_t bits = type.getElementTypeBitWidth();
      if (bits % 8 != 0)
        return op->emitError() << "'" << kInitAttr << "' on argument #"
                               << argIndex
                               << ": a dense resource needs a byte-sized "
                                  "element type";
      // A blob is checked when it has been read (the parser resolves
      // resources after the ops).
      if (blob && blob->getData().size() !=
                      uint64_t(type.getNumElements()) * bits / 8)
        return op->emitError()
               << "'" << kInitAttr << "' on argument #" << argIndex
               << " holds " << blob->getData().size() << " bytes, its type "
               << type.getNumElements() * bits / 8;
    }
    return success();
  }
  return op->emitError() << "unknown tg argument attribute '" << name << "'";
}

LogicalResult TGDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kLossAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << kLossAttr
                             << "' must be a unit attribute";
    return success();
  }
  if (name == kUpdateAttr || name == kOutputAttr)
    return verifyName(op, attr, "result #" + std::to_string(resultIndex));
  return op->emitError() << "unknown tg result attribute '" << name << "'";
}
