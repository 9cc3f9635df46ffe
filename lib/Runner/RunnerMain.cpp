//===- RunnerMain.cpp - mp-runner: train a model with a compiled step -----===//
//
// Reads a training step, or a forward function it differentiates into one
// (tg-make-train-step), compiles it (optionally through the
// mixed-precision pipeline) for the CPU or CUDA runtime, initialises parameters from a seed
// and trains on a built-in synthetic dataset or .npy arrays, then measures
// accuracy on held-out data with the step's forward pass alone. With
// --compare it trains FP32 and AMP variants from the same initialisation on
// the same batches and prints both loss curves and final accuracies side by
// side. A loss that stops being finite (outside a step that loss scaling
// skipped) stops the run and names the step.
//
//===----------------------------------------------------------------------===//

#include "mp/Runner/Runner.h"

#include "CompiledStep.h"
#include "Dataset.h"
#include "Differentiation.h"
#include "ImportFlags.h"
#include "Loading.h"
#include "Numerics.h"
#include "RunReport.h"
#include "StepLog.h"
#include "Trainer.h"
#include "Weights.h"

#include "mp/Dialect/TG/Transforms/Passes.h"
#include "mp/Runtime/MPCompiled.h"
#include "mp/Support/FileOutput.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mp;
using namespace mp::runner;
namespace cl = llvm::cl;

namespace {

struct Options {
  cl::OptionCategory category{"mp-runner options"};
  cl::opt<std::string> input{cl::Positional,
                             cl::desc("<step.mlir, forward.mlir or model.onnx>"),
                             cl::init(""), cl::cat(category)};
  DifferentiationFlags differentiation{category};
  ImportFlags importing{category};
  cl::opt<int64_t> steps{"steps",
                         cl::desc("Train until this step (default 100; with "
                                  "--resume, the step to reach)"),
                         cl::init(100), cl::cat(category)};
  cl::opt<std::string> amp{
      "amp",
      cl::desc("f16, bf16, off, or auto (default: what the backend runs "
               "fastest: FP32 on the CPU backend, bf16 or f16 on GPUs with "
               "tensor cores; with --resume, the checkpoint's mode)"),
      cl::init("auto"), cl::cat(category)};
  cl::opt<std::string> ampOptions{
      "amp-options",
      cl::desc("tg-mixed-precision options, e.g. \"loss-scaling=dynamic "
               "growth-interval=100\" (default: none)"),
      cl::init(""), cl::cat(category)};
  cl::opt<std::string> backend{"backend",
                               cl::desc("cpu, cuda or auto (default: the GPU "
                                        "when there is one)"),
                               cl::init("auto"), cl::cat(category)};
  cl::opt<std::string> entry{"entry",
                             cl::desc("The step function (default: the "
                                      "one marked tg.train_step)"),
                             cl::init(""), cl::cat(category)};
  cl::opt<uint64_t> seed{"seed",
                         cl::desc("Seed of data and initialisation "
                                  "(default 0)"),
                         cl::init(0), cl::cat(category)};
  cl::list<std::string> data{"data",
                             cl::desc("<name>=<file.npy> for an input or label "
                                      "(default: a synthetic dataset)"),
                             cl::cat(category)};
  cl::list<std::string> evalData{
      "eval-data",
      cl::desc("<name>=<file.npy>: held-out arrays to measure accuracy on "
               "(default with --data: the training arrays, reported as "
               "training accuracy)"),
      cl::cat(category)};
  cl::opt<int64_t> trainSamples{"train-samples",
                                cl::desc("Synthetic training samples "
                                         "(default 8192)"),
                                cl::init(8192), cl::cat(category)};
  cl::opt<int64_t> evalSamples{
      "eval-samples",
      cl::desc("Evaluate on at most this many samples (default 4096; 0: all "
               "of --eval-data); also the size of the synthetic held-out "
               "split"),
      cl::init(4096), cl::cat(category)};
  cl::opt<bool> compare{"compare", cl::desc("Train FP32 and AMP side by side"),
                        cl::init(false), cl::cat(category)};
  cl::opt<std::string> plot{"plot", cl::desc("Write the loss curves as SVG"),
                            cl::init(""), cl::cat(category)};
  cl::opt<std::string> log{"log", cl::desc("Per-step log: .jsonl or .csv"),
                           cl::init(""), cl::cat(category)};
  cl::opt<int64_t> logEvery{"log-every",
                            cl::desc("Print every N steps (default 0: about "
                                     "10 lines)"),
                            cl::init(0), cl::cat(category)};
  cl::opt<std::string> summary{"summary",
                               cl::desc("Write a JSON summary of the run"),
                               cl::init(""), cl::cat(category)};
  cl::opt<std::string> checkpoint{"checkpoint",
                                  cl::desc("Write a safetensors checkpoint "
                                           "here (at the end, and every "
                                           "--checkpoint-every steps)"),
                                  cl::init(""), cl::cat(category)};
  cl::opt<int64_t> checkpointEvery{"checkpoint-every",
                                   cl::desc("Steps between checkpoints "
                                            "(default 0: at the end only)"),
                                   cl::init(0), cl::cat(category)};
  cl::opt<std::string> initWeights{
      "init-weights",
      cl::desc("Initial parameter values from a safetensors file (as "
               "mp-import-onnx writes); parameters it does not hold keep "
               "their initialisation"),
      cl::init(""), cl::cat(category)};
  cl::opt<std::string> resume{"resume",
                              cl::desc("Continue from a checkpoint, up to "
                                       "--steps"),
                              cl::init(""), cl::cat(category)};
  cl::opt<std::string> onNonFinite{
      "on-nonfinite",
      cl::desc("When the loss becomes NaN or infinite in a step that was not "
               "skipped by loss scaling: stop (default) or warn and go on"),
      cl::init("stop"), cl::cat(category)};
  cl::opt<unsigned> optLevel{"O",
                             cl::desc("LLVM optimisation level (default 2)"),
                             cl::init(2), cl::cat(category)};
  cl::opt<bool> noProgress{"no-progress",
                           cl::desc("Plain lines even on a terminal"),
                           cl::init(false), cl::cat(category)};
  cl::opt<bool> cudaGraphs{"cuda-graphs",
                           cl::desc("Capture the step as a CUDA graph after "
                                    "warm-up and replay it (default true)"),
                           cl::init(true), cl::cat(category)};
  cl::opt<bool> checkNumerics{
      "check-numerics",
      cl::desc("Find, inside every step, the first op that produces an "
               "infinity or a NaN: print it on the first bad step with its "
               "types and its operands' ranges, and name the op behind every "
               "step loss scaling skips"),
      cl::init(false), cl::cat(category)};
  cl::opt<std::string> checkNumericsScope{
      "check-numerics-scope",
      cl::desc("The ops --check-numerics watches: all (default), forward, or "
               "backward (the gradient ops: the cheap way to attribute "
               "skipped steps)"),
      cl::init("all"), cl::cat(category)};
  cl::list<std::string> checkNumericsOps{
      "check-numerics-ops",
      cl::desc("Globs of op names (fc1.*) or kinds (tg.matmul) for "
               "--check-numerics to watch (default: every op)"),
      cl::CommaSeparated, cl::cat(category)};
  cl::opt<std::string> rangeStats{
      "range-stats",
      cl::desc("Collect each op's largest and smallest non-zero magnitude "
               "over the steps and write them here as JSON, against the f16 "
               "and bf16 limits"),
      cl::init(""), cl::cat(category)};
  cl::opt<int64_t> rangeStatsSteps{
      "range-stats-steps",
      cl::desc("Collect --range-stats over this many steps (default 0: all)"),
      cl::init(0), cl::cat(category)};
  cl::opt<std::string> adaptPrecision{
      "adapt-precision",
      cl::desc("<policy.json>: when overflows keep coming from one op, pin "
               "it to f32, recompile and go on with the same state; the "
               "final policy is written here (pass it back with "
               "--amp-options=policy=<policy.json>)"),
      cl::init(""), cl::cat(category)};
  cl::opt<int64_t> adaptSkips{
      "adapt-skips",
      cl::desc("Re-plan after this many skipped steps overflowing first in "
               "one op within --adapt-window steps (default 8)"),
      cl::init(8), cl::cat(category)};
  cl::opt<int64_t> adaptWindow{"adapt-window",
                               cl::desc("Steps --adapt-skips counts over "
                                        "(default 100)"),
                               cl::init(100), cl::cat(category)};
  cl::opt<double> adaptMinScale{
      "adapt-min-scale",
      cl::desc("Re-plan at once when a skipped step leaves the loss scale "
               "below this (default 1)"),
      cl::init(1.0), cl::cat(category)};
  cl::opt<int64_t> ampWarmupSteps{
      "amp-warmup-steps",
      cl::desc("Train the first N steps in FP32, then in --amp's precision "
               "with the same parameters and optimizer state"),
      cl::init(0), cl::cat(category)};
  cl::opt<bool> deviceInfo{"device-info",
                           cl::desc("Describe the CPU, the GPUs and the "
                                    "backends, and exit"),
                           cl::init(false), cl::cat(category)};
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "mp-runner: error: " << message << "\n";
  return 1;
}

int fail(llvm::Error err) { return fail(llvm::toString(std::move(err))); }

/// Checks the options that do not need the step.
llvm::Error checkOptions(const Options &o) {
  auto bad = [](const llvm::Twine &message) {
    return llvm::createStringError(std::errc::invalid_argument, "%s",
                                   message.str().c_str());
  };
  if (o.input.empty())
    return bad("no training step given (mp-runner <step.mlir>; see --help)");
  if (o.amp != "f16" && o.amp != "bf16" && o.amp != "off" && o.amp != "auto")
    return bad("--amp must be f16, bf16, off or auto, not '" + o.amp + "'");
  if (o.backend != "cpu" && o.backend != "cuda" && o.backend != "auto")
    return bad("--backend must be cpu, cuda or auto, not '" + o.backend + "'");
  if (o.steps < 1)
    return bad("--steps must be at least 1");
  if (o.compare && (!o.resume.empty() || !o.checkpoint.empty()))
    return bad("--compare does not take checkpoints");
  if (o.trainSamples < 1)
    return bad("--train-samples must be positive");
  if (o.evalSamples < 0)
    return bad("--eval-samples must be 0 (all) or positive");
  if (o.onNonFinite != "stop" && o.onNonFinite != "warn")
    return bad("--on-nonfinite must be stop or warn, not '" + o.onNonFinite +
               "'");
  if (!o.evalData.empty() && o.data.empty())
    return bad("--eval-data needs --data (the synthetic tasks have their own "
               "held-out split)");
  if (o.checkpointEvery < 0 || o.logEvery < 0)
    return bad("--checkpoint-every and --log-every must not be negative");
  if (o.compare && (o.checkNumerics || !o.rangeStats.empty() ||
                    !o.adaptPrecision.empty() || o.ampWarmupSteps > 0))
    return bad("--check-numerics, --range-stats, --adapt-precision and "
               "--amp-warmup-steps apply to one run, not to --compare");
  if (o.checkNumericsScope != "all" && o.checkNumericsScope != "forward" &&
      o.checkNumericsScope != "backward")
    return bad("--check-numerics-scope must be all, forward or backward, not "
               "'" +
               o.checkNumericsScope + "'");
  if (!o.checkNumerics &&
      (o.checkNumericsScope != "all" || !o.checkNumericsOps.empty()))
    return bad("--check-numerics-scope and --check-numerics-ops need "
               "--check-numerics");
  if (o.rangeStatsSteps < 0 || (o.rangeStatsSteps > 0 && o.rangeStats.empty()))
    return bad("--range-stats-steps must not be negative, and needs "
               "--range-stats");
  if (o.adaptSkips < 1 || o.adaptWindow < 1 || !(o.adaptMinScale >= 0))
    return bad("--adapt-skips and --adapt-window must be at least 1, and "
               "--adapt-min-scale not negative");
  if (o.ampWarmupSteps < 0)
    return bad("--amp-warmup-steps must not be negative");
  return llvm::Error::success();
}

/// The AMP mode of a checkpoint, when it records one.
std::optional<std::string> checkpointAmp(const Checkpoint &ckpt) {
  auto it = ckpt.metadata.find("amp");
  if (it == ckpt.metadata.end())
    return std::nullopt;
  return it->second;
}

/// Evaluates every run, with a progress bar on a terminal.
llvm::Error evaluate(std::vector<Run> &runs, const Dataset &data,
                     int64_t maxSamples, bool terminal) {
  for (Run &run : runs) {
    int64_t batches = run.trainer->evaluationBatches(data, maxSamples);
    if (!batches)
      continue;
    std::string what =
        llvm::formatv("evaluating {0} ({1} split, {2} batches)", run.label,
                      data.evalHeldOut ? "held-out" : "training", batches)
            .str();
    if (!terminal)
      llvm::outs() << what << "\n";
    auto progress = [&](int64_t done, int64_t total) {
      if (!terminal)
        return;
      llvm::outs() << "\r" << what << ": " << done << "/" << total;
      if (done == total)
        llvm::outs() << "\n";
      llvm::outs().flush();
    };
    llvm::Expected<std::vector<bool>> correct =
        run.trainer->evaluate(data, maxSamples, progress);
    if (!correct)
      return correct.takeError();
    run.correct = std::move(*correct);
    run.accuracy = run.correct.empty()
                       ? 0.0
                       : 100.0 * llvm::count(run.correct, true) /
                             run.correct.size();
  }
  return llvm::Error::success();
}

llvm::Error writeSummary(const Options &o, llvm::ArrayRef<Run> runs,
                         const Dataset &data, llvm::StringRef backend,
                         llvm::StringRef ampMode, int64_t first,
                         const mprtAllocatorStats &stats, int64_t bufferBytes,
                         llvm::json::Object numerics) {
  llvm::json::Array runsJson;
  for (const Run &run : runs) {
    llvm::json::Array losses, scales, skipped, times;
    for (const StepRecord &r : run.records) {
      losses.push_back(jsonNumber(r.loss));
      times.push_back(r.milliseconds);
      scales.push_back(r.hasLossScale ? llvm::json::Value(r.lossScale)
                                      : llvm::json::Value(nullptr));
      skipped.push_back(r.skipped);
    }
    const StepRecord *last =
        run.records.empty() ? nullptr : &run.records.back();
    llvm::json::Object entry{
        {"run", run.label},
        {"amp", run.amp},
        {"final_loss", last ? jsonNumber(last->loss) : nullptr},
        {"mean_step_ms", meanStepTime(run)},
        {"skipped_steps", last ? last->skippedTotal : 0},
        {"losses", std::move(losses)},
        {"loss_scales", std::move(scales)},
        {"skipped", std::move(skipped)},
        {"step_ms", std::move(times)}};
    if (run.accuracy) {
      entry["accuracy"] = *run.accuracy;
      entry["accuracy_split"] = data.evalHeldOut ? "held-out" : "training";
      entry["eval_samples"] = int64_t(run.correct.size());
      // Paired counts against the first run, for significance tests.
      if (&run != &runs.front() && runs.front().accuracy) {
        Disagreement d = compareClassifications(runs.front(), run);
        entry["paired_with"] = runs.front().label;
        entry["only_this_correct"] = d.onlyB;
        entry["only_paired_correct"] = d.onlyA;
      }
    }
    runsJson.push_back(std::move(entry));
  }
  llvm::json::Object root{
      {"model", o.input},
      {"steps", int64_t(o.steps)},
      {"first_step", first + 1},
      {"backend", backend},
      {"amp", ampMode},
      {"system_allocations", int64_t(stats.systemAllocations)},
      {"peak_bytes", int64_t(stats.peakBytesInUse)},
      {"buffer_bytes", bufferBytes},
      {"runs", std::move(runsJson)}};
  for (auto &entry : numerics)
    root[entry.first] = std::move(entry.second);
  return writeFileAtomically(o.summary, [&](llvm::raw_ostream &os) {
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
    return llvm::Error::success();
  });
}

} // namespace

int mp::runnerMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  reportFileSizeLimitAsError();
  Options o;
  cl::HideUnrelatedOptions(o.category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "mp-runner: compile a tg training step and train a model with it\n");

  if (o.deviceInfo) {
    describeDevices(llvm::outs());
    return 0;
  }
  if (llvm::Error err = checkOptions(o))
    return fail(std::move(err));
  llvm::Expected<BackendChoice> backend = chooseBackend(o.backend);
  if (!backend)
    return fail(backend.takeError());

  // A resumed run continues in the checkpoint's precision unless told
  // otherwise.
  std::optional<Checkpoint> resumed;
  if (!o.resume.empty()) {
    llvm::Expected<Checkpoint> ckpt = readSafetensors(o.resume);
    if (!ckpt)
      return fail(ckpt.takeError());
    resumed = std::move(*ckpt);
  }
  std::string ampMode = o.amp, ampNote;
  if (ampMode == "auto" && resumed && checkpointAmp(*resumed)) {
    ampMode = *checkpointAmp(*resumed);
    ampNote = "--amp=auto: " + ampMode + ", as the checkpoint was trained";
  } else if (ampMode == "auto") {
    auto [mode, why] = defaultAmp(backend->backend);
    ampMode = mode;
    ampNote = "--amp=auto: " + why;
  }
  if (llvm::Error err = checkAmpSupported(backend->backend, ampMode))
    return fail(std::move(err));
  if (o.compare && ampMode == "off")
    return fail("--compare needs --amp=f16 or --amp=bf16 to compare with FP32" +
                llvm::Twine(o.amp == "auto" ? " (--amp=auto chose FP32 on "
                                              "this backend)"
                                            : ""));
  if (!o.ampOptions.empty() && ampMode == "off")
    return fail("--amp-options given, but this run is FP32" +
                llvm::Twine(o.amp == "auto" ? " (--amp=auto chose FP32 on "
                                              "this backend)"
                                            : "") +
                "; ask for --amp=f16 or --amp=bf16");

  bool adapting = !o.adaptPrecision.empty();
  if ((adapting || o.ampWarmupSteps > 0) && ampMode == "off")
    return fail(
        llvm::Twine(adapting ? "--adapt-precision" : "--amp-warmup-steps") +
        " needs --amp=f16 or --amp=bf16" +
        (o.amp == "auto" ? " (--amp=auto chose FP32 on this backend)" : ""));
  NumericsConfig numerics;
  numerics.enabled = o.checkNumerics || !o.rangeStats.empty() || adapting;
  numerics.scope = o.checkNumerics ? o.checkNumericsScope.getValue() : "all";
  numerics.ops.assign(o.checkNumericsOps.begin(), o.checkNumericsOps.end());
  std::optional<PrecisionAdapter> adapter;
  // The user's policy and report files, read once (lowerStep reports bad
  // options with their location).
  auto ampPipeline =
      tg::TGMixedPrecisionPipelineOptions::createFromString(o.ampOptions);
  if (adapting) {
    if (!ampPipeline)
      return fail("invalid --amp-options '" + o.ampOptions + "'");
    adapter.emplace(AdaptOptions{o.adaptSkips, o.adaptWindow, o.adaptMinScale},
                    o.adaptPrecision, ampPipeline->policyFile);
    if (llvm::Error err = adapter->loadUserPolicy())
      return fail(std::move(err));
  }

  // Each compilation in its own session: the variants of --compare, the
  // FP32 warm-up and the AMP step after it, and every re-planned step.
  std::vector<std::unique_ptr<Session>> sessions;
  ModelShape modelShape;
  bool firstCompile = true;
  auto compile =
      [&](const std::string &label, const std::string &mode,
          const std::string &policyFile) -> std::unique_ptr<Trainer> {
    sessions.push_back(std::make_unique<Session>());
    Session &session = *sessions.back();
    OwningOpRef<ModuleOp> module = loadModel(session, o.input, o.importing,
                                             o.differentiation.loss);
    if (!module)
      return nullptr;
    if (firstCompile && isOnnxFile(o.input))
      llvm::outs() << "mp-runner: imported " << o.input << " ("
                   << initialWeightBytes(*module) / 1024
                   << " KiB of initial weights from its initializers)\n";
    FailureOr<bool> made =
        makeTrainStep(*module, o.entry, o.differentiation.options());
    if (failed(made))
      return nullptr;
    if (firstCompile) {
      if (*made)
        llvm::outs() << "mp-runner: differentiated the forward function"
                     << (o.differentiation.options().empty()
                             ? ""
                             : " (" + o.differentiation.options() + ")")
                     << "\n";
      FailureOr<func::FuncOp> fn = findTrainStep(*module, o.entry);
      if (failed(fn))
        return nullptr;
      modelShape = inspectModel(*fn);
    }
    firstCompile = false;
    AmpConfig amp;
    amp.mode = mode;
    amp.options = mode == "off" ? std::string() : o.ampOptions.getValue();
    amp.policyFile = mode == "off" ? std::string() : policyFile;
    FailureOr<StepSignature> sig = lowerStep(*module, o.entry, amp, numerics);
    if (failed(sig))
      return nullptr;
    if (numerics.enabled && sig->checkedOps.empty()) {
      fail("tg-check-numerics watches no op of '" + sig->entry +
           "' (see the warning above)");
      return nullptr;
    }
    auto compiled = CompiledStep::create(*module, std::move(*sig), o.optLevel,
                                         backend->backend == Backend::CUDA);
    if (!compiled) {
      fail(compiled.takeError());
      return nullptr;
    }
    auto trainer = Trainer::create(label, std::move(*compiled),
                                   backend->backend, o.cudaGraphs);
    if (!trainer) {
      fail(trainer.takeError());
      return nullptr;
    }
    return std::move(*trainer);
  };

  std::vector<std::pair<std::string, std::string>> variants;
  if (o.compare)
    variants = {{"fp32", "off"}, {ampMode, ampMode}};
  else
    variants = {{ampMode == "off" ? std::string("fp32") : ampMode, ampMode}};
  std::vector<Run> runs;
  // With --amp-warmup-steps, the run starts with an FP32 step and switches
  // to `ampTrainer` (compiled now, so that a bad AMP option fails at once).
  std::unique_ptr<Trainer> ampTrainer;
  for (auto &[label, mode] : variants) {
    bool warmup = o.ampWarmupSteps > 0;
    std::unique_ptr<Trainer> trainer =
        compile(warmup ? "fp32" : label, warmup ? "off" : mode, "");
    if (!trainer)
      return 1;
    if (warmup) {
      ampTrainer = compile(label, mode, "");
      if (!ampTrainer)
        return 1;
    }
    Run run;
    run.label = label;
    run.amp = mode;
    run.trainer = std::move(trainer);
    runs.push_back(std::move(run));
  }

  const StepSignature &sig = runs.front().trainer->signature();
  llvm::Expected<Dataset> data =
      o.data.empty()
          ? makeSyntheticDataset(sig, modelShape, o.seed, o.trainSamples,
                                 o.evalSamples ? o.evalSamples : 4096)
          : loadNpyDataset(sig, o.data, o.evalData);
  if (!data)
    return fail(data.takeError());
  if (llvm::Error err = checkLabels(sig, modelShape, *data))
    return fail(std::move(err));

  int64_t first = 0;
  for (Run &run : runs)
    if (llvm::Error err = run.trainer->initialize(o.seed))
      return fail(std::move(err));
  if (ampTrainer)
    if (llvm::Error err = ampTrainer->initialize(o.seed))
      return fail(std::move(err));
  if (!o.initWeights.empty()) {
    llvm::Expected<Checkpoint> weights = readSafetensors(o.initWeights);
    if (!weights)
      return fail(weights.takeError());
    for (Run &run : runs) {
      llvm::Expected<unsigned> loaded =
          run.trainer->loadWeights(*weights, o.initWeights);
      if (!loaded)
        return fail(loaded.takeError());
      if (&run == &runs.front())
        llvm::outs() << "mp-runner: initial values of " << *loaded
                     << " parameters from " << o.initWeights << "\n";
    }
  }
  if (resumed) {
    std::optional<std::string> amp = checkpointAmp(*resumed);
    // A checkpoint of the AMP phase of a warm-up run resumes in AMP.
    if (ampTrainer && amp == ampMode)
      runs[0].trainer = std::move(ampTrainer);
    std::string current = ampTrainer ? "off" : ampMode;
    // FP32 to AMP is the switch --amp-warmup-steps makes: allowed, with the
    // loss-scale state starting from its initial values.
    bool fp32ToAmp = amp && *amp == "off" && current != "off";
    if (amp && *amp != current && !fp32ToAmp)
      return fail(o.resume + ": was written with --amp=" + *amp +
                  ", this run has --amp=" + current);
    if (fp32ToAmp)
      llvm::outs() << "mp-runner: " << o.resume << " is an FP32 checkpoint; "
                   << "going on in " << current
                   << " with its parameters and optimizer state (the loss "
                      "scale starts from its initial value)\n";
    llvm::Expected<int64_t> step =
        runs[0].trainer->restore(*resumed, o.resume, fp32ToAmp);
    if (!step)
      return fail(step.takeError());
    first = *step;
    if (first >= o.steps)
      return fail(o.resume + ": already at step " + llvm::Twine(first) +
                  "; --steps is the step to train until: ask for more (say "
                  "--steps " +
                  llvm::Twine(first + o.steps) + ")");
  }

  llvm::outs() << "mp-runner: " << o.input << " ("
               << runs[0].trainer->signature().entry << "), "
               << data->description << "\n";
  if (!backend->note.empty())
    llvm::outs() << "mp-runner: " << backend->note << "\n";
  llvm::outs() << "backend: " << backendName(backend->backend) << "; steps "
               << first + 1 << ".." << o.steps << "; seed " << o.seed << "\n";
  if (!ampNote.empty())
    llvm::outs() << ampNote << "\n";
  if (resumed)
    llvm::outs() << "resumed from " << o.resume << " at step " << first << "\n";

  std::vector<Run *> active;
  for (Run &run : runs)
    active.push_back(&run);
  StepLog log({o.log, o.logEvery, o.steps, !o.noProgress}, active, first);
  if (llvm::Error err = log.open())
    return fail(std::move(err));
  log.header();

  auto saveCheckpoint = [&](int64_t step) -> llvm::Error {
    std::map<std::string, std::string> metadata{
        {"format", "mp-runner checkpoint"},
        {"model", o.input},
        {"amp", runs[0].trainer->label() == "fp32" ? "off" : ampMode},
        {"amp_options", o.ampOptions},
        {"seed", std::to_string(o.seed)}};
    llvm::Expected<Checkpoint> ckpt =
        runs[0].trainer->checkpoint(step, std::move(metadata));
    if (!ckpt)
      return ckpt.takeError();
    if (llvm::Error err = writeSafetensors(o.checkpoint, *ckpt))
      return err;
    if (!log.isTerminal() || step == o.steps)
      llvm::outs() << "checkpoint written: " << o.checkpoint << " (step "
                   << step << ")\n";
    return llvm::Error::success();
  };

  // Ends the run with an error; the log so far is kept (it shows what led
  // there) unless writing it is what failed.
  auto stop = [&](const llvm::Twine &message) {
    if (llvm::Error err = log.finish())
      llvm::consumeError(std::move(err));
    return fail(message);
  };
  bool warnedNonFinite = false;
  RangeStatistics ranges;
  bool reportedFirstNonfinite = false;
  int64_t attributionLines = 0;
  std::map<std::string, int64_t> firstNonfiniteCounts;
  // Replaces the run's step by `next`, carrying the parameters and state
  // over bit for bit.
  auto switchTo =
      [&](Run &run,
          std::unique_ptr<Trainer> next) -> llvm::Expected<CarriedState> {
    llvm::Expected<CarriedState> carried = next->adoptState(*run.trainer);
    if (!carried)
      return carried.takeError();
    if (carried->hashBefore != carried->hashAfter)
      return llvm::createStringError(
          std::errc::io_error,
          "the state changed on its way to the recompiled step (hash %016llx "
          "before, %016llx after)",
          (unsigned long long)carried->hashBefore,
          (unsigned long long)carried->hashAfter);
    run.trainer = std::move(next);
    // Rows of the statistics belong to one compilation: start again.
    if (!o.rangeStats.empty() && ranges.steps() > 0) {
      llvm::outs() << "range statistics: starting again with the new step\n";
      ranges = RangeStatistics();
    }
    return carried;
  };
  // What the numerics checks found in the step just run: reports, range
  // statistics, and a re-plan when the evidence asks for one.
  auto afterStep = [&](Run &run, int64_t step) -> llvm::Error {
    const StepRecord &r = run.records.back();
    const StepSignature &stepSig = run.trainer->signature();
    bool collect = !o.rangeStats.empty() &&
                   (o.rangeStatsSteps == 0 || step - first < o.rangeStatsSteps);
    bool explain =
        r.firstNonfinite >= 0 && o.checkNumerics && !reportedFirstNonfinite;
    std::vector<float> rows;
    if (collect || explain) {
      llvm::Expected<std::vector<float>> stats = run.trainer->numericsStats();
      if (!stats)
        return stats.takeError();
      rows = std::move(*stats);
    }
    if (collect)
      ranges.add(rows);
    if (r.firstNonfinite >= 0) {
      const CheckedOp *op = stepSig.findCheckedOp(r.firstNonfinite);
      if (!op)
        return llvm::createStringError(
            std::errc::invalid_argument,
            "the step reports op #%lld, which tg-check-numerics did not "
            "watch",
            (long long)r.firstNonfinite);
      ++firstNonfiniteCounts[op->name];
      if (explain) {
        printNonfiniteReport(llvm::outs(), r, *op, rows);
        reportedFirstNonfinite = true;
      } else if (r.skipped && (o.checkNumerics || adapter) &&
                 attributionLines < 20) {
        llvm::outs() << "numerics: step " << r.step
                     << " skipped (loss scale now " << formatScale(r)
                     << "): first non-finite value from "
                     << describeCheckedOp(*op) << "\n";
        if (++attributionLines == 20)
          llvm::outs() << "numerics: (further skipped steps are counted in "
                          "the summary only)\n";
      }
    }
    if (!adapter)
      return llvm::Error::success();
    auto hit = adapter->observe(r, stepSig);
    if (!hit)
      return llvm::Error::success();
    // A copy: the table belongs to the step the re-plan replaces.
    CheckedOp op = *hit->first;
    if (!adapter->pin(op)) {
      llvm::outs() << "adapt-precision: step " << r.step << ": "
                   << describeCheckedOp(op) << " keeps overflowing ("
                   << hit->second << "), but "
                   << (op.pin.empty() ? "it has no precision to change"
                                      : "it is pinned to f32 already")
                   << "; leaving it\n";
      return llvm::Error::success();
    }
    if (llvm::Error err = adapter->writePolicy())
      return err;
    std::unique_ptr<Trainer> next =
        compile(run.label, run.amp, adapter->path());
    if (!next)
      return llvm::createStringError(std::errc::invalid_argument,
                                     "the re-planned step does not compile");
    if (llvm::Error err = next->initialize(o.seed))
      return err;
    llvm::Expected<CarriedState> carried = switchTo(run, std::move(next));
    if (!carried)
      return carried.takeError();
    std::vector<std::string> pinned(op.pin.begin(), op.pin.end());
    llvm::outs() << "adapt-precision: step " << r.step
                 << ": re-planned: " << describeCheckedOp(op) << " "
                 << hit->second << "; pinned " << llvm::join(pinned, ", ")
                 << " to f32; recompiled; carried " << carried->carried
                 << " parameter and state tensors over unchanged (hash "
                 << llvm::format_hex_no_prefix(carried->hashBefore, 16)
                 << " before, "
                 << llvm::format_hex_no_prefix(carried->hashAfter, 16)
                 << " after); policy written to " << adapter->path() << "\n";
    adapter->replans.push_back(
        {r.step, op.name, std::move(pinned), hit->second, *carried});
    return llvm::Error::success();
  };
  for (int64_t step = first; step < o.steps; ++step) {
    if (ampTrainer && step >= o.ampWarmupSteps) {
      llvm::Expected<CarriedState> carried =
          switchTo(runs[0], std::move(ampTrainer));
      if (!carried)
        return stop(llvm::toString(carried.takeError()));
      llvm::outs() << "amp-warmup: step " << step + 1 << " on in "
                   << runs[0].amp << ": carried " << carried->carried
                   << " parameter and state tensors over from the FP32 step"
                   << (carried->initialised.empty()
                           ? std::string()
                           : " (" + llvm::join(carried->initialised, ", ") +
                                 " start from their initial values)")
                   << "\n";
    }
    for (Run &run : runs) {
      llvm::Expected<StepRecord> r = run.trainer->step(step, *data);
      if (!r)
        return stop(run.label + " step " + llvm::Twine(step + 1) + ": " +
                    llvm::toString(r.takeError()));
      run.records.push_back(*r);
    }
    if (llvm::Error err = log.record(step + 1))
      return fail(std::move(err));
    for (Run &run : runs)
      if (llvm::Error err = afterStep(run, step))
        return stop(run.label + " step " + llvm::Twine(step + 1) + ": " +
                    llvm::toString(std::move(err)));
    for (Run &run : runs) {
      const StepRecord &r = run.records.back();
      if (std::isfinite(r.loss) || r.skipped)
        continue;
      std::string what = llvm::formatv("{0} step {1}: the loss is {2}",
                                       run.label, step + 1, r.loss)
                             .str();
      if (o.onNonFinite == "stop")
        return stop(what + " (not a step skipped by loss scaling); stopping. "
                           "Lower the learning rate, check the data, or pass "
                           "--on-nonfinite=warn to go on");
      if (!warnedNonFinite)
        llvm::errs() << "\nmp-runner: warning: " << what
                     << "; going on (--on-nonfinite=warn)\n";
      warnedNonFinite = true;
    }
    if (!o.checkpoint.empty() && o.checkpointEvery > 0 &&
        (step + 1) % o.checkpointEvery == 0 && step + 1 != o.steps)
      if (llvm::Error err = saveCheckpoint(step + 1))
        return stop(llvm::toString(std::move(err)));
  }
  if (llvm::Error err = log.finish())
    return fail(std::move(err));
  if (!o.log.empty())
    llvm::outs() << "log written: " << o.log << "\n";
  if (!o.checkpoint.empty())
    if (llvm::Error err = saveCheckpoint(o.steps))
      return fail(std::move(err));

  if (llvm::Error err = evaluate(runs, *data, o.evalSamples, log.isTerminal()))
    return fail(std::move(err));

  llvm::outs() << "\n";
  if (o.compare) {
    printChart(llvm::outs(), runs);
    llvm::outs() << "\n";
  }
  std::string split = data->evalHeldOut ? "test" : "training";
  for (Run &run : runs) {
    const StepRecord &last = run.records.back();
    llvm::outs() << llvm::formatv("{0,5}: final loss {1:f6}", run.label,
                                  last.loss);
    if (run.accuracy)
      llvm::outs() << llvm::formatv(", {0} accuracy {1:f2}%", split,
                                    *run.accuracy);
    llvm::outs() << llvm::formatv(", {0:f3} ms/step, {1} skipped steps",
                                  meanStepTime(run), last.skippedTotal);
    if (run.trainer->signature().findArgument("amp.loss_scale"))
      llvm::outs() << ", loss scale " << formatScale(last);
    llvm::outs() << "\n";
  }
  if (adapter) {
    if (llvm::Error err = adapter->writePolicy())
      return fail(std::move(err));
    llvm::outs() << "adapt-precision: " << adapter->replans.size() << " re-plan"
                 << (adapter->replans.size() == 1 ? "" : "s") << ", "
                 << adapter->numPinned()
                 << " op(s) pinned to f32; final policy written to "
                 << adapter->path()
                 << " (use it with --amp-options=policy=" << adapter->path()
                 << ")\n";
  }
  if (!o.rangeStats.empty()) {
    const StepSignature &last = runs[0].trainer->signature();
    if (llvm::Error err = ranges.write(o.rangeStats, last, runs[0].amp))
      return fail(std::move(err));
    ranges.printClosest(llvm::outs(), last, 5);
    llvm::outs() << "range statistics written to " << o.rangeStats << "\n";
    // With the precision report when the run wrote one (report=...).
    if (ampPipeline && !ampPipeline->reportFile.empty() &&
        runs[0].amp != "off") {
      if (llvm::Error err =
              ranges.annotateReport(ampPipeline->reportFile, last))
        return fail(std::move(err));
      llvm::outs() << "ranges added to the precision report "
                   << ampPipeline->reportFile << "\n";
    }
  }
  if (runs.size() == 2) {
    if (runs[0].accuracy && runs[1].accuracy) {
      Disagreement d = compareClassifications(runs[0], runs[1]);
      llvm::outs() << llvm::formatv(
          "{0} accuracy difference ({1} - fp32): {2:f2} points; the runs "
          "disagree on {3} of {4} samples ({1} alone right on {5}, fp32 "
          "alone on {6})\n",
          split, runs[1].label, *runs[1].accuracy - *runs[0].accuracy,
          d.onlyA + d.onlyB, runs[1].correct.size(), d.onlyB, d.onlyA);
    }
    double t0 = meanStepTime(runs[0]), t1 = meanStepTime(runs[1]);
    if (t0 > 0)
      llvm::outs() << llvm::formatv("step time {0} / fp32: {1:f2}x\n",
                                    runs[1].label, t1 / t0);
  }
  mprtAllocatorStats stats = runs[0].trainer->allocatorStats();
  int64_t bufferBytes = 0;
  for (Run &run : runs)
    bufferBytes += run.trainer->bufferBytes();
  llvm::outs() << llvm::formatv(
      "{0} allocator: {1} system allocations, {2} served from the cache, "
      "peak {3:f2} MiB\n",
      backend->backend == Backend::CUDA ? "device" : "runtime",
      stats.systemAllocations, stats.cacheHits,
      stats.peakBytesInUse / 1048576.0);

  if (!o.plot.empty()) {
    std::string title =
        "mp-runner: " + llvm::sys::path::filename(o.input).str();
    if (llvm::Error err =
            writeFileAtomically(o.plot, [&](llvm::raw_ostream &os) {
              writeSvg(os, runs, title);
              return llvm::Error::success();
            }))
      return fail(std::move(err));
    llvm::outs() << "loss curves written to " << o.plot << "\n";
  }
  // What the numerics checks found, for the summary.
  llvm::json::Object numericsJson;
  if (o.ampWarmupSteps > 0)
    numericsJson["amp_warmup_steps"] = int64_t(o.ampWarmupSteps);
  if (!firstNonfiniteCounts.empty() || o.checkNumerics || adapter) {
    llvm::json::Object counts;
    for (auto &[name, count] : firstNonfiniteCounts)
      counts[name] = count;
    numericsJson["first_nonfinite_ops"] = std::move(counts);
  }
  if (adapter) {
    llvm::json::Array replans;
    for (const Replan &r : adapter->replans)
      replans.push_back(llvm::json::Object{
          {"step", r.step},
          {"op", r.op},
          {"pinned", llvm::json::Array(r.pinned)},
          {"evidence", r.evidence},
          {"carried_tensors", int64_t(r.state.carried)},
          {"state_hash_before",
           llvm::utohexstr(r.state.hashBefore, /*LowerCase=*/true, 16)},
          {"state_hash_after",
           llvm::utohexstr(r.state.hashAfter, /*LowerCase=*/true, 16)}});
    numericsJson["replans"] = std::move(replans);
    numericsJson["adapted_policy"] = adapter->path();
  }
  if (!o.summary.empty())
    if (llvm::Error err =
            writeSummary(o, runs, *data, backendName(backend->backend), ampMode,
                         first, stats, bufferBytes, std::move(numericsJson)))
      return fail(std::move(err));
  return 0;
}
