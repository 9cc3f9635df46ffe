//===- CompiledStep.cpp - a training step compiled for the runtime --------===//

#include "mp/Runner/CompiledStep.h"
#include "mp/Runner/HostTensor.h"

#include "mp/Conversion/Passes.h"
#include "mp/Dialect/TG/IR/TGDialect.h"
#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/Transforms/Passes.h"
#include "mp/Runtime/MPCompiled.h"
#include "mp/Support/FileOutput.h"
#include "mp/Support/Json.h"
#ifdef MP_RUNTIME_HAS_CUDA
#include "mp/Runtime/MPCuda.h"
#endif

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mp;
using namespace mp::runner;
using llvm::createStringError;

/// Runs the passes `populate` adds on `module`, reported to `progress` (when
/// given) as the phase `phase`.
static LogicalResult
runPhase(ModuleOp module, CompileProgress *progress, llvm::StringRef phase,
         llvm::function_ref<void(OpPassManager &)> populate) {
  PassManager pm(module.getContext());
  populate(pm);
  if (progress) {
    progress->beginPhase(phase, CompileProgress::countOps(module));
    progress->watch(pm);
  }
  return pm.run(module);
}

/// The JSON object in the file `path`.
static llvm::Expected<llvm::json::Object> readJsonObject(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(buffer.getError(), "%s: %s", path.str().c_str(),
                             buffer.getError().message().c_str());
  llvm::Expected<llvm::json::Value> value = parseJson((*buffer)->getBuffer());
  if (!value)
    return value.takeError();
  if (llvm::json::Object *object = value->getAsObject())
    return std::move(*object);
  return createStringError(std::errc::invalid_argument, "%s: not a JSON object",
                           path.str().c_str());
}

/// tg-fold-transposes' second run, after epilogue fusion. With a report
/// file (which the first run wrote), this run's decisions follow the first
/// run's there, each entry saying which run made it, and the totals are the
/// two runs' sums: a transpose that the first run kept is decided again.
static LogicalResult foldTransposesAgain(ModuleOp module,
                                         llvm::StringRef reportFile,
                                         CompileProgress *progress) {
  tg::TGFoldTransposesOptions options;
  llvm::SmallString<128> second;
  if (!reportFile.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("mp-transposes", "json", second))
      return module.emitError()
             << "tg-fold-transposes: report: cannot create a temporary file: "
             << ec.message();
    options.reportFile = second.str().str();
  }
  llvm::FileRemover removeSecond(second);
  if (failed(runPhase(module, progress,
                      "transposes into fused matmuls (tg-fold-transposes)",
                      [&](OpPassManager &pm) {
                        pm.addPass(tg::createTGFoldTransposes(options));
                      })))
    return failure();
  if (reportFile.empty())
    return success();
  llvm::Expected<llvm::json::Object> first = readJsonObject(reportFile);
  llvm::Expected<llvm::json::Object> again = readJsonObject(second);
  llvm::Error error = llvm::Error::success();
  if (!first)
    error = first.takeError();
  else if (!again)
    error = again.takeError();
  else if (!first->getArray("decisions") || !again->getArray("decisions"))
    error = createStringError(std::errc::invalid_argument,
                              "a run's report has no decisions");
  if (!error) {
    llvm::json::Array &decisions = *first->getArray("decisions");
    for (llvm::json::Value &d : decisions)
      if (llvm::json::Object *o = d.getAsObject())
        (*o)["run"] = "before fusion";
    for (llvm::json::Value &d : *again->getArray("decisions")) {
      if (llvm::json::Object *o = d.getAsObject())
        (*o)["run"] = "after fusion";
      decisions.push_back(std::move(d));
    }
    for (llvm::StringRef total :
         {"transposes", "erased", "products_swapped", "operands_folded"})
      (*first)[total] = first->getInteger(total).value_or(0) +
                        again->getInteger(total).value_or(0);
    error = writeJsonFile(reportFile, llvm::json::Value(std::move(*first)));
  }
  if (error)
    return module.emitError() << "tg-fold-transposes: report: "
                              << llvm::toString(std::move(error));
  return success();
}

FailureOr<bool> runner::makeTrainStep(ModuleOp module, llvm::StringRef entry,
                                      llvm::StringRef options,
                                      CompileProgress *progress) {
  CompileProgress::Scope phases(progress);
  bool hasStep = false, hasForward = false;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!entry.empty() && fn.getSymName() != entry)
      continue;
    hasStep |= tg::isTrainStep(fn);
    hasForward |= tg::isForward(fn);
  }
  if (hasStep || !hasForward) {
    if (!options.empty())
      return module.emitError()
             << "the model is a training step already; the differentiation "
                "options ("
             << options << ") apply to forward functions (tg.forward)";
    return false;
  }
  std::string all = options.str();
  if (!entry.empty())
    all += " entry=" + entry.str();
  std::unique_ptr<Pass> pass = tg::createTGMakeTrainStep();
  std::string error;
  if (failed(pass->initializeOptions(all, [&](const llvm::Twine &message) {
        error = message.str();
        return failure();
      })))
    return module.emitError() << "invalid differentiation options '"
                              << options << "'"
                              << (error.empty() ? "" : ": " + error);
  if (failed(runPhase(module, progress, "differentiating (tg-make-train-step)",
                      [&](OpPassManager &pm) { pm.addPass(std::move(pass)); })))
    return failure();
  return true;
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
    arg.init = fn.getArgAttrOfType<ElementsAttr>(k, tg::TGDialect::kInitAttr);
    arg.shadowOf = a.shadowOf;
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

/// Adds `<step>_forward`: the step's arguments in, its `logits` output out,
/// keeping only the ops that output needs (the forward pass, at the
/// precisions the mixed-precision passes gave the step) in inference mode
/// (no dropout; batch norms with running statistics). Returns its name,
/// or nothing when the step has no `logits` output.
static std::optional<std::pair<std::string, unsigned>>
addForwardFunction(ModuleOp module, func::FuncOp step) {
  std::optional<unsigned> logits;
  for (unsigned r = 0, e = step.getNumResults(); r < e; ++r)
    if (auto out = step.getResultAttrOfType<StringAttr>(
            r, tg::TGDialect::kOutputAttr);
        out && out.getValue() == "logits")
      logits = r;
  if (!logits)
    return std::nullopt;
  auto forward = cast<func::FuncOp>(step->clone());
  forward->removeAttr(tg::TGDialect::kTrainStepAttr);
  forward.setSymName((step.getSymName() + "_forward").str());
  SymbolTable(module).insert(forward, std::next(Block::iterator(step)));
  Block &body = forward.front();
  Operation *ret = body.getTerminator();
  Value output = ret->getOperand(*logits);
  ret->setOperands(output);
  forward.setType(FunctionType::get(module.getContext(),
                                    forward.getArgumentTypes(),
                                    {output.getType()}));
  forward.removeArgAttrsAttr();
  forward.removeResAttrsAttr();
  // Evaluation is inference: dropout keeps every element and batch norms
  // normalise with their running statistics. It is also one rank's: the
  // gradient all-reduces of a data-parallel step go (they have effects, so
  // dead-code elimination alone would keep them, and the ranks, which
  // evaluate different batches, would pair them up wrongly).
  SmallVector<Operation *> training;
  for (Operation &op : body)
    if (isa<tg::DropoutOp, tg::BatchNormOp, tg::AllReduceOp>(op))
      training.push_back(&op);
  for (Operation *op : training) {
    if (auto dropout = dyn_cast<tg::DropoutOp>(op)) {
      dropout.getResult().replaceAllUsesWith(dropout.getInput());
      continue;
    }
    if (auto reduce = dyn_cast<tg::AllReduceOp>(op)) {
      reduce.getResults().replaceAllUsesWith(reduce.getInputs());
      reduce.erase();
      continue;
    }
    auto bn = cast<tg::BatchNormOp>(op);
    OpBuilder b(bn);
    Value y = tg::BatchNormInferenceOp::create(
        b, bn.getLoc(), bn.getResult().getType(), bn.getInput(),
        bn.getScale(), bn.getBias(), bn.getRunningMean(), bn.getRunningVar(),
        bn.getEpsilonAttr(), bn.getChannelsLastAttr(), bn.getComputeAttr());
    bn.getResult().replaceAllUsesWith(y);
  }
  // In reverse program order, so that users go before their operands.
  for (Operation *op = ret->getPrevNode(); op;) {
    Operation *previous = op->getPrevNode();
    if (isOpTriviallyDead(op))
      op->erase();
    op = previous;
  }
  return std::make_pair(forward.getSymName().str(), *logits);
}

/// Reads the `tg.numerics` table tg-check-numerics left on `fn`.
static LogicalResult readCheckedOps(func::FuncOp fn, StepSignature &sig) {
  auto table = fn->getAttrOfType<ArrayAttr>(tg::TGDialect::kNumericsAttr);
  if (!table)
    return success();
  auto bad = [&](const llvm::Twine &why) {
    return fn.emitError() << "malformed '" << tg::TGDialect::kNumericsAttr
                          << "': " << why;
  };
  std::optional<unsigned> stats = sig.findOutput("numerics.stats");
  if (!stats || !sig.findOutput("numerics.first_nonfinite") ||
      sig.results[*stats].shape.size() != 2)
    return bad("the step lacks the numerics.first_nonfinite and "
               "numerics.stats outputs");
  int64_t rows = sig.results[*stats].shape[0];
  for (Attribute a : table) {
    auto dict = cast<DictionaryAttr>(a);
    CheckedOp op;
    op.id = dict.getAs<IntegerAttr>("id").getInt();
    op.name = dict.getAs<StringAttr>("name").str();
    auto str = [&](StringRef key) {
      auto s = dict.getAs<StringAttr>(key);
      return s ? s.str() : std::string();
    };
    op.op = str("op");
    op.location = str("location");
    if (auto compute = dict.getAs<TypeAttr>("compute"))
      llvm::raw_string_ostream(op.compute) << compute.getValue();
    if (auto gradient = dict.getAs<BoolAttr>("gradient"))
      op.gradient = gradient.getValue();
    auto types = [&](StringRef key, std::vector<std::string> &into) {
      if (auto list = dict.getAs<ArrayAttr>(key))
        for (Attribute t : list)
          if (auto type = dyn_cast<TypeAttr>(t))
            llvm::raw_string_ostream(into.emplace_back()) << type.getValue();
    };
    types("operand_types", op.operandTypes);
    types("result_types", op.resultTypes);
    auto rowList = [&](StringRef key,
                       std::vector<int64_t> &into) -> LogicalResult {
      auto list = dict.getAs<ArrayAttr>(key);
      if (!list)
        return bad("entry '" + op.name + "' has no '" + key + "'");
      for (Attribute r : list) {
        auto row = dyn_cast<IntegerAttr>(r);
        if (!row || row.getInt() < -1 || row.getInt() >= rows)
          return bad("entry '" + op.name + "' has a row outside [-1, " +
                     llvm::Twine(rows) + ")");
        into.push_back(row.getInt());
      }
      return success();
    };
    if (failed(rowList("operand_rows", op.operandRows)) ||
        failed(rowList("result_rows", op.resultRows)))
      return failure();
    if (op.operandTypes.size() != op.operandRows.size() ||
        op.resultTypes.size() != op.resultRows.size())
      return bad("entry '" + op.name + "' has types and rows that disagree");
    if (auto pins = dict.getAs<ArrayAttr>("pin"))
      for (Attribute p : pins)
        if (auto s = dyn_cast<StringAttr>(p))
          op.pin.push_back(s.str());
    sig.checkedOps.push_back(std::move(op));
  }
  return success();
}

FailureOr<StepSignature> runner::lowerStep(ModuleOp module,
                                           llvm::StringRef entry,
                                           const AmpConfig &amp,
                                           const NumericsConfig &numerics,
                                           CompileProgress *progress,
                                           const LayoutConfig &layout,
                                           const ParallelConfig &parallel,
                                           const FusionConfig &fusion) {
  CompileProgress::Scope phases(progress);
  FailureOr<func::FuncOp> fn = findTrainStep(module, entry);
  if (failed(fn))
    return failure();
  std::string name = fn->getSymName().str();
  if (parallel.enabled) {
    tg::TGDataParallelOptions options;
    options.bucketMb = parallel.bucketMb;
    PassManager pm(module.getContext());
    pm.addPass(tg::createTGDataParallel(options));
    if (failed(pm.run(module)))
      return failure();
  }
  if (amp.mode != "off") {
    auto options = tg::TGMixedPrecisionPipelineOptions::createFromString(
        amp.options);
    if (!options)
      return module.emitError() << "invalid mixed-precision options '"
                                << amp.options << "'";
    options->computeType = amp.mode;
    if (!amp.policyFile.empty())
      options->policyFile = amp.policyFile;
    if (failed(runPhase(module, progress, "mixed precision (" + amp.mode + ")",
                        [&](OpPassManager &pm) {
                          tg::buildTGMixedPrecisionPipeline(pm, *options);
                        })))
      return failure();
  } else if (!amp.options.empty()) {
    return module.emitError()
           << "mixed-precision options given with --amp=off";
  }
  if (layout.layout != "off") {
    tg::TGAssignLayoutOptions options;
    options.layout = layout.layout;
    options.target = layout.target;
    options.reportFile = layout.reportFile;
    if (failed(runPhase(module, progress,
                        "layout assignment (" + layout.layout + ")",
                        [&](OpPassManager &pm) {
                          pm.addPass(tg::createTGAssignLayout(options));
                        })))
      return failure();
  }
  // The numerics checks observe every op's own result, which a fused
  // epilogue never writes: a checked step stays unfused, its transposes
  // too.
  if (fusion.transposes && !numerics.enabled) {
    tg::TGFoldTransposesOptions options;
    options.reportFile = fusion.transposesReportFile;
    if (failed(runPhase(module, progress,
                        "transposes into matmuls (tg-fold-transposes)",
                        [&](OpPassManager &pm) {
                          pm.addPass(tg::createTGFoldTransposes(options));
                        })))
      return failure();
  }
  if (fusion.epilogues && !numerics.enabled) {
    tg::TGFuseEpiloguesOptions options;
    options.reportFile = fusion.reportFile;
    if (failed(runPhase(module, progress, "epilogue fusion (tg-fuse-epilogues)",
                        [&](OpPassManager &pm) {
                          pm.addPass(tg::createTGFuseEpilogues(options));
                        })))
      return failure();
    // A scaling that moved into a GEMM's alpha leaves the transpose it
    // stood after next to the GEMM (attention's keys, and their gradient).
    if (fusion.transposes &&
        failed(
            foldTransposesAgain(module, fusion.transposesReportFile, progress)))
      return failure();
  }
  if (fusion.shadows && amp.mode != "off" && !numerics.enabled) {
    tg::TGShadowWeightsOptions options;
    options.reportFile = fusion.shadowsReportFile;
    if (failed(runPhase(module, progress,
                        "low-precision weight shadows (tg-shadow-weights)",
                        [&](OpPassManager &pm) {
                          pm.addPass(tg::createTGShadowWeights(options));
                        })))
      return failure();
  }
  if (numerics.enabled) {
    tg::TGCheckNumericsOptions options;
    options.scope = numerics.scope;
    options.ops.assign(numerics.ops.begin(), numerics.ops.end());
    if (failed(runPhase(module, progress, "numerics checks (tg-check-numerics)",
                        [&](OpPassManager &pm) {
                          pm.addPass(tg::createTGCheckNumerics(options));
                        })))
      return failure();
  }
  auto step = module.lookupSymbol<func::FuncOp>(name);
  FailureOr<StepSignature> sig = readSignature(step);
  if (failed(sig) || failed(readCheckedOps(step, *sig)))
    return failure();
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    step->print(os, OpPrintingFlags().elideLargeElementsAttrs(64));
    sig->fingerprint = llvm::xxh3_64bits(text);
    // The printout elides large constants and initial values: their bytes
    // are hashed instead.
    auto mix = [&](llvm::ArrayRef<char> bytes) {
      sig->fingerprint =
          sig->fingerprint * 1099511628211ull ^
          llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
              reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
    };
    auto hashElements = [&](Attribute attr) {
      attr.walk([&](Attribute a) {
        if (auto dense = dyn_cast<DenseElementsAttr>(a))
          mix(dense.getRawData());
        else if (auto resource = dyn_cast<DenseResourceElementsAttr>(a))
          if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
            mix(blob->getData());
      });
    };
    step->walk([&](Operation *op) { hashElements(op->getAttrDictionary()); });
    if (ArrayAttr args = step.getArgAttrsAttr())
      hashElements(args);
    step.walk([&](tg::AllReduceOp reduce) {
      ++sig->allReduces;
      for (Type t : reduce.getInputs().getTypes()) {
        auto tensor = cast<RankedTensorType>(t);
        sig->allReduceBytes += tensor.getNumElements() *
                               tensor.getElementTypeBitWidth() / 8;
      }
    });
  }
  if (auto forward = addForwardFunction(module, step)) {
    sig->forwardEntry = forward->first;
    sig->forwardResult = forward->second;
  }
  if (failed(runPhase(module, progress,
                      "lowering to the LLVM dialect (tg-lower-to-llvm)",
                      [](OpPassManager &pm) { buildTGLowerToLLVMPipeline(pm); })))
    return failure();
  return sig;
}

FailureOr<StepSignature> runner::lowerFunction(ModuleOp module,
                                              llvm::StringRef name) {
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn)
    return module.emitError() << "no function named '" << name << "'";
  StepSignature sig;
  sig.entry = name.str();
  auto describe = [&](Type t, StepTensor &into,
                      const std::string &tensorName) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(t);
    std::optional<mpElementType> type =
        tensor ? toElementType(tensor.getElementType()) : std::nullopt;
    if (!type)
      return fn.emitError() << "'" << tensorName << "' has type " << t
                            << ", which the runtime cannot hold";
    into.name = tensorName;
    into.type = *type;
    into.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    return success();
  };
  for (unsigned k = 0, e = fn.getNumArguments(); k < e; ++k) {
    StepArgument arg;
    arg.role = tg::ArgRole::Input;
    std::string argName = "arg" + std::to_string(k);
    for (tg::ArgRole role : {tg::ArgRole::Param, tg::ArgRole::State,
                             tg::ArgRole::Input, tg::ArgRole::Label})
      if (auto attr = fn.getArgAttrOfType<StringAttr>(
              k, tg::stringifyArgRole(role))) {
        arg.role = role;
        argName = attr.getValue().str();
      }
    if (failed(describe(fn.getArgumentTypes()[k], arg, argName)))
      return failure();
    arg.init = fn.getArgAttrOfType<ElementsAttr>(k, tg::TGDialect::kInitAttr);
    sig.arguments.push_back(std::move(arg));
  }
  for (unsigned r = 0, e = fn.getNumResults(); r < e; ++r) {
    StepResult res;
    res.kind = tg::StepResult::Kind::Output;
    std::string resultName = "result" + std::to_string(r);
    if (auto attr = fn.getResultAttrOfType<StringAttr>(
            r, tg::TGDialect::kOutputAttr))
      resultName = attr.getValue().str();
    if (failed(describe(fn.getResultTypes()[r], res, resultName)))
      return failure();
    sig.destinations.push_back(r);
    sig.results.push_back(std::move(res));
  }
  // Lowered as a plain function: the roles are read, and a forward
  // function's rules (a role for every argument) end here.
  fn->removeAttr(tg::TGDialect::kForwardAttr);
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
                     unsigned optLevel, bool cuda,
                     CompileProgress *progress) {
  CompileProgress::Scope phases(progress);
#ifndef MP_RUNTIME_HAS_CUDA
  if (cuda)
    return createStringError(std::errc::not_supported,
                             "this build has no CUDA backend");
#endif
  if (optLevel > 3)
    return createStringError(std::errc::invalid_argument,
                             "the LLVM optimisation level must be 0 to 3, "
                             "not %u",
                             optLevel);
  prepareLLVM(module.getContext());
  if (progress)
    progress->beginPhase(
        llvm::formatv("LLVM: translating and optimising (-O{0})", optLevel)
            .str(),
        CompileProgress::countOps(module));
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
  if (progress)
    progress->beginPhase("LLVM: generating machine code");
  (*engine)->initialize();
  // The JIT generates a module's machine code when one of its symbols is
  // first looked up: look the entry points up here, so that it happens in
  // this phase and not inside the first step (whose time it was, 0.5 s of
  // a ViT step's 0.63), and keep them for every call.
  std::unique_ptr<CompiledStep> step(new CompiledStep());
  for (auto [name, fn] :
       {std::pair(llvm::StringRef(signature.entry), &step->entryFn),
        std::pair(llvm::StringRef(signature.forwardEntry), &step->forwardFn)}) {
    if (name.empty())
      continue;
    auto entry = (*engine)->lookupPacked(name);
    if (!entry)
      return entry.takeError();
    *fn = *entry;
  }
  step->engine = std::move(*engine);
  step->sig = std::move(signature);
  return step;
}

llvm::Error CompiledStep::run(llvm::ArrayRef<void *> buffers) {
  return invoke(sig.entry, entryFn, buffers,
                sig.arguments.size() + sig.destinations.size());
}

llvm::Error CompiledStep::runForward(llvm::ArrayRef<void *> buffers) {
  if (sig.forwardEntry.empty())
    return createStringError(std::errc::not_supported,
                             "step '%s' has no logits output to evaluate",
                             sig.entry.c_str());
  return invoke(sig.forwardEntry, forwardFn, buffers,
                sig.arguments.size() + 1);
}

llvm::Error CompiledStep::invoke(llvm::StringRef name, PackedFn fn,
                                 llvm::ArrayRef<void *> buffers,
                                 size_t expected) {
  if (buffers.size() != expected)
    return createStringError(std::errc::invalid_argument,
                             "'%s' takes %zu buffers, got %zu",
                             name.str().c_str(), expected, buffers.size());
  std::vector<void *> pointers(buffers.begin(), buffers.end());
  std::vector<void *> packed;
  for (void *&p : pointers)
    packed.push_back(&p);
  fn(packed.data());
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
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) -> llvm::Error {
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

namespace {

/// C and C++ keywords, which no identifier of the header may be.
bool isReservedC(llvm::StringRef id) {
  static const char *const words[] = {
      "auto",     "break",    "case",     "char",   "const",    "continue",
      "default",  "do",       "double",   "else",   "enum",     "extern",
      "float",    "for",      "goto",     "if",     "inline",   "int",
      "long",     "register", "restrict", "return", "short",    "signed",
      "sizeof",   "static",   "struct",   "switch", "typedef",  "union",
      "unsigned", "void",     "volatile", "while",  "_Bool",    "_Complex",
      "bool",     "true",     "false",    "class",  "delete",   "new",
      "this",     "template", "typename", "namespace", "operator",
      "private",  "public",   "protected", "virtual", "friend", "using",
      "try",      "catch",    "throw",    "mutable", "explicit", "export"};
  return llvm::is_contained(words, id);
}

/// A C identifier for `name`: other characters become '_', a leading digit
/// or a keyword gets a '_', and `taken` makes it unique.
std::string cIdentifier(llvm::StringRef name, llvm::StringSet<> *taken) {
  std::string id;
  for (char c : name)
    id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0])) ||
      isReservedC(id))
    id = "_" + id;
  if (!taken)
    return id;
  std::string unique = id;
  for (int k = 1; !taken->insert(unique).second; ++k)
    unique = id + "_" + std::to_string(k);
  return unique;
}

/// `text` as the body of a C string literal.
std::string cString(llvm::StringRef text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '"' || c == '\\')
      out += '\\', out += char(c);
    else if (c == '?')
      out += "\\?"; // no trigraphs
    else if (c < 0x20 || c >= 0x7f)
      out += llvm::formatv("\\{0:o3}", unsigned(c)).str();
    else
      out += char(c);
  }
  return out;
}

/// `text` safe inside a C block comment.
std::string cComment(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    out += c == '\n' || c == '\r' ? ' ' : c;
    if (out.size() >= 2 && out.substr(out.size() - 2) == "*/")
      out.insert(out.size() - 1, " ");
  }
  return out;
}

} // namespace

std::string runner::toCIdentifier(llvm::StringRef name) {
  return cIdentifier(name, nullptr);
}

llvm::Error runner::emitHeader(const StepSignature &sig, llvm::StringRef path,
                               llvm::StringRef source) {
  std::string fn = cIdentifier(sig.entry, nullptr);
  std::string upper = llvm::StringRef(fn).upper();
  static const char *roles[] = {"PARAM", "STATE", "INPUT", "LABEL"};
  // Every tensor of the call, in order, with its role and field name.
  struct Slot {
    const StepTensor *tensor;
    std::string role, field;
    mlir::ElementsAttr init;
  };
  std::vector<Slot> slots;
  llvm::StringSet<> taken;
  for (const StepArgument &a : sig.arguments)
    slots.push_back({&a, roles[int(a.role)], cIdentifier(a.name, &taken),
                     a.init});
  for (unsigned r : sig.destinations) {
    const StepResult &res = sig.results[r];
    slots.push_back({&res,
                     res.kind == tg::StepResult::Kind::Loss ? "LOSS" : "OUTPUT",
                     cIdentifier(res.name, &taken), {}});
  }
  for (const Slot &slot : slots)
    if (slot.init && !slot.init.isSplat())
      return createStringError(std::errc::not_supported,
                               "tg.init of '%s' is not a splat; the header "
                               "only carries splat initial values (keep "
                               "weights in a safetensors file: "
                               "mp-import-onnx --weights-file)",
                               slot.tensor->name.c_str());

  return writeFileAtomically(path, [&](llvm::raw_ostream &os) -> llvm::Error {
    os << "/* Generated by mp-compile from " << cComment(source)
       << ". Do not edit.\n *\n"
       << " * " << fn << "_run(&args) runs one training step on the tensors "
       << "named in\n * " << fn << "_args; " << fn << "(...) is the same "
       << "call with one pointer per tensor, in\n * the order of " << fn
       << "_tensors: the step's arguments, then a destination for\n"
       << " * each result that is not an update. Parameters and state are "
       << "updated in\n * place. Link with the mp runtime (mp_runtime); "
       << "after a step,\n * mprtTakeError() returns any runtime error.\n";
    if (sig.allReduces)
      os << " *\n * Data-parallel: the step averages its gradients over the "
         << "ranks of a run\n * (" << sig.allReduces
         << " tg.all_reduce bucket(s)). In an MPI program, call\n"
         << " *   mpUseMpiCommunicator(MPI_Comm_c2f(MPI_COMM_WORLD), "
            "timeoutSeconds);\n"
         << " * (mp/Runtime/MPCollectives.h) after MPI_Init, start every "
            "rank from the\n"
         << " * same parameters, give each its shard of every global batch, "
            "and link\n"
         << " * mp_runtime_mpi and MPI. Without a communicator it runs as "
            "one rank.\n";
    os << " */\n\n";
    os << "#ifndef " << upper << "_H\n#define " << upper << "_H\n\n"
       << "#include \"mp/Runtime/MPCompiled.h\"\n\n"
       << "/* The number of tg.all_reduce ops (0: not data-parallel). */\n"
       << "#define " << upper << "_ALL_REDUCES " << sig.allReduces << "\n\n"
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
    os << "enum { " << upper << "_NUM_TENSORS = " << slots.size() << " };\n\n";
    os << "static const " << fn << "_tensor " << fn << "_tensors["
       << std::max<size_t>(slots.size(), 1) << "] = {\n";
    for (const Slot &slot : slots) {
      const StepTensor &t = *slot.tensor;
      os << "  {\"" << cString(t.name) << "\", " << upper << "_" << slot.role
         << ", (mpElementType)" << int(t.type) << ", " << t.shape.size()
         << ", {";
      for (size_t d = 0; d < t.shape.size(); ++d)
        os << (d ? ", " : "") << t.shape[d];
      if (t.shape.empty())
        os << "0";
      os << "}, ";
      if (slot.init) {
        double v = isa<FloatType>(slot.init.getElementType())
                       ? slot.init.getSplatValue<llvm::APFloat>()
                             .convertToDouble()
                       : double(slot.init.getSplatValue<llvm::APInt>()
                                    .getSExtValue());
        os << "1, " << llvm::formatv("{0:e}", v).str();
      } else {
        os << "0, 0.0";
      }
      os << "},\n";
    }
    os << "};\n\n";
    os << "/* The step, one pointer per tensor (for C callers that build the "
          "call\n * from " << fn << "_tensors). */\n";
    os << "void " << fn << "(";
    for (size_t k = 0; k < slots.size(); ++k)
      os << (k ? ", " : "") << "void *";
    os << ");\n\n";
    os << "/* The tensors of one step by name, in the order of " << fn
       << "_tensors. */\n"
       << "typedef struct " << fn << "_args {\n";
    for (const Slot &slot : slots)
      os << "  void *" << slot.field << "; /* "
         << llvm::StringRef(slot.role).lower() << " \""
         << cComment(cString(slot.tensor->name)) << "\": "
         << describeShape(slot.tensor->type, slot.tensor->shape) << " */\n";
    if (slots.empty())
      os << "  char unused;\n";
    os << "} " << fn << "_args;\n\n";
    os << "/* Runs one step on the tensors of `args`. */\n"
       << "static inline void " << fn << "_run(const " << fn
       << "_args *args) {\n  " << fn << "(";
    for (size_t k = 0; k < slots.size(); ++k)
      os << (k ? ", " : "") << "args->" << slots[k].field;
    os << ");\n}\n\n";
    os << "/* The field of `args` that holds tensor `k` of " << fn
       << "_tensors. */\n"
       << "static inline void **" << fn << "_slot(" << fn
       << "_args *args, int k) {\n  switch (k) {\n";
    for (size_t k = 0; k < slots.size(); ++k)
      os << "  case " << k << ": return &args->" << slots[k].field << ";\n";
    os << "  default: return 0;\n  }\n}\n\n";
    os << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
    return llvm::Error::success();
  });
}
