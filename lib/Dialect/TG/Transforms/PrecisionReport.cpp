//===- PrecisionReport.cpp - the precision report and its picture --------===//
//
// The JSON report lists, per function, every op the pass reasoned about with
// its location name, list, decision, compute and storage types and the rule
// that decided it, then totals. The DOT picture draws every op of the
// functions, filled by the storage precision of its results.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/MixedPrecision.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mp::tg;

void mp::tg::writePrecisionReport(raw_ostream &os,
                                  const PrecisionPolicy &policy,
                                  ArrayRef<FunctionReport> functions) {
  llvm::json::OStream j(os, /*IndentSize=*/2);
  j.object([&] {
    std::string low;
    llvm::raw_string_ostream(low) << policy.getLowType();
    j.attribute("compute_type", low);
    j.attribute("target", policy.getTarget());
    j.attribute("level", policy.getLevel() == AmpLevel::Default ? "default"
                         : policy.getLevel() == AmpLevel::InferAsDeny
                             ? "infer-as-deny"
                             : "force-all");
    j.attributeArray("functions", [&] {
      for (const FunctionReport &f : functions) {
        j.object([&] {
          j.attribute("function", f.function);
          j.attribute("applied", f.applied);
          if (!f.applied)
            j.attribute("reason", policy.getUnsupportedReason());
          j.attributeArray("ops", [&] {
            for (const OpDecision &d : f.ops) {
              j.object([&] {
                j.attribute("name", d.name);
                j.attribute("op", d.opName);
                j.attribute("list", d.listClass);
                j.attribute("precision", d.lowPrecision ? low : "f32");
                j.attribute("compute", d.computeType);
                j.attributeArray("operands", [&] {
                  for (const std::string &t : d.operandTypes)
                    j.value(t);
                });
                j.attributeArray("results", [&] {
                  for (const std::string &t : d.resultTypes)
                    j.value(t);
                });
                j.attribute("rule", d.rule);
              });
            }
          });
          j.attributeObject("totals", [&] {
            j.attribute("ops", int64_t(f.ops.size()));
            j.attribute("low_precision_ops", f.lowPrecisionOps);
            j.attribute("casts_inserted", f.castsInserted);
            j.attribute("activation_bytes_before", f.activationBytesBefore);
            j.attribute("activation_bytes", f.activationBytesAfter);
            j.attribute("activation_bytes_low_precision",
                        f.activationBytesLow);
            j.attribute("cast_bytes", f.castBytes);
          });
        });
      }
    });
  });
  os << "\n";
}

/// A DOT string literal of `lines`, one per label line.
static std::string quoted(ArrayRef<std::string> lines) {
  std::string out = "\"";
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (i)
      out += "\\n";
    for (char c : line) {
      if (c == '"' || c == '\\')
        out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

void mp::tg::writePrecisionDot(raw_ostream &os,
                               ArrayRef<FunctionOpInterface> functions) {
  os << "digraph precision {\n"
     << "  node [shape=box, style=filled, fontname=\"Helvetica\"];\n"
     << "  // green: reads or writes f16/bf16, blue: f32 only, yellow: cast\n";
  DenseMap<Value, std::string> ids;
  unsigned next = 0;
  for (FunctionOpInterface fn : functions) {
    os << "  subgraph " << quoted({("cluster_" + fn.getName()).str()})
       << " {\n    label = " << quoted({fn.getName().str()}) << ";\n";
    for (BlockArgument arg : fn.getArguments()) {
      std::string id = "n" + std::to_string(next++);
      ids[arg] = id;
      std::string type;
      llvm::raw_string_ostream(type) << getElementTypeOrSelf(arg.getType());
      os << "    " << id << " [shape=ellipse, fillcolor=\"#eeeeee\", label="
         << quoted({getValueName(arg), type}) << "];\n";
    }
    auto isLow = [](Type t) {
      Type e = getElementTypeOrSelf(t);
      return e.isF16() || e.isBF16();
    };
    auto typeList = [](TypeRange types) {
      std::string s;
      llvm::raw_string_ostream os(s);
      llvm::interleaveComma(types, os,
                            [&](Type t) { os << getElementTypeOrSelf(t); });
      return s;
    };
    fn->walk([&](Operation *op) {
      if (op == fn.getOperation())
        return;
      std::string id = "n" + std::to_string(next++);
      for (Value r : op->getResults())
        ids[r] = id;
      // Green: the op reads or writes low-precision data; blue: f32 only;
      // yellow: casts; white: ops without floating-point data.
      bool anyLow = llvm::any_of(op->getOperandTypes(), isLow) ||
                    llvm::any_of(op->getResultTypes(), isLow);
      bool anyFloat = llvm::any_of(
          llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()),
          [](Type t) { return isa<FloatType>(getElementTypeOrSelf(t)); });
      const char *fill = isa<CastOp>(op) ? "#f7e08a"
                         : anyLow        ? "#9be89b"
                         : anyFloat      ? "#a8c8f0"
                                         : "#ffffff";
      SmallVector<std::string> label;
      if (isa<NameLoc, FusedLoc>(op->getLoc()))
        label.push_back(getLocationName(op->getLoc()));
      label.push_back(op->getName().getStringRef().str());
      if (op->getNumOperands() || op->getNumResults()) {
        std::string types = typeList(op->getOperandTypes()) + " -> " +
                            typeList(op->getResultTypes());
        if (auto p = dyn_cast<PrecisionOpInterface>(op))
          if (FloatType t = p.getComputeType())
            llvm::raw_string_ostream(types) << " (compute " << t << ")";
        label.push_back(types);
      }
      os << "    " << id << " [fillcolor=\"" << fill
         << "\", label=" << quoted(label) << "];\n";
      for (Value v : op->getOperands()) {
        auto it = ids.find(v);
        if (it != ids.end())
          os << "    " << it->second << " -> " << id << ";\n";
      }
    });
    os << "  }\n";
  }
  os << "}\n";
}
