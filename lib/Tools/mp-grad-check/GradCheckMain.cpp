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
// it (the loss is smooth at that scale) is the one compared. Where that
// misses too, the differences may be the loss's own rounding: a quartic
// fitted to every loss evaluated (with steps of 5h and 10h added) gives the
// slope and the noise's standard error, and the slope must agree within
// five of them. Write the forward function in f64: the differences are
// then accurate to about 1e-10 relative.
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
#include <limits>
#include <random>
#include <set>

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

/// Floating-point arguments that must be positive: the variances batch
/// norms read (a running variance drawn from N(0, 1) is negative half the
/// time, and its NaN rstd made every gradient before it NaN).
std::set<unsigned> positiveArguments(func::FuncOp step) {
  std::set<unsigned> positive;
  auto note = [&](Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      positive.insert(arg.getArgNumber());
  };
  step.walk([&](Operation *op) {
    if (auto bn = dyn_cast<tg::BatchNormInferenceOp>(op))
      note(bn.getVariance());
    if (auto bn = dyn_cast<tg::BatchNormOp>(op))
      note(bn.getRunningVar());
  });
  return positive;
}

/// A loss evaluated at the parameter element plus `t` steps.
struct Sample {
  double t, loss;
};

/// The slope at t = 0 of the least-squares quartic through `samples`, and
/// its standard error from the fit's residuals: an estimate of the
/// derivative from every evaluation, with the loss's rounding noise
/// measured rather than assumed. Samples must include several steps on
/// either side; the losses should be relative to the loss at t = 0, so that
/// the sums keep their digits. {0, infinity} when the fit is singular.
std::pair<double, double> fittedSlope(llvm::ArrayRef<Sample> samples) {
  constexpr int terms = 5;
  double a[terms][terms + 1] = {};
  for (const Sample &s : samples) {
    double row[terms] = {1, s.t, s.t * s.t, s.t * s.t * s.t,
                         s.t * s.t * s.t * s.t};
    for (int i = 0; i < terms; ++i) {
      for (int j = 0; j < terms; ++j)
        a[i][j] += row[i] * row[j];
      a[i][terms] += row[i] * s.loss;
    }
  }
  // The normal equations by Gauss-Jordan elimination with partial pivoting,
  // alongside the inverse's column of the slope (for its variance).
  double inverse[terms][terms] = {};
  for (int i = 0; i < terms; ++i)
    inverse[i][i] = 1;
  for (int c = 0; c < terms; ++c) {
    int pivot = c;
    for (int r = c + 1; r < terms; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c]))
        pivot = r;
    if (a[pivot][c] == 0)
      return {0, std::numeric_limits<double>::infinity()};
    std::swap(a[c], a[pivot]);
    std::swap(inverse[c], inverse[pivot]);
    for (int r = 0; r < terms; ++r) {
      if (r == c)
        continue;
      double f = a[r][c] / a[c][c];
      for (int j = 0; j <= terms; ++j)
        a[r][j] -= f * a[c][j];
      for (int j = 0; j < terms; ++j)
        inverse[r][j] -= f * inverse[c][j];
    }
  }
  double coefficient[terms];
  for (int i = 0; i < terms; ++i)
    coefficient[i] = a[i][terms] / a[i][i];
  double residuals = 0;
  for (const Sample &s : samples) {
    double fit = 0, power = 1;
    for (int i = 0; i < terms; ++i, power *= s.t)
      fit += coefficient[i] * power;
    residuals += (s.loss - fit) * (s.loss - fit);
  }
  double variance = residuals / double(samples.size() - terms);
  return {coefficient[1], std::sqrt(variance * inverse[1][1] / a[1][1])};
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
  std::set<unsigned> positive = positiveArguments(*fn);
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
        double v = normal(rng);
        t.setFloat(i, positive.count(k) ? 0.5 + std::fabs(v) : v);
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
    bool parameterOk = true;
    for (int64_t i : indices) {
      double x = p.getFloat(i);
      double gradient = grad->second.getFloat(i);
      double h = step * std::max(1.0, std::fabs(x));
      // Every loss evaluated for this element, for the noise fit below.
      std::vector<Sample> evaluated = {{0, 0}};
      auto central = [&](double s) -> llvm::Expected<double> {
        p.setFloat(i, x + s);
        llvm::Expected<double> plus = evaluate();
        p.setFloat(i, x - s);
        llvm::Expected<double> minus = evaluate();
        p.setFloat(i, x);
        if (!plus || !minus)
          return plus ? minus.takeError() : plus.takeError();
        evaluated.push_back({s / h, *plus - *base});
        evaluated.push_back({-s / h, *minus - *base});
        return (*plus - *minus) / (2 * s);
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
          // A loss that did not move at all is below its own resolution
          // there, not smooth, unless the gradient says it is flat (a
          // dead ReLU whose step crossed the kink).
          bool smooth = (*next != 0 || std::fabs(gradient) <= toleranceOf(0)) &&
                        std::fabs(*next - previous) <= toleranceOf(*next);
          previous = *next;
          if (smooth) {
            difference = *next;
            kinkStep = smaller;
            break;
          }
        }
      }
      // Still apart, and no smaller step agrees with the one before it:
      // the differences may be the loss's rounding. It is relative to the
      // largest values the loss is computed from (logits in the hundreds
      // round at 1e-13, which a step of 1e-6 turns into 1e-7), not to the
      // loss, so tolerances cannot foresee it. Steps of 5h and 10h follow
      // (where that noise is smaller), then a quartic fitted to every loss
      // evaluated gives the slope and, from its residuals, the noise's
      // standard error; the slope is compared allowing five of them (the
      // fit has 8 degrees of freedom: Student's t exceeds 5 with
      // probability 0.1%, where 3 would leave 2%, and a parameter checks
      // 16 elements). A wrong gradient is an error the noise does not
      // explain, at any step. Not after a kink step agreed: a hinge within
      // the fit's +-10h would pass for noise there.
      double noise = 0;
      if (kinkStep == 0 &&
          std::fabs(difference - gradient) > toleranceOf(difference)) {
        for (double larger : {5 * h, 10 * h})
          if (llvm::Expected<double> d = central(larger); !d)
            return fail(llvm::toString(d.takeError()));
        auto [slope, standardError] = fittedSlope(evaluated);
        // A loss that is not finite at the larger steps (a log or a square
        // root at the edge of its domain) explains nothing.
        if (std::isfinite(slope) && std::isfinite(standardError)) {
          difference = slope / h;
          noise = 5 * standardError / h;
        }
      }
      double error = std::fabs(difference - gradient);
      double tolerance = toleranceOf(difference) + noise;
      worst = std::max(worst, error);
      worstRatio = std::max(worstRatio, error / tolerance);
      if (kinkStep != 0 && error <= tolerance)
        llvm::outs() << llvm::formatv(
            "  {0}[{1}]: step {2:e} crosses a kink, step {3:e} agrees\n",
            sig->arguments[k].name, i, h, kinkStep);
      if (kinkStep == 0 && noise != 0 && error <= tolerance)
        llvm::outs() << llvm::formatv(
            "  {0}[{1}]: the differences are the loss's rounding; fitted "
            "over steps to {2:e}, {3:e} agrees within its noise {4:e}\n",
            sig->arguments[k].name, i, 10 * h, difference, noise);
      // Written so that a NaN difference or gradient fails.
      if (!(error <= tolerance)) {
        parameterOk = false;
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
        parameterOk ? "ok" : "FAIL");
  }
  llvm::outs() << (ok ? "gradients match\n" : "gradients DIFFER\n");
  return ok ? 0 : 1;
}
