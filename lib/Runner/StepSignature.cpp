//===- StepSignature.cpp - a compiled step's calling convention -----------===//

#include "mp/Runner/StepSignature.h"

#include "llvm/ADT/STLExtras.h"

using namespace mp;
using namespace mp::runner;

std::optional<unsigned>
StepSignature::findArgument(llvm::StringRef name) const {
  for (auto [k, a] : llvm::enumerate(arguments))
    if (a.name == name)
      return k;
  return std::nullopt;
}

std::optional<unsigned> StepSignature::findOutput(llvm::StringRef name) const {
  for (auto [k, r] : llvm::enumerate(results))
    if (r.kind == tg::StepResult::Kind::Output && r.name == name)
      return k;
  return std::nullopt;
}

const CheckedOp *StepSignature::findCheckedOp(int64_t id) const {
  for (const CheckedOp &op : checkedOps)
    if (op.id == id)
      return &op;
  return nullptr;
}
