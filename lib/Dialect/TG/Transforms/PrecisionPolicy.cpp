//===- PrecisionPolicy.cpp - what the AMP pass is told to do --------------===//
//
// List edits are kept as deltas on the ops' default classes, so an edit
// names only the ops it changes. Overrides are matched on location names:
// exact names first, then glob patterns in the order given.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/PrecisionPolicy.h"

#include "mp/Support/Json.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mp::tg;

LogicalResult PrecisionPolicy::setComputeType(MLIRContext *ctx, StringRef name,
                                              const ErrorFn &err) {
  if (name == "f16")
    lowType = Float16Type::get(ctx);
  else if (name == "bf16")
    lowType = BFloat16Type::get(ctx);
  else {
    err("invalid compute-type '" + name + "'; expected f16 or bf16");
    return failure();
  }
  return setTarget(target, err);
}

LogicalResult PrecisionPolicy::setLevel(StringRef name, const ErrorFn &err) {
  std::optional<AmpLevel> parsed =
      llvm::StringSwitch<std::optional<AmpLevel>>(name)
          .Case("default", AmpLevel::Default)
          .Case("infer-as-deny", AmpLevel::InferAsDeny)
          .Case("force-all", AmpLevel::ForceAll)
          .Default(std::nullopt);
  if (!parsed) {
    err("invalid level '" + name +
        "'; expected default, infer-as-deny or force-all");
    return failure();
  }
  level = *parsed;
  return success();
}

LogicalResult PrecisionPolicy::setTarget(StringRef name, const ErrorFn &err) {
  // Which low types each target runs on a fast path (tensor cores on GPUs,
  // native instructions on CPUs).
  struct TargetInfo {
    bool f16, bf16;
    const char *advice;
  };
  std::optional<TargetInfo> info =
      llvm::StringSwitch<std::optional<TargetInfo>>(name)
          .Case("generic", TargetInfo{true, true, ""})
          .Case("cpu", TargetInfo{false, false,
                                  "use target=cpu-avx512bf16 on a CPU with "
                                  "AVX512-BF16, or target=generic to emulate"})
          .Case("cpu-avx512bf16",
                TargetInfo{false, true, "use compute-type=bf16"})
          .Cases({"sm_70", "sm_75"},
                 TargetInfo{true, false, "use compute-type=f16"})
          .Cases({"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100",
                  "sm_120"},
                 TargetInfo{true, true, ""})
          .Default(std::nullopt);
  if (!info) {
    err("invalid target '" + name +
        "'; expected generic, cpu, cpu-avx512bf16, sm_70, sm_75, sm_80, "
        "sm_86, sm_87, sm_89, sm_90, sm_100 or sm_120");
    return failure();
  }
  target = name.str();
  unsupportedReason.clear();
  if (lowType) {
    bool fast = lowType.isF16() ? info->f16 : info->bf16;
    if (!fast) {
      std::string typeName = lowType.isF16() ? "f16" : "bf16";
      unsupportedReason = "target " + target + " has no fast " + typeName +
                          " path; the graph stays in f32 (" + info->advice +
                          ")";
    }
  }
  return success();
}

LogicalResult PrecisionPolicy::editList(MLIRContext *ctx, StringRef opName,
                                        PrecisionClass cls, bool add,
                                        StringRef origin, const ErrorFn &err) {
  std::optional<RegisteredOperationName> info =
      RegisteredOperationName::lookup(opName, ctx);
  if (!info) {
    err(origin + ": unknown op '" + opName + "'");
    return failure();
  }
  if (!info->hasInterface<PrecisionOpInterface>()) {
    err(origin + ": op '" + opName +
        "' does not implement the precision interface");
    return failure();
  }
  ListEdit &edit = edits[opName];
  if (add) {
    if (edit.addedTo && *edit.addedTo != cls) {
      err(origin + ": op '" + opName + "' is put on both the " +
          stringifyPrecisionClass(*edit.addedTo) + " and the " +
          stringifyPrecisionClass(cls) + " lists");
      return failure();
    }
    edit.addedTo = cls;
  } else {
    edit.removedFrom.push_back(cls);
  }
  return success();
}

std::optional<PrecisionClass>
PrecisionPolicy::getListClass(PrecisionOpInterface op) const {
  std::optional<PrecisionClass> cls = op.getDefaultPrecisionClass();
  auto it = edits.find(op->getName().getStringRef());
  if (it == edits.end())
    return cls;
  if (llvm::is_contained(it->second.removedFrom, *cls))
    cls = std::nullopt;
  if (it->second.addedTo)
    cls = it->second.addedTo;
  return cls;
}

const PrecisionOverride *PrecisionPolicy::findOverride(StringRef name) const {
  for (const PrecisionOverride &o : overrides)
    if (!o.isGlob && o.pattern == name)
      return &o;
  for (const PrecisionOverride &o : overrides)
    if (o.isGlob && o.matches(name))
      return &o;
  return nullptr;
}

/// Reads `{"allow": [...], ...}` list edits from `obj`.
static LogicalResult readEdits(PrecisionPolicy &policy, MLIRContext *ctx,
                               const llvm::json::Object &obj, bool add,
                               StringRef where,
                               const PrecisionPolicy::ErrorFn &err) {
  for (const auto &[key, value] : obj) {
    std::optional<PrecisionClass> cls = symbolizePrecisionClass(key);
    if (!cls) {
      err(where + ": unknown list '" + key.str() +
          "'; expected allow, infer, clear or deny");
      return failure();
    }
    const llvm::json::Array *names = value.getAsArray();
    if (!names) {
      err(where + "." + key.str() + " must be an array of op names");
      return failure();
    }
    for (const llvm::json::Value &name : *names) {
      std::optional<StringRef> str = name.getAsString();
      if (!str) {
        err(where + "." + key.str() + " must hold op names (strings)");
        return failure();
      }
      if (failed(policy.editList(ctx, *str, *cls, add, where, err)))
        return failure();
    }
  }
  return success();
}

LogicalResult PrecisionPolicy::loadFile(MLIRContext *ctx, StringRef path,
                                        const ErrorFn &err) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    err("cannot read policy file '" + path +
        "': " + buffer.getError().message());
    return failure();
  }
  llvm::Expected<llvm::json::Value> json =
      mp::parseJson((*buffer)->getBuffer());
  if (!json) {
    err("policy file '" + path +
        "' is not valid JSON: " + llvm::toString(json.takeError()));
    return failure();
  }
  const llvm::json::Object *root = json->getAsObject();
  if (!root) {
    err("policy file '" + path + "' must hold a JSON object");
    return failure();
  }
  std::string where = "policy file '" + path.str() + "'";
  for (const auto &[key, value] : *root) {
    if (key == "add" || key == "remove") {
      const llvm::json::Object *obj = value.getAsObject();
      if (!obj) {
        err(where + ": '" + key.str() + "' must be an object of lists");
        return failure();
      }
      if (failed(readEdits(*this, ctx, *obj, key == "add",
                           where + ": " + key.str(), err)))
        return failure();
      continue;
    }
    if (key != "overrides") {
      err(where + ": unknown key '" + key.str() +
          "'; expected add, remove or overrides");
      return failure();
    }
    const llvm::json::Array *list = value.getAsArray();
    if (!list) {
      err(where + ": 'overrides' must be an array");
      return failure();
    }
    for (auto [i, entry] : llvm::enumerate(*list)) {
      std::string at = where + ": overrides[" + std::to_string(i) + "]";
      const llvm::json::Object *obj = entry.getAsObject();
      if (!obj) {
        err(at + " must be an object");
        return failure();
      }
      PrecisionOverride &o = overrides.emplace_back();
      o.origin = at;
      std::optional<StringRef> name = obj->getString("name");
      std::optional<StringRef> pattern = obj->getString("pattern");
      std::optional<StringRef> precision = obj->getString("precision");
      if (bool(name) == bool(pattern) || !precision || obj->size() != 2) {
        err(at + " needs \"precision\" and exactly one of \"name\" and "
                 "\"pattern\", all strings");
        return failure();
      }
      if (*precision == "f32")
        o.precision = PrecisionOverride::Precision::F32;
      else if (*precision == "low" ||
               (lowType && *precision == (lowType.isF16() ? "f16" : "bf16")))
        o.precision = PrecisionOverride::Precision::Low;
      else {
        err(at + ": invalid precision '" + *precision +
            "'; expected f32, low or the compute type");
        return failure();
      }
      o.isGlob = bool(pattern);
      o.pattern = (name ? *name : *pattern).str();
      if (o.isGlob) {
        auto glob = llvm::GlobPattern::create(o.pattern);
        if (!glob) {
          err(at + ": invalid pattern '" + o.pattern +
              "': " + llvm::toString(glob.takeError()));
          return failure();
        }
        o.glob = std::move(*glob);
      }
    }
  }
  return success();
}

std::string mp::tg::getLocationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(inner))
        return name.getName().str();
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return getLocationName(call.getCallee());
  std::string str;
  llvm::raw_string_ostream os(str);
  loc.print(os);
  return str;
}

std::string mp::tg::getReportLocation(Location loc) {
  bool named = false;
  std::string file;
  loc->walk([&](Location inner) {
    if (isa<NameLoc>(inner)) {
      named = true;
      return WalkResult::interrupt();
    }
    if (auto f = dyn_cast<FileLineColLoc>(inner); f && file.empty())
      file = llvm::formatv("{0}:{1}:{2}", f.getFilename().getValue(),
                           f.getLine(), f.getColumn());
    return WalkResult::advance();
  });
  return named || file.empty() ? getLocationName(loc) : file;
}

std::string mp::tg::getValueName(Value v) {
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
