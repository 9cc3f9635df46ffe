//===- TGToRuntime.cpp - tg ops to runtime calls --------------------------===//
//
// Lowers functions of tg ops to functions of memrefs that call the mp
// runtime (runtime/include/mp/Runtime/MPCompiled.h).
//
// A training step is one straight-line block, so the conversion is a single
// walk in program order rather than a pattern rewrite: it needs the order to
// decide where buffers die and which updates may run in place, which a
// greedy rewrite does not preserve. Before the walk a plan assigns each
// value its buffer:
//   - function arguments keep theirs;
//   - a result of the function is produced directly in its destination (the
//     updated argument's buffer, or a destination argument appended to the
//     signature) when the producing op may write there: either the argument
//     it replaces is dead by then, or the op is an in-place optimizer/loss
//     scale update of exactly that argument and its last reader;
//   - a `tg.reshape` whose result the function does not return is a view of
//     its input's buffer (a `memref.reinterpret_cast`, no copy): the two
//     values share one storage, which lives until the last use of either;
//   - everything else is a fresh `memref.alloc`, freed after its last use.
// Results that could not be produced in place are copied at the end, into
// destination arguments first and then into updated arguments, so a copy
// never reads a buffer that was already overwritten.
//
// Each op becomes one call whose operand is an argument block on the stack,
// built inside a `memref.alloca_scope` so the stack is reused across calls.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"

#include "mp/Dialect/TG/IR/TGInterfaces.h"
#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/IR/TrainStep.h"
#include "mp/Runtime/MPCompiled.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <type_traits>

namespace mp {
#define GEN_PASS_DEF_CONVERTTGTORUNTIME
#include "mp/Conversion/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;
using namespace mp::tg;

namespace {

/// The runtime's code for `type`, or nothing for a type it cannot store.
std::optional<mpElementType> getElementCode(Type type) {
  if (type.isF32())
    return MP_F32;
  if (type.isF16())
    return MP_F16;
  if (type.isBF16())
    return MP_BF16;
  if (type.isF64())
    return MP_F64;
  if (type.isInteger(32))
    return MP_I32;
  if (type.isInteger(64))
    return MP_I64;
  if (type.isInteger(1))
    return MP_I1;
  return std::nullopt;
}

/// Checks that the runtime can hold `type`; emits on `op` otherwise.
LogicalResult checkRuntimeType(Operation *op, Type type, StringRef what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return op->emitError() << what << " must be a statically shaped tensor, "
                           << "got " << type;
  if (tensor.getRank() > MP_MAX_RANK)
    return op->emitError() << what << " has rank " << tensor.getRank()
                           << ", above the runtime's maximum of "
                           << MP_MAX_RANK;
  if (!getElementCode(tensor.getElementType()))
    return op->emitError() << what << " has element type "
                           << tensor.getElementType()
                           << ", which the runtime does not support";
  return success();
}

MemRefType toMemRef(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  return MemRefType::get(t.getShape(), t.getElementType());
}

//===----------------------------------------------------------------------===//
// Argument blocks
//===----------------------------------------------------------------------===//

/// Collects the words of one argument block and emits the call passing it.
class CallBuilder {
public:
  CallBuilder(OpBuilder &builder, Location loc, int64_t site)
      : b(builder), loc(loc) {
    scope = memref::AllocaScopeOp::create(b, loc, TypeRange{});
    Block *body = b.createBlock(&scope.getBodyRegion());
    b.setInsertionPointToEnd(body);
    i(site);
  }

  void i(int64_t value) {
    // Blocks repeat small values (ranks, type codes, dimensions): one
    // constant per value and block keeps the IR readable.
    Value &constant = constants[value];
    if (!constant)
      constant = arith::ConstantIntOp::create(b, loc, value, 64);
    words.push_back(constant);
  }
  void ints(ArrayRef<int64_t> values) {
    for (int64_t v : values)
      i(v);
  }
  void f(double value) { i(llvm::bit_cast<int64_t>(value)); }
  void type(Type t) { i(*getElementCode(t)); }
  void tensor(Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    words.push_back(pointerWord(memref));
    this->type(type.getElementType());
    i(type.getRank());
    ints(type.getShape());
  }

  /// Emits `func.call @mprt_<entry>(block)`, declaring it when needed, and
  /// leaves the builder after the scope.
  void call(StringRef entry, ModuleOp module) {
    MLIRContext *ctx = b.getContext();
    auto i64 = b.getI64Type();
    auto blockType = MemRefType::get({static_cast<int64_t>(words.size())}, i64);
    Value block = memref::AllocaOp::create(b, loc, blockType);
    for (auto [k, word] : llvm::enumerate(words)) {
      Value index = arith::ConstantIndexOp::create(b, loc, k);
      memref::StoreOp::create(b, loc, word, block, index);
    }
    Value address = pointerWord(block);
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    Value ptr = LLVM::IntToPtrOp::create(b, loc, ptrType, address);
    std::string name = ("mprt_" + entry).str();
    if (!module.lookupSymbol<func::FuncOp>(name)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      auto decl = func::FuncOp::create(b, module.getLoc(), name,
                                       b.getFunctionType({ptrType}, {}));
      decl.setPrivate();
    }
    func::CallOp::create(b, loc, name, TypeRange{}, ValueRange{ptr});
    memref::AllocaScopeReturnOp::create(b, loc);
    b.setInsertionPointAfter(scope);
  }

private:
  Value pointerWord(Value memref) {
    Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  }

  OpBuilder &b;
  Location loc;
  memref::AllocaScopeOp scope;
  SmallVector<Value> words;
  DenseMap<int64_t, Value> constants;
};

//===----------------------------------------------------------------------===//
// The conversion of one function
//===----------------------------------------------------------------------===//

/// For an in-place capable op, the operand whose buffer result #`result` may
/// reuse.
Value getInPlaceOperand(Operation *op, unsigned result) {
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](SgdUpdateOp u) -> Value {
        return result == 0 ? u.getParam() : u.getMomentumBuffer();
      })
      .Case([&](AdamUpdateOp u) -> Value {
        Value operands[] = {u.getParam(), u.getFirstMoment(),
                            u.getSecondMoment(), u.getStep()};
        return operands[result];
      })
      .Case([&](UpdateLossScaleOp u) -> Value {
        return result == 0 ? u.getScale() : u.getGoodSteps();
      })
      // The residual (a parameter whose SGD update the product's epilogue
      // does): the GEMM reads each element before writing it. The bias
      // gradient has a buffer of its own.
      .Case([&](FusedMatmulOp f) -> Value {
        return result == 0 ? f.getResidual() : Value();
      })
      .Default([](Operation *) { return Value(); });
}

class FunctionLowering {
public:
  FunctionLowering(func::FuncOp fn, ModuleOp module)
      : fn(fn), module(module), b(fn.getContext()) {}

  LogicalResult run();

private:
  LogicalResult check();
  void plan();
  LogicalResult emit(Operation *op, int64_t site);
  Value bufferFor(Value tensor);
  Value operand(Value tensor) { return buffers.lookup(tensor); }
  /// The memref result #`r` of the old function ends up in.
  Value resultBuffer(unsigned r) {
    if (std::optional<unsigned> arg = updatedArgument(r))
      return buffers.lookup(body->getArgument(*arg));
    return destinations.lookup(r);
  }
  std::optional<unsigned> updatedArgument(unsigned r) const {
    if (!signature)
      return std::nullopt;
    return signature->results[r].updates;
  }
  void freeDead(Operation *op, int64_t position);
  /// For the new parameter of an optimizer update: the buffer of a cast of
  /// it to f16 or bf16 (a tg-shadow-weights shadow), which the update then
  /// writes in the same pass, or null. The cast is emitted as nothing.
  Value fuseShadowCast(Value newParam) {
    int64_t update = position[newParam.getDefiningOp()];
    for (Operation *user : newParam.getUsers()) {
      auto c = dyn_cast<CastOp>(user);
      if (!c || fusedCasts.contains(c) ||
          !isa<BFloat16Type, Float16Type>(
              getElementTypeOrSelf(c.getResult().getType())))
        continue;
      // Written earlier than the cast: when that is into an argument's
      // buffer, nothing may read the argument in between.
      auto placed = producedFor.find(c.getResult());
      if (placed != producedFor.end())
        if (std::optional<unsigned> arg = updatedArgument(placed->second)) {
          auto it = lastUse.find(body->getArgument(*arg));
          if (it != lastUse.end() && it->second >= update)
            continue;
        }
      fusedCasts.insert(c);
      Value buffer = bufferFor(c.getResult());
      buffers[c.getResult()] = buffer;
      return buffer;
    }
    return nullptr;
  }
  void emitCopy(Value from, Value to, int64_t site) {
    CallBuilder call(b, fn.getLoc(), site);
    call.tensor(from);
    call.tensor(to);
    call.call("copy", module);
  }

  func::FuncOp fn;
  ModuleOp module;
  OpBuilder b;
  Block *body = nullptr;
  func::ReturnOp ret;
  std::optional<TrainStepSignature> signature;

  /// Program position of every op; the return is last.
  DenseMap<Operation *, int64_t> position;
  /// Position of the last op reading each value; for a value whose buffer
  /// others view (storage), the last op reading any of them.
  DenseMap<Value, int64_t> lastUse;
  /// The value owning the buffer of a reshape that is a view.
  DenseMap<Value, Value> viewOf;
  Value storage(Value v) const {
    auto it = viewOf.find(v);
    return it == viewOf.end() ? v : it->second;
  }
  /// Values produced directly in the buffer of a result (by result index).
  DenseMap<Value, unsigned> producedFor;
  /// Results written by a copy at the end of the step.
  SmallVector<unsigned> copiedResults;
  /// Memrefs of values that exist so far.
  DenseMap<Value, Value> buffers;
  /// Allocations to free, by the value they hold.
  llvm::MapVector<Value, Value> owned;
  /// Casts that optimizer updates write (fuseShadowCast).
  DenseSet<Operation *> fusedCasts;
  /// Destination arguments of the new signature, per result index.
  DenseMap<unsigned, Value> destinations;
  int64_t constantCount = 0;
};

LogicalResult FunctionLowering::check() {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError()
           << "convert-tg-to-runtime needs a function with one block";
  body = &fn.getBody().front();
  ret = dyn_cast<func::ReturnOp>(body->getTerminator());
  if (!ret)
    return fn.emitError() << "function must end in func.return";
  for (auto [k, type] : llvm::enumerate(fn.getArgumentTypes()))
    if (failed(checkRuntimeType(fn, type, "argument #" + std::to_string(k))))
      return failure();
  for (auto [k, type] : llvm::enumerate(fn.getResultTypes()))
    if (failed(checkRuntimeType(fn, type, "result #" + std::to_string(k))))
      return failure();
  for (Operation &op : body->without_terminator()) {
    if (!isa<TGDialect>(op.getDialect()))
      return op.emitError() << "convert-tg-to-runtime cannot lower '"
                            << op.getName() << "'";
    for (Type type : op.getResultTypes())
      if (failed(checkRuntimeType(&op, type, "result")))
        return failure();
  }
  if (isTrainStep(fn)) {
    auto sig = getTrainStepSignature(fn);
    if (failed(sig))
      return failure();
    signature = std::move(*sig);
  }
  return success();
}

void FunctionLowering::plan() {
  DenseSet<Value> returned(llvm::from_range, ret.getOperands());
  int64_t p = 0;
  for (Operation &op : *body) {
    position[&op] = p;
    for (Value v : op.getOperands())
      lastUse[storage(v)] = p;
    // A reshape's result keeps its input's elements in order: it views the
    // input's buffer unless it must be written into a result's buffer.
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      if (!returned.contains(reshape.getResult()))
        viewOf[reshape.getResult()] = storage(reshape.getInput());
    ++p;
  }

  SmallVector<unsigned> copiedUpdates;
  for (auto [r, value] : llvm::enumerate(ret.getOperands())) {
    std::optional<unsigned> arg = updatedArgument(r);
    if (arg && value == body->getArgument(*arg))
      continue; // unchanged: nothing to write
    Operation *def = value.getDefiningOp();
    bool canPlace = def && !isa<ConstantOp>(def) && !producedFor.count(value);
    if (canPlace && arg) {
      // Writing into the argument's buffer is safe once nothing reads the
      // argument any more, or when the op itself is the in-place update of
      // exactly that argument and its last reader.
      Value target = body->getArgument(*arg);
      int64_t defPosition = position[def];
      auto it = lastUse.find(target);
      int64_t targetLastUse = it == lastUse.end() ? -1 : it->second;
      // (A view of the argument counts as the argument.)
      canPlace = targetLastUse < defPosition ||
                 (targetLastUse == defPosition &&
                  getInPlaceOperand(def, cast<OpResult>(value)
                                             .getResultNumber()) == target &&
                  llvm::count_if(def->getOperands(), [&](Value v) {
                    return storage(v) == target;
                  }) == 1);
    }
    if (canPlace)
      producedFor[value] = r;
    else if (arg)
      copiedUpdates.push_back(r);
    else
      copiedResults.push_back(r);
  }
  // Destinations are never read, so copying into them first leaves every
  // source intact for the copies into updated arguments.
  llvm::append_range(copiedResults, copiedUpdates);
}

Value FunctionLowering::bufferFor(Value tensor) {
  auto it = producedFor.find(tensor);
  if (it != producedFor.end())
    return resultBuffer(it->second);
  Value alloc =
      memref::AllocOp::create(b, tensor.getLoc(), toMemRef(tensor.getType()));
  owned[tensor] = alloc;
  return alloc;
}

void FunctionLowering::freeDead(Operation *op, int64_t p) {
  auto freeIfDead = [&](Value v, bool unused) {
    auto it = owned.find(storage(v));
    if (it == owned.end() || (!unused && lastUse.lookup(it->first) != p))
      return;
    memref::DeallocOp::create(b, op->getLoc(), it->second);
    owned.erase(it);
  };
  for (Value v : op->getOperands())
    freeIfDead(v, false);
  for (Value v : op->getResults())
    freeIfDead(v, v.use_empty() && storage(v) == v);
}

LogicalResult FunctionLowering::run() {
  if (failed(check()))
    return failure();
  plan();

  // The new signature: memrefs, then one destination per result that is not
  // an update.
  MLIRContext *ctx = fn.getContext();
  unsigned numArgs = fn.getNumArguments();
  SmallVector<Type> argTypes;
  for (Type t : fn.getArgumentTypes())
    argTypes.push_back(toMemRef(t));
  SmallVector<unsigned> destinationResults;
  for (auto [r, type] : llvm::enumerate(fn.getResultTypes())) {
    if (updatedArgument(r))
      continue;
    destinationResults.push_back(r);
    argTypes.push_back(toMemRef(type));
  }

  // Build the new body in a fresh block, then swap it in.
  auto newBody = std::make_unique<Block>();
  for (auto [k, t] : llvm::enumerate(argTypes))
    newBody->addArgument(t, k < numArgs ? body->getArgument(k).getLoc()
                                        : fn.getLoc());
  for (unsigned k = 0; k < numArgs; ++k)
    buffers[body->getArgument(k)] = newBody->getArgument(k);
  for (auto [k, r] : llvm::enumerate(destinationResults))
    destinations[r] = newBody->getArgument(numArgs + k);

  b.setInsertionPointToStart(newBody.get());
  for (Operation &op : body->without_terminator()) {
    int64_t p = position[&op];
    if (failed(emit(&op, p)))
      return failure();
    freeDead(&op, p);
  }

  // Results that could not be produced in place. A source that is an
  // argument overwritten by an earlier copy is snapshot first.
  int64_t site = position[ret];
  DenseSet<Value> overwritten;
  for (unsigned r : copiedResults)
    if (updatedArgument(r))
      overwritten.insert(resultBuffer(r));
  SmallVector<std::pair<Value, Value>> copies;
  for (unsigned r : copiedResults) {
    Value source = buffers.lookup(ret.getOperand(r));
    Value dest = resultBuffer(r);
    if (source == dest)
      continue;
    if (overwritten.contains(source)) {
      Value snapshot = memref::AllocOp::create(
          b, fn.getLoc(), cast<MemRefType>(source.getType()));
      emitCopy(source, snapshot, site);
      owned[snapshot] = snapshot;
      source = snapshot;
    }
    copies.push_back({source, dest});
  }
  for (auto [source, dest] : copies)
    emitCopy(source, dest, site);
  for (auto &entry : owned)
    memref::DeallocOp::create(b, fn.getLoc(), entry.second);
  func::ReturnOp::create(b, ret.getLoc());

  // Attributes: tg.* become mp.* so that the tg dialect's signature checks
  // do not apply to the memref function; destination arguments carry the
  // attributes of their result and its index as `mp.result`.
  auto renamed = [&](DictionaryAttr dict) {
    SmallVector<NamedAttribute> attrs;
    if (dict)
      for (NamedAttribute a : dict) {
        StringRef name = a.getName().getValue();
        if (name.consume_front("tg."))
          attrs.push_back(NamedAttribute(
              StringAttr::get(ctx, "mp." + name.str()), a.getValue()));
        else
          attrs.push_back(a);
      }
    return attrs;
  };
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned k = 0; k < numArgs; ++k)
    argAttrs.push_back(DictionaryAttr::get(ctx, renamed(fn.getArgAttrDict(k))));
  for (unsigned r : destinationResults) {
    SmallVector<NamedAttribute> attrs = renamed(fn.getResultAttrDict(r));
    attrs.push_back(NamedAttribute(StringAttr::get(ctx, "mp.result"),
                                   b.getI64IntegerAttr(r)));
    argAttrs.push_back(DictionaryAttr::get(ctx, attrs));
  }

  for (Operation &op : llvm::reverse(*body))
    op.dropAllReferences();
  fn.getBody().front().erase();
  fn.getBody().push_back(newBody.release());
  fn.setFunctionType(FunctionType::get(ctx, argTypes, {}));
  fn.setAllArgAttrs(argAttrs);
  fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  if (fn->hasAttr(TGDialect::kTrainStepAttr)) {
    fn->removeAttr(TGDialect::kTrainStepAttr);
    fn->setAttr("mp.train_step", UnitAttr::get(ctx));
  }
  // The arguments' tg roles are mp names now, so a forward function lowered
  // beside its step is no longer one: tg.forward's verifier reads the roles
  // (found by mp-mlir-fuzzer).
  fn->removeAttr(TGDialect::kForwardAttr);
  return success();
}

//===----------------------------------------------------------------------===//
// Per-op emission
//===----------------------------------------------------------------------===//

/// The runtime's kind code of each elementwise op.
mpBinaryKind kindOf(AddOp) { return MP_ADD; }
mpBinaryKind kindOf(SubOp) { return MP_SUB; }
mpBinaryKind kindOf(MulOp) { return MP_MUL; }
mpBinaryKind kindOf(DivOp) { return MP_DIV; }
mpBinaryKind kindOf(MaximumOp) { return MP_MAXIMUM; }
mpBinaryKind kindOf(MinimumOp) { return MP_MINIMUM; }
mpUnaryKind kindOf(NegOp) { return MP_NEG; }
mpUnaryKind kindOf(ReluOp) { return MP_RELU; }
mpUnaryKind kindOf(TanhOp) { return MP_TANH; }
mpUnaryKind kindOf(SigmoidOp) { return MP_SIGMOID; }
mpUnaryKind kindOf(ExpOp) { return MP_EXP; }
mpUnaryKind kindOf(LogOp) { return MP_LOG; }
mpUnaryKind kindOf(SqrtOp) { return MP_SQRT; }
mpUnaryKind kindOf(RsqrtOp) { return MP_RSQRT; }
mpUnaryKind kindOf(SquareOp) { return MP_SQUARE; }
mpUnaryKind kindOf(ErfOp) { return MP_ERF; }
mpUnaryKind kindOf(SinOp) { return MP_SIN; }
mpUnaryKind kindOf(CosOp) { return MP_COS; }
mpUnaryKind kindOf(GeluOp op) {
  return op.getTanhApprox() ? MP_GELU_TANH : MP_GELU;
}
mpActivationGradKind kindOf(ReluGradOp) { return MP_RELU_GRAD; }
mpActivationGradKind kindOf(TanhGradOp) { return MP_TANH_GRAD; }
mpActivationGradKind kindOf(SigmoidGradOp) { return MP_SIGMOID_GRAD; }
mpActivationGradKind kindOf(GeluGradOp op) {
  return op.getTanhApprox() ? MP_GELU_TANH_GRAD : MP_GELU_GRAD;
}

static_assert(int(ComparePredicate::eq) == MP_EQ &&
                  int(ComparePredicate::ne) == MP_NE &&
                  int(ComparePredicate::lt) == MP_LT &&
                  int(ComparePredicate::le) == MP_LE &&
                  int(ComparePredicate::gt) == MP_GT &&
                  int(ComparePredicate::ge) == MP_GE,
              "tg.compare's predicates are the runtime's compare kinds");
static_assert(int(CollectiveReduction::sum) == MP_COLLECTIVE_SUM &&
                  int(CollectiveReduction::mean) == MP_COLLECTIVE_MEAN,
              "tg.all_reduce's reductions are the runtime's collective kinds");

template <typename OpTy>
Type computeOf(OpTy op) {
  return cast<PrecisionOpInterface>(op.getOperation()).getComputeType();
}

LogicalResult FunctionLowering::emit(Operation *op, int64_t site) {
  Location loc = op->getLoc();
  // Buffers for the results, in order.
  SmallVector<Value> out;
  if (auto reshape = dyn_cast<ReshapeOp>(op);
      reshape && viewOf.count(reshape.getResult())) {
    // The input's buffer under the result's shape: contiguous, offset 0.
    auto type = toMemRef(reshape.getType());
    SmallVector<int64_t> strides(type.getRank(), 1);
    for (int64_t d = type.getRank() - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * type.getDimSize(d + 1);
    buffers[reshape.getResult()] = memref::ReinterpretCastOp::create(
        b, loc, type, operand(reshape.getInput()), /*offset=*/0,
        type.getShape(), strides);
    return success();
  }
  if (!isa<ConstantOp>(op))
    for (Value r : op->getResults())
      out.push_back(bufferFor(r));
  auto record = [&]() {
    for (auto [r, m] : llvm::zip(op->getResults(), out))
      buffers[r] = m;
  };
  auto binary = [&](mpBinaryKind kind, Value lhs, Value rhs, Type compute) {
    CallBuilder c(b, loc, site);
    c.i(kind);
    c.type(compute);
    c.tensor(operand(lhs));
    c.tensor(operand(rhs));
    c.tensor(out[0]);
    c.call("binary", module);
  };
  auto unary = [&](mpUnaryKind kind, Value in, Type compute) {
    CallBuilder c(b, loc, site);
    c.i(kind);
    c.type(compute);
    c.tensor(operand(in));
    c.tensor(out[0]);
    c.call("unary", module);
  };
  auto activationGrad = [&](mpActivationGradKind kind, Value dy, Value saved,
                            Type compute) {
    CallBuilder c(b, loc, site);
    c.i(kind);
    c.type(compute);
    c.tensor(operand(dy));
    c.tensor(operand(saved));
    c.tensor(out[0]);
    c.call("activation_grad", module);
  };
  auto softmax = [&](bool log, int64_t axis, Value in, Type compute) {
    CallBuilder c(b, loc, site);
    c.i(log);
    c.i(axis);
    c.type(compute);
    c.tensor(operand(in));
    c.tensor(out[0]);
    c.call("softmax", module);
  };
  auto softmaxGrad = [&](bool log, int64_t axis, Value dy, Value y,
                         Type compute) {
    CallBuilder c(b, loc, site);
    c.i(log);
    c.i(axis);
    c.type(compute);
    c.tensor(operand(dy));
    c.tensor(operand(y));
    c.tensor(out[0]);
    c.call("softmax_grad", module);
  };
  auto reduce = [&](mpReduceKind kind, auto r) {
    CallBuilder c(b, loc, site);
    c.i(kind);
    c.type(computeOf(r));
    c.i(r.getAxes().size());
    c.ints(r.getAxes());
    c.tensor(operand(r.getInput()));
    c.tensor(out[0]);
    c.call("reduce", module);
  };
  auto tensors = [&](StringRef entry, ValueRange ins) {
    CallBuilder c(b, loc, site);
    for (Value v : ins)
      c.tensor(operand(v));
    for (Value m : out)
      c.tensor(m);
    c.call(entry, module);
  };
  auto computeTensors = [&](StringRef entry, Type compute, ValueRange ins) {
    CallBuilder c(b, loc, site);
    c.type(compute);
    for (Value v : ins)
      c.tensor(operand(v));
    for (Value m : out)
      c.tensor(m);
    c.call(entry, module);
  };

  LogicalResult result =
      TypeSwitch<Operation *, LogicalResult>(op)
          // Elementwise.
          .Case<AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp>(
              [&](auto o) {
                binary(kindOf(o), o.getLhs(), o.getRhs(), computeOf(o));
                return success();
              })
          .Case([&](CompareOp o) {
            CallBuilder c(b, loc, site);
            c.i(static_cast<int64_t>(o.getPredicate()));
            c.tensor(operand(o.getLhs()));
            c.tensor(operand(o.getRhs()));
            c.tensor(out[0]);
            c.call("compare", module);
            return success();
          })
          .Case([&](SelectOp o) {
            tensors("select",
                    {o.getCondition(), o.getOnTrue(), o.getOnFalse()});
            return success();
          })
          .Case([&](ApplyLossScaleOp o) {
            binary(MP_MUL, o.getInput(), o.getScale(), computeOf(o));
            return success();
          })
          .Case<NegOp, ReluOp, TanhOp, SigmoidOp, ExpOp, LogOp, SqrtOp,
                RsqrtOp, SquareOp, ErfOp, SinOp, CosOp, GeluOp>([&](auto o) {
            unary(kindOf(o), o.getInput(), computeOf(o));
            return success();
          })
          .Case([&](DropoutOp o) {
            CallBuilder c(b, loc, site);
            c.f(o.getRate().convertToFloat());
            c.i(o.getStream());
            c.type(computeOf(o));
            c.tensor(operand(o.getInput()));
            c.tensor(operand(o.getSeed()));
            c.tensor(out[0]);
            c.call("dropout", module);
            return success();
          })
          .Case([&](RandomUniformOp o) {
            CallBuilder c(b, loc, site);
            c.f(o.getLow().convertToDouble());
            c.f(o.getHigh().convertToDouble());
            c.i(o.getStream());
            c.tensor(operand(o.getSeed()));
            c.tensor(out[0]);
            c.call("random_uniform", module);
            return success();
          })
          .Case([&](NextSeedOp o) {
            CallBuilder c(b, loc, site);
            c.tensor(operand(o.getSeed()));
            c.tensor(out[0]);
            c.call("next_seed", module);
            return success();
          })
          .Case<ReluGradOp, TanhGradOp, SigmoidGradOp, GeluGradOp>(
              [&](auto o) {
                activationGrad(kindOf(o), o.getGrad(), o.getSaved(),
                               computeOf(o));
                return success();
              })
          // Softmax, reductions, losses.
          .Case([&](SoftmaxOp o) {
            softmax(false, o.getAxis(), o.getInput(), computeOf(o));
            return success();
          })
          .Case([&](LogSoftmaxOp o) {
            softmax(true, o.getAxis(), o.getInput(), computeOf(o));
            return success();
          })
          .Case([&](SoftmaxGradOp o) {
            softmaxGrad(false, o.getAxis(), o.getGrad(), o.getOutput(),
                        computeOf(o));
            return success();
          })
          .Case([&](LogSoftmaxGradOp o) {
            softmaxGrad(true, o.getAxis(), o.getGrad(), o.getOutput(),
                        computeOf(o));
            return success();
          })
          .Case([&](CumSumOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getAxis());
            c.i(o.getExclusive());
            c.i(o.getReverse());
            c.type(computeOf(o));
            c.tensor(operand(o.getInput()));
            c.tensor(out[0]);
            c.call("cumsum", module);
            return success();
          })
          .Case([&](ReduceSumOp o) {
            reduce(MP_REDUCE_SUM, o);
            return success();
          })
          .Case([&](ReduceMeanOp o) {
            reduce(MP_REDUCE_MEAN, o);
            return success();
          })
          .Case([&](ReduceMaxOp o) {
            reduce(MP_REDUCE_MAX, o);
            return success();
          })
          .Case([&](SoftmaxCrossEntropyOp o) {
            computeTensors("softmax_cross_entropy", computeOf(o),
                           {o.getLogits(), o.getLabels()});
            return success();
          })
          .Case([&](SoftmaxCrossEntropyGradOp o) {
            computeTensors("softmax_cross_entropy_grad", computeOf(o),
                           {o.getLossGrad(), o.getLogits(), o.getLabels()});
            return success();
          })
          .Case([&](MseLossOp o) {
            computeTensors("mse_loss", computeOf(o),
                           {o.getPrediction(), o.getTarget()});
            return success();
          })
          .Case([&](MseLossGradOp o) {
            computeTensors("mse_loss_grad", computeOf(o),
                           {o.getLossGrad(), o.getPrediction(),
                            o.getTarget()});
            return success();
          })
          .Case([&](LayerNormOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getAxis());
            c.f(o.getEpsilon().convertToFloat());
            c.type(computeOf(o));
            for (Value v : {o.getInput(), o.getScale(), o.getBias()})
              c.tensor(operand(v));
            for (Value m : out)
              c.tensor(m);
            c.call("layer_norm", module);
            return success();
          })
          .Case([&](LayerNormGradOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getAxis());
            c.type(computeOf(o));
            for (Value v : {o.getGrad(), o.getInput(), o.getScale(),
                            o.getMean(), o.getRstd()})
              c.tensor(operand(v));
            for (Value m : out)
              c.tensor(m);
            c.call("layer_norm_grad", module);
            return success();
          })
          // Data movement.
          .Case([&](GatherOp o) {
            tensors("gather", {o.getTable(), o.getIds()});
            return success();
          })
          .Case([&](GatherGradOp o) {
            computeTensors("gather_grad", computeOf(o),
                           {o.getGrad(), o.getIds()});
            return success();
          })
          .Case([&](TransposeOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getPermutation().size());
            c.ints(o.getPermutation());
            c.tensor(operand(o.getInput()));
            c.tensor(out[0]);
            c.call("transpose", module);
            return success();
          })
          .Case([&](ReshapeOp o) {
            tensors("copy", {o.getInput()});
            return success();
          })
          .Case([&](SeedOp o) {
            tensors("copy", {o.getInput()});
            return success();
          })
          .Case([&](CastOp o) {
            // Already written by the optimizer update it was fused into.
            if (fusedCasts.contains(o))
              return success();
            tensors("copy", {o.getInput()});
            return success();
          })
          .Case([&](BroadcastToOp o) {
            tensors("broadcast", {o.getInput()});
            return success();
          })
          .Case([&](ConcatOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getAxis());
            c.i(o.getInputs().size());
            for (Value v : o.getInputs())
              c.tensor(operand(v));
            c.tensor(out[0]);
            c.call("concat", module);
            return success();
          })
          .Case<SliceOp, SliceGradOp>([&](auto o) {
            // "rank:i offsets:i[rank] strides:i[rank]", then the one
            // operand and the result.
            CallBuilder c(b, loc, site);
            int64_t rank = o.getOffsets().size();
            c.i(rank);
            c.ints(o.getOffsets());
            if (auto strides = o.getStrides())
              c.ints(*strides);
            else
              c.ints(SmallVector<int64_t>(rank, 1));
            c.tensor(operand(o->getOperand(0)));
            c.tensor(out[0]);
            c.call(o->getName().stripDialect(), module);
            return success();
          })
          .Case([&](ConstantOp o) -> LogicalResult {
            auto type = toMemRef(o.getType());
            std::string name;
            do {
              name = "__tg_constant_" + std::to_string(constantCount++);
            } while (module.lookupSymbol(name));
            {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToEnd(module.getBody());
              memref::GlobalOp::create(b, loc, name,
                                       b.getStringAttr("private"), type,
                                       cast<Attribute>(o.getValue()),
                                       /*constant=*/true,
                                       /*alignment=*/b.getI64IntegerAttr(64));
            }
            Value global = memref::GetGlobalOp::create(b, loc, type, name);
            out.push_back(global);
            // A returned constant is copied into its destination at the end.
            return success();
          })
          .Case([&](MatmulOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getTransposeLhs());
            c.i(o.getTransposeRhs());
            c.type(computeOf(o));
            c.tensor(operand(o.getLhs()));
            c.tensor(operand(o.getRhs()));
            c.tensor(out[0]);
            c.call("matmul", module);
            return success();
          })
          .Case([&](FusedMatmulOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getTransposeLhs());
            c.i(o.getTransposeRhs());
            c.i(static_cast<int64_t>(o.getActivation()));
            c.i(o.getBias() != nullptr);
            c.i(o.getResidual() != nullptr);
            // 0: no bias gradient, else 1 + its MatmulOperand.
            std::optional<MatmulOperand> biasGradOf = o.getBiasGradOf();
            c.i(biasGradOf ? 1 + static_cast<int64_t>(*biasGradOf) : 0);
            c.f(o.getAlpha().convertToDouble());
            c.type(computeOf(o));
            for (Value v : o->getOperands())
              c.tensor(operand(v));
            for (Value result : out)
              c.tensor(result);
            c.call("fused_matmul", module);
            return success();
          })
          // Convolution, pooling and batch norm.
          .Case<Conv2dOp, Conv2dGradInputOp, Conv2dGradFilterOp>(
              [&](auto o) {
                int64_t pass = isa<Conv2dOp>(o) ? 0
                               : isa<Conv2dGradInputOp>(o) ? 1
                                                           : 2;
                CallBuilder c(b, loc, site);
                c.i(pass);
                c.type(computeOf(o));
                c.ints(o.getStrides());
                c.ints(o.getPadding());
                c.ints(o.getDilations());
                c.i(o.getGroups());
                c.i(o.getChannelsLast());
                for (Value v : o->getOperands())
                  c.tensor(operand(v));
                c.tensor(out[0]);
                c.call("conv2d", module);
                return success();
              })
          .Case<MaxPool2dOp, AvgPool2dOp, MaxPool2dGradOp, AvgPool2dGradOp>(
              [&](auto o) {
                using OpTy = decltype(o);
                constexpr bool isMax = std::is_same_v<OpTy, MaxPool2dOp> ||
                                       std::is_same_v<OpTy, MaxPool2dGradOp>;
                constexpr bool isGrad =
                    std::is_same_v<OpTy, MaxPool2dGradOp> ||
                    std::is_same_v<OpTy, AvgPool2dGradOp>;
                mpPoolKind kind = MP_POOL_MAX;
                if constexpr (!isMax)
                  kind = o.getCountIncludePad() ? MP_POOL_AVG_INCLUDE_PAD
                                                : MP_POOL_AVG;
                CallBuilder c(b, loc, site);
                c.i(kind);
                c.type(computeOf(o));
                c.ints(o.getWindow());
                c.ints(o.getStrides());
                c.ints(o.getPadding());
                c.i(o.getChannelsLast());
                if constexpr (isGrad)
                  c.i(isMax);
                for (Value v : o->getOperands())
                  c.tensor(operand(v));
                c.tensor(out[0]);
                c.call(isGrad ? "pool2d_grad" : "pool2d", module);
                return success();
              })
          .Case<BatchNormOp, BatchNormInferenceOp, BatchNormGradOp>(
              [&](auto o) {
                // "epsilon:f [momentum:f] channels_last:i compute:type",
                // then every operand and result.
                using OpTy = decltype(o);
                CallBuilder c(b, loc, site);
                if constexpr (!std::is_same_v<OpTy, BatchNormGradOp>)
                  c.f(o.getEpsilon().convertToFloat());
                if constexpr (std::is_same_v<OpTy, BatchNormOp>)
                  c.f(o.getMomentum().convertToFloat());
                c.i(o.getChannelsLast());
                c.type(computeOf(o));
                for (Value v : o->getOperands())
                  c.tensor(operand(v));
                for (Value m : out)
                  c.tensor(m);
                c.call(o->getName().stripDialect(), module);
                return success();
              })
          // Numerics checks.
          .Case([&](TensorStatsOp o) {
            tensors("tensor_stats", {o.getInput()});
            return success();
          })
          .Case([&](RecordNonfiniteOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getOpId());
            c.i(o.getStats().size());
            c.tensor(operand(o.getStatus()));
            for (Value v : o.getStats())
              c.tensor(operand(v));
            c.tensor(out[0]);
            c.call("record_nonfinite", module);
            return success();
          })
          // Loss scaling and optimizers.
          .Case([&](UnscaleGradsOp o) {
            CallBuilder c(b, loc, site);
            c.i(o.getGrads().size());
            c.tensor(operand(o.getScale()));
            c.tensor(out.back());
            for (Value v : o.getGrads())
              c.tensor(operand(v));
            for (Value m : ArrayRef<Value>(out).drop_back())
              c.tensor(m);
            c.call("unscale_grads", module);
            return success();
          })
          .Case([&](AllReduceOp o) {
            CallBuilder c(b, loc, site);
            c.i(static_cast<int64_t>(o.getReduction()));
            c.type(computeOf(o));
            c.i(o.getInputs().size());
            for (Value v : o.getInputs())
              c.tensor(operand(v));
            for (Value m : out)
              c.tensor(m);
            c.call("all_reduce", module);
            return success();
          })
          .Case([&](UpdateLossScaleOp o) {
            CallBuilder c(b, loc, site);
            c.f(o.getGrowthFactor().convertToFloat());
            c.f(o.getBackoffFactor().convertToFloat());
            c.i(o.getGrowthInterval());
            c.f(o.getMinScale() ? o.getMinScale()->convertToFloat() : 0.0);
            c.f(o.getMaxScale() ? o.getMaxScale()->convertToFloat() : 0.0);
            for (Value v : {o.getScale(), o.getGoodSteps(), o.getFoundInf()})
              c.tensor(operand(v));
            for (Value m : out)
              c.tensor(m);
            c.call("update_loss_scale", module);
            return success();
          })
          .Case([&](SgdUpdateOp o) {
            // Before the call's scope opens: the copy outlives the call.
            Value copy = fuseShadowCast(o.getNewParam());
            CallBuilder c(b, loc, site);
            c.f(o.getLr().convertToFloat());
            c.f(o.getMomentum().convertToFloat());
            c.f(o.getWeightDecay().convertToFloat());
            c.i(o.getNesterov());
            c.i(o.getMomentumBuffer() != nullptr);
            c.i(o.getSkipIf() != nullptr);
            c.i(copy != nullptr);
            c.tensor(operand(o.getParam()));
            c.tensor(operand(o.getGrad()));
            if (o.getMomentumBuffer())
              c.tensor(operand(o.getMomentumBuffer()));
            if (o.getSkipIf())
              c.tensor(operand(o.getSkipIf()));
            for (Value m : out)
              c.tensor(m);
            if (copy)
              c.tensor(copy);
            c.call("sgd_update", module);
            return success();
          })
          .Case([&](AdamUpdateOp o) {
            Value copy = fuseShadowCast(o.getNewParam());
            CallBuilder c(b, loc, site);
            c.f(o.getLr().convertToFloat());
            c.f(o.getBeta1().convertToFloat());
            c.f(o.getBeta2().convertToFloat());
            c.f(o.getEpsilon().convertToFloat());
            c.f(o.getWeightDecay().convertToFloat());
            c.i(o.getSkipIf() != nullptr);
            c.i(copy != nullptr);
            for (Value v : {o.getParam(), o.getGrad(), o.getFirstMoment(),
                            o.getSecondMoment(), o.getStep()})
              c.tensor(operand(v));
            if (o.getSkipIf())
              c.tensor(operand(o.getSkipIf()));
            for (Value m : out)
              c.tensor(m);
            if (copy)
              c.tensor(copy);
            c.call("adam_update", module);
            return success();
          })
          .Default([&](Operation *) {
            return op->emitError() << "convert-tg-to-runtime has no lowering "
                                      "for '"
                                   << op->getName() << "'";
          });
  if (failed(result))
    return failure();
  record();
  return success();
}

struct ConvertTGToRuntime
    : public mp::impl::ConvertTGToRuntimeBase<ConvertTGToRuntime> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Every function with a body that still has tensors or tg ops.
    SmallVector<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      auto isTensor = llvm::IsaPred<TensorType>;
      bool hasTG = llvm::any_of(fn.getBody().getOps(), [](Operation &op) {
        return isa<TGDialect>(op.getDialect());
      });
      if (hasTG || llvm::any_of(fn.getArgumentTypes(), isTensor) ||
          llvm::any_of(fn.getResultTypes(), isTensor))
        functions.push_back(fn);
    }
    for (func::FuncOp fn : functions)
      if (failed(FunctionLowering(fn, module).run()))
        return signalPassFailure();
  }
};

} // namespace
