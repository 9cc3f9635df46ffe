//===- OnnxTestMain.cpp - mp-onnx-test: ONNX backend conformance ----------===//
//
// Runs ONNX's backend tests (the node, PyTorch-converted and
// PyTorch-operator suites of libonnx-testdata) through the importer and the
// CPU backend. A test is a directory with model.onnx and test_data_set_*/
// holding input_<k>.pb and output_<k>.pb. For every data set the model is
// imported, its function lowered and JIT-compiled, run on the inputs, and
// its outputs compared with the expected ones:
//
//   * floating-point outputs within a tolerance derived from their storage
//     type, |got - want| <= rtol * (|want| + scale / 100), scale the largest
//     |want| of the output (rtol = 1e-10 for f64, 1e-4 for f32, 4e-3 for
//     f16, 3e-2 for bf16: a few units in the last place of the low-precision
//     types, and room for other summation orders in the wide ones);
//   * integer and boolean outputs exactly; NaNs where NaNs are expected.
//
// A model that does not import at first is imported again with its integer
// inputs bound to the data set's values (shape, axes and index operands the
// tg ops take as attributes). A test that still does not import is
// unsupported, with the importer's reason; one that imports and computes
// something else fails.
//
// With --expected, the tests listed in the file must pass (a regression
// fails the run); tests that pass but are not listed are reported, to be
// added. --write-expected writes the list of the tests that passed.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/mp-onnx-test/OnnxTestMain.h"

#include "mp/Runner/CompiledStep.h"
#include "mp/Runner/HostTensor.h"
#include "mp/Runner/Loading.h"

#include "mp/Support/FileOutput.h"
#include "mp/Target/ONNX/ImportONNX.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mp;
using namespace mp::runner;
namespace cl = llvm::cl;

namespace {

enum class Outcome { Pass, Fail, Unsupported };

struct TestResult {
  std::string name;  // "node/test_add"
  std::string group; // the op type, "LayerNormalization (expanded)", ...
  Outcome outcome = Outcome::Unsupported;
  std::string reason;
};

/// The relative tolerance for outputs stored as `type`.
double tolerance(mpElementType type) {
  switch (type) {
  case MP_F64: return 1e-10;
  case MP_F32: return 1e-4;
  case MP_F16: return 4e-3;
  case MP_BF16: return 3e-2;
  default: return 0;
  }
}

bool isFloat(mpElementType type) {
  return type == MP_F32 || type == MP_F64 || type == MP_F16 ||
         type == MP_BF16;
}

/// Compares `got` with `want`; describes the first mismatch.
std::optional<std::string> compare(const HostTensor &got,
                                   const HostTensor &want,
                                   llvm::StringRef name) {
  if (got.type != want.type || got.shape != want.shape)
    return llvm::formatv("output '{0}' is {1}, expected {2}", name,
                         got.describe(), want.describe())
        .str();
  if (!isFloat(want.type)) {
    for (int64_t i = 0; i < want.numElements(); ++i)
      if (got.getInt(i) != want.getInt(i))
        return llvm::formatv("output '{0}' element {1} is {2}, expected {3}",
                             name, i, got.getInt(i), want.getInt(i))
            .str();
    return std::nullopt;
  }
  double scale = 0;
  for (int64_t i = 0; i < want.numElements(); ++i)
    if (std::isfinite(want.getFloat(i)))
      scale = std::max(scale, std::fabs(want.getFloat(i)));
  double rtol = tolerance(want.type);
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double g = got.getFloat(i), w = want.getFloat(i);
    bool ok = std::isnan(w) ? std::isnan(g)
              : std::isinf(w)
                  ? g == w
                  : std::fabs(g - w) <= rtol * (std::fabs(w) + scale / 100);
    if (!ok)
      return llvm::formatv("output '{0}' element {1} is {2:e}, expected {3:e} "
                           "(rtol {4:e1})",
                           name, i, g, w, rtol)
          .str();
  }
  return std::nullopt;
}

/// Collects the first error a test's import or lowering reports.
class ErrorCollector {
public:
  explicit ErrorCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error && first.empty())
            first = d.str();
          return success();
        }) {}
  std::string take() {
    std::string out = first.empty() ? "unknown error" : first;
    first.clear();
    return out;
  }

private:
  std::string first;
  ScopedDiagnosticHandler handler;
};

class Driver {
public:
  Driver(unsigned optLevel) : optLevel(optLevel) {}
  TestResult run(llvm::StringRef dir, llvm::StringRef name);

private:
  /// Runs one data set; returns the reason of a failure or unsupported
  /// import in `result`.
  void runDataSet(llvm::StringRef model, const OnnxGraphSummary &graph,
                  llvm::StringRef dataSet, TestResult &result);
  unsigned optLevel;
};

std::string groupOf(llvm::StringRef dir, const OnnxGraphSummary &graph) {
  llvm::StringRef name = llvm::sys::path::filename(dir);
  if (name.ends_with("_expanded")) {
    // The op the expanded (function body) test stands for: the op of the
    // test it expands.
    llvm::SmallString<256> plain(dir);
    plain.resize(plain.size() - llvm::StringRef("_expanded").size());
    llvm::sys::path::append(plain, "model.onnx");
    if (auto original = summarizeOnnxModel(plain);
        original && original->opTypes.size() == 1)
      return original->opTypes.front() + " (expanded)";
    else if (!original)
      llvm::consumeError(original.takeError());
  }
  if (graph.opTypes.size() == 1)
    return graph.opTypes.front();
  std::set<std::string> distinct(graph.opTypes.begin(), graph.opTypes.end());
  std::string group;
  for (const std::string &op : distinct)
    group += (group.empty() ? "" : "+") + op;
  return distinct.size() > 4 ? std::string("(model)") : group;
}

TestResult Driver::run(llvm::StringRef dir, llvm::StringRef name) {
  TestResult result;
  result.name = name.str();
  llvm::SmallString<256> model(dir);
  llvm::sys::path::append(model, "model.onnx");
  llvm::Expected<OnnxGraphSummary> graph = summarizeOnnxModel(model);
  if (!graph) {
    result.group = "(unreadable)";
    result.reason = llvm::toString(graph.takeError());
    return result;
  }
  result.group = groupOf(dir, *graph);
  std::vector<std::string> dataSets;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::filename(it->path()).starts_with("test_data_set_"))
      dataSets.push_back(it->path());
  llvm::sort(dataSets);
  if (dataSets.empty()) {
    result.reason = "no test_data_set_* directory";
    return result;
  }
  result.outcome = Outcome::Pass;
  for (const std::string &dataSet : dataSets) {
    runDataSet(model, *graph, dataSet, result);
    if (result.outcome != Outcome::Pass)
      break;
  }
  return result;
}

void Driver::runDataSet(llvm::StringRef model, const OnnxGraphSummary &graph,
                        llvm::StringRef dataSet, TestResult &result) {
  auto file = [&](llvm::StringRef kind, size_t k) {
    llvm::SmallString<256> path(dataSet);
    llvm::sys::path::append(path, kind + "_" + llvm::Twine(k) + ".pb");
    return std::string(path);
  };
  auto unsupported = [&](std::string reason) {
    result.outcome = Outcome::Unsupported;
    result.reason = std::move(reason);
  };
  auto failed = [&](std::string reason) {
    result.outcome = Outcome::Fail;
    result.reason = std::move(reason);
  };
  Session session;
  MLIRContext &context = session.context;
  ErrorCollector errors(context);

  OnnxImportOptions options;
  OwningOpRef<ModuleOp> module = importOnnxModel(model, &context, options);
  if (!module) {
    std::string first = errors.take();
    bool bound = false;
    for (auto [k, input] : llvm::enumerate(graph.inputs))
      if (!graph.floatInputs[k] && llvm::sys::fs::exists(file("input", k))) {
        options.constantInputs[input] = file("input", k);
        bound = true;
      }
    if (bound)
      module = importOnnxModel(model, &context, options);
    if (!module)
      return unsupported(bound ? errors.take() : first);
  }

  FailureOr<StepSignature> sig = lowerFunction(*module, options.functionName);
  if (llvm::failed(sig))
    return failed("lowering: " + errors.take());
  // A model that draws random numbers reads the importer's seed state; the
  // test's expected outputs are NumPy's draws.
  if (sig->findArgument("dropout.seed"))
    return unsupported("the model draws random numbers (training-mode "
                       "Dropout, RandomUniform): the expected outputs are "
                       "NumPy's draws, which mp's generator does not "
                       "reproduce");
  auto compiled = CompiledStep::create(*module, *sig, optLevel);
  if (!compiled)
    return failed("compiling: " + llvm::toString(compiled.takeError()));

  std::vector<HostTensor> buffers;
  size_t inputIndex = 0;
  for (const StepArgument &arg : sig->arguments) {
    HostTensor &t = buffers.emplace_back(arg.type, arg.shape);
    if (arg.init) {
      if (llvm::Error err = assignElements(t, arg.init, arg.name))
        return failed(llvm::toString(std::move(err)));
      continue;
    }
    // The arguments that are not parameters are the graph inputs that are
    // not bound to constants, in order.
    while (inputIndex < graph.inputs.size() &&
           options.constantInputs.count(graph.inputs[inputIndex]))
      ++inputIndex;
    if (inputIndex == graph.inputs.size())
      return failed("argument '" + arg.name + "' is no graph input");
    auto value =
        readOnnxTensor(file("input", inputIndex++), &context);
    if (!value)
      return unsupported(llvm::toString(value.takeError()));
    if (value->getType().getShape() != llvm::ArrayRef(arg.shape))
      return failed("input '" + arg.name + "' has another shape than the "
                                            "test data");
    if (llvm::Error err = assignElements(t, *value, arg.name))
      return failed(llvm::toString(std::move(err)));
  }
  for (unsigned r : sig->destinations)
    buffers.emplace_back(sig->results[r].type, sig->results[r].shape);
  std::vector<void *> pointers;
  for (HostTensor &t : buffers)
    pointers.push_back(t.data());
  if (llvm::Error err = (*compiled)->run(pointers))
    return failed(llvm::toString(std::move(err)));

  if (sig->results.size() != graph.outputs.size())
    return failed(llvm::formatv("the function has {0} results, the graph {1} "
                                "outputs",
                                sig->results.size(), graph.outputs.size()));
  for (auto [r, res] : llvm::enumerate(sig->results)) {
    auto value = readOnnxTensor(file("output", r), &context);
    if (!value)
      return unsupported(llvm::toString(value.takeError()));
    std::optional<mpElementType> type =
        toElementType(value->getType().getElementType());
    if (!type)
      return unsupported("output '" + res.name + "' has a type the runtime "
                                                 "cannot hold");
    HostTensor want(*type, std::vector<int64_t>(
                               value->getType().getShape().begin(),
                               value->getType().getShape().end()));
    if (llvm::Error err = assignElements(want, *value, res.name))
      return failed(llvm::toString(std::move(err)));
    const HostTensor &got = buffers[sig->arguments.size() + r];
    if (auto mismatch = compare(got, want, res.name))
      return failed(*mismatch);
  }
}

/// The test directories under `root`: `root` itself when it holds a model,
/// else its subdirectories that do, and those of their subdirectories
/// (suite/test), named relative to `root`'s parent.
void collectTests(llvm::StringRef root,
                  std::vector<std::pair<std::string, std::string>> &tests) {
  auto hasModel = [](llvm::StringRef dir) {
    llvm::SmallString<256> model(dir);
    llvm::sys::path::append(model, "model.onnx");
    return llvm::sys::fs::exists(model);
  };
  auto subdirs = [](llvm::StringRef dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::sys::fs::is_directory(it->path()))
        out.push_back(it->path());
    llvm::sort(out);
    return out;
  };
  llvm::StringRef base = llvm::sys::path::parent_path(root);
  auto relative = [&](llvm::StringRef path) {
    llvm::StringRef rel = path;
    if (!base.empty() && rel.consume_front(base))
      rel = rel.ltrim('/');
    return rel.str();
  };
  if (hasModel(root)) {
    tests.push_back({root.str(), relative(root)});
    return;
  }
  for (const std::string &dir : subdirs(root)) {
    if (hasModel(dir)) {
      tests.push_back({dir, relative(dir)});
      continue;
    }
    for (const std::string &inner : subdirs(dir))
      if (hasModel(inner))
        tests.push_back({inner, relative(inner)});
  }
}

} // namespace

int mp::onnxTestMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  reportFileSizeLimitAsError();
  cl::OptionCategory category("mp-onnx-test options");
  cl::list<std::string> roots(
      cl::Positional, cl::desc("<test or suite directory>..."), cl::OneOrMore,
      cl::cat(category));
  cl::opt<std::string> expected(
      "expected",
      cl::desc("File listing the tests that must pass (one per line, '#' "
               "starts a comment)"),
      cl::cat(category));
  cl::opt<std::string> writeExpected(
      "write-expected", cl::desc("Write the tests that passed to this file"),
      cl::cat(category));
  cl::opt<std::string> filter(
      "filter", cl::desc("Run only the tests whose name matches this regex"),
      cl::cat(category));
  cl::opt<bool> verbose("v", cl::desc("Print every test's outcome"),
                        cl::cat(category));
  cl::opt<unsigned> optLevel("O", cl::desc("JIT optimization level (0-3, "
                                           "default 0)"),
                             cl::init(0), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "mp-onnx-test: run ONNX backend tests through the importer and the CPU "
      "backend\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::outs().flush();
    llvm::errs() << "mp-onnx-test: error: " << message << "\n";
    return 1;
  };
  if (optLevel > 3)
    return fail("-O must be 0 to 3");

  llvm::StringSet<> mustPass;
  if (!expected.empty()) {
    auto file = llvm::MemoryBuffer::getFile(expected, /*IsText=*/true);
    if (!file)
      return fail("cannot read '" + expected +
                  "': " + file.getError().message());
    llvm::SmallVector<llvm::StringRef> lines;
    (*file)->getBuffer().split(lines, '\n');
    for (llvm::StringRef line : lines) {
      line = line.split('#').first.trim();
      if (!line.empty())
        mustPass.insert(line);
    }
  }
  std::optional<llvm::Regex> pattern;
  if (!filter.empty()) {
    pattern.emplace(filter);
    std::string error;
    if (!pattern->isValid(error))
      return fail("--filter: " + error);
  }

  std::vector<std::pair<std::string, std::string>> tests;
  for (const std::string &root : roots) {
    if (!llvm::sys::fs::is_directory(root))
      return fail("'" + root + "' is not a directory");
    collectTests(llvm::sys::path::remove_leading_dotslash(root), tests);
  }
  if (tests.empty())
    return fail("no tests (directories with a model.onnx) found");

  Driver driver(optLevel);
  std::vector<TestResult> results;
  for (const auto &[dir, name] : tests) {
    if (pattern && !pattern->match(name))
      continue;
    results.push_back(driver.run(dir, name));
    const TestResult &r = results.back();
    if (verbose || (r.outcome == Outcome::Fail) ||
        (r.outcome != Outcome::Pass && mustPass.count(r.name)))
      llvm::outs() << (r.outcome == Outcome::Pass   ? "PASS"
                       : r.outcome == Outcome::Fail ? "FAIL"
                                                    : "UNSUPPORTED")
                   << " " << r.name << " [" << r.group << "]"
                   << (r.reason.empty() ? "" : ": " + r.reason) << "\n";
  }

  // Per group: passed / run, and the unsupported ones.
  struct Count {
    unsigned pass = 0, fail = 0, unsupported = 0;
  };
  std::map<std::string, Count> groups;
  unsigned pass = 0, fail_ = 0, unsupported = 0;
  for (const TestResult &r : results) {
    Count &c = groups[r.group];
    switch (r.outcome) {
    case Outcome::Pass: ++c.pass, ++pass; break;
    case Outcome::Fail: ++c.fail, ++fail_; break;
    case Outcome::Unsupported: ++c.unsupported, ++unsupported; break;
    }
  }
  llvm::outs() << "\nper op type: passed/run (unsupported tests)\n";
  std::vector<std::string> unsupportedOps;
  for (const auto &[group, c] : groups) {
    if (c.pass + c.fail == 0) {
      unsupportedOps.push_back(group);
      continue;
    }
    llvm::outs() << llvm::formatv("  {0,-40} {1}/{2}", group, c.pass,
                                  c.pass + c.fail);
    if (c.unsupported)
      llvm::outs() << " (" << c.unsupported << ")";
    llvm::outs() << "\n";
  }
  llvm::outs() << "\nnot imported at all (" << unsupportedOps.size()
               << "):";
  for (const std::string &op : unsupportedOps)
    llvm::outs() << " " << op;
  llvm::outs() << "\n\n";

  std::vector<std::string> regressions, newlyPassing;
  llvm::StringSet<> ran;
  for (const TestResult &r : results) {
    ran.insert(r.name);
    if (mustPass.count(r.name) && r.outcome != Outcome::Pass)
      regressions.push_back(r.name);
    if (!mustPass.empty() && !mustPass.count(r.name) &&
        r.outcome == Outcome::Pass)
      newlyPassing.push_back(r.name);
  }
  std::vector<std::string> missing;
  if (!pattern)
    for (const auto &entry : mustPass)
      if (!ran.count(entry.getKey()))
        missing.push_back(entry.getKey().str());
  llvm::sort(missing);

  llvm::outs() << llvm::formatv("passed {0} of {1} tests: {2} failed, {3} "
                                "not imported\n",
                                pass, results.size(), fail_, unsupported);
  for (const std::string &name : newlyPassing)
    llvm::outs() << "newly passing (add it to the expected list): " << name
                 << "\n";

  if (!writeExpected.empty()) {
    llvm::Error err = writeFileAtomically(
        writeExpected, [&](llvm::raw_ostream &os) -> llvm::Error {
          os << "# ONNX backend tests mp-onnx-test passes (written by "
                "--write-expected)\n";
          for (const TestResult &r : results)
            if (r.outcome == Outcome::Pass)
              os << r.name << "\n";
          return llvm::Error::success();
        });
    if (err)
      return fail(llvm::toString(std::move(err)));
  }
  for (const std::string &name : missing)
    llvm::errs() << "mp-onnx-test: expected test not found: " << name << "\n";
  for (const std::string &name : regressions)
    llvm::errs() << "mp-onnx-test: regression: " << name << " no longer "
                 << "passes\n";
  if (!regressions.empty() || !missing.empty())
    return fail(llvm::Twine(regressions.size()) + " regressions, " +
                llvm::Twine(missing.size()) + " expected tests missing");
  return 0;
}
