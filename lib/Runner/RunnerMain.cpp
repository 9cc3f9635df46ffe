//===- RunnerMain.cpp - mp-runner: train a model with a compiled step -----===//
//
// Reads a training step, compiles it (optionally through the mixed-precision
// pipeline) for the CPU runtime, initialises parameters from a seed and
// trains on a built-in synthetic dataset or .npy arrays. With --compare it
// trains FP32 and AMP variants from the same initialisation on the same
// batches and prints both loss curves and final accuracies side by side.
//
//===----------------------------------------------------------------------===//

#include "mp/Runner/Runner.h"

#include "CompiledStep.h"
#include "Dataset.h"
#include "Loading.h"
#include "Trainer.h"

#include "mp/Runtime/MPCompiled.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <unistd.h>

using namespace mlir;
using namespace mp;
using namespace mp::runner;
namespace cl = llvm::cl;

namespace {

struct Options {
  cl::OptionCategory category{"mp-runner options"};
  cl::opt<std::string> input{cl::Positional, cl::desc("<step.mlir>"),
                             cl::init(""), cl::cat(category)};
  cl::opt<int64_t> steps{"steps", cl::desc("Train until this step"),
                         cl::init(100), cl::cat(category)};
  cl::opt<std::string> amp{"amp",
                           cl::desc("f16, bf16, off, or auto (what the "
                                    "device runs fast)"),
                           cl::init("auto"), cl::cat(category)};
  cl::opt<std::string> ampOptions{
      "amp-options",
      cl::desc("tg-mixed-precision options, e.g. \"loss-scaling=dynamic "
               "growth-interval=100\""),
      cl::init(""), cl::cat(category)};
  cl::opt<std::string> backend{"backend", cl::desc("cpu, cuda or auto"),
                               cl::init("auto"), cl::cat(category)};
  cl::opt<std::string> entry{"entry",
                             cl::desc("The step function (default: the "
                                      "one marked tg.train_step)"),
                             cl::init(""), cl::cat(category)};
  cl::opt<uint64_t> seed{"seed", cl::desc("Seed of data and initialisation"),
                         cl::init(0), cl::cat(category)};
  cl::list<std::string> data{"data",
                             cl::desc("<name>=<file.npy> for an input or label "
                                      "(default: a synthetic dataset)"),
                             cl::cat(category)};
  cl::opt<int64_t> trainSamples{"train-samples",
                                cl::desc("Synthetic training samples"),
                                cl::init(8192), cl::cat(category)};
  cl::opt<int64_t> evalSamples{"eval-samples",
                               cl::desc("Synthetic evaluation samples"),
                               cl::init(8192), cl::cat(category)};
  cl::opt<bool> compare{"compare",
                        cl::desc("Train FP32 and AMP side by side"),
                        cl::init(false), cl::cat(category)};
  cl::opt<std::string> plot{"plot",
                            cl::desc("Write the loss curves as SVG"),
                            cl::init(""), cl::cat(category)};
  cl::opt<std::string> log{"log",
                           cl::desc("Per-step log: .jsonl or .csv"),
                           cl::init(""), cl::cat(category)};
  cl::opt<int64_t> logEvery{"log-every",
                            cl::desc("Print every N steps (0: about 10 lines)"),
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
                                   cl::desc("Steps between checkpoints"),
                                   cl::init(0), cl::cat(category)};
  cl::opt<std::string> resume{"resume",
                              cl::desc("Continue from a checkpoint"),
                              cl::init(""), cl::cat(category)};
  cl::opt<unsigned> optLevel{"O", cl::desc("LLVM optimisation level"),
                             cl::init(2), cl::cat(category)};
  cl::opt<bool> noProgress{"no-progress",
                           cl::desc("Plain lines even on a terminal"),
                           cl::init(false), cl::cat(category)};
  cl::opt<bool> cudaGraphs{"cuda-graphs",
                           cl::desc("Capture the step as a CUDA graph after "
                                    "warm-up and replay it"),
                           cl::init(true), cl::cat(category)};
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

/// One variant of the model being trained, with its history.
struct Run {
  std::string label, amp;
  std::unique_ptr<Trainer> trainer;
  std::vector<StepRecord> records;
  std::optional<double> accuracy;
};

/// JSON has no infinities or NaNs: they become null.
llvm::json::Value jsonNumber(double v) {
  if (std::isfinite(v))
    return v;
  return nullptr;
}

std::string formatScale(const StepRecord &r) {
  if (!r.hasLossScale)
    return "-";
  return llvm::formatv("{0}", r.lossScale).str();
}

void writeSvg(llvm::raw_ostream &os, llvm::ArrayRef<Run> runs,
              llvm::StringRef title) {
  const double width = 800, height = 480, left = 70, right = 20, top = 40,
               bottom = 50;
  double maxLoss = 0, minLoss = INFINITY;
  int64_t maxStep = 1;
  for (const Run &run : runs)
    for (const StepRecord &r : run.records)
      if (std::isfinite(r.loss)) {
        maxLoss = std::max(maxLoss, r.loss);
        minLoss = std::min(minLoss, r.loss);
        maxStep = std::max(maxStep, r.step);
      }
  if (!(minLoss < maxLoss)) {
    minLoss = 0;
    maxLoss = std::max(1.0, maxLoss);
  }
  minLoss = std::min(minLoss, 0.0);
  auto x = [&](double s) {
    return left + (width - left - right) * s / double(maxStep);
  };
  auto y = [&](double l) {
    return top + (height - top - bottom) * (1 - (l - minLoss) / (maxLoss - minLoss));
  };
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" font-family=\"sans-serif\" "
     << "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" "
     << "font-size=\"15\">" << title << "</text>\n";
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"black\"/>\n",
                      left, height - bottom, width - right);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                      "stroke=\"black\"/>\n",
                      left, top, height - bottom);
  for (int k = 0; k <= 5; ++k) {
    double l = minLoss + (maxLoss - minLoss) * k / 5;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">"
                        "{2:f2}</text>\n",
                        left - 6, y(l) + 4, l);
    double s = double(maxStep) * k / 5;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
                        "{2}</text>\n",
                        x(s), height - bottom + 18, int64_t(s));
  }
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">step"
                      "</text>\n<text x=\"16\" y=\"{2}\" transform=\"rotate("
                      "-90 16 {2})\" text-anchor=\"middle\">loss</text>\n",
                      (left + width - right) / 2, height - 12,
                      (top + height - bottom) / 2);
  const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c"};
  for (auto [k, run] : llvm::enumerate(runs)) {
    os << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\""
       << colors[k % 3] << "\" points=\"";
    for (const StepRecord &r : run.records)
      if (std::isfinite(r.loss))
        os << llvm::formatv("{0:f1},{1:f1} ", x(r.step), y(r.loss));
    os << "\"/>\n";
    std::string legend = run.label;
    if (run.accuracy)
      legend += llvm::formatv(" (accuracy {0:f2}%)", *run.accuracy).str();
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"{2}\">{3}</text>\n",
                        width - right - 260, top + 18 + 18 * k, colors[k % 3],
                        legend);
  }
  os << "</svg>\n";
}

/// The loss curves as a text chart: one column per group of steps (the
/// group's mean), `*` for the first run, `o` for the second, `#` where they
/// share a cell.
void printChart(llvm::raw_ostream &os, llvm::ArrayRef<Run> runs) {
  const int width = 64, height = 12;
  std::vector<std::vector<double>> columns;
  double lo = INFINITY, hi = -INFINITY;
  for (const Run &run : runs) {
    std::vector<double> col(width, NAN);
    size_t n = run.records.size();
    for (int c = 0; c < width && n; ++c) {
      size_t begin = c * n / width, end = std::max(begin + 1, (c + 1) * n / width);
      double sum = 0;
      int count = 0;
      for (size_t k = begin; k < end && k < n; ++k)
        if (std::isfinite(run.records[k].loss)) {
          sum += run.records[k].loss;
          ++count;
        }
      if (count) {
        col[c] = sum / count;
        lo = std::min(lo, col[c]);
        hi = std::max(hi, col[c]);
      }
    }
    columns.push_back(std::move(col));
  }
  if (!(lo < hi))
    return;
  std::vector<std::string> grid(height, std::string(width, ' '));
  const char marks[] = {'*', 'o'};
  for (size_t r = 0; r < columns.size() && r < 2; ++r)
    for (int c = 0; c < width; ++c) {
      if (!std::isfinite(columns[r][c]))
        continue;
      int row = int(std::lround((hi - columns[r][c]) / (hi - lo) * (height - 1)));
      char &cell = grid[row][c];
      cell = cell == ' ' ? marks[r] : '#';
    }
  os << "loss (" << runs[0].label << " *";
  if (runs.size() > 1)
    os << ", " << runs[1].label << " o, both #";
  os << ")\n";
  for (int row = 0; row < height; ++row) {
    double v = hi - (hi - lo) * row / (height - 1);
    os << llvm::format("%8.3f |", v) << grid[row] << "\n";
  }
  os << "         +" << std::string(width, '-') << "\n";
  os << llvm::format("          step %-10lld", (long long)runs[0].records.front().step)
     << std::string(width - 30, ' ')
     << llvm::format("%10lld\n", (long long)runs[0].records.back().step);
}

class Logger {
public:
  Logger(const Options &o, llvm::ArrayRef<Run *> runs, int64_t first)
      : o(o), runs(runs), first(first) {
    terminal = !o.noProgress && ::isatty(fileno(stdout));
    every = o.logEvery > 0 ? int64_t(o.logEvery)
                           : std::max<int64_t>(1, (o.steps - first) / 10);
  }

  llvm::Error openLog() {
    if (o.log.empty())
      return llvm::Error::success();
    csv = llvm::StringRef(o.log).ends_with(".csv");
    if (!csv && !llvm::StringRef(o.log).ends_with(".jsonl"))
      return llvm::createStringError(std::errc::invalid_argument,
                                     "--log: use a .jsonl or .csv file name");
    std::error_code ec;
    file = std::make_unique<llvm::raw_fd_ostream>(o.log, ec);
    if (ec)
      return llvm::createStringError(ec, "cannot write '%s'", o.log.c_str());
    if (csv)
      *file << "run,step,loss,loss_scale,good_steps,skipped,skipped_total,"
               "step_ms,weights_hash\n";
    return llvm::Error::success();
  }

  void header() {
    if (terminal)
      return;
    llvm::outs() << llvm::formatv("{0,6}", "step");
    for (Run *run : runs)
      llvm::outs() << llvm::formatv("  {0,12}  {1,10}  {2,8}  {3,9}",
                                    run->label + " loss", "scale", "skipped",
                                    "ms/step");
    llvm::outs() << "\n";
  }

  llvm::Error record(int64_t step) {
    for (Run *run : runs) {
      const StepRecord &r = run->records.back();
      if (file) {
        // Hashing every parameter is only worth it when someone reads it.
        llvm::Expected<uint64_t> weights = run->trainer->weightsHash();
        if (!weights)
          return weights.takeError();
        std::string hash = llvm::formatv("{0:x16}", *weights).str();
        if (csv)
          *file << run->label << ","
                << llvm::format("%lld,%.9g,%.9g,%lld,%d,%lld,%.6f,",
                                (long long)r.step, r.loss, r.lossScale,
                                (long long)r.goodSteps, int(r.skipped),
                                (long long)r.skippedTotal, r.milliseconds)
                << hash << "\n";
        else
          *file << llvm::json::Value(llvm::json::Object{
                       {"run", run->label},
                       {"step", r.step},
                       {"loss", jsonNumber(r.loss)},
                       {"loss_scale", r.hasLossScale
                                          ? llvm::json::Value(r.lossScale)
                                          : llvm::json::Value(nullptr)},
                       {"good_steps", r.goodSteps},
                       {"skipped", r.skipped},
                       {"skipped_total", r.skippedTotal},
                       {"step_ms", r.milliseconds},
                       {"weights_hash", hash}})
                << "\n";
      }
    }
    bool last = step == o.steps;
    if (terminal) {
      // One line, redrawn: a progress bar and the latest values.
      const int width = 30;
      int filled = int(width * (step - first) /
                       std::max<int64_t>(1, o.steps - first));
      std::string bar(filled, '#');
      bar.resize(width, '.');
      llvm::outs() << "\r[" << bar << "] " << step << "/" << o.steps;
      for (Run *run : runs) {
        const StepRecord &r = run->records.back();
        llvm::outs() << llvm::formatv("  {0} loss {1:f4} scale {2} skipped {3}",
                                      run->label, r.loss, formatScale(r),
                                      r.skippedTotal);
      }
      llvm::outs() << (last ? "\n" : "   ");
      llvm::outs().flush();
      return llvm::Error::success();
    }
    if (step % every != 0 && !last && step != first + 1)
      return llvm::Error::success();
    llvm::outs() << llvm::formatv("{0,6}", step);
    for (Run *run : runs) {
      const StepRecord &r = run->records.back();
      // The mean step time since the previous line.
      double mean = 0;
      int64_t n = 0;
      for (auto it = run->records.rbegin();
           it != run->records.rend() && n < every; ++it, ++n)
        mean += it->milliseconds;
      llvm::outs() << llvm::formatv("  {0,12:f6}  {1,10}  {2,8}  {3,9:f3}",
                                    r.loss, formatScale(r), r.skippedTotal,
                                    mean / std::max<int64_t>(n, 1));
    }
    llvm::outs() << "\n";
    llvm::outs().flush();
    return llvm::Error::success();
  }

private:
  const Options &o;
  llvm::ArrayRef<Run *> runs;
  int64_t first;
  int64_t every;
  bool terminal = false, csv = false;
  std::unique_ptr<llvm::raw_fd_ostream> file;
};

double meanStepTime(const Run &run) {
  // Skip the first step: it fills the allocator's cache and warms up.
  double sum = 0;
  int64_t n = 0;
  for (size_t k = run.records.size() > 1 ? 1 : 0; k < run.records.size(); ++k) {
    sum += run.records[k].milliseconds;
    ++n;
  }
  return n ? sum / n : 0;
}

} // namespace

int mp::runnerMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  Options o;
  cl::HideUnrelatedOptions(o.category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "mp-runner: compile a tg training step and train a model with it\n");

  if (o.deviceInfo) {
    describeDevices(llvm::outs());
    return 0;
  }
  if (o.input.empty())
    return fail("no training step given (mp-runner <step.mlir>; see --help)");
  if (o.amp != "f16" && o.amp != "bf16" && o.amp != "off" && o.amp != "auto")
    return fail("--amp must be f16, bf16, off or auto, not '" + o.amp + "'");
  if (o.backend != "cpu" && o.backend != "cuda" && o.backend != "auto")
    return fail("--backend must be cpu, cuda or auto, not '" + o.backend + "'");
  if (o.steps < 1)
    return fail("--steps must be at least 1");
  llvm::Expected<BackendChoice> backend = chooseBackend(o.backend);
  if (!backend)
    return fail(backend.takeError());
  std::string ampMode = o.amp, ampNote;
  if (ampMode == "auto") {
    auto [mode, why] = defaultAmp(backend->backend);
    ampMode = mode;
    ampNote = "--amp=auto: " + mode + ", " + why;
  } else if (llvm::Error err = checkAmpSupported(backend->backend, ampMode)) {
    return fail(std::move(err));
  }
  if (o.compare && ampMode == "off")
    return fail("--compare needs --amp=f16 or --amp=bf16 to compare with FP32");
  if (o.compare && (!o.resume.empty() || !o.checkpoint.empty()))
    return fail("--compare does not take checkpoints");
  if (o.trainSamples < 1 || o.evalSamples < 1)
    return fail("--train-samples and --eval-samples must be positive");

  // Compile each variant in its own session.
  std::vector<std::pair<std::string, std::string>> variants;
  if (o.compare)
    variants = {{"fp32", "off"}, {ampMode, ampMode}};
  else
    variants = {{ampMode == "off" ? std::string("fp32") : ampMode, ampMode}};
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<Run> runs;
  ModelShape modelShape;
  for (auto &[label, mode] : variants) {
    sessions.push_back(std::make_unique<Session>());
    Session &session = *sessions.back();
    OwningOpRef<ModuleOp> module = loadModule(session, o.input);
    if (!module)
      return 1;
    if (runs.empty()) {
      FailureOr<func::FuncOp> fn = findTrainStep(*module, o.entry);
      if (failed(fn))
        return 1;
      modelShape = inspectModel(*fn);
    }
    AmpConfig amp;
    amp.mode = mode;
    amp.options = mode == "off" ? std::string() : o.ampOptions.getValue();
    FailureOr<StepSignature> sig = lowerStep(*module, o.entry, amp);
    if (failed(sig))
      return 1;
    auto compiled =
        CompiledStep::create(*module, std::move(*sig), o.optLevel,
                             backend->backend == Backend::CUDA);
    if (!compiled)
      return fail(compiled.takeError());
    auto trainer = Trainer::create(label, std::move(*compiled),
                                   backend->backend, o.cudaGraphs);
    if (!trainer)
      return fail(trainer.takeError());
    Run run;
    run.label = label;
    run.amp = mode;
    run.trainer = std::move(*trainer);
    runs.push_back(std::move(run));
  }

  const StepSignature &sig = runs.front().trainer->signature();
  llvm::Expected<Dataset> data =
      o.data.empty()
          ? makeSyntheticDataset(sig, modelShape, o.seed, o.trainSamples,
                                 o.evalSamples)
          : loadNpyDataset(sig, o.data);
  if (!data)
    return fail(data.takeError());

  int64_t first = 0;
  for (Run &run : runs)
    if (llvm::Error err = run.trainer->initialize(o.seed))
      return fail(std::move(err));
  if (!o.resume.empty()) {
    llvm::Expected<Checkpoint> ckpt = readSafetensors(o.resume);
    if (!ckpt)
      return fail(ckpt.takeError());
    auto amp = ckpt->metadata.find("amp");
    if (amp != ckpt->metadata.end() && amp->second != ampMode)
      return fail(o.resume + ": was written with --amp=" + amp->second +
                  ", this run has --amp=" + ampMode);
    llvm::Expected<int64_t> step = runs[0].trainer->restore(*ckpt, o.resume);
    if (!step)
      return fail(step.takeError());
    first = *step;
    if (first >= o.steps)
      return fail(o.resume + ": already at step " + llvm::Twine(first) +
                  "; ask for more --steps");
  }

  llvm::outs() << "mp-runner: " << o.input << " (" << sig.entry << "), "
               << data->description << "\n";
  llvm::outs() << "backend: " << backendName(backend->backend)
               << (backend->note.empty() ? "" : " (" + backend->note + ")")
               << "; steps " << first + 1 << ".." << o.steps << "; seed "
               << o.seed << "\n";
  if (!ampNote.empty())
    llvm::outs() << ampNote << "\n";

  std::vector<Run *> active;
  for (Run &run : runs)
    active.push_back(&run);
  Logger logger(o, active, first);
  if (llvm::Error err = logger.openLog())
    return fail(std::move(err));
  logger.header();

  auto metadata = [&]() {
    return std::map<std::string, std::string>{
        {"format", "mp-runner checkpoint"},
        {"model", o.input},
        {"amp", ampMode},
        {"amp_options", o.ampOptions},
        {"seed", std::to_string(o.seed)}};
  };
  auto saveCheckpoint = [&](int64_t step) -> llvm::Error {
    llvm::Expected<Checkpoint> ckpt =
        runs[0].trainer->checkpoint(step, metadata());
    if (!ckpt)
      return ckpt.takeError();
    return writeSafetensors(o.checkpoint, *ckpt);
  };

  for (int64_t step = first; step < o.steps; ++step) {
    for (Run &run : runs) {
      llvm::Expected<StepRecord> r = run.trainer->step(step, *data);
      if (!r)
        return fail(run.label + " step " + llvm::Twine(step + 1) + ": " +
                    llvm::toString(r.takeError()));
      run.records.push_back(*r);
    }
    if (llvm::Error err = logger.record(step + 1))
      return fail(std::move(err));
    if (!o.checkpoint.empty() && o.checkpointEvery > 0 &&
        (step + 1) % o.checkpointEvery == 0 && step + 1 != o.steps)
      if (llvm::Error err = saveCheckpoint(step + 1))
        return fail(std::move(err));
  }
  if (!o.checkpoint.empty())
    if (llvm::Error err = saveCheckpoint(o.steps))
      return fail(std::move(err));

  for (Run &run : runs) {
    llvm::Expected<std::optional<double>> accuracy =
        run.trainer->evaluate(*data);
    if (!accuracy)
      return fail(accuracy.takeError());
    run.accuracy = *accuracy;
  }

  llvm::outs() << "\n";
  if (o.compare) {
    printChart(llvm::outs(), runs);
    llvm::outs() << "\n";
  }
  for (Run &run : runs) {
    const StepRecord &last = run.records.back();
    llvm::outs() << llvm::formatv("{0,5}: final loss {1:f6}", run.label,
                                  last.loss);
    if (run.accuracy)
      llvm::outs() << llvm::formatv(", accuracy {0:f2}%", *run.accuracy);
    llvm::outs() << llvm::formatv(", {0:f3} ms/step, {1} skipped steps",
                                  meanStepTime(run), last.skippedTotal);
    if (run.trainer->signature().findArgument("amp.loss_scale"))
      llvm::outs() << ", loss scale " << formatScale(last);
    llvm::outs() << "\n";
  }
  if (runs.size() == 2) {
    if (runs[0].accuracy && runs[1].accuracy)
      llvm::outs() << llvm::formatv(
          "accuracy difference ({0} - fp32): {1:f2} points\n", runs[1].label,
          *runs[1].accuracy - *runs[0].accuracy);
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
    std::string title = "mp-runner: " + llvm::sys::path::filename(o.input).str();
    if (llvm::Error err = llvm::writeToOutput(o.plot, [&](llvm::raw_ostream &os) {
          writeSvg(os, runs, title);
          return llvm::Error::success();
        }))
      return fail(std::move(err));
    llvm::outs() << "loss curves written to " << o.plot << "\n";
  }

  if (!o.summary.empty()) {
    llvm::json::Array runsJson;
    for (Run &run : runs) {
      llvm::json::Array losses, scales, skipped, times;
      for (const StepRecord &r : run.records) {
        losses.push_back(jsonNumber(r.loss));
        times.push_back(r.milliseconds);
        scales.push_back(r.hasLossScale ? llvm::json::Value(r.lossScale)
                                        : llvm::json::Value(nullptr));
        skipped.push_back(r.skipped);
      }
      llvm::json::Object entry{
          {"run", run.label},
          {"amp", run.amp},
          {"final_loss", jsonNumber(run.records.back().loss)},
          {"mean_step_ms", meanStepTime(run)},
          {"skipped_steps", run.records.back().skippedTotal},
          {"losses", std::move(losses)},
          {"loss_scales", std::move(scales)},
          {"skipped", std::move(skipped)},
          {"step_ms", std::move(times)}};
      if (run.accuracy)
        entry["accuracy"] = *run.accuracy;
      runsJson.push_back(std::move(entry));
    }
    llvm::json::Object root{
        {"model", o.input},
        {"steps", int64_t(o.steps)},
        {"first_step", int64_t(first + 1)},
        {"backend", backendName(backend->backend)},
        {"amp", ampMode},
        {"system_allocations", int64_t(stats.systemAllocations)},
        {"peak_bytes", int64_t(stats.peakBytesInUse)},
        {"buffer_bytes", bufferBytes},
        {"runs", std::move(runsJson)}};
    if (llvm::Error err =
            llvm::writeToOutput(o.summary, [&](llvm::raw_ostream &os) {
              os << llvm::formatv("{0:2}",
                                  llvm::json::Value(std::move(root)))
                 << "\n";
              return llvm::Error::success();
            }))
      return fail(std::move(err));
  }
  return 0;
}
