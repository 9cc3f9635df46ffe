//===- PrecisionColoring.cpp - decide and rewrite precisions --------------===//
//
// The graph: one node per op that implements the precision interface, is on
// a list, and has f16/bf16/f32 data; an edge from a node to a node that
// reads one of its results as a data operand, looking through tg.cast (so
// the colouring sees the same graph before and after the pass, which makes
// the pass idempotent). Other ops and edges break propagation.
//
// Colouring follows Grappler's AutoMixedPrecision phases, each a depth-first
// search with one visited set shared by all roots, so the whole colouring is
// linear in nodes plus edges. The rewrite then decides a storage type per
// value from what its users want, inserts at most one cast per (value,
// type) right after the value's definition, sets compute types, and folds
// the casts it made.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/MixedPrecision.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <optional>
#include <utility>

using namespace mlir;
using namespace mp::tg;

static Type withElement(Type t, Type element) {
  return cast<RankedTensorType>(t).clone(element);
}

namespace {

enum class Dir { Inputs, Outputs, Both };

/// Why a node got its precision. Rendered to text only for the report.
enum class Rule : uint8_t {
  None,
  AllowList,
  DenyList,
  DenySpread,   // from `ruleFrom`
  BetweenAllow,
  FollowsLow,   // from `ruleFrom`
  ClearNextTo,  // from `ruleFrom`
  UserOverride, // `override`
  ForceAll,
  InferAsDeny,
  InferNoLowProducer,
  InferFedByF32, // from `ruleFrom`
  ClearNoNeighbour,
  OutputLayerF32,
  NoFastPath,
  OutOfRange, // an operand holds a constant the low type cannot
  LowIsland,  // `promoteIslands`
  // An infer or clear op left in f32 although it reads a low-precision
  // result (`lowInputsKeptF32`):
  F32User,     // every data operand low, but a user needs f32
  MixedInputs, // some data operands low, some f32
};

struct Node {
  PrecisionOpInterface op;
  /// The list the op is on for the colouring (after edits, level and
  /// overrides).
  PrecisionClass cls;
  bool independentStorage;
  /// The data operands share one storage type (matmul).
  bool sameOperandStorage;
  Rule rule = Rule::None;
  unsigned ruleFrom = 0;
  const PrecisionOverride *override = nullptr;
  /// Index of this node's first operand in Colouring::operandFlags.
  unsigned firstOperand = 0;
  SmallVector<unsigned, 4> fanin, fanout;
};

/// Per-operand facts, read once from the interface.
enum OperandFlags : uint8_t { kData = 1, kSensitive = 2 };

/// What a use wants the stored type of its value to be.
enum class Want { Low, Original, F32, Any };

class Colouring {
public:
  Colouring(FunctionOpInterface fn, const PrecisionPolicy &policy)
      : policy(policy), low(policy.getLowType()) {
    build(fn);
  }

  void colour();
  /// Keeps everything in f32 (the target has no fast path).
  void keepAll();
  void rewrite(FunctionOpInterface fn, FunctionReport &report);
  /// With the user's consent, takes arguments used only in low precision in
  /// the low type and returns low-precision results unconverted.
  void changeSignature(FunctionOpInterface fn);
  void describe(FunctionOpInterface fn, FunctionReport &report,
                bool describeOps);
  std::string renderRule(const Node &n) const;

private:
  void build(FunctionOpInterface fn);
  std::optional<unsigned> nodeOf(Operation *op) const {
    auto it = index.find(op);
    if (it == index.end())
      return std::nullopt;
    return it->second;
  }
  /// Depth-first search from `root`; `enter(idx)` says whether to visit a
  /// node other than the root, `visit(idx)` runs on every visited node.
  template <typename EnterFn, typename VisitFn>
  void dfs(unsigned root, Dir dir, EnterFn enter, VisitFn visit);
  Want wantOf(OpOperand &use) const;
  /// A batch or layer norm that computes in f32 and reads and writes
  /// activations of either type.
  bool isStorageNeutralNorm(unsigned i);
  bool isDataOperand(Node &n, unsigned i) const;
  /// Whether a data operand of `op` holds a constant whose magnitude the
  /// low type cannot hold (it would round to infinity).
  bool readsOutOfRange(PrecisionOpInterface op) const;
  void demoteOutputLayer();
  /// Whether `v` (a data operand's source, casts looked through) is a
  /// low-precision op's result, or a normalisation's data result fed by one.
  bool isLowResult(Value v);
  /// Whether any data operand of node i is a low-precision result, and
  /// whether every one is (or a constant the low type holds).
  std::pair<bool, bool> lowOperands(unsigned i);
  void promoteIslands();
  std::optional<Rule> lowInputsKeptF32(unsigned i);

  /// `t` with element type `element`, memoised: a step has few distinct
  /// tensor types, and uniquing one costs a hash and a lock.
  Type retype(Type t, Type element) {
    auto [it, inserted] = retyped.try_emplace({t, element});
    if (inserted)
      it->second = withElement(t, element);
    return it->second;
  }

  const PrecisionPolicy &policy;
  FloatType low;
  DenseMap<std::pair<Type, Type>, Type> retyped;
  std::vector<uint8_t> operandFlags;
  std::vector<Node> nodes;
  DenseMap<Operation *, unsigned> index;
  std::vector<char> allow, deny;
  std::vector<unsigned> stack;
  DenseMap<Value, Type> original;
  /// The casts this pass made (and kept).
  DenseSet<Operation *> created;
};

} // namespace

static bool isAmpFloat(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor)
    return false;
  Type e = tensor.getElementType();
  return e.isF16() || e.isBF16() || e.isF32();
}

static Value lookThroughCasts(Value v) {
  while (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  return v;
}

/// A magnitude `v` is known to hold somewhere, from the constants it is
/// made of: a tg.constant's largest |x|; what tg.select, tg.cast and the
/// movement ops make of constants (a select holds each branch where its
/// condition picks it). 0 when nothing is known. This finds the attention
/// masks that fill hidden scores with f32's lowest value.
static double knownMagnitude(Value v, unsigned depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 8)
    return 0;
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseFPElementsAttr>(c.getValue());
    if (!dense)
      return 0;
    if (dense.isSplat())
      return std::fabs(dense.getSplatValue<APFloat>().convertToDouble());
    double most = 0;
    if (dense.getNumElements() > (int64_t(1) << 20))
      return 0;
    for (const APFloat &x : dense.getValues<APFloat>())
      most = std::max(most, std::fabs(x.convertToDouble()));
    return most;
  }
  if (auto sel = dyn_cast<SelectOp>(op))
    return std::max(knownMagnitude(sel.getOnTrue(), depth + 1),
                    knownMagnitude(sel.getOnFalse(), depth + 1));
  if (isa<CastOp, BroadcastToOp, ReshapeOp, TransposeOp>(op))
    return knownMagnitude(op->getOperand(0), depth + 1);
  return 0;
}

bool Colouring::readsOutOfRange(PrecisionOpInterface op) const {
  double largest =
      APFloat::getLargest(low.getFloatSemantics()).convertToDouble();
  for (unsigned k = 0, e = op->getNumOperands(); k < e; ++k)
    if (op.getOperandRole(k) == OperandRole::Data &&
        isAmpFloat(op->getOperand(k).getType()) &&
        knownMagnitude(op->getOperand(k)) > largest)
      return true;
  return false;
}

bool Colouring::isStorageNeutralNorm(unsigned i) {
  Node &n = nodes[i];
  return n.cls == PrecisionClass::Deny && n.independentStorage &&
         isa<LayerNormOp, BatchNormOp, BatchNormInferenceOp>(
             n.op.getOperation());
}

bool Colouring::isDataOperand(Node &n, unsigned i) const {
  return operandFlags[n.firstOperand + i] & kData;
}

void Colouring::build(FunctionOpInterface fn) {
  size_t numOps = 0;
  fn->walk([&](Operation *) { ++numOps; });
  index.reserve(numOps);
  nodes.reserve(numOps);
  fn->walk([&](PrecisionOpInterface op) {
    std::optional<PrecisionClass> cls = policy.getListClass(op);
    if (!cls)
      return;
    // Reference (f64) ops and ops without floating-point data stay as
    // they are.
    bool hasFloat = false, hasF64 = false;
    for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                     op->getResultTypes())) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      if (!tensor)
        continue;
      hasFloat |= isAmpFloat(t);
      hasF64 |= tensor.getElementType().isF64();
    }
    if (!hasFloat || hasF64)
      return;
    Node n{op, *cls, op.hasIndependentResultStorage(),
           op.hasSameDataOperandStorage()};
    const PrecisionOverride *o =
        policy.hasOverrides()
            ? policy.findOverride(getLocationName(op->getLoc()))
            : nullptr;
    if (o) {
      n.override = o;
      n.cls = o->precision == PrecisionOverride::Precision::Low
                  ? PrecisionClass::Allow
                  : PrecisionClass::Deny;
      n.rule = Rule::UserOverride;
    } else if (policy.getLevel() == AmpLevel::ForceAll) {
      n.cls = PrecisionClass::Allow;
      n.rule = Rule::ForceAll;
    } else if (policy.getLevel() == AmpLevel::InferAsDeny &&
               n.cls == PrecisionClass::Infer) {
      n.cls = PrecisionClass::Deny;
      n.rule = Rule::InferAsDeny;
    }
    if (!o && n.cls != PrecisionClass::Deny && readsOutOfRange(op)) {
      n.cls = PrecisionClass::Deny;
      n.rule = Rule::OutOfRange;
    }
    index[op] = nodes.size();
    nodes.push_back(std::move(n));
  });
  for (Node &n : nodes) {
    PrecisionOpInterface op = n.op;
    n.firstOperand = operandFlags.size();
    for (unsigned k = 0, e = op->getNumOperands(); k < e; ++k) {
      uint8_t flags = 0;
      if (op.getOperandRole(k) == OperandRole::Data &&
          isAmpFloat(op->getOperand(k).getType())) {
        flags = kData;
        if (op.isPrecisionSensitiveOperand(k))
          flags |= kSensitive;
      }
      operandFlags.push_back(flags);
    }
  }
  for (auto [i, n] : llvm::enumerate(nodes)) {
    for (unsigned k = 0, e = n.op->getNumOperands(); k < e; ++k) {
      if (!isDataOperand(n, k))
        continue;
      Value src = lookThroughCasts(n.op->getOperand(k));
      if (std::optional<unsigned> p = nodeOf(src.getDefiningOp())) {
        n.fanin.push_back(*p);
        nodes[*p].fanout.push_back(i);
      }
    }
  }
}

template <typename EnterFn, typename VisitFn>
void Colouring::dfs(unsigned root, Dir dir, EnterFn enter, VisitFn visit) {
  stack.assign(1, root);
  visit(root);
  while (!stack.empty()) {
    unsigned cur = stack.back();
    stack.pop_back();
    auto step = [&](ArrayRef<unsigned> next) {
      for (unsigned idx : next)
        if (idx != root && enter(idx)) {
          visit(idx);
          stack.push_back(idx);
        }
    };
    if (dir != Dir::Outputs)
      step(nodes[cur].fanin);
    if (dir != Dir::Inputs)
      step(nodes[cur].fanout);
  }
}

void Colouring::colour() {
  size_t n = nodes.size();
  allow.assign(n, 0);
  deny.assign(n, 0);
  auto is = [&](unsigned i, PrecisionClass c) { return nodes[i].cls == c; };
  auto setRule = [&](unsigned i, Rule rule, unsigned from = 0) {
    if (nodes[i].rule == Rule::None) {
      nodes[i].rule = rule;
      nodes[i].ruleFrom = from;
    }
  };

  // Phase 1: the allow list.
  for (unsigned i = 0; i < n; ++i)
    if (is(i, PrecisionClass::Allow)) {
      allow[i] = 1;
      setRule(i, Rule::AllowList);
    }

  // Phase 2: deny spreads forward through clear and infer ops that lie
  // upstream of a deny or infer op.
  std::vector<char> upstream(n, 0);
  for (unsigned r = 0; r < n; ++r) {
    if (!is(r, PrecisionClass::Deny) && !is(r, PrecisionClass::Infer))
      continue;
    dfs(
        r, Dir::Inputs,
        [&](unsigned i) { return !upstream[i] && is(i, PrecisionClass::Clear); },
        [&](unsigned i) { upstream[i] = 1; });
  }
  for (unsigned r = 0; r < n; ++r) {
    if (!is(r, PrecisionClass::Deny) || deny[r])
      continue;
    setRule(r, Rule::DenyList);
    // A normalisation computes in f32 but reads and writes activations of
    // any type (as cuDNN's do): its arithmetic stays inside, and its
    // consumers are decided by what else they meet.
    if (isStorageNeutralNorm(r))
      continue;
    dfs(
        r, Dir::Outputs, [&](unsigned i) { return !deny[i] && upstream[i]; },
        [&](unsigned i) {
          deny[i] = 1;
          if (is(i, PrecisionClass::Deny))
            setRule(i, Rule::DenyList);
          else
            setRule(i, Rule::DenySpread, r);
        });
  }

  // Phase 3: clear and infer ops between allow ops become allow.
  std::vector<char> downstream(n, 0), upAllow(n, 0);
  for (unsigned r = 0; r < n; ++r) {
    if (!allow[r])
      continue;
    dfs(
        r, Dir::Outputs,
        [&](unsigned i) {
          return !downstream[i] && !allow[i] && !deny[i] &&
                 (is(i, PrecisionClass::Clear) || is(i, PrecisionClass::Infer));
        },
        [&](unsigned i) { downstream[i] = 1; });
  }
  for (unsigned r = 0; r < n; ++r) {
    if (!allow[r] || upAllow[r])
      continue;
    dfs(
        r, Dir::Inputs, [&](unsigned i) { return !upAllow[i] && downstream[i]; },
        [&](unsigned i) {
          upAllow[i] = 1;
          if (!allow[i] && downstream[i]) {
            allow[i] = 1;
            setRule(i, Rule::BetweenAllow);
          }
        });
  }

  // Phase 4: an infer op fed by an allow op and by no deny op becomes allow.
  // A normalisation of a low-precision activation passes its precision on
  // (Grappler lists FusedBatchNorm as infer; autocast runs batch norm in its
  // input's type): the residual add of two batch norms after convolutions
  // is low, as it would be after the convolutions themselves, instead of an
  // f32 island with a cast on each side. Nodes are in program order, so
  // chains of infer ops follow their first op.
  for (unsigned i = 0; i < n; ++i) {
    if (allow[i] || deny[i] || !is(i, PrecisionClass::Infer))
      continue;
    std::optional<unsigned> from;
    bool denied = false;
    for (unsigned k = 0, e = nodes[i].op->getNumOperands(); k < e; ++k) {
      if (!isDataOperand(nodes[i], k))
        continue;
      Value src = lookThroughCasts(nodes[i].op->getOperand(k));
      std::optional<unsigned> f = nodeOf(src.getDefiningOp());
      if (!f)
        continue;
      denied |= bool(deny[*f]);
      if (!from && isLowResult(src))
        from = *f;
    }
    if (from && !denied) {
      allow[i] = 1;
      setRule(i, Rule::FollowsLow, *from);
    }
  }

  // Phase 5: allow spreads through clear ops in both directions.
  std::vector<char> clearProp(n, 0);
  std::vector<std::pair<unsigned, unsigned>> added;
  for (unsigned r = 0; r < n; ++r) {
    if (!allow[r])
      continue;
    dfs(
        r, Dir::Both,
        [&](unsigned i) {
          return !clearProp[i] && !allow[i] && !deny[i] &&
                 is(i, PrecisionClass::Clear);
        },
        [&](unsigned i) {
          if (i != r) {
            clearProp[i] = 1;
            added.push_back({i, r});
          }
        });
  }
  for (auto [i, r] : added) {
    allow[i] = 1;
    setRule(i, Rule::ClearNextTo, r);
  }

  // Islands first: a producer that feeds only an island is then not taken
  // for an output layer.
  promoteIslands();
  demoteOutputLayer();

  for (unsigned i = 0; i < n; ++i) {
    if (allow[i] ||
        (!is(i, PrecisionClass::Clear) && !is(i, PrecisionClass::Infer)))
      continue;
    auto d = llvm::find_if(nodes[i].fanin, [&](unsigned f) { return deny[f]; });
    bool fedByF32 = is(i, PrecisionClass::Infer) && d != nodes[i].fanin.end();
    std::optional<Rule> lowInputs;
    if (!fedByF32 && nodes[i].rule == Rule::None)
      lowInputs = lowInputsKeptF32(i);
    if (lowInputs)
      setRule(i, *lowInputs);
    else if (is(i, PrecisionClass::Clear))
      setRule(i, Rule::ClearNoNeighbour);
    else if (fedByF32)
      setRule(i, Rule::InferFedByF32, *d);
    else
      setRule(i, Rule::InferNoLowProducer);
  }
}

Want Colouring::wantOf(OpOperand &use) const {
  std::optional<unsigned> u = nodeOf(use.getOwner());
  if (!u)
    return Want::Original;
  const Node &n = nodes[*u];
  uint8_t flags = operandFlags[n.firstOperand + use.getOperandNumber()];
  if (!(flags & kData))
    return Want::Original;
  if (allow[*u])
    return Want::Low;
  if (n.cls == PrecisionClass::Deny && n.independentStorage) {
    // Operands that must share a storage type are read in f32: the one
    // choice that holds whatever their producers store, and never rounds an
    // f32 operand (a master weight) to the low type.
    if ((flags & kSensitive) || n.sameOperandStorage)
      return Want::F32;
    return Want::Any;
  }
  return Want::Original;
}

/// The output layer in f32: an infer or clear op coloured low whose every
/// consumer needs f32, and whose inputs can be had in f32 without a cast,
/// computes in f32 instead (the bias add of the logits, say).
void Colouring::demoteOutputLayer() {
  for (unsigned i = nodes.size(); i-- > 0;) {
    Node &n = nodes[i];
    if (!allow[i] || n.override || n.cls == PrecisionClass::Allow)
      continue;
    bool allUsersNeedF32 = true, anyUser = false;
    for (Value r : n.op->getResults()) {
      if (!isAmpFloat(r.getType()))
        continue;
      for (OpOperand &use : r.getUses()) {
        anyUser = true;
        Want w = wantOf(use);
        allUsersNeedF32 &= w == Want::F32 ||
                           (w == Want::Original &&
                            getElementTypeOrSelf(r.getType()).isF32());
      }
    }
    if (!anyUser || !allUsersNeedF32)
      continue;
    bool inputsFree = true;
    for (unsigned k = 0, e = n.op->getNumOperands(); k < e; ++k) {
      if (!isDataOperand(n, k))
        continue;
      Value v = n.op->getOperand(k);
      std::optional<unsigned> p = nodeOf(v.getDefiningOp());
      bool f32Already = !p && getElementTypeOrSelf(v.getType()).isF32();
      bool producerFree = p && (!allow[*p] || nodes[*p].independentStorage);
      inputsFree &= f32Already || producerFree;
    }
    if (!inputsFree)
      continue;
    allow[i] = 0;
    n.rule = Rule::OutputLayerF32;
  }
}

bool Colouring::isLowResult(Value v) {
  auto r = dyn_cast<OpResult>(v);
  std::optional<unsigned> f = r ? nodeOf(r.getOwner()) : std::nullopt;
  if (!f)
    return false;
  if (allow[*f])
    return true;
  return isStorageNeutralNorm(*f) &&
         nodes[*f].op.isDataResult(r.getResultNumber()) &&
         llvm::any_of(nodes[*f].fanin, [&](unsigned g) { return allow[g]; });
}

/// A constant that the low type holds without overflow or underflow: each
/// element zero or a normal number of the low type's range. A cast of it
/// folds into a converted constant.
static bool isLowConstant(Value v, FloatType low) {
  auto c = lookThroughCasts(v).getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseFPElementsAttr>(c.getValue()) : nullptr;
  if (!dense || (!dense.isSplat() && dense.getNumElements() > (1 << 20)))
    return false;
  const llvm::fltSemantics &sem = low.getFloatSemantics();
  double largest = APFloat::getLargest(sem).convertToDouble();
  double smallest = APFloat::getSmallestNormalized(sem).convertToDouble();
  auto fits = [&](const APFloat &x) {
    double a = std::fabs(x.convertToDouble());
    return a == 0 || (a >= smallest && a <= largest);
  };
  if (dense.isSplat())
    return fits(dense.getSplatValue<APFloat>());
  return llvm::all_of(dense.getValues<APFloat>(), fits);
}

/// An f32 island between low-precision values: an infer or clear op left in
/// f32 whose data operands are low-precision results (or constants) and
/// whose every user wants the low type would cost a cast on each side to
/// compute what it computes in the low type with none. The phases miss it
/// where its producer only becomes low in phase 5 (the broadcast before the
/// scaling in a global average pool's gradient) or is a normalisation whose
/// input only becomes low there (conv, relu, batch norm, residual add).
/// Nodes are visited once, in program order: two such ops in a row are
/// each waiting for the other, and stay f32.
void Colouring::promoteIslands() {
  for (auto [i, n] : llvm::enumerate(nodes)) {
    if (allow[i] || deny[i] || n.override ||
        (n.cls != PrecisionClass::Infer && n.cls != PrecisionClass::Clear))
      continue;
    auto [lowOperand, operandsLow] = lowOperands(i);
    if (!lowOperand || !operandsLow)
      continue;
    bool anyUser = false, usersLow = true;
    for (OpResult r : n.op->getResults()) {
      if (!isAmpFloat(r.getType()) || !n.op.isDataResult(r.getResultNumber()))
        continue;
      for (OpOperand &use : r.getUses()) {
        anyUser = true;
        usersLow &= wantOf(use) == Want::Low;
      }
    }
    if (!anyUser || !usersLow)
      continue;
    allow[i] = 1;
    n.rule = Rule::LowIsland;
  }
}

std::pair<bool, bool> Colouring::lowOperands(unsigned i) {
  Node &n = nodes[i];
  bool lowOperand = false, operandsLow = true;
  for (unsigned k = 0, e = n.op->getNumOperands(); k < e; ++k) {
    if (!isDataOperand(n, k))
      continue;
    Value src = lookThroughCasts(n.op->getOperand(k));
    bool isLow = isLowResult(src);
    lowOperand |= isLow;
    operandsLow = operandsLow && (isLow || isLowConstant(src, low));
  }
  return {lowOperand, operandsLow};
}

/// Why an infer or clear op that reads a low-precision result stays in f32,
/// once the colouring is final: the phases looked before that producer was
/// low, so "no low-precision producer" would be false. Either way a cast
/// remains on one side, and f32 is the more accurate place for it.
std::optional<Rule> Colouring::lowInputsKeptF32(unsigned i) {
  auto [lowOperand, operandsLow] = lowOperands(i);
  if (!lowOperand)
    return std::nullopt;
  if (!operandsLow)
    return Rule::MixedInputs;
  Node &n = nodes[i];
  for (OpResult r : n.op->getResults()) {
    if (!isAmpFloat(r.getType()) || !n.op.isDataResult(r.getResultNumber()))
      continue;
    for (OpOperand &use : r.getUses())
      if (Want w = wantOf(use); w == Want::F32 || w == Want::Original)
        return Rule::F32User;
  }
  return std::nullopt;
}

void Colouring::keepAll() {
  for (auto [i, n] : llvm::enumerate(nodes)) {
    allow[i] = 0;
    n.rule = Rule::NoFastPath;
  }
}

void Colouring::rewrite(FunctionOpInterface fn, FunctionReport &report) {
  MLIRContext *ctx = fn->getContext();
  Type f32 = Float32Type::get(ctx);
  OpBuilder builder(ctx);
  DenseSet<Operation *> existingCasts;
  fn->walk([&](CastOp c) { existingCasts.insert(c); });
  SmallVector<Operation *> made;

  // Storage of every node result, decided from its users.
  for (auto [i, n] : llvm::enumerate(nodes)) {
    PrecisionOpInterface op = n.op;
    for (OpResult r : op->getResults()) {
      if (!isAmpFloat(r.getType()) || !op.isDataResult(r.getResultNumber()))
        continue;
      bool anyLow = false, anyF32 = false;
      for (OpOperand &use : r.getUses()) {
        Want w = wantOf(use);
        anyLow |= w == Want::Low;
        anyF32 |= w == Want::F32 || w == Want::Original;
      }
      bool storeLow;
      if (allow[i])
        storeLow = !n.independentStorage || !anyF32;
      else
        storeLow = n.cls == PrecisionClass::Deny && n.independentStorage &&
                   anyLow && !anyF32;
      if (storeLow && getElementTypeOrSelf(r.getType()) != low) {
        original[r] = r.getType();
        r.setType(retype(r.getType(), low));
      }
    }
  }

  // One cast per (value, type), right after the value's definition.
  DenseMap<std::pair<Value, Type>, Value> casts;
  auto castTo = [&](Value v, Type type) -> Value {
    auto key = std::make_pair(v, type);
    if (Value c = casts.lookup(key))
      return c;
    builder.setInsertionPointAfterValue(v);
    // Casts of arguments get a name of their own (the argument's role name);
    // a cast of an op's result shares that op's location.
    Location loc = v.getLoc();
    if (isa<BlockArgument>(v)) {
      std::string name = getValueName(v) + ".to_";
      llvm::raw_string_ostream(name) << getElementTypeOrSelf(type);
      loc = NameLoc::get(StringAttr::get(ctx, name), loc);
    }
    auto c = CastOp::create(builder, loc, type, v);
    made.push_back(c);
    created.insert(c);
    casts[key] = c.getResult();
    return c.getResult();
  };

  // Values whose stored type may differ from what a user expects: node
  // results and every value a node reads as data.
  SetVector<Value> external;
  for (Node &n : nodes)
    for (unsigned k = 0, e = n.op->getNumOperands(); k < e; ++k)
      if (isDataOperand(n, k)) {
        Value v = n.op->getOperand(k);
        if (!nodeOf(v.getDefiningOp()))
          external.insert(v);
      }
  SmallVector<OpOperand *> uses;
  auto fixUses = [&](Value v) {
    Type stored = v.getType();
    Type orig = original.lookup(v);
    if (!orig)
      orig = stored;
    uses.clear();
    for (OpOperand &use : v.getUses())
      uses.push_back(&use);
    for (OpOperand *use : uses) {
      if (created.contains(use->getOwner()))
        continue;
      Type required;
      switch (wantOf(*use)) {
      case Want::Low:
        required = retype(stored, low);
        break;
      case Want::F32:
        required = retype(stored, f32);
        break;
      case Want::Original:
        required = orig;
        break;
      case Want::Any:
        required = stored;
        break;
      }
      if (required != stored)
        use->set(castTo(v, required));
    }
  };
  for (Node &n : nodes)
    for (Value r : n.op->getResults())
      if (isAmpFloat(r.getType()))
        fixUses(r);
  for (Value v : external)
    fixUses(v);

  // Compute types: allow-list ops accumulate in f32, and so do the other
  // low ops that sum several terms per element (pooling); the remaining low
  // ops compute in the low type, deny ops that touch low storage in f32.
  for (auto [i, n] : llvm::enumerate(nodes)) {
    if (!n.op.hasComputeType())
      continue;
    auto touchesLow = [&, op = n.op] {
      for (Type t :
           llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
        if (isa<RankedTensorType>(t) && getElementTypeOrSelf(t) == low)
          return true;
      return false;
    };
    if (allow[i])
      n.op.setComputeType(
          n.cls == PrecisionClass::Allow || n.op.accumulatesTerms()
              ? cast<FloatType>(f32)
              : low);
    else if (touchesLow())
      n.op.setComputeType(cast<FloatType>(f32));
  }

  if (policy.allowsSignatureChange()) {
    changeSignature(fn);
    // It erases casts it folds into the signature: `created` forgets them,
    // and so must the list the folding below visits.
    llvm::erase_if(made, [&](Operation *c) { return !created.contains(c); });
  }

  // Fold the casts made: exact round trips and casts of constants.
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  RewritePatternSet none(ctx);
  (void)applyOpPatternsGreedily(made, FrozenRewritePatternSet(std::move(none)),
                                config);
  created.clear();
  fn->walk([&](CastOp c) {
    if (!existingCasts.contains(c))
      created.insert(c);
  });
  report.castsInserted = created.size();
}

void Colouring::changeSignature(FunctionOpInterface fn) {
  // Call sites would no longer match: only entry points change.
  if (!SymbolTable::symbolKnownUseEmpty(fn, fn->getParentOp())) {
    fn.emitRemark("tg-auto-mixed-precision: the signature of a function "
                  "that is called is not changed");
    return;
  }
  Block &body = fn.getFunctionBody().front();
  SmallVector<Type> argTypes(fn.getArgumentTypes());
  SmallVector<Type> resultTypes(fn.getResultTypes());
  // Arguments: not parameters or state (master weights stay f32), and every
  // use is one of our casts to the low type.
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (fn.getArgAttr(i, TGDialect::kParamAttr) ||
        fn.getArgAttr(i, TGDialect::kStateAttr) || arg.use_empty() ||
        !isAmpFloat(arg.getType()))
      continue;
    Operation *cast = *arg.getUsers().begin();
    bool onlyOneLowCast = created.contains(cast) && arg.hasOneUse() &&
                          getElementTypeOrSelf(cast->getResult(0)) == low;
    if (!onlyOneLowCast)
      continue;
    arg.setType(cast->getResult(0).getType());
    cast->getResult(0).replaceAllUsesWith(arg);
    created.erase(cast);
    cast->erase();
    argTypes[i] = arg.getType();
  }
  // Results: a low-precision value cast back to its original type only to
  // be returned is returned as it is. Updated parameters and state, and the
  // loss, are f32 anyway.
  Operation *ret = body.getTerminator();
  for (OpOperand &operand : ret->getOpOperands()) {
    auto cast = operand.get().getDefiningOp<CastOp>();
    if (!cast || !created.contains(cast) ||
        getElementTypeOrSelf(cast.getInput()) != low)
      continue;
    unsigned r = operand.getOperandNumber();
    if (fn.getResultAttr(r, TGDialect::kUpdateAttr))
      continue;
    operand.set(cast.getInput());
    resultTypes[r] = cast.getInput().getType();
    if (cast->use_empty()) {
      created.erase(cast);
      cast->erase();
    }
  }
  fn.setType(FunctionType::get(fn->getContext(), argTypes, resultTypes));
}

std::string Colouring::renderRule(const Node &n) const {
  auto from = [&] { return getLocationName(nodes[n.ruleFrom].op->getLoc()); };
  switch (n.rule) {
  case Rule::None:
    return "";
  case Rule::AllowList:
    return "allow list";
  case Rule::DenyList:
    return "deny list";
  case Rule::DenySpread:
    return "deny spread from " + from();
  case Rule::BetweenAllow:
    return "between allow ops";
  case Rule::FollowsLow:
    return "follows low-precision op " + from();
  case Rule::ClearNextTo:
    return "clear op next to low-precision op " + from();
  case Rule::UserOverride:
    return "user override (" + n.override->pattern + ")";
  case Rule::ForceAll:
    return "force-all level";
  case Rule::InferAsDeny:
    return "infer-as-deny level";
  case Rule::InferNoLowProducer:
    return "infer op with no low-precision producer";
  case Rule::InferFedByF32:
    return "infer op fed by f32 op " + from();
  case Rule::ClearNoNeighbour:
    return "clear op with no low-precision neighbour";
  case Rule::OutputLayerF32:
    return "all users need f32 (output layer in f32)";
  case Rule::NoFastPath:
    return policy.getUnsupportedReason().str();
  case Rule::LowIsland:
    return "between low-precision values (in f32 it would need a cast on "
           "each side)";
  case Rule::F32User:
    return "low-precision inputs, but a user needs f32 (a cast either way)";
  case Rule::MixedInputs:
    return "low-precision and f32 inputs (a cast either way)";
  case Rule::OutOfRange:
    return std::string("an operand holds a constant beyond ") +
           (low.isF16() ? "f16" : "bf16") +
           "'s range (a mask's fill value): kept in f32";
  }
  llvm_unreachable("unknown rule");
}

void Colouring::describe(FunctionOpInterface fn, FunctionReport &report,
                         bool describeOps) {
  for (auto [i, n] : llvm::enumerate(nodes)) {
    report.lowPrecisionOps += allow[i];
    if (!describeOps)
      continue;
    OpDecision d;
    d.name = getLocationName(n.op->getLoc());
    d.opName = n.op->getName().getStringRef().str();
    std::optional<PrecisionClass> listed = policy.getListClass(n.op);
    d.listClass = listed ? stringifyPrecisionClass(*listed).str() : "none";
    d.lowPrecision = allow[i];
    if (FloatType t = n.op.getComputeType()) {
      llvm::raw_string_ostream os(d.computeType);
      os << t;
    } else {
      d.computeType = "none";
    }
    auto typeName = [](Type t) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << getElementTypeOrSelf(t);
      return s;
    };
    for (Type t : n.op->getOperandTypes())
      d.operandTypes.push_back(typeName(t));
    for (Type t : n.op->getResultTypes())
      d.resultTypes.push_back(typeName(t));
    d.rule = renderRule(n);
    report.ops.push_back(std::move(d));
  }
  auto bytes = [](Type t) -> int64_t {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !tensor.getElementType().isIntOrFloat())
      return 0;
    return tensor.getNumElements() *
           ((tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  };
  for (Node &n : nodes) {
    for (Value r : n.op->getResults()) {
      int64_t b = bytes(r.getType());
      Type orig = original.lookup(r);
      report.activationBytesBefore += bytes(orig ? orig : r.getType());
      report.activationBytesAfter += b;
      if (getElementTypeOrSelf(r.getType()) == low)
        report.activationBytesLow += b;
    }
  }
  for (Operation *c : created)
    report.castBytes += bytes(c->getResult(0).getType());
}

void mp::tg::applyAutoMixedPrecision(FunctionOpInterface fn,
                                     const PrecisionPolicy &policy,
                                     FunctionReport &report,
                                     bool describeOps) {
  report.function = fn.getName().str();
  Colouring colouring(fn, policy);
  colouring.colour();
  if (policy.targetHasFastPath()) {
    colouring.rewrite(fn, report);
  } else {
    report.applied = false;
    colouring.keepAll();
  }
  colouring.describe(fn, report, describeOps);
}
