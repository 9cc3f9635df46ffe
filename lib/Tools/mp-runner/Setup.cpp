//===- Setup.cpp - mp-runner: backend, precision, model, data, state ------===//

#include "Driver.h"

#include "mp/Runner/Weights.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mp;
using namespace mp::runner;
using namespace mp::tools;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(std::errc::invalid_argument, "%s",
                                 message.str().c_str());
}

/// The AMP mode of a checkpoint, when it records one.
std::optional<std::string> checkpointAmp(const Checkpoint &ckpt) {
  auto it = ckpt.metadata.find("amp");
  if (it == ckpt.metadata.end())
    return std::nullopt;
  return it->second;
}

} // namespace

llvm::Error Driver::resolve() {
  llvm::Expected<BackendChoice> choice = chooseBackend(o.backend);
  if (!choice)
    return choice.takeError();
  backend = *choice;
  if (backend.backend == Backend::CUDA && ranks.size() > 1)
    return error("data-parallel runs on the CUDA backend need its NCCL "
                 "transport, which is not built yet: run the ranks with "
                 "--backend=cpu");

  // A resumed run continues in the checkpoint's precision unless told
  // otherwise.
  if (!o.resume.empty()) {
    llvm::Expected<Checkpoint> ckpt = readSafetensors(o.resume);
    if (!ckpt)
      return ckpt.takeError();
    resumed = std::move(*ckpt);
  }
  ampMode = o.amp;
  if (ampMode == "auto" && resumed && checkpointAmp(*resumed)) {
    ampMode = *checkpointAmp(*resumed);
    ampNote = "--amp=auto: " + ampMode + ", as the checkpoint was trained";
  } else if (ampMode == "auto") {
    auto [mode, why] = defaultAmp(backend.backend);
    ampMode = mode;
    ampNote = "--amp=auto: " + why;
  }
  if (llvm::Error err = checkAmpSupported(backend.backend, ampMode))
    return err;
  llvm::StringRef autoChoseFp32 =
      o.amp == "auto" ? " (--amp=auto chose FP32 on this backend)" : "";
  if (o.compare && ampMode == "off")
    return error("--compare needs --amp=f16 or --amp=bf16 to compare with "
                 "FP32" +
                 autoChoseFp32);
  if (!o.shadowsReport.empty() && ampMode == "off")
    return error("--shadows-report needs --amp=f16 or --amp=bf16: an FP32 "
                 "step casts no weights to shadow" +
                 autoChoseFp32);
  if (!o.ampOptions.empty() && ampMode == "off")
    return error("--amp-options given, but this run is FP32" + autoChoseFp32 +
                 "; ask for --amp=f16 or --amp=bf16");

  bool adapting = !o.adaptPrecision.empty();
  if ((adapting || o.ampWarmupSteps > 0) && ampMode == "off")
    return error(
        llvm::Twine(adapting ? "--adapt-precision" : "--amp-warmup-steps") +
        " needs --amp=f16 or --amp=bf16" + autoChoseFp32);
  numerics.enabled = o.checkNumerics || !o.rangeStats.empty() || adapting;
  numerics.scope = o.checkNumerics ? o.checkNumericsScope.getValue() : "all";
  numerics.ops.assign(o.checkNumericsOps.begin(), o.checkNumericsOps.end());
  // The user's policy and report files, read once (lowerStep reports bad
  // options with their location).
  ampPipeline =
      tg::TGMixedPrecisionPipelineOptions::createFromString(o.ampOptions);
  if (adapting) {
    if (!ampPipeline)
      return error("invalid --amp-options '" + o.ampOptions + "'");
    adapter.emplace(AdaptOptions{o.adaptSkips, o.adaptWindow, o.adaptMinScale},
                    o.adaptPrecision, ampPipeline->policyFile);
    if (llvm::Error err = adapter->loadUserPolicy())
      return err;
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Trainer>>
Driver::compile(const std::string &label, const std::string &mode,
                const std::string &policyFile) {
  sessions.push_back(std::make_unique<Session>());
  Session &session = *sessions.back();
  progress.beginPhase(isOnnxFile(o.input) ? "importing " + o.input
                                           : "reading " + o.input);
  OwningOpRef<ModuleOp> module =
      loadModel(session, o.input, o.importing, o.differentiation.loss);
  progress.endPhase();
  if (!module)
    return llvm::make_error<DiagnosedError>();
  if (firstCompile && isOnnxFile(o.input))
    llvm::outs() << "mp-runner: imported " << o.input << " ("
                 << initialWeightBytes(*module) / 1024
                 << " KiB of initial weights from its initializers)\n";
  FailureOr<bool> made = makeTrainStep(
      *module, o.entry, o.differentiation.options(), &progress);
  if (failed(made))
    return llvm::make_error<DiagnosedError>();
  if (firstCompile) {
    if (*made)
      llvm::outs() << "mp-runner: differentiated the forward function"
                   << (o.differentiation.options().empty()
                           ? ""
                           : " (" + o.differentiation.options() + ")")
                   << "\n";
    FailureOr<func::FuncOp> fn = findTrainStep(*module, o.entry);
    if (failed(fn))
      return llvm::make_error<DiagnosedError>();
    modelShape = inspectModel(*fn);
  }
  firstCompile = false;
  CompileOptions options;
  options.entry = o.entry;
  options.amp.mode = mode;
  options.amp.options = mode == "off" ? std::string() : o.ampOptions.getValue();
  options.amp.policyFile = mode == "off" ? std::string() : policyFile;
  options.layout.layout = o.layout;
  options.layout.target = backend.backend == Backend::CUDA ? "cuda" : "cpu";
  // (lowerStep leaves a step with numerics checks, which --range-stats
  // and --adapt-precision use too, unfused.)
  options.fusion.transposes = o.foldTransposes;
  options.fusion.shadows = o.shadowWeights;
  options.fusion.epilogues = o.fuseEpilogues;
  o.reports.apply(options.layout, options.fusion);
  options.fusion.shadowsReportFile = o.shadowsReport;
  options.numerics = numerics;
  options.backend = backend.backend;
  options.optLevel = o.optLevel;
  options.cudaGraphs = o.cudaGraphs;
  options.progress = &progress;
  options.parallel.enabled = ranks.joined();
  options.parallel.bucketMb = o.bucketMb;
  llvm::Expected<std::unique_ptr<Trainer>> trainer =
      compileTrainer(*module, options, label);
  if (!trainer)
    return trainer.takeError();
  if (ranks.joined()) {
    (*trainer)->distribute(ranks);
    // Every rank must have compiled the same step: the collectives of
    // different steps would not match.
    if (llvm::Error err = ranks.checkSame(
            (*trainer)->signature().fingerprint,
            "the compiled step (model, shapes, precision and options)"))
      return std::move(err);
  }
  return trainer;
}

llvm::Error Driver::compileRuns() {
  std::vector<std::pair<std::string, std::string>> variants;
  if (o.compare)
    variants = {{"fp32", "off"}, {ampMode, ampMode}};
  else
    variants = {{ampMode == "off" ? std::string("fp32") : ampMode, ampMode}};
  for (auto &[label, mode] : variants) {
    bool warmup = o.ampWarmupSteps > 0;
    llvm::Expected<std::unique_ptr<Trainer>> trainer =
        compile(warmup ? "fp32" : label, warmup ? "off" : mode, "");
    if (!trainer)
      return trainer.takeError();
    if (warmup) {
      llvm::Expected<std::unique_ptr<Trainer>> amp = compile(label, mode, "");
      if (!amp)
        return amp.takeError();
      ampTrainer = std::move(*amp);
    }
    Run run;
    run.label = label;
    run.amp = mode;
    run.trainer = std::move(*trainer);
    runs.push_back(std::move(run));
  }
  // Found now, not when the first checkpoint is written and the run's
  // state would be lost.
  if (!o.checkpoint.empty())
    for (const StepArgument &a : runs.front().trainer->signature().arguments)
      if (a.name == kSafetensorsMetadataKey)
        return error("the step has a " + tg::stringifyArgRole(a.role) +
                     " named '" + a.name +
                     "', which safetensors reserves for its metadata, so "
                     "--checkpoint could not hold it; rename it");
  return llvm::Error::success();
}

llvm::Error Driver::prepareData() {
  const StepSignature &sig = runs.front().trainer->signature();
  llvm::Expected<Dataset> dataset =
      o.data.empty()
          ? makeSyntheticDataset(sig, modelShape, o.seed, o.trainSamples,
                                 o.evalSamples ? o.evalSamples : 4096)
          : loadNpyDataset(sig, o.data, o.evalData);
  if (!dataset)
    return dataset.takeError();
  data = std::move(*dataset);
  if (!o.data.empty() && o.evalSamples.getNumOccurrences() &&
      o.evalSamples > data->evalSamples)
    return error("--eval-samples " + llvm::Twine(o.evalSamples) +
                 ": the evaluation split has " +
                 llvm::Twine(data->evalSamples) + " samples (" +
                 (o.evalData.empty() ? "the --data arrays" : "--eval-data") +
                 ")");
  for (const std::string &warning : data->warnings)
    llvm::errs() << "mp-runner: warning: " + warning + "\n"; // one write
  return checkLabels(sig, modelShape, *data);
}

llvm::Error Driver::initialiseState() {
  for (Run &run : runs)
    if (llvm::Error err = run.trainer->initialize(o.seed))
      return err;
  if (ampTrainer)
    if (llvm::Error err = ampTrainer->initialize(o.seed))
      return err;
  if (!o.initWeights.empty()) {
    llvm::Expected<Checkpoint> weights = readSafetensors(o.initWeights);
    if (!weights)
      return weights.takeError();
    for (Run &run : runs) {
      llvm::Expected<unsigned> loaded =
          run.trainer->loadWeights(*weights, o.initWeights);
      if (!loaded)
        return loaded.takeError();
      if (&run == &runs.front())
        llvm::outs() << "mp-runner: initial values of " << *loaded
                     << " parameters from " << o.initWeights << "\n";
    }
  }
  if (!resumed)
    return sameStartOnEveryRank();
  std::optional<std::string> amp = checkpointAmp(*resumed);
  // A checkpoint of the AMP phase of a warm-up run resumes in AMP.
  if (ampTrainer && amp == ampMode)
    runs[0].trainer = std::move(ampTrainer);
  std::string current = ampTrainer ? "off" : ampMode;
  // FP32 to AMP is the switch --amp-warmup-steps makes: allowed, with the
  // loss-scale state starting from its initial values.
  bool fp32ToAmp = amp && *amp == "off" && current != "off";
  if (amp && *amp != current && !fp32ToAmp)
    return error(o.resume + ": was written with --amp=" + *amp +
                 ", this run has --amp=" + current);
  if (fp32ToAmp)
    llvm::outs() << "mp-runner: " << o.resume << " is an FP32 checkpoint; "
                 << "going on in " << current
                 << " with its parameters and optimizer state (the loss "
                    "scale starts from its initial value)\n";
  llvm::Expected<int64_t> step =
      runs[0].trainer->restore(*resumed, o.resume, fp32ToAmp);
  if (!step)
    return step.takeError();
  first = *step;
  if (first >= o.steps)
    return error(o.resume + ": already at step " + llvm::Twine(first) +
                 "; --steps is the step to train until: ask for more (say "
                 "--steps " +
                 llvm::Twine(first + o.steps) + ")");
  return sameStartOnEveryRank();
}

llvm::Error Driver::sameStartOnEveryRank() {
  if (!ranks.joined())
    return llvm::Error::success();
  // What decides which collectives a rank reaches, and the data it shards.
  std::string options = llvm::formatv(
      "steps {0} first {1} seed {2} eval {3} warmup {4} train {5} held {6} "
      "compare {7}",
      int64_t(o.steps), first, uint64_t(o.seed), int64_t(o.evalSamples),
      int64_t(o.ampWarmupSteps), data->trainSamples, data->evalSamples,
      bool(o.compare));
  uint64_t hash = llvm::xxh3_64bits(options);
  for (const auto *split : {&data->train, &data->eval})
    for (const auto &[arg, tensor] : *split)
      hash = llvm::xxh3_64bits(
                 llvm::ArrayRef<uint8_t>(
                     static_cast<const uint8_t *>(tensor.data()),
                     tensor.byteSize())) ^
             (hash * 1099511628211ull + arg);
  if (llvm::Error err = ranks.checkSame(
          hash, "the run (--steps, --seed, --eval-samples, the data)"))
    return err;
  for (Run &run : runs) {
    llvm::Expected<uint64_t> hash = run.trainer->weightsHash();
    if (!hash)
      return hash.takeError();
    if (llvm::Error err = ranks.checkSame(
            *hash ^ uint64_t(first), "the initial parameters and step"))
      return err;
  }
  return llvm::Error::success();
}
