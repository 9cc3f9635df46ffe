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
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mp::tg;

namespace {

enum class Dir { Inputs, Outputs, Both };

struct Node {
  PrecisionOpInterface op;
  /// The list the op is on for the colouring (after edits, level and
  /// overrides).
  PrecisionClass cls;
  bool independentStorage;
  bool overridden = false;
  SmallVector<unsigned, 4> fanin, fanout;
  std::string name;
  std::string rule;
};

/// What a use wants the stored type of its value to be.
enum class Want { Low, Original, F32, Any };

class Colouring {
public:
  Colouring(FunctionOpInterface fn, const PrecisionPolicy &policy)
      : policy(policy), low(policy.getLowType()) {
    build(fn);
  }

  void colour();
  /// Keeps everything in f32, with `reason` as the rule of every op.
  void keepAll(StringRef reason);
  void rewrite(FunctionOpInterface fn, FunctionReport &report);
  void describe(FunctionOpInterface fn, FunctionReport &report);

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
  bool isDataOperand(Node &n, unsigned i) const;
  void demoteOutputLayer();

  const PrecisionPolicy &policy;
  FloatType low;
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

static Type withElement(Type t, Type element) {
  return cast<RankedTensorType>(t).clone(element);
}

/// A readable name for `v`: its producer's location name, or for a
/// function argument the name of its training-step role.
static std::string getValueName(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return getLocationName(v.getLoc());
  if (auto fn = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()))
    for (NamedAttribute attr : fn.getArgAttrs(arg.getArgNumber()))
      if (auto name = dyn_cast<StringAttr>(attr.getValue()))
        if (attr.getName().getValue().starts_with("tg."))
          return name.str();
  return "arg" + std::to_string(arg.getArgNumber());
}

static Value lookThroughCasts(Value v) {
  while (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  return v;
}

bool Colouring::isDataOperand(Node &n, unsigned i) const {
  PrecisionOpInterface op = n.op;
  return op.getOperandRole(i) == OperandRole::Data &&
         isAmpFloat(op->getOperand(i).getType());
}

void Colouring::build(FunctionOpInterface fn) {
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
    Node n{op, *cls, op.hasIndependentResultStorage()};
    n.name = getLocationName(op->getLoc());
    if (const PrecisionOverride *o = policy.findOverride(n.name)) {
      n.overridden = true;
      n.cls = o->precision == PrecisionOverride::Precision::Low
                  ? PrecisionClass::Allow
                  : PrecisionClass::Deny;
      n.rule = "user override (" + o->pattern + ")";
    } else if (policy.getLevel() == AmpLevel::ForceAll) {
      n.cls = PrecisionClass::Allow;
      n.rule = "force-all level";
    } else if (policy.getLevel() == AmpLevel::InferAsDeny &&
               n.cls == PrecisionClass::Infer) {
      n.cls = PrecisionClass::Deny;
      n.rule = "infer-as-deny level";
    }
    index[op] = nodes.size();
    nodes.push_back(std::move(n));
  });
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
  auto setRule = [&](unsigned i, const Twine &rule) {
    if (!nodes[i].overridden && nodes[i].rule.empty())
      nodes[i].rule = rule.str();
  };

  // Phase 1: the allow list.
  for (unsigned i = 0; i < n; ++i)
    if (is(i, PrecisionClass::Allow)) {
      allow[i] = 1;
      setRule(i, "allow list");
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
    setRule(r, "deny list");
    dfs(
        r, Dir::Outputs, [&](unsigned i) { return !deny[i] && upstream[i]; },
        [&](unsigned i) {
          deny[i] = 1;
          if (is(i, PrecisionClass::Deny))
            setRule(i, "deny list");
          else
            setRule(i, "deny spread from " + nodes[r].name);
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
            setRule(i, "between allow ops");
          }
        });
  }

  // Phase 4: an infer op fed by an allow op and by no deny op becomes allow.
  // Nodes are in program order, so chains of infer ops follow their first
  // op.
  for (unsigned i = 0; i < n; ++i) {
    if (allow[i] || deny[i] || !is(i, PrecisionClass::Infer))
      continue;
    std::optional<unsigned> from;
    bool denied = false;
    for (unsigned f : nodes[i].fanin) {
      denied |= bool(deny[f]);
      if (allow[f] && !from)
        from = f;
    }
    if (from && !denied) {
      allow[i] = 1;
      setRule(i, "follows low-precision op " + nodes[*from].name);
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
    setRule(i, "clear op next to low-precision op " + nodes[r].name);
  }

  demoteOutputLayer();

  for (unsigned i = 0; i < n; ++i) {
    if (allow[i])
      continue;
    if (is(i, PrecisionClass::Clear)) {
      setRule(i, "clear op with no low-precision neighbour");
      continue;
    }
    if (!is(i, PrecisionClass::Infer))
      continue;
    auto d = llvm::find_if(nodes[i].fanin, [&](unsigned f) { return deny[f]; });
    if (d != nodes[i].fanin.end())
      setRule(i, "infer op fed by f32 op " + nodes[*d].name);
    else
      setRule(i, "infer op with no low-precision producer");
  }
}

Want Colouring::wantOf(OpOperand &use) const {
  std::optional<unsigned> u = nodeOf(use.getOwner());
  if (!u)
    return Want::Original;
  const Node &n = nodes[*u];
  PrecisionOpInterface op = n.op;
  unsigned i = use.getOperandNumber();
  if (op.getOperandRole(i) != OperandRole::Data)
    return Want::Original;
  if (allow[*u])
    return Want::Low;
  if (n.cls == PrecisionClass::Deny && n.independentStorage)
    return op.isPrecisionSensitiveOperand(i) ? Want::F32 : Want::Any;
  return Want::Original;
}

/// The output layer in f32: an infer or clear op coloured low whose every
/// consumer needs f32, and whose inputs can be had in f32 without a cast,
/// computes in f32 instead (the bias add of the logits, say).
void Colouring::demoteOutputLayer() {
  for (unsigned i = nodes.size(); i-- > 0;) {
    Node &n = nodes[i];
    if (!allow[i] || n.overridden || n.cls == PrecisionClass::Allow)
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
    n.rule = "all users need f32 (output layer in f32)";
  }
}

void Colouring::keepAll(StringRef reason) {
  for (auto [i, n] : llvm::enumerate(nodes)) {
    allow[i] = 0;
    n.rule = reason.str();
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
    for (Value r : n.op->getResults()) {
      if (!isAmpFloat(r.getType()))
        continue;
      original[r] = r.getType();
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
      if (storeLow)
        r.setType(withElement(r.getType(), low));
    }
  }

  // One cast per (value, type), right after the value's definition.
  DenseMap<std::pair<Value, Type>, Value> casts;
  auto castTo = [&](Value v, Type type) -> Value {
    auto key = std::make_pair(v, type);
    if (Value c = casts.lookup(key))
      return c;
    builder.setInsertionPointAfterValue(v);
    Type elem = getElementTypeOrSelf(type);
    std::string name;
    llvm::raw_string_ostream os(name);
    os << getValueName(v) << ".to_" << elem;
    Location loc = NameLoc::get(StringAttr::get(ctx, name), v.getLoc());
    auto c = CastOp::create(builder, loc, type, v);
    made.push_back(c);
    created.insert(c);
    casts[key] = c.getResult();
    return c.getResult();
  };

  // Values whose stored type may differ from what a user expects: node
  // results and every value a node reads as data.
  SetVector<Value> values;
  for (Node &n : nodes) {
    for (Value r : n.op->getResults())
      if (isAmpFloat(r.getType()))
        values.insert(r);
    for (unsigned k = 0, e = n.op->getNumOperands(); k < e; ++k)
      if (isDataOperand(n, k))
        values.insert(n.op->getOperand(k));
  }
  for (Value v : values) {
    Type stored = v.getType();
    Type orig = original.lookup(v);
    if (!orig)
      orig = stored;
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : v.getUses())
      uses.push_back(&use);
    for (OpOperand *use : uses) {
      if (created.contains(use->getOwner()))
        continue;
      Type required;
      switch (wantOf(*use)) {
      case Want::Low:
        required = withElement(stored, low);
        break;
      case Want::F32:
        required = withElement(stored, f32);
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
  }

  // Compute types: allow-list ops accumulate in f32, other low ops compute
  // in the low type, deny ops that touch low storage compute in f32.
  for (auto [i, n] : llvm::enumerate(nodes)) {
    if (!n.op.hasComputeType())
      continue;
    auto touchesLow = [&] {
      for (Type t :
           llvm::concat<Type>(n.op->getOperandTypes(), n.op->getResultTypes()))
        if (isa<RankedTensorType>(t) && getElementTypeOrSelf(t) == low)
          return true;
      return false;
    };
    if (allow[i])
      n.op.setComputeType(n.cls == PrecisionClass::Allow
                              ? cast<FloatType>(f32)
                              : low);
    else if (touchesLow())
      n.op.setComputeType(cast<FloatType>(f32));
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

void Colouring::describe(FunctionOpInterface fn, FunctionReport &report) {
  FloatType low = this->low;
  for (auto [i, n] : llvm::enumerate(nodes)) {
    OpDecision d;
    d.name = n.name;
    d.opName = n.op->getName().getStringRef().str();
    std::optional<PrecisionClass> listed = policy.getListClass(n.op);
    d.listClass = listed ? stringifyPrecisionClass(*listed).str() : "none";
    d.lowPrecision = allow[i];
    report.lowPrecisionOps += allow[i];
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
    d.rule = n.rule;
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
                                     FunctionReport &report) {
  report.function = fn.getName().str();
  Colouring colouring(fn, policy);
  colouring.colour();
  if (policy.targetHasFastPath()) {
    colouring.rewrite(fn, report);
  } else {
    report.applied = false;
    colouring.keepAll(policy.getUnsupportedReason());
  }
  colouring.describe(fn, report);
}
