//===- ImportONNX.cpp - ONNX models to tg forward functions ---------------===//
//
// The graph-level part of the importer: arguments (inputs, labels,
// trained initializers with their data), the walk over the nodes, the
// results, and the clean-up passes. The op converters are in
// ConvertOps.cpp, folding on known tensors in Known.cpp, and reading the
// protobuf in OnnxReader.cpp.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "mp/Dialect/TG/IR/TGDialect.h"
#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mp::onnx;
namespace tg = mp::tg;

Importer::Importer(MLIRContext *context, StringRef path,
                   const OnnxImportOptions &options, Model &model)
    : builder(context), options(options), context(context), path(path.str()),
      model(model) {}

//===----------------------------------------------------------------------===//
// The node being translated
//===----------------------------------------------------------------------===//

int64_t Importer::opset() const {
  auto it = model.opsets.find(current ? current->domain : "");
  return it == model.opsets.end() ? 0 : it->second;
}

InFlightDiagnostic Importer::error() {
  InFlightDiagnostic diag = emitError(loc());
  diag << "node '" << current->name << "' (" << current->opType << ", opset "
       << opset() << "): ";
  return diag;
}

Location Importer::loc(StringRef suffix) {
  // The "line" of a node is its 1-based index in the graph; column 0 tells
  // diagnostics that there is no text to show.
  Location file = FileLineColLoc::get(context, path, currentIndex + 1, 0);
  std::string name = current->name;
  if (!suffix.empty())
    name += "." + suffix.str();
  return NameLoc::get(StringAttr::get(context, name), file);
}

static const mp::onnx::Attribute *findAttr(const Node &node, StringRef name) {
  return node.attribute(name);
}

int64_t Importer::attrInt(StringRef name, int64_t otherwise) const {
  const mp::onnx::Attribute *a = findAttr(*current, name);
  return a && a->kind == mp::onnx::Attribute::Kind::Int ? a->i : otherwise;
}

double Importer::attrFloat(StringRef name, double otherwise) const {
  const mp::onnx::Attribute *a = findAttr(*current, name);
  return a && a->kind == mp::onnx::Attribute::Kind::Float ? a->f : otherwise;
}

std::string Importer::attrString(StringRef name, StringRef otherwise) const {
  const mp::onnx::Attribute *a = findAttr(*current, name);
  return a && a->kind == mp::onnx::Attribute::Kind::String ? a->s : otherwise.str();
}

std::optional<std::vector<int64_t>>
Importer::attrInts(StringRef name) const {
  const mp::onnx::Attribute *a = findAttr(*current, name);
  if (!a || a->kind != mp::onnx::Attribute::Kind::Ints)
    return std::nullopt;
  return a->ints;
}

bool Importer::hasInput(unsigned k) const {
  return k < current->inputs.size() && !current->inputs[k].empty();
}

DataType Importer::inputType(unsigned k) const {
  auto it = types.find(current->inputs[k]);
  return it == types.end() ? DataType::Undefined : it->second;
}

const Known *Importer::known(unsigned k) const {
  if (!hasInput(k))
    return nullptr;
  auto it = knowns.find(current->inputs[k]);
  return it == knowns.end() ? nullptr : &it->second;
}

FailureOr<const Known *> Importer::requireKnown(unsigned k, StringRef what) {
  if (const Known *v = known(k))
    return v;
  InFlightDiagnostic diag = error();
  if (!hasInput(k))
    diag << what << " (input #" << k << ") is missing";
  else
    diag << what << " (input '" << current->inputs[k]
         << "') must be a constant: computed from initializers, Constant "
            "nodes and static shapes only";
  return failure();
}

FailureOr<Value> Importer::value(unsigned k) {
  if (!hasInput(k)) {
    error() << "input #" << k << " is missing";
    return failure();
  }
  const std::string &name = current->inputs[k];
  if (auto it = values.find(name); it != values.end())
    return it->second;
  auto it = knowns.find(name);
  if (it == knowns.end()) {
    error() << "input '" << name
            << "' is not defined before the node (the graph is not "
               "topologically sorted, or names a missing value)";
    return failure();
  }
  if (auto m = materialised.find(name); m != materialised.end())
    return m->second;
  FailureOr<Type> element = elementType(it->second.type);
  if (failed(element))
    return failure();
  if (llvm::is_contained(it->second.dims, 0)) {
    error() << "input '" << name
            << "' has no elements; tg tensors have no zero-size dimensions";
    return failure();
  }
  // Constants go to the top of the function, so that any node may use them.
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&cast<func::FuncOp>(function).front());
  Location at = NameLoc::get(StringAttr::get(context, name),
                             FileLineColLoc::get(context, path, 0, 0));
  Value v = constantAt(it->second, at);
  materialised[name] = v;
  return v;
}

std::vector<int64_t> Importer::shape(unsigned k) const {
  if (!hasInput(k))
    return {};
  const std::string &name = current->inputs[k];
  if (auto it = knowns.find(name); it != knowns.end())
    return it->second.dims;
  if (auto it = values.find(name); it != values.end()) {
    ArrayRef<int64_t> dims = cast<RankedTensorType>(it->second.getType())
                                 .getShape();
    return {dims.begin(), dims.end()};
  }
  return {};
}

void Importer::define(unsigned k, Value value, DataType type) {
  if (k >= current->outputs.size() || current->outputs[k].empty())
    return;
  const std::string &name = current->outputs[k];
  values[name] = value;
  types[name] = type;
  knowns.erase(name);
}

void Importer::define(unsigned k, Known value) {
  if (k >= current->outputs.size() || current->outputs[k].empty())
    return;
  const std::string &name = current->outputs[k];
  types[name] = value.type;
  knowns[name] = std::move(value);
  values.erase(name);
}

bool Importer::isOutputUsed(unsigned k) const {
  return k < current->outputs.size() && !current->outputs[k].empty() &&
         usedNames.count(current->outputs[k]);
}

FailureOr<Type> Importer::elementType(DataType type) {
  switch (type) {
  case DataType::Float:
    return options.useF64 ? Type(builder.getF64Type())
                          : Type(builder.getF32Type());
  case DataType::Double: return Type(builder.getF64Type());
  case DataType::Float16: return Type(builder.getF16Type());
  case DataType::BFloat16: return Type(builder.getBF16Type());
  case DataType::Int32: return Type(builder.getI32Type());
  case DataType::Int64: return Type(builder.getI64Type());
  case DataType::Bool: return Type(builder.getI1Type());
  default: break;
  }
  InFlightDiagnostic diag =
      current ? error() : emitError(FileLineColLoc::get(context, path, 0, 0));
  diag << "element type " << dataTypeName(type)
       << " is not supported (tg holds FLOAT16, BFLOAT16, FLOAT, DOUBLE, "
          "INT32, INT64 and BOOL tensors)";
  return failure();
}

Value Importer::constant(const Known &known, StringRef suffix) {
  return constantAt(known, loc(suffix));
}

/// The value of `known` as an attribute of `element` type.
static DenseElementsAttr toAttribute(const Known &known, Type element) {
  auto type = RankedTensorType::get(known.dims, element);
  if (auto f = dyn_cast<FloatType>(element)) {
    SmallVector<APFloat> vals;
    for (double v : known.f) {
      APFloat x(v);
      bool lost;
      x.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(x);
    }
    return DenseElementsAttr::get(type, vals);
  }
  unsigned width = element.getIntOrFloatBitWidth();
  SmallVector<APInt> vals;
  for (int64_t v : known.i)
    vals.push_back(APInt(width, uint64_t(v), /*isSigned=*/width > 1,
                         /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, vals);
}

Value Importer::constantAt(const Known &known, Location at) {
  DenseElementsAttr attr = toAttribute(known, *elementType(known.type));
  return tg::ConstantOp::create(builder, at, attr.getType(), attr);
}

Value Importer::scalar(Type element, double value, StringRef suffix) {
  auto type = RankedTensorType::get({}, element);
  return tg::ConstantOp::create(
      builder, loc(suffix), type,
      DenseElementsAttr::get(type, builder.getFloatAttr(element, value)));
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

void Importer::classifyInitializers() {
  std::set<std::string> constantUse;
  for (const Node &node : model.nodes)
    for (auto [k, input] : llvm::enumerate(node.inputs)) {
      usedNames.insert(input);
      if (isConstantOperand(node.opType, k))
        constantUse.insert(input);
      // A loss's labels that come straight from a graph input.
      if ((node.opType == "SoftmaxCrossEntropyLoss" ||
           node.opType == "NegativeLogLikelihoodLoss") &&
          k == 1)
        labelInputs.insert(input);
    }
  for (const auto &output : model.outputs)
    usedNames.insert(output.first);
  // The running statistics of a batch norm in training mode are state.
  for (const Node &node : model.nodes) {
    const Attribute *training = node.attribute("training_mode");
    if (node.opType == "BatchNormalization" && training && training->i &&
        node.inputs.size() == 5)
      for (unsigned k : {3u, 4u})
        if (llvm::any_of(model.initializers, [&](const Tensor &t) {
              return t.name == node.inputs[k];
            }))
          stateNames.insert(node.inputs[k]);
  }
  std::vector<llvm::GlobPattern> frozen;
  for (const std::string &glob : options.freeze)
    if (auto pattern = llvm::GlobPattern::create(glob))
      frozen.push_back(std::move(*pattern));
    else
      llvm::consumeError(pattern.takeError());
  for (const Tensor &t : model.initializers) {
    if (!usedNames.count(t.name) || !isFloatType(t.type) ||
        t.numElements() < 2 || constantUse.count(t.name) ||
        options.constantInputs.count(t.name) || stateNames.count(t.name))
      continue;
    if (llvm::any_of(frozen, [&](const llvm::GlobPattern &g) {
          return g.match(t.name);
        }))
      continue;
    trained.insert(t.name);
  }
}

LogicalResult Importer::createFunction() {
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  module = ModuleOp::create(fileLoc);
  SmallVector<Type> argTypes;
  SmallVector<NamedAttrList> argAttrs;
  SmallVector<std::pair<std::string, DataType>> argNames;
  auto addArg = [&](const std::string &name, DataType type,
                    ArrayRef<int64_t> dims, StringRef role) -> LogicalResult {
    FailureOr<Type> element = elementType(type);
    if (failed(element))
      return emitError(fileLoc) << "graph input '" << name << "' has element "
                                << "type " << dataTypeName(type)
                                << ", which mp does not support";
    argTypes.push_back(RankedTensorType::get(dims, *element));
    NamedAttrList attrs;
    attrs.set(role, builder.getStringAttr(name));
    argAttrs.push_back(attrs);
    argNames.push_back({name, type});
    return success();
  };
  for (const auto &[name, type] : model.inputs) {
    // Unused inputs stay arguments: they are the model's signature.
    if (!type.dims) {
      return emitError(fileLoc)
             << "graph input '" << name << "' has no shape; give one with "
             << "--input-shape " << name << "=<d0>x<d1>...";
    }
    for (auto [d, size] : llvm::enumerate(*type.dims)) {
      if (size > 0)
        continue;
      InFlightDiagnostic diag = emitError(fileLoc);
      diag << "graph input '" << name << "' has ";
      if (size == 0)
        diag << "an empty dimension " << d
             << " (tg tensors have no zero-size dimensions)";
      else if (!type.symbols[d].empty())
        diag << "symbolic dimension " << d << " '" << type.symbols[d]
             << "'; give its shape with --input-shape " << name
             << "=<d0>x<d1>..."
             << (d == 0 ? " or the batch size with --batch-size=<n>" : "");
      else
        diag << "unknown dimension " << d << "; give its shape with "
             << "--input-shape " << name << "=<d0>x<d1>...";
      return failure();
    }
    if (failed(addArg(name, type.type, *type.dims,
                      labelInputs.count(name) ? tg::TGDialect::kLabelAttr
                                              : tg::TGDialect::kInputAttr)))
      return failure();
  }
  // Trained initializers become parameters with their data as tg.init;
  // the rest are known constants.
  struct Param {
    const Tensor *tensor;
    unsigned arg;
  };
  SmallVector<Param> params;
  for (const Tensor &t : model.initializers) {
    bool isState = stateNames.count(t.name) && isFloatType(t.type);
    if (!trained.count(t.name) && !isState) {
      if (usedNames.count(t.name))
        knowns[t.name] = Known::fromTensor(t);
      types[t.name] = t.type;
      continue;
    }
    params.push_back({&t, unsigned(argTypes.size())});
    if (failed(addArg(t.name, t.type, t.dims,
                      isState ? tg::TGDialect::kStateAttr
                              : tg::TGDialect::kParamAttr)))
      return failure();
  }
  auto fnType = builder.getFunctionType(argTypes, {});
  auto fn = func::FuncOp::create(fileLoc, options.functionName, fnType);
  module->push_back(fn);
  function = fn;
  fn->setAttr(tg::TGDialect::kForwardAttr, builder.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  for (auto [k, attrs] : llvm::enumerate(argAttrs))
    fn.setArgAttrs(k, attrs.getDictionary(context));
  for (auto [k, name] : llvm::enumerate(argNames)) {
    values[name.first] = entry->getArgument(k);
    types[name.first] = name.second;
    entry->getArgument(k).setLoc(
        NameLoc::get(builder.getStringAttr(name.first), fileLoc));
  }
  for (const Param &p : params) {
    auto type = cast<RankedTensorType>(argTypes[p.arg]);
    const Tensor &t = *p.tensor;
    std::vector<char> bytes;
    if (type.getElementType().isF64() && t.type != DataType::Double) {
      bytes.resize(t.numElements() * 8);
      for (int64_t i = 0; i < t.numElements(); ++i) {
        double v = t.getFloat(i);
        std::memcpy(bytes.data() + i * 8, &v, 8);
      }
    } else {
      bytes = t.bytes;
    }
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(bytes), alignof(double));
    auto init = DenseResourceElementsAttr::get(type, t.name, std::move(blob));
    fn.setArgAttr(p.arg, tg::TGDialect::kInitAttr, init);
  }
  builder.setInsertionPointToEnd(entry);
  return success();
}

Value Importer::dropoutSeed() {
  if (seed)
    return seed;
  auto fn = cast<func::FuncOp>(function);
  auto type = RankedTensorType::get({}, builder.getI64Type());
  constexpr StringLiteral name = "dropout.seed";
  NamedAttrList attrs;
  attrs.set(tg::TGDialect::kStateAttr, builder.getStringAttr(name));
  attrs.set(tg::TGDialect::kInitAttr,
            DenseElementsAttr::get(type, builder.getI64IntegerAttr(0)
                                             .getValue()));
  Location loc = NameLoc::get(builder.getStringAttr(name),
                              FileLineColLoc::get(context, path, 0, 0));
  unsigned index = fn.getNumArguments();
  if (failed(fn.insertArgument(index, type,
                               attrs.getDictionary(context), loc)))
    return {};
  seed = fn.getArgument(index);
  stateUpdates.push_back(
      {name.str(), tg::NextSeedOp::create(builder, loc, seed).getResult()});
  return seed;
}

LogicalResult Importer::convertNode(const Node &node, unsigned index) {
  current = &node;
  currentIndex = index;
  if (!node.domain.empty()) {
    error() << "op '" << node.domain << "." << node.opType
            << "' is not supported (mp reads the default ONNX domain)";
    return failure();
  }
  Block &block = cast<func::FuncOp>(function).front();
  Operation *last = block.empty() ? nullptr : &block.back();

  // Evaluate elementwise ops on known inputs while importing.
  if (isFoldableElementwise(node.opType) && !node.inputs.empty()) {
    SmallVector<const Known *> in;
    for (unsigned k = 0; k < node.inputs.size(); ++k)
      if (const Known *v = known(k))
        in.push_back(v);
    if (in.size() == node.inputs.size()) {
      const Attribute *fmod = node.attribute("fmod");
      // Both arms StringRefs: with a std::string arm the conditional made a
      // temporary string that died before foldElementwise read it.
      StringRef op = node.opType == "Mod" && fmod && fmod->i
                         ? StringRef("FMod")
                         : StringRef(node.opType);
      llvm::Expected<Known> folded = foldElementwise(op, in);
      if (!folded) {
        error() << llvm::toString(folded.takeError());
        return failure();
      }
      define(0, std::move(*folded));
      return success();
    }
  }
  const auto &converters = getConverters();
  auto it = converters.find(node.opType);
  if (it == converters.end()) {
    error() << "op type '" << node.opType
            << "' is not supported (docs/Importing.md lists the ops mp "
               "imports)";
    return failure();
  }
  for (unsigned k = 0; k < node.inputs.size(); ++k)
    if (hasInput(k) && !values.count(node.inputs[k]) &&
        !knowns.count(node.inputs[k])) {
      error() << "input '" << node.inputs[k]
              << "' is not defined before the node (the graph is not "
                 "topologically sorted, or names a missing value)";
      return failure();
    }
  if (failed(it->second(*this)))
    return failure();
  for (unsigned k = 0; k < node.outputs.size(); ++k) {
    const std::string &name = node.outputs[k];
    if (isOutputUsed(k) && !values.count(name) && !knowns.count(name)) {
      error() << "output #" << k << " ('" << name << "') is not supported";
      return failure();
    }
  }
  // The ops made for the node must verify: a diagnostic here, at the node,
  // rather than a module that does not.
  Operation *first = last        ? last->getNextNode()
                     : block.empty() ? nullptr
                                     : &block.front();
  for (Operation *op = first; op;
       op = op->getNextNode())
    if (failed(verify(op, /*verifyRecursively=*/false)))
      return error() << "its translation does not verify (see above)",
             failure();
  return success();
}

LogicalResult Importer::addLabels(StringRef prediction, bool classes) {
  auto fn = cast<func::FuncOp>(function);
  Value pred = values[prediction.str()];
  auto type = cast<RankedTensorType>(pred.getType());
  Type labelType;
  if (classes) {
    if (type.getRank() < 1)
      return emitError(fn.getLoc())
             << "--labels=classes needs a prediction with a class dimension; "
             << "'" << prediction << "' is " << type;
    labelType = RankedTensorType::get(type.getShape().drop_back(),
                                      builder.getI32Type());
  } else {
    labelType = type;
  }
  std::string name = "labels";
  for (int k = 1; values.count(name); ++k)
    name = "labels_" + std::to_string(k);
  unsigned index = fn.getNumArguments();
  unsigned inputs = 0;
  for (unsigned k = 0; k < index; ++k)
    if (!fn.getArgAttr(k, tg::TGDialect::kParamAttr))
      inputs = k + 1;
  (void)fn.insertArgument(
      inputs, labelType,
      builder.getDictionaryAttr(builder.getNamedAttr(
          tg::TGDialect::kLabelAttr, builder.getStringAttr(name))),
      NameLoc::get(builder.getStringAttr(name), fn.getLoc()));
  return success();
}

LogicalResult Importer::finishFunction() {
  auto fn = cast<func::FuncOp>(function);
  Location fileLoc = fn.getLoc();
  current = nullptr;
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  std::optional<std::string> prediction;
  std::string labels = options.labels;
  if (labels == "auto") {
    bool hasLoss = llvm::any_of(model.outputs, [&](const auto &output) {
      return lossValues.count(output.first) > 0;
    });
    labels = hasLoss ? "none" : "classes";
  }
  if (labels != "none") {
    if (labels != "classes" && labels != "targets")
      return emitError(fileLoc) << "labels must be none, classes, targets or "
                                << "auto, got '" << labels << "'";
    SmallVector<std::string> floats;
    for (const auto &output : model.outputs) {
      auto it = values.find(output.first);
      if (it != values.end() && !lossValues.count(output.first) &&
          isa<FloatType>(
              cast<RankedTensorType>(it->second.getType()).getElementType()))
        floats.push_back(output.first);
    }
    if (floats.size() != 1)
      return emitError(fileLoc)
             << "adding labels needs one floating-point prediction output; "
             << "the model has " << floats.size();
    prediction = floats.front();
  }
  builder.setInsertionPointToEnd(&fn.front());
  for (const auto &[name, declared] : model.outputs) {
    Value v;
    if (auto it = values.find(name); it != values.end()) {
      v = it->second;
    } else if (auto k = knowns.find(name); k != knowns.end()) {
      if (failed(elementType(k->second.type)))
        return failure();
      if (llvm::is_contained(k->second.dims, 0))
        return emitError(fileLoc) << "graph output '" << name
                                  << "' has no elements; tg tensors have no "
                                     "zero-size dimensions";
      v = constantAt(k->second,
                     NameLoc::get(builder.getStringAttr(name), fileLoc));
    } else {
      return emitError(fileLoc) << "graph output '" << name
                                << "' is not computed by any node";
    }
    auto type = cast<RankedTensorType>(v.getType());
    if (declared.dims) {
      bool same = declared.dims->size() == size_t(type.getRank());
      for (size_t d = 0; same && d < declared.dims->size(); ++d)
        same = (*declared.dims)[d] < 0 || (*declared.dims)[d] == type.getDimSize(d);
      if (!same) {
        InFlightDiagnostic diag = emitError(fileLoc);
        diag << "graph output '" << name << "' is declared [";
        llvm::interleaveComma(*declared.dims, diag);
        diag << "], the graph computes " << type;
        return failure();
      }
    }
    results.push_back(v);
    NamedAttrList attrs;
    if (lossValues.count(name))
      attrs.set(tg::TGDialect::kLossAttr, builder.getUnitAttr());
    else
      attrs.set(tg::TGDialect::kOutputAttr,
                builder.getStringAttr(prediction && *prediction == name
                                          ? "logits"
                                          : name));
    resultAttrs.push_back(attrs.getDictionary(context));
  }
  // New running statistics, after the graph's outputs.
  for (const auto &[name, value] : stateUpdates) {
    results.push_back(value);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        tg::TGDialect::kUpdateAttr, builder.getStringAttr(name))));
  }
  if (prediction && failed(addLabels(*prediction, labels == "classes")))
    return failure();
  func::ReturnOp::create(builder, fileLoc, results);
  fn.setType(builder.getFunctionType(fn.getArgumentTypes(),
                                     ValueRange(results).getTypes()));
  for (auto [k, attrs] : llvm::enumerate(resultAttrs))
    fn.setResultAttrs(k, attrs);
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  context->loadDialect<tg::TGDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  int64_t version = model.opsets.count("") ? model.opsets[""] : 0;
  if (version < 13 || version > 17)
    emitWarning(fileLoc) << "the model uses ONNX opset " << version
                         << "; mp imports opsets 13 to 17 and reads others "
                            "where their ops agree";
  if (model.irVersion > 8)
    emitWarning(fileLoc) << "the model has IR version " << model.irVersion
                         << "; mp reads up to 8 and parses newer models "
                            "where it can";
  // Unnamed nodes are named as ONNX Runtime names them.
  for (auto [index, node] : llvm::enumerate(model.nodes))
    if (node.name.empty())
      node.name = node.opType + "_" + std::to_string(index);
  classifyInitializers();
  if (failed(createFunction()))
    return nullptr;
  for (auto [index, node] : llvm::enumerate(model.nodes))
    if (failed(convertNode(node, index)))
      return nullptr;
  if (failed(finishFunction()))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  PassManager pm(context);
  if (options.raiseDecomposedOps)
    pm.addPass(tg::createTGRaiseDecomposedOps());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*module)))
    return nullptr;
  return std::move(module);
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

llvm::Error mp::parseInputShape(StringRef spec, OnnxImportOptions &options) {
  auto [name, dims] = spec.rsplit('=');
  auto fail = [&] {
    return llvm::createStringError(
        std::errc::invalid_argument,
        "--input-shape expects <input>=<d0>x<d1>... with positive "
        "dimensions, got '%s'",
        spec.str().c_str());
  };
  if (name.empty() || dims.empty())
    return fail();
  std::vector<int64_t> shape;
  SmallVector<StringRef> parts;
  dims.split(parts, 'x');
  for (StringRef p : parts) {
    int64_t d;
    if (p.getAsInteger(10, d) || d <= 0 || d > (int64_t(1) << 40))
      return fail();
    shape.push_back(d);
  }
  options.inputShapes[name.str()] = std::move(shape);
  return llvm::Error::success();
}

OwningOpRef<ModuleOp> mp::importOnnxModel(StringRef path, MLIRContext *context,
                                          const OnnxImportOptions &options) {
  ReadOptions read;
  read.inputShapes = options.inputShapes;
  read.batchSize = options.batchSize;
  read.constantInputs = options.constantInputs;
  llvm::Expected<Model> model = readModel(path, read);
  if (!model) {
    // The location names the file; the message need not repeat it.
    std::string message = llvm::toString(model.takeError());
    StringRef text = message;
    text.consume_front((path + ": ").str());
    emitError(FileLineColLoc::get(context, path, 0, 0)) << text;
    return nullptr;
  }
  return Importer(context, path, options, *model).run();
}

llvm::Expected<mp::OnnxGraphSummary> mp::summarizeOnnxModel(StringRef path) {
  llvm::Expected<GraphSummary> graph = readGraphSummary(path);
  if (!graph)
    return graph.takeError();
  mp::OnnxGraphSummary summary;
  summary.opTypes = std::move(graph->opTypes);
  summary.outputs = std::move(graph->outputs);
  for (const auto &[name, type] : graph->inputs) {
    summary.inputs.push_back(name);
    summary.floatInputs.push_back(isFloatType(type));
  }
  return summary;
}

llvm::Expected<DenseElementsAttr>
mp::readOnnxTensor(StringRef path, MLIRContext *context, bool useF64) {
  llvm::Expected<Tensor> tensor = readTensor(path);
  if (!tensor)
    return tensor.takeError();
  Builder b(context);
  Type element;
  switch (tensor->type) {
  case DataType::Float: element = useF64 ? b.getF64Type() : b.getF32Type(); break;
  case DataType::Double: element = b.getF64Type(); break;
  case DataType::Float16: element = b.getF16Type(); break;
  case DataType::BFloat16: element = b.getBF16Type(); break;
  case DataType::Int32: element = b.getI32Type(); break;
  case DataType::Int64: element = b.getI64Type(); break;
  case DataType::Bool: element = b.getI1Type(); break;
  default:
    return llvm::createStringError(
        std::errc::not_supported, "%s: tensor of element type %s (tg holds "
        "FLOAT16, BFLOAT16, FLOAT, DOUBLE, INT32, INT64 and BOOL tensors)",
        path.str().c_str(), dataTypeName(tensor->type));
  }
  if (llvm::is_contained(tensor->dims, 0))
    return llvm::createStringError(std::errc::not_supported,
                                   "%s: the tensor has no elements",
                                   path.str().c_str());
  return toAttribute(Known::fromTensor(*tensor), element);
}

std::vector<std::string> mp::getSupportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto &entry : getConverters())
    ops.push_back(entry.getKey().str());
  for (StringRef op :
       {"Abs", "Sign", "Floor", "Ceil", "Round", "Sin", "Cos", "Mod",
        "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And",
        "Or", "Xor", "Not", "Where"})
    if (!getConverters().count(op))
      ops.push_back(op.str() + " (constants only)");
  llvm::sort(ops);
  return ops;
}
