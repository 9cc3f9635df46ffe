//===- Options.h - mp-runner's command line ---------------------*- C++ -*-===//
//
// Every option of mp-runner, and the checks that need no model.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPRUNNER_OPTIONS_H
#define MP_TOOLS_MPRUNNER_OPTIONS_H

#include "mp/Tools/DifferentiationFlags.h"
#include "mp/Tools/ImportFlags.h"
#include "mp/Tools/ReportFlags.h"

#include "llvm/Support/CommandLine.h"

namespace mp::tools {

struct Options {
  llvm::cl::OptionCategory category{"mp-runner options"};
  llvm::cl::opt<std::string> input{
      llvm::cl::Positional,
      llvm::cl::desc("<step.mlir, forward.mlir or model.onnx>"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  DifferentiationFlags differentiation{category};
  ImportFlags importing{category};
  llvm::cl::opt<int64_t> steps{
      "steps",
      llvm::cl::desc("Train until this step (default 100; with "
                     "--resume, the step to reach)"),
      llvm::cl::init(100), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> amp{
      "amp",
      llvm::cl::desc(
          "f16, bf16, off, or auto (default: what the backend runs "
          "fastest: on the CPU bf16 where it multiplies bf16 in hardware "
          "(AVX512_BF16 or AMX), FP32 elsewhere; bf16 or f16 on GPUs with "
          "tensor cores; with --resume, the checkpoint's mode)"),
      llvm::cl::init("auto"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> ampOptions{
      "amp-options",
      llvm::cl::desc("tg-mixed-precision options, e.g. \"loss-scaling=dynamic "
                     "growth-interval=100\" (default: none)"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> layout{
      "layout",
      llvm::cl::desc(
          "Activation layout of convolutions, pooling and batch norm: auto "
          "(default: the backend's preference, NHWC on the CPU), nhwc, nchw, "
          "or off (as the model has them)"),
      llvm::cl::init("auto"), llvm::cl::cat(category)};
  llvm::cl::opt<bool> fuseEpilogues{
      "fuse-epilogues",
      llvm::cl::desc("Fold the bias, residual and activation after each "
                     "matmul into its GEMM (tg-fuse-epilogues; default: "
                     "true, except with --check-numerics, --range-stats and "
                     "--adapt-precision, which observe every op)"),
      llvm::cl::init(true), llvm::cl::cat(category)};
  llvm::cl::opt<bool> foldTransposes{
      "fold-transposes",
      llvm::cl::desc("Read the transposes of the last two dimensions around "
                     "each matmul through its transpose flags instead of "
                     "copying them (tg-fold-transposes; default: true, "
                     "except with --check-numerics, --range-stats and "
                     "--adapt-precision, which observe every op)"),
      llvm::cl::init(true), llvm::cl::cat(category)};
  llvm::cl::opt<bool> shadowWeights{
      "shadow-weights",
      llvm::cl::desc("With --amp, keep each f32 master weight's f16/bf16 "
                     "copy between steps, written by its optimizer update, "
                     "instead of casting the weights at the start of every "
                     "step (tg-shadow-weights; the same values; default: "
                     "true)"),
      llvm::cl::init(true), llvm::cl::cat(category)};
  ReportFlags reports{category};
  llvm::cl::opt<std::string> shadowsReport{
      "shadows-report",
      llvm::cl::desc("Write tg-shadow-weights' report (JSON) here: each "
                     "parameter, and its low-precision shadow or why it has "
                     "none"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> backend{
      "backend",
      llvm::cl::desc("cpu, cuda or auto (default: the GPU "
                     "when there is one)"),
      llvm::cl::init("auto"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> entry{
      "entry",
      llvm::cl::desc("The step function (default: the "
                     "one marked tg.train_step)"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<uint64_t> seed{"seed",
                               llvm::cl::desc("Seed of data and initialisation "
                                              "(default 0)"),
                               llvm::cl::init(0), llvm::cl::cat(category)};
  llvm::cl::list<std::string> data{
      "data",
      llvm::cl::desc("<name>=<file.npy> for an input or label "
                     "(default: a synthetic dataset)"),
      llvm::cl::cat(category)};
  llvm::cl::list<std::string> evalData{
      "eval-data",
      llvm::cl::desc(
          "<name>=<file.npy>: held-out arrays to measure accuracy on "
          "(default with --data: the training arrays, reported as "
          "training accuracy)"),
      llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> trainSamples{
      "train-samples",
      llvm::cl::desc("Synthetic training samples "
                     "(default 8192)"),
      llvm::cl::init(8192), llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> evalSamples{
      "eval-samples",
      llvm::cl::desc(
          "Evaluate on at most this many samples (default 4096; 0: all "
          "of --eval-data); also the size of the synthetic held-out "
          "split"),
      llvm::cl::init(4096), llvm::cl::cat(category)};
  llvm::cl::opt<bool> compare{"compare",
                              llvm::cl::desc("Train FP32 and AMP side by side"),
                              llvm::cl::init(false), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> plot{
      "plot", llvm::cl::desc("Write the loss curves as SVG"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> log{"log",
                                 llvm::cl::desc("Per-step log: .jsonl or .csv"),
                                 llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> logEvery{
      "log-every",
      llvm::cl::desc("Print every N steps (default 0: about "
                     "10 lines)"),
      llvm::cl::init(0), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> summary{
      "summary", llvm::cl::desc("Write a JSON summary of the run"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> checkpoint{
      "checkpoint",
      llvm::cl::desc("Write a safetensors checkpoint "
                     "here (at the end, and every "
                     "--checkpoint-every steps)"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> checkpointEvery{
      "checkpoint-every",
      llvm::cl::desc("Steps between checkpoints "
                     "(default 0: at the end only)"),
      llvm::cl::init(0), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> initWeights{
      "init-weights",
      llvm::cl::desc("Initial parameter values from a safetensors file (as "
                     "mp-import-onnx writes); parameters it does not hold keep "
                     "their initialisation"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> resume{
      "resume",
      llvm::cl::desc("Continue from a checkpoint, up to "
                     "--steps"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> onNonFinite{
      "on-nonfinite",
      llvm::cl::desc(
          "When the loss becomes NaN or infinite in a step that was not "
          "skipped by loss scaling: stop (default) or warn and go on"),
      llvm::cl::init("stop"), llvm::cl::cat(category)};
  llvm::cl::opt<double> compileProgress{
      "compile-progress",
      llvm::cl::desc("Name the compiler's phase and pass on stderr once one "
                     "has lasted this many seconds, then every 10 s "
                     "(default 5; 0: each phase and pass as it begins)"),
      llvm::cl::init(5.0), llvm::cl::cat(category)};
  llvm::cl::opt<unsigned> optLevel{
      "O", llvm::cl::desc("LLVM optimisation level (default 2)"),
      llvm::cl::init(2), llvm::cl::cat(category)};
  llvm::cl::opt<bool> noProgress{
      "no-progress", llvm::cl::desc("Plain lines even on a terminal"),
      llvm::cl::init(false), llvm::cl::cat(category)};
  llvm::cl::opt<bool> cudaGraphs{
      "cuda-graphs",
      llvm::cl::desc("Capture the step as a CUDA graph after "
                     "warm-up and replay it (default true)"),
      llvm::cl::init(true), llvm::cl::cat(category)};
  llvm::cl::opt<bool> checkNumerics{
      "check-numerics",
      llvm::cl::desc(
          "Find, inside every step, the first op that produces an "
          "infinity or a NaN: print it on the first bad step with its "
          "types and its operands' ranges, and name the op behind every "
          "step loss scaling skips"),
      llvm::cl::init(false), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> checkNumericsScope{
      "check-numerics-scope",
      llvm::cl::desc(
          "The ops --check-numerics watches: all (default), forward, or "
          "backward (the gradient ops: the cheap way to attribute "
          "skipped steps)"),
      llvm::cl::init("all"), llvm::cl::cat(category)};
  llvm::cl::list<std::string> checkNumericsOps{
      "check-numerics-ops",
      llvm::cl::desc("Globs of op names (fc1.*) or kinds (tg.matmul) for "
                     "--check-numerics to watch (default: every op)"),
      llvm::cl::CommaSeparated, llvm::cl::cat(category)};
  llvm::cl::opt<std::string> rangeStats{
      "range-stats",
      llvm::cl::desc(
          "Collect each op's largest and smallest non-zero magnitude "
          "over the steps and write them here as JSON, against the f16 "
          "and bf16 limits"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> rangeStatsSteps{
      "range-stats-steps",
      llvm::cl::desc(
          "Collect --range-stats over this many steps (default 0: all)"),
      llvm::cl::init(0), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> adaptPrecision{
      "adapt-precision",
      llvm::cl::desc(
          "<policy.json>: when overflows keep coming from one op, pin "
          "it to f32, recompile and go on with the same state; the "
          "final policy is written here (pass it back with "
          "--amp-options=policy=<policy.json>)"),
      llvm::cl::init(""), llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> adaptSkips{
      "adapt-skips",
      llvm::cl::desc(
          "Re-plan after this many skipped steps overflowing first in "
          "one op within --adapt-window steps (default 8)"),
      llvm::cl::init(8), llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> adaptWindow{
      "adapt-window",
      llvm::cl::desc("Steps --adapt-skips counts over "
                     "(default 100)"),
      llvm::cl::init(100), llvm::cl::cat(category)};
  llvm::cl::opt<double> adaptMinScale{
      "adapt-min-scale",
      llvm::cl::desc(
          "Re-plan at once when a skipped step leaves the loss scale "
          "below this (default 1)"),
      llvm::cl::init(1.0), llvm::cl::cat(category)};
  llvm::cl::opt<int64_t> ampWarmupSteps{
      "amp-warmup-steps",
      llvm::cl::desc(
          "Train the first N steps in FP32, then in --amp's precision "
          "with the same parameters and optimizer state"),
      llvm::cl::init(0), llvm::cl::cat(category)};
  llvm::cl::opt<double> bucketMb{
      "bucket-mb",
      llvm::cl::desc("Under mpirun: the most MiB of gradients one "
                     "all-reduce sends (tg-data-parallel; default 25)"),
      llvm::cl::init(25.0), llvm::cl::cat(category)};
  llvm::cl::opt<double> collectiveTimeout{
      "collective-timeout",
      llvm::cl::desc("Under mpirun: seconds a rank waits for the others in "
                     "one collective before it stops the run (default 300; "
                     "0: forever)"),
      llvm::cl::init(300.0), llvm::cl::cat(category)};
  llvm::cl::opt<bool> deviceInfo{
      "device-info",
      llvm::cl::desc("Describe the CPU, the GPUs and the "
                     "backends, and exit"),
      llvm::cl::init(false), llvm::cl::cat(category)};
};

/// Checks the options that do not need the step.
llvm::Error checkOptions(const Options &o);

} // namespace mp::tools

#endif // MP_TOOLS_MPRUNNER_OPTIONS_H
