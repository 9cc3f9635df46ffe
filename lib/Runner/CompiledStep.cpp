//===- CompiledStep.cpp - a training step compiled for the runtime --------===//

#include "CompiledStep.h"

#include "mp/Conversion/Passes.h"
#include "mp/Dialect/TG/IR/TGDialect.h"
#include "mp/Dialect/TG/Transforms/Passes.h"
#include "mp/Runtime/MPCompiled.h"
#ifdef MP_RUNTIME_HAS_CUDA
#include "mp/Runtime/MPCuda.h"
#endif

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mp;
using namespace mp::runner;
using llvm::createStringError;

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

FailureOr<func::FuncOp> runner::findTrainStep(ModuleOp module,
                                              llvm::StringRef entry) {
  func::FuncOp found;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!entry.empty() ? fn.getSymName() != entry : !tg::isTrainStep(fn))
      continue;
    if (found)
      return module.emitError()
             << "more than one function is marked tg.train_step ('"
             << found.getSymName() << "', '" << fn.getSymName()
             << "'); choose one with --entry";
    found = fn;
  }
  if (!found) {
    if (!entry.empty())
      return module.emitError() << "no function named '" << entry << "'";
    return module.emitError()
           << "no function is marked tg.train_step; see docs/TrainingStep.md";
  }
  if (!tg::isTrainStep(found))
    return found.emitError() << "'" << found.getSymName()
                             << "' is not marked tg.train_step";
  return found;
}

static FailureOr<StepSignature> readSignature(func::FuncOp fn) {
  FailureOr<tg::TrainStepSignature> sig = tg::getTrainStepSignature(fn);
  if (failed(sig))
    return failure();
  StepSignature out;
  out.entry = fn.getSymName().str();
  out.lossResult = sig->lossResult;
  auto describe = [&](Type t, StepTensor &into, llvm::StringRef name) {
    auto tensor = cast<RankedTensorType>(t);
    into.name = name.str();
    into.type = *toElementType(tensor.getElementType());
    into.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  };
  for (auto [k, a] : llvm::enumerate(sig->arguments)) {
    StepArgument arg;
    if (!toElementType(getElementTypeOrSelf(fn.getArgumentTypes()[k])))
      return fn.emitError() << "argument '" << a.name
                            << "' has an element type the runtime cannot hold";
    describe(fn.getArgumentTypes()[k], arg, a.name);
    arg.role = a.role;
    arg.init = fn.getArgAttrOfType<DenseElementsAttr>(k, tg::TGDialect::kInitAttr);
    out.arguments.push_back(std::move(arg));
  }
  for (auto [k, r] : llvm::enumerate(sig->results)) {
    StepResult res;
    if (!toElementType(getElementTypeOrSelf(fn.getResultTypes()[k])))
      return fn.emitError() << "result #" << k
                            << " has an element type the runtime cannot hold";
    describe(fn.getResultTypes()[k], res, r.name);
    if (r.kind == tg::StepResult::Kind::Loss)
      res.name = "loss";
    res.kind = r.kind;
    res.updates = r.updates;
    if (!r.updates)
      out.destinations.push_back(k);
    out.results.push_back(std::move(res));
  }
  return out;
}

FailureOr<StepSignature> runner::lowerStep(ModuleOp module,
                                           llvm::StringRef entry,
                                           const AmpConfig &amp) {
  FailureOr<func::FuncOp> fn = findTrainStep(module, entry);
  if (failed(fn))
    return failure();
  std::string name = fn->getSymName().str();
  if (amp.mode != "off") {
    auto options = tg::TGMixedPrecisionPipelineOptions::createFromString(
        amp.options);
    if (!options)
      return module.emitError() << "invalid mixed-precision options '"
                                << amp.options << "'";
    options->computeType = amp.mode;
    PassManager pm(module.getContext());
    tg::buildTGMixedPrecisionPipeline(pm, *options);
    if (failed(pm.run(module)))
      return failure();
  } else if (!amp.options.empty()) {
    return module.emitError()
           << "mixed-precision options given with --amp=off";
  }
  auto step = module.lookupSymbol<func::FuncOp>(name);
  FailureOr<StepSignature> sig = readSignature(step);
  if (failed(sig))
    return failure();
  PassManager pm(module.getContext());
  buildTGLowerToLLVMPipeline(pm);
  if (failed(pm.run(module)))
    return failure();
  return sig;
}

/// What both the JIT and object emission need: the host target and the
/// translations to LLVM IR.
static void prepareLLVM(MLIRContext *ctx) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
}

CompiledStep::~CompiledStep() = default;

llvm::Expected<std::unique_ptr<CompiledStep>>
CompiledStep::create(ModuleOp module, StepSignature signature,
                     unsigned optLevel, bool cuda) {
#ifndef MP_RUNTIME_HAS_CUDA
  if (cuda)
    return createStringError(std::errc::not_supported,
                             "this build has no CUDA backend");
#endif
  prepareLLVM(module.getContext());
  ExecutionEngineOptions options;
  auto transformer = makeOptimizingTransformer(optLevel, 0, nullptr);
  options.transformer = transformer;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  (*engine)->registerSymbols([cuda](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    int32_t count = 0;
#ifdef MP_RUNTIME_HAS_CUDA
    const mprtSymbol *symbols =
        cuda ? mprtCudaGetSymbols(&count) : mprtGetSymbols(&count);
#else
    (void)cuda;
    const mprtSymbol *symbols = mprtGetSymbols(&count);
#endif
    for (int32_t k = 0; k < count; ++k)
      map[interner(symbols[k].name)] = {
          llvm::orc::ExecutorAddr::fromPtr(symbols[k].address),
          llvm::JITSymbolFlags::Exported};
    return map;
  });
  (*engine)->initialize();
  std::unique_ptr<CompiledStep> step(new CompiledStep());
  step->engine = std::move(*engine);
  step->sig = std::move(signature);
  return step;
}

llvm::Error CompiledStep::run(llvm::ArrayRef<void *> buffers) {
  size_t expected = sig.arguments.size() + sig.destinations.size();
  if (buffers.size() != expected)
    return createStringError(std::errc::invalid_argument,
                             "step '%s' takes %zu buffers, got %zu",
                             sig.entry.c_str(), expected, buffers.size());
  std::vector<void *> pointers(buffers.begin(), buffers.end());
  std::vector<void *> packed;
  for (void *&p : pointers)
    packed.push_back(&p);
  if (llvm::Error err = engine->invokePacked(sig.entry, packed))
    return err;
  if (const char *message = mprtTakeError())
    return createStringError(std::errc::io_error, "runtime error: %s",
                             message);
  return llvm::Error::success();
}

llvm::Error runner::emitObjectFile(ModuleOp module, llvm::StringRef path) {
  prepareLLVM(module.getContext());
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return createStringError(std::errc::invalid_argument,
                             "cannot translate the step to LLVM IR");
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return createStringError(std::errc::invalid_argument, "%s", error.c_str());
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  if (llvm::Error err =
          makeOptimizingTransformer(2, 0, machine.get())(llvmModule.get()))
    return err;
  return llvm::writeToOutput(path, [&](llvm::raw_ostream &os) -> llvm::Error {
    llvm::SmallString<0> object;
    llvm::raw_svector_ostream objectStream(object);
    llvm::legacy::PassManager pm;
    if (machine->addPassesToEmitFile(pm, objectStream, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return createStringError(std::errc::not_supported,
                               "the target cannot emit object files");
    pm.run(*llvmModule);
    os << object;
    return llvm::Error::success();
  });
}

static std::string cIdentifier(llvm::StringRef name) {
  std::string id;
  for (char c : name)
    id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0])))
    id = "_" + id;
  return id;
}

llvm::Error runner::emitHeader(const StepSignature &sig, llvm::StringRef path,
                               llvm::StringRef source) {
  std::string fn = cIdentifier(sig.entry);
  std::string upper = llvm::StringRef(fn).upper();
  return llvm::writeToOutput(path, [&](llvm::raw_ostream &os) -> llvm::Error {
    os << "/* Generated by mp-compile from " << source
       << ". Do not edit.\n *\n"
       << " * " << fn << " runs one training step. It takes one pointer per "
       << "tensor, in the order of\n * " << fn << "_tensors: the step's "
       << "arguments, then a destination for each result\n * that is not "
       << "an update. Parameters and state are updated in place. Link with\n"
       << " * the mp runtime (mp_runtime); after a step, mprtTakeError() "
       << "returns any\n * runtime error.\n */\n\n";
    os << "#ifndef " << upper << "_H\n#define " << upper << "_H\n\n"
       << "#include \"mp/Runtime/MPCompiled.h\"\n\n"
       << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    os << "typedef enum " << fn << "_role {\n"
       << "  " << upper << "_PARAM, " << upper << "_STATE, " << upper
       << "_INPUT, " << upper << "_LABEL,\n  " << upper << "_LOSS, " << upper
       << "_OUTPUT\n} " << fn << "_role;\n\n";
    os << "typedef struct " << fn << "_tensor {\n"
       << "  const char *name;\n  " << fn << "_role role;\n"
       << "  mpElementType elementType;\n  int32_t rank;\n"
       << "  int64_t shape[MP_MAX_RANK];\n"
       << "  int32_t hasInit; /* a splat initial value from tg.init */\n"
       << "  double init;\n} " << fn << "_tensor;\n\n";
    size_t count = sig.arguments.size() + sig.destinations.size();
    os << "enum { " << upper << "_NUM_TENSORS = " << count << " };\n\n";
    os << "static const " << fn << "_tensor " << fn << "_tensors["
       << std::max<size_t>(count, 1) << "] = {\n";
    static const char *roles[] = {"PARAM", "STATE", "INPUT", "LABEL"};
    auto emit = [&](const StepTensor &t, llvm::StringRef role,
                    mlir::DenseElementsAttr init) -> llvm::Error {
      os << "  {\"" << t.name << "\", " << upper << "_" << role << ", "
         << "(mpElementType)" << int(t.type) << ", " << t.shape.size() << ", {";
      for (size_t d = 0; d < t.shape.size(); ++d)
        os << (d ? ", " : "") << t.shape[d];
      if (t.shape.empty())
        os << "0";
      os << "}, ";
      if (init) {
        if (!init.isSplat())
          return createStringError(
              std::errc::not_supported,
              "tg.init of '%s' is not a splat; the header only carries "
              "splat initial values",
              t.name.c_str());
        double v = isa<FloatType>(init.getElementType())
                       ? init.getSplatValue<llvm::APFloat>().convertToDouble()
                       : double(init.getSplatValue<llvm::APInt>().getSExtValue());
        os << "1, " << llvm::formatv("{0:e}", v).str();
      } else {
        os << "0, 0.0";
      }
      os << "},\n";
      return llvm::Error::success();
    };
    for (const StepArgument &a : sig.arguments)
      if (llvm::Error err = emit(a, roles[int(a.role)], a.init))
        return err;
    for (unsigned r : sig.destinations) {
      const StepResult &res = sig.results[r];
      if (llvm::Error err =
              emit(res, res.kind == tg::StepResult::Kind::Loss ? "LOSS"
                                                               : "OUTPUT",
                   {}))
        return err;
    }
    os << "};\n\n";
    os << "void " << fn << "(";
    for (size_t k = 0; k < count; ++k)
      os << (k ? ", " : "") << "void *";
    os << ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
    return llvm::Error::success();
  });
}
