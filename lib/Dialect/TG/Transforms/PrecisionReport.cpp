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

/// A DOT string literal.
static std::string quoted(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

void mp::tg::writePrecisionDot(raw_ostream &os,
                               ArrayRef<FunctionOpInterface> functions) {
  os << "digraph precision {\n"
     << "  node [shape=box, style=filled, fontname=\"Helvetica\"];\n"
     << "  // green: f16/bf16 storage, blue: f32, yellow: cast, white: other\n";
  DenseMap<Value, std::string> ids;
  unsigned next = 0;
  for (FunctionOpInterface fn : functions) {
    os << "  subgraph " << quoted(("cluster_" + fn.getName()).str())
       << " {\n    label = " << quoted(fn.getName()) << ";\n";
    for (BlockArgument arg : fn.getArguments()) {
      std::string id = "n" + std::to_string(next++);
      ids[arg] = id;
      os << "    " << id << " [shape=ellipse, fillcolor=\"#eeeeee\", label="
         << quoted(("arg " + std::to_string(arg.getArgNumber())))
         << "];\n";
    }
    fn->walk([&](Operation *op) {
      if (op == fn.getOperation())
        return;
      std::string id = "n" + std::to_string(next++);
      for (Value r : op->getResults())
        ids[r] = id;
      const char *fill = "#ffffff";
      std::string storage;
      if (isa<CastOp>(op))
        fill = "#f7e08a";
      for (Type t : op->getResultTypes()) {
        Type e = getElementTypeOrSelf(t);
        if (e.isF16() || e.isBF16()) {
          if (!isa<CastOp>(op))
            fill = "#9be89b";
        } else if (e.isF32() && !isa<CastOp>(op) && fill[1] == 'f') {
          fill = "#a8c8f0";
        }
        llvm::raw_string_ostream(storage) << (storage.empty() ? "" : ", ") << e;
      }
      std::string label = getLocationName(op->getLoc()) + "\\n" +
                          op->getName().getStringRef().str();
      if (!storage.empty())
        label += "\\n" + storage;
      if (auto p = dyn_cast<PrecisionOpInterface>(op))
        if (FloatType t = p.getComputeType())
          llvm::raw_string_ostream(label) << " (compute " << t << ")";
      // Escape quotes only: "\n" sequences are DOT line breaks.
      std::string escaped;
      for (char c : label) {
        if (c == '"')
          escaped += '\\';
        escaped += c;
      }
      os << "    " << id << " [fillcolor=\"" << fill << "\", label=\""
         << escaped << "\"];\n";
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
