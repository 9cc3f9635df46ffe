//===- Numerics.cpp - numerics checks and adaptive precision in mp-runner -===//

#include "mp/Runner/Numerics.h"

#include "mp/Support/Json.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdio>
#include <limits>

using namespace mp;
using namespace mp::runner;

namespace {

constexpr double kF16Max = 65504.0;
constexpr double kF16MinNormal = 6.103515625e-05;
constexpr double kF16MinSubnormal = 5.960464477539063e-08;
constexpr double kBF16Max = 3.3895313892515355e38;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

void printRange(llvm::raw_ostream &os, llvm::StringRef what, unsigned index,
                llvm::StringRef type, int64_t row, llvm::ArrayRef<float> rows) {
  os << llvm::formatv("  {0} #{1} ({2}): ", what, index, type);
  if (row < 0) {
    os << "integers, no range\n";
    return;
  }
  ValueRange r = rangeAt(rows, row);
  os << "min " << num(r.min) << ", max " << num(r.max) << ", amax "
     << num(r.amax) << ", smallest |x| > 0 " << num(r.aminNonZero);
  if (r.nans > 0 || r.infs > 0)
    os << "; " << int64_t(r.nans) << " NaN, " << int64_t(r.infs) << " infinite";
  os << "\n";
}

} // namespace

ValueRange runner::rangeAt(llvm::ArrayRef<float> rows, int64_t row) {
  const float *r = rows.data() + row * 6;
  return {r[0], r[1], r[2], r[3], r[4], r[5]};
}

std::string runner::describeCheckedOp(const CheckedOp &op) {
  std::string s = llvm::formatv("op #{0} '{1}' ({2}", op.id, op.name, op.op);
  if (!op.location.empty())
    s += ", " + op.location;
  return s + ")";
}

void runner::printNonfiniteReport(llvm::raw_ostream &os,
                                  const StepRecord &record, const CheckedOp &op,
                                  llvm::ArrayRef<float> rows) {
  os << "numerics: step " << record.step
     << ": the first non-finite value came from " << op.op << " '" << op.name
     << "'\n";
  if (!op.location.empty())
    os << "  at " << op.location << " (op #" << op.id << " of the step";
  else
    os << "  (op #" << op.id << " of the step";
  os << (op.gradient ? ", a gradient op" : ", a forward op") << ")\n";
  os << "  compute " << (op.compute.empty() ? "-" : op.compute) << "; operands "
     << llvm::join(op.operandTypes, ", ") << "; results "
     << llvm::join(op.resultTypes, ", ") << "\n";
  for (auto [i, row] : llvm::enumerate(op.operandRows))
    printRange(os, "operand", i, op.operandTypes[i], row, rows);
  for (auto [i, row] : llvm::enumerate(op.resultRows))
    printRange(os, "result", i, op.resultTypes[i], row, rows);
  if (record.skipped)
    os << "  the step was skipped by loss scaling (loss scale now "
       << formatScale(record) << ")\n";
}

//===----------------------------------------------------------------------===//
// Range statistics
//===----------------------------------------------------------------------===//

void RangeStatistics::add(llvm::ArrayRef<float> rows) {
  size_t n = rows.size() / 6;
  if (amax.empty()) {
    amax.assign(n, 0.0f);
    aminNonZero.assign(n, std::numeric_limits<float>::infinity());
    nonfiniteSteps.assign(n, 0);
  }
  for (size_t i = 0; i < n && i < amax.size(); ++i) {
    ValueRange r = rangeAt(rows, i);
    amax[i] = std::max(amax[i], r.amax);
    aminNonZero[i] = std::min(aminNonZero[i], r.aminNonZero);
    nonfiniteSteps[i] += r.nans > 0 || r.infs > 0;
  }
  ++numSteps;
}

llvm::Error RangeStatistics::write(llvm::StringRef path,
                                   const StepSignature &sig,
                                   llvm::StringRef amp) const {
  llvm::json::Array ops;
  for (const CheckedOp &op : sig.checkedOps) {
    llvm::json::Array results;
    for (auto [i, row] : llvm::enumerate(op.resultRows)) {
      if (row < 0 || size_t(row) >= amax.size())
        continue;
      double a = amax[row], small = aminNonZero[row];
      results.push_back(llvm::json::Object{
          {"result", int64_t(i)},
          {"type", op.resultTypes[i]},
          {"amax", jsonNumber(a)},
          {"smallest_nonzero", jsonNumber(small)},
          {"amax_over_f16_max", jsonNumber(a / kF16Max)},
          {"amax_over_bf16_max", jsonNumber(a / kBF16Max)},
          {"below_f16_normal", std::isfinite(small) && small < kF16MinNormal},
          {"below_f16_subnormal",
           std::isfinite(small) && small < kF16MinSubnormal},
          {"nonfinite_steps", nonfiniteSteps[row]}});
    }
    ops.push_back(llvm::json::Object{{"id", op.id},
                                     {"name", op.name},
                                     {"op", op.op},
                                     {"location", op.location},
                                     {"gradient", op.gradient},
                                     {"compute", op.compute},
                                     {"results", std::move(results)}});
  }
  llvm::json::Object root{{"function", sig.entry},
                          {"amp", amp},
                          {"steps", numSteps},
                          {"f16_max", kF16Max},
                          {"f16_min_normal", kF16MinNormal},
                          {"ops", std::move(ops)}};
  return writeJsonFile(path, llvm::json::Value(std::move(root)));
}

llvm::Error RangeStatistics::annotateReport(llvm::StringRef path,
                                            const StepSignature &sig) const {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read '%s': %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  llvm::Expected<llvm::json::Value> report =
      llvm::json::parse((*buffer)->getBuffer());
  if (!report)
    return report.takeError();
  llvm::json::Object *root = report->getAsObject();
  llvm::json::Array *functions = root ? root->getArray("functions") : nullptr;
  if (!functions)
    return llvm::createStringError(std::errc::invalid_argument,
                                   "'%s' is not a precision report",
                                   path.str().c_str());
  for (llvm::json::Value &fn : *functions) {
    llvm::json::Object *f = fn.getAsObject();
    llvm::json::Array *ops = f ? f->getArray("ops") : nullptr;
    if (!ops || f->getString("function") != llvm::StringRef(sig.entry))
      continue;
    for (llvm::json::Value &entry : *ops) {
      llvm::json::Object *e = entry.getAsObject();
      std::optional<llvm::StringRef> name =
          e ? e->getString("name") : std::nullopt;
      if (!name)
        continue;
      for (const CheckedOp &op : sig.checkedOps) {
        if (op.name != *name || op.resultRows.empty() || op.resultRows[0] < 0 ||
            size_t(op.resultRows[0]) >= amax.size())
          continue;
        int64_t row = op.resultRows[0];
        (*e)["range"] = llvm::json::Object{
            {"steps", numSteps},
            {"amax", jsonNumber(amax[row])},
            {"smallest_nonzero", jsonNumber(aminNonZero[row])},
            {"amax_over_f16_max", jsonNumber(amax[row] / kF16Max)},
            {"nonfinite_steps", nonfiniteSteps[row]}};
        break;
      }
    }
  }
  return writeJsonFile(path, *report);
}

void RangeStatistics::printClosest(llvm::raw_ostream &os,
                                   const StepSignature &sig,
                                   unsigned count) const {
  std::vector<std::pair<double, std::string>> low;
  for (const CheckedOp &op : sig.checkedOps)
    for (auto [i, row] : llvm::enumerate(op.resultRows))
      if (row >= 0 && size_t(row) < amax.size() &&
          (op.resultTypes[i] == "f16" || op.resultTypes[i] == "bf16"))
        low.push_back({amax[row], op.name + " (" + op.resultTypes[i] + ")"});
  llvm::sort(low, [](auto &a, auto &b) { return a.first > b.first; });
  if (low.empty())
    return;
  os << "range statistics over " << numSteps
     << " steps; low-precision values closest to the f16 maximum (65504):\n";
  for (unsigned k = 0; k < count && k < low.size(); ++k)
    os << llvm::formatv("  {0,-40} amax {1} ({2}% of the f16 maximum)\n",
                        low[k].second, num(low[k].first),
                        num(100.0 * low[k].first / kF16Max));
}

//===----------------------------------------------------------------------===//
// Adaptive precision
//===----------------------------------------------------------------------===//

llvm::Error PrecisionAdapter::loadUserPolicy() {
  if (userPolicy.empty())
    return llvm::Error::success();
  auto buffer = llvm::MemoryBuffer::getFile(userPolicy);
  if (!buffer)
    return llvm::createStringError(
        buffer.getError(), "cannot read the policy file '%s': %s",
        userPolicy.c_str(), buffer.getError().message().c_str());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return llvm::createStringError(std::errc::invalid_argument,
                                   "policy file '%s': %s", userPolicy.c_str(),
                                   llvm::toString(json.takeError()).c_str());
  if (!json->getAsObject())
    return llvm::createStringError(std::errc::invalid_argument,
                                   "policy file '%s' is not a JSON object",
                                   userPolicy.c_str());
  base = std::move(*json->getAsObject());
  return llvm::Error::success();
}

std::optional<std::pair<const CheckedOp *, std::string>>
PrecisionAdapter::observe(const StepRecord &record, const StepSignature &sig) {
  while (!blamed.empty() &&
         blamed.front().first <= record.step - options.window)
    blamed.pop_front();
  if (!record.skipped || record.firstNonfinite < 0)
    return std::nullopt;
  const CheckedOp *op = sig.findCheckedOp(record.firstNonfinite);
  if (!op || exhausted.count(op->name))
    return std::nullopt;
  blamed.push_back({record.step, op->name});
  int64_t count = llvm::count_if(
      blamed, [&](const auto &b) { return b.second == op->name; });
  if (count >= options.skips)
    return std::make_pair(
        op,
        llvm::formatv("{0} of the skipped steps in the last {1} steps "
                      "(steps {2}..{3}) overflowed first in it",
                      count, options.window,
                      std::max<int64_t>(1, record.step - options.window + 1),
                      record.step)
            .str());
  if (record.hasLossScale && record.lossScale < options.minScale)
    return std::make_pair(
        op,
        llvm::formatv("the loss scale fell to {0}, below the floor {1}, "
                      "and step {2} still overflowed first in it",
                      formatScale(record), num(options.minScale), record.step)
            .str());
  return std::nullopt;
}

bool PrecisionAdapter::pin(const CheckedOp &op) {
  bool added = false;
  for (const std::string &name : op.pin)
    if (!llvm::is_contained(pinned, name)) {
      pinned.push_back(name);
      added = true;
    }
  if (!added)
    exhausted.insert(op.name);
  blamed.clear();
  return added;
}

llvm::json::Value PrecisionAdapter::policy() const {
  llvm::json::Object root = base;
  llvm::json::Array overrides;
  for (const std::string &name : pinned)
    overrides.push_back(
        llvm::json::Object{{"name", name}, {"precision", "f32"}});
  // The user's overrides follow, less exact ones for a pinned name.
  if (const llvm::json::Array *user = base.getArray("overrides"))
    for (const llvm::json::Value &o : *user) {
      const llvm::json::Object *obj = o.getAsObject();
      std::optional<llvm::StringRef> name =
          obj ? obj->getString("name") : std::nullopt;
      if (name && llvm::is_contained(pinned, name->str()))
        continue;
      overrides.push_back(o);
    }
  root["overrides"] = std::move(overrides);
  return llvm::json::Value(std::move(root));
}

llvm::Error PrecisionAdapter::writePolicy() const {
  return writeJsonFile(policyPath, policy());
}
