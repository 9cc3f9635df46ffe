//===- GradCheckMain.cpp - mp-grad-check: adjoints against differences ----===//
//
// Checks the gradients tg-make-train-step derives for a forward function
// against central finite differences, through a compiled step. The forward
// function is differentiated without an optimizer (optimizer=none: the step
// returns every parameter's gradient as an output), lowered and
// JIT-compiled like mp-runner's steps; on random inputs and parameters one
// step gives the loss and the gradients. Then, for a sample of every
// parameter's elements, the loss is evaluated at p + h and p - h and
// (L+ - L-) / 2h compared with the gradient. Where they disagree, the
// difference is refined before it is called a mismatch: with D(h) and
// D(h/2), Richardson's (4 D(h/2) - D(h)) / 3 cancels the h^2 term of the
// central difference's error, which dominates where the loss curves
// steeply (a batch norm's variance near zero). Where even that misses, a
// ReLU or max-pool kink may lie within the step: steps of h/10 and h/100
// follow, and the first whose difference agrees with the estimate before
// it (the loss is smooth at that scale) is the one compared. Write the
// forward function in f64: the differences are then accurate to about
// 1e-10 relative.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/mp-grad-check/GradCheckMain.h"

#include "mp/Runner/CompiledStep.h"
#include "mp/Runner/HostTensor.h"
#include "mp/Runner/Loading.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Support/FileOutput.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace mp;
using namespace mp::runner;
namespace cl = llvm::cl;

namespace {

/// For integer arguments: the bound their values must stay below (the rows
/// of the table they index, the classes of the logits they label).
std::map<unsigned, int64_t> integerBounds(func::FuncOp step) {
  std::map<unsigned, int64_t> bounds;
  auto note = [&](Value v, int64_t bound) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      bounds[arg.getArgNumber()] = bound;
  };
  step.walk([&](Operation *op) {
    if (auto gather = dyn_cast<tg::GatherOp>(op))
      note(gather.getIds(), gather.getTable().getType().getShape().front());
    if (auto ce = dyn_cast<tg::SoftmaxCrossEntropyOp>(op))
      note(ce.getLabels(), ce.getLogits().getType().getShape().back());
  });
  return bounds;
}

} // namespace

int mp::gradCheckMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  reportFileSizeLimitAsError();
  cl::OptionCategory category("mp-grad-check options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<forward.mlir>"),
                             cl::Required, cl::cat(category));
  cl::opt<std::string> loss("loss",
                            cl::desc("tg-make-train-step's loss= option "
                                     "(default auto)"),
                            cl::init("auto"), cl::cat(category));
  cl::opt<uint64_t> seed("seed", cl::desc("Random seed (default: fresh)"),
                         cl::init(0), cl::cat(category));
  cl::opt<unsigned> samples("samples",
                            cl::desc("Elements checked per parameter "
                                     "(default 16; all when fewer)"),
                            cl::init(16), cl::cat(category));
  cl::opt<double> step("h", cl::desc("Relative step of the differences "
                                     "(default 1e-6)"),
                       cl::init(1e-6), cl::cat(category));
  cl::opt<double> rtol("rtol", cl::desc("Relative tolerance (default 1e-6)"),
                       cl::init(1e-6), cl::cat(category));
  cl::opt<double> atol("atol",
                       cl::desc("Absolute tolerance, scaled by 1 + |loss| "
                                "(default 1e-8)"),
                       cl::init(1e-8), cl::cat(category));
  cl::list<std::string> data(
      "data",
      cl::desc("<name>=<file.npy>: fixed values for an input or label, "
               "e.g. attention masks without fully masked rows "
               "(repeatable; default: random)"),
      cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "mp-grad-check: check the gradients of a "
                              "forward function against finite differences\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::outs().flush();
    llvm::errs() << "mp-grad-check: error: " << message << "\n";
    return 1;
  };
  uint64_t seedValue = seed ? uint64_t(seed) : std::random_device{}();
  llvm::outs() << "mp-grad-check: " << input << ", seed " << seedValue << "\n";

  Session session;
  OwningOpRef<ModuleOp> module = loadModule(session, input);
  if (!module)
    return 1;
  FailureOr<bool> made = makeTrainStep(
      *module, "", "optimizer=none loss=" + loss.getValue());
  if (failed(made))
    return 1;
  if (!*made)
    return fail("'" + input + "' holds no forward function (tg.forward)");
  FailureOr<func::FuncOp> fn = findTrainStep(*module, "");
  if (failed(fn))
    return 1;
  std::map<unsigned, int64_t> bounds = integerBounds(*fn);
  FailureOr<StepSignature> sig = lowerStep(*module, "", AmpConfig());
  if (failed(sig))
    return 1;
  auto compiled = CompiledStep::create(*module, *sig, 2);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  CompiledStep &compiledStep = **compiled;

  std::vector<HostTensor> buffers;
  for (const StepArgument &a : sig->arguments)
    buffers.emplace_back(a.type, a.shape);
  for (unsigned r : sig->destinations)
    buffers.emplace_back(sig->results[r].type, sig->results[r].shape);
  unsigned lossBuffer =
      sig->arguments.size() +
      (llvm::find(sig->destinations, sig->lossResult) -
       sig->destinations.begin());

  std::mt19937_64 rng(seedValue);
  std::normal_distribution<double> normal;
  bool lowPrecision = false;
  for (auto [k, a] : llvm::enumerate(sig->arguments)) {
    HostTensor &t = buffers[k];
    bool isFloat = a.type == MP_F32 || a.type == MP_F64 || a.type == MP_F16 ||
                   a.type == MP_BF16;
    lowPrecision |= a.role == tg::ArgRole::Param && a.type != MP_F64;
    for (int64_t i = 0; i < t.numElements(); ++i) {
      if (isFloat) {
        t.setFloat(i, normal(rng));
      } else {
        auto it = bounds.find(k);
        int64_t bound = it == bounds.end() ? 2 : it->second;
        t.setInt(i, int64_t(rng() % uint64_t(std::max<int64_t>(bound, 1))));
      }
    }
  }
  for (const std::string &spec : data) {
    auto [name, path] = llvm::StringRef(spec).split('=');
    std::optional<unsigned> arg = sig->findArgument(name);
    if (name.empty() || path.empty() || !arg)
      return fail("--data " + spec + ": expected <name>=<file.npy> naming an "
                  "argument of the step");
    llvm::Expected<HostTensor> array = readNpy(path);
    if (!array)
      return fail(llvm::toString(array.takeError()));
    HostTensor &t = buffers[*arg];
    if (array->shape != t.shape || array->type != t.type)
      return fail(path + " is " + array->describe() + "; '" + name +
                  "' is " + t.describe());
    t = std::move(*array);
  }
  if (lowPrecision)
    llvm::outs() << "warning: parameters are not f64; the differences are "
                    "only as accurate as their type\n";

  // Runs the step from the current parameters, restoring them afterwards.
  std::vector<unsigned> params;
  for (auto [k, a] : llvm::enumerate(sig->arguments))
    if (a.role == tg::ArgRole::Param)
      params.push_back(k);
  // The step may update its state in place (the dropout seed advances):
  // every evaluation starts from the same state, or the differences would
  // compare two draws of the dropout masks.
  std::vector<HostTensor> initial(buffers.begin(),
                                  buffers.begin() + sig->arguments.size());
  auto evaluate = [&]() -> llvm::Expected<double> {
    for (auto [k, a] : llvm::enumerate(sig->arguments))
      if (a.role != tg::ArgRole::Param)
        buffers[k] = initial[k];
    std::vector<void *> pointers;
    for (HostTensor &t : buffers)
      pointers.push_back(t.data());
    if (llvm::Error err = compiledStep.run(pointers))
      return std::move(err);
    return buffers[lossBuffer].getFloat(0);
  };
  auto destination = [&](llvm::StringRef output) -> const HostTensor * {
    std::optional<unsigned> r = sig->findOutput(output);
    if (!r)
      return nullptr;
    auto it = llvm::find(sig->destinations, *r);
    return &buffers[sig->arguments.size() + (it - sig->destinations.begin())];
  };

  llvm::Expected<double> base = evaluate();
  if (!base)
    return fail(llvm::toString(base.takeError()));
  llvm::outs() << llvm::formatv("loss {0:e}\n", *base);
  bool ok = true;
  std::map<unsigned, HostTensor> gradients;
  for (unsigned k : params)
    if (const HostTensor *g = destination("grad." + sig->arguments[k].name))
      gradients[k] = *g;
  for (unsigned k : params) {
    HostTensor &p = buffers[k];
    auto grad = gradients.find(k);
    if (grad == gradients.end()) {
      llvm::outs() << sig->arguments[k].name
                   << ": does not reach the loss (no gradient)\n";
      continue;
    }
    int64_t n = p.numElements();
    std::vector<int64_t> indices(n);
    std::iota(indices.begin(), indices.end(), 0);
    std::shuffle(indices.begin(), indices.end(), rng);
    indices.resize(std::min<int64_t>(n, samples));
    double worst = 0, worstRatio = 0;
    for (int64_t i : indices) {
      double x = p.getFloat(i);
      double gradient = grad->second.getFloat(i);
      double h = step * std::max(1.0, std::fabs(x));
      auto central = [&](double h) -> llvm::Expected<double> {
        p.setFloat(i, x + h);
        llvm::Expected<double> plus = evaluate();
        p.setFloat(i, x - h);
        llvm::Expected<double> minus = evaluate();
        p.setFloat(i, x);
        if (!plus || !minus)
          return plus ? minus.takeError() : plus.takeError();
        return (*plus - *minus) / (2 * h);
      };
      llvm::Expected<double> coarse = central(h);
      if (!coarse)
        return fail(llvm::toString(coarse.takeError()));
      double difference = *coarse;
      auto toleranceOf = [&](double d) {
        return atol * (1 + std::fabs(*base)) + rtol * std::fabs(d);
      };
      if (std::fabs(difference - gradient) > toleranceOf(difference)) {
        llvm::Expected<double> fine = central(h / 2);
        if (!fine)
          return fail(llvm::toString(fine.takeError()));
        difference = (4 * *fine - *coarse) / 3;
      }
      // Still apart: a ReLU or max-pool kink may lie within the step, where
      // a central difference averages the two one-sided slopes. Steps of
      // h/10 and h/100 follow, and a difference is only trusted once it
      // agrees with the estimate before it (the loss is smooth at that
      // scale); a wrong gradient stays wrong at every step. (Smaller steps
      // would drown in the loss's rounding.)
      double kinkStep = 0;
      if (std::fabs(difference - gradient) > toleranceOf(difference)) {
        double previous = difference;
        for (double smaller : {h / 10, h / 100}) {
          llvm::Expected<double> next = central(smaller);
          if (!next)
            return fail(llvm::toString(next.takeError()));
          bool smooth = std::fabs(*next - previous) <= toleranceOf(*next);
          previous = *next;
          if (smooth) {
            difference = *next;
            kinkStep = smaller;
            break;
          }
        }
      }
      double error = std::fabs(difference - gradient);
      double tolerance = toleranceOf(difference);
      worst = std::max(worst, error);
      worstRatio = std::max(worstRatio, error / tolerance);
      if (kinkStep != 0 && error <= tolerance)
        llvm::outs() << llvm::formatv(
            "  {0}[{1}]: step {2:e} crosses a kink, step {3:e} agrees\n",
            sig->arguments[k].name, i, h, kinkStep);
      if (error > tolerance) {
        ok = false;
        llvm::outs() << llvm::formatv(
            "  {0}[{1}]: derived {2:e}, finite difference {3:e}\n",
            sig->arguments[k].name, i, gradient, difference);
      }
    }
    llvm::outs() << llvm::formatv(
        "{0}: {1} of {2} elements, largest error {3:e} ({4:f2} of the "
        "tolerance): {5}\n",
        sig->arguments[k].name, indices.size(), n, worst, worstRatio,
        worstRatio <= 1 ? "ok" : "FAIL");
  }
  llvm::outs() << (ok ? "gradients match\n" : "gradients DIFFER\n");
  return ok ? 0 : 1;
}
