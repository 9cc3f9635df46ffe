//===- Weights.cpp - initial weights in safetensors files -----------------===//

#include "mp/Runner/Weights.h"

#include "mp/Dialect/TG/IR/TGDialect.h"

using namespace mlir;
using namespace mp;
using namespace mp::runner;

/// Calls `fn(function, index, name, init)` for each tg.param argument with a
/// tg.init.
template <typename Fn> static void forEachInit(ModuleOp module, Fn &&fn) {
  module.walk([&](func::FuncOp f) {
    for (unsigned k = 0, e = f.getNumArguments(); k < e; ++k) {
      auto name = f.getArgAttrOfType<StringAttr>(k, tg::TGDialect::kParamAttr);
      auto init = f.getArgAttrOfType<ElementsAttr>(k, tg::TGDialect::kInitAttr);
      if (name && init)
        fn(f, k, name.getValue(), init);
    }
  });
}

uint64_t runner::initialWeightBytes(ModuleOp module) {
  uint64_t bytes = 0;
  forEachInit(module, [&](func::FuncOp, unsigned, StringRef, ElementsAttr init) {
    auto type = cast<ShapedType>(init.getType());
    bytes += uint64_t(type.getNumElements()) *
             ((type.getElementTypeBitWidth() + 7) / 8);
  });
  return bytes;
}

llvm::Expected<unsigned> runner::externaliseWeights(ModuleOp module,
                                                    llvm::StringRef path,
                                                    llvm::StringRef source) {
  Checkpoint weights;
  weights.metadata["format"] = "mp initial weights";
  weights.metadata["source"] = source.str();
  llvm::Error error = llvm::Error::success();
  std::vector<std::pair<func::FuncOp, unsigned>> moved;
  forEachInit(module, [&](func::FuncOp f, unsigned k, StringRef name,
                          ElementsAttr init) {
    if (error)
      return;
    auto type = cast<ShapedType>(init.getType());
    std::optional<mpElementType> element =
        toElementType(type.getElementType());
    if (!element) {
      error = llvm::createStringError(std::errc::not_supported,
                                      "parameter '%s' has an element type "
                                      "safetensors files of mp do not hold",
                                      name.str().c_str());
      return;
    }
    HostTensor t(*element, std::vector<int64_t>(type.getShape().begin(),
                                                type.getShape().end()));
    if (llvm::Error err = assignElements(t, init, name)) {
      error = std::move(err);
      return;
    }
    weights.tensors[name.str()] = std::move(t);
    moved.push_back({f, k});
  });
  if (error)
    return std::move(error);
  if (llvm::Error err = writeSafetensors(path, weights))
    return std::move(err);
  for (auto [f, k] : moved)
    f.removeArgAttr(k, tg::TGDialect::kInitAttr);
  return moved.size();
}
