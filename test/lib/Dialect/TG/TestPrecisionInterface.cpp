//===- TestPrecisionInterface.cpp - exercise the precision interface ------===//
//
// `tg-test-precision-interface` reports, as a remark on every op that
// implements the precision interface, its default list class, compute type
// and operand roles; with `set-compute=<type>` it first records that compute
// type on every op that has one. The test also attaches the interface to
// `arith.addf` and `arith.mulf` through external models, the way a user
// brings ops of another dialect into the mixed-precision passes.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mp::tg;

namespace {

/// An elementwise arith op computes in its storage type and follows its
/// neighbours (infer list).
template <typename OpTy>
struct ArithElementwiseModel
    : public PrecisionOpInterface::ExternalModel<ArithElementwiseModel<OpTy>,
                                                 OpTy> {
  static PrecisionClass getDefaultPrecisionClass() {
    return PrecisionClass::Infer;
  }
  static bool hasComputeType() { return true; }
  FloatType getComputeType(Operation *op) const {
    return dyn_cast<FloatType>(getElementTypeOrSelf(op->getResult(0)));
  }
  void setComputeType(Operation *, FloatType) const {}
  OperandRole getOperandRole(Operation *, unsigned) const {
    return OperandRole::Data;
  }
  bool isPrecisionSensitiveOperand(Operation *, unsigned) const {
    return false;
  }
  bool isDataResult(Operation *, unsigned) const { return true; }
};

struct TestPrecisionInterfacePass
    : public PassWrapper<TestPrecisionInterfacePass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPrecisionInterfacePass)

  TestPrecisionInterfacePass() = default;
  TestPrecisionInterfacePass(const TestPrecisionInterfacePass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "tg-test-precision-interface"; }
  StringRef getDescription() const final {
    return "Report the precision interface of every op as remarks";
  }

  Option<std::string> setCompute{
      *this, "set-compute",
      llvm::cl::desc("Record this compute type (f16, bf16, f32, f64 or "
                     "none) on every op that has one first")};

  void runOnOperation() override {
    FloatType compute;
    bool clear = false;
    if (!setCompute.empty()) {
      MLIRContext *ctx = &getContext();
      compute = llvm::StringSwitch<FloatType>(setCompute)
                    .Case("f16", Float16Type::get(ctx))
                    .Case("bf16", BFloat16Type::get(ctx))
                    .Case("f32", Float32Type::get(ctx))
                    .Case("f64", Float64Type::get(ctx))
                    .Default(FloatType());
      clear = setCompute == "none";
      if (!compute && !clear) {
        getOperation()->emitError()
            << "invalid set-compute value '" << setCompute
            << "'; expected f16, bf16, f32, f64 or none";
        return signalPassFailure();
      }
    }
    getOperation()->walk([&](PrecisionOpInterface op) {
      if ((compute || clear) && op.hasComputeType())
        op.setComputeType(compute);
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "class = " << stringifyPrecisionClass(op.getDefaultPrecisionClass())
         << ", compute = ";
      if (FloatType t = op.getComputeType())
        os << t;
      else
        os << "none";
      os << ", roles = [";
      llvm::interleaveComma(
          llvm::seq<unsigned>(0, op->getNumOperands()), os, [&](unsigned i) {
            os << stringifyOperandRole(op.getOperandRole(i));
          });
      os << "]";
      op->emitRemark(text);
    });
  }
};

} // namespace

namespace mp::test {
void registerTestPrecisionInterface(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect>();
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    arith::AddFOp::attachInterface<ArithElementwiseModel<arith::AddFOp>>(*ctx);
    arith::MulFOp::attachInterface<ArithElementwiseModel<arith::MulFOp>>(*ctx);
  });
  PassRegistration<TestPrecisionInterfacePass>();
}
} // namespace mp::test
