//===- CompileMain.cpp - mp-compile: a training step ahead of time --------===//
//
// Compiles a step like mp-runner does, then writes an object file for the
// host and a C header describing its calling convention, so that an
// application links the step with the mp runtime and no MLIR at all.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/mp-compile/CompileMain.h"

#include "mp/Runner/CompiledStep.h"
#include "mp/Runner/Loading.h"
#include "mp/Support/FileOutput.h"
#include "mp/Tools/DifferentiationFlags.h"
#include "mp/Tools/ImportFlags.h"
#include "mp/Tools/ReportFlags.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mp;
using namespace mp::runner;
using namespace mp::tools;
namespace cl = llvm::cl;

int mp::compileMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  reportFileSizeLimitAsError();
  cl::OptionCategory category("mp-compile options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<step.mlir | forward.mlir | model.onnx>"),
                             cl::Required, cl::cat(category));
  cl::opt<std::string> output("o", cl::desc("Object file to write"),
                              cl::Required, cl::cat(category));
  cl::opt<std::string> header("header", cl::desc("C header to write"),
                              cl::Required, cl::cat(category));
  cl::opt<std::string> amp("amp", cl::desc("f16, bf16 or off"), cl::init("f16"),
                           cl::cat(category));
  cl::opt<std::string> ampOptions("amp-options",
                                  cl::desc("tg-mixed-precision options"),
                                  cl::init(""), cl::cat(category));
  cl::opt<std::string> layout(
      "layout",
      cl::desc("Activation layout of convolutions, pooling and batch norm "
               "inside the step: auto (default: NHWC, the CPU backend's "
               "preference), nhwc, nchw or off; the arguments keep theirs"),
      cl::init("auto"), cl::cat(category));
  cl::opt<bool> dataParallel(
      "data-parallel",
      cl::desc("Average the gradients over the ranks of an MPI program "
               "(tg-data-parallel; the header says how to link it)"),
      cl::init(false), cl::cat(category));
  cl::opt<double> bucketMb(
      "bucket-mb",
      cl::desc("With --data-parallel: the most MiB of gradients one "
               "all-reduce sends (default 25)"),
      cl::init(25.0), cl::cat(category));
  cl::opt<std::string> entry("entry", cl::desc("The step function"),
                             cl::init(""), cl::cat(category));
  DifferentiationFlags differentiation(category);
  ImportFlags importing(category);
  // The passes' reports, as mp-runner writes them (the AMP pass's is
  // --amp-options=report=FILE).
  ReportFlags reports(category);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "mp-compile: compile a tg training step to an "
                              "object file and a C header\n");
  if (amp != "f16" && amp != "bf16" && amp != "off") {
    llvm::errs() << "mp-compile: error: --amp must be f16, bf16 or off\n";
    return 1;
  }
  if (layout != "auto" && layout != "nhwc" && layout != "nchw" &&
      layout != "off") {
    llvm::errs() << "mp-compile: error: --layout must be auto, nhwc, nchw "
                    "or off\n";
    return 1;
  }
  if (llvm::Error err = reports.check(layout)) {
    llvm::errs() << "mp-compile: error: " << llvm::toString(std::move(err))
                 << "\n";
    return 1;
  }
  if (!(bucketMb >= 0) || !std::isfinite(bucketMb)) {
    llvm::errs() << "mp-compile: error: --bucket-mb must be a finite number "
                    "of MiB, at least 0\n";
    return 1;
  }
  if (bucketMb.getNumOccurrences() && !dataParallel) {
    llvm::errs() << "mp-compile: error: --bucket-mb needs --data-parallel\n";
    return 1;
  }
  Session session;
  OwningOpRef<ModuleOp> module =
      loadModel(session, input, importing, differentiation.loss);
  if (!module)
    return 1;
  if (failed(makeTrainStep(*module, entry, differentiation.options())))
    return 1;
  // The object's symbol must be callable from C: a step named otherwise
  // ("my.step") is renamed to its C identifier ("my_step").
  FailureOr<func::FuncOp> step = findTrainStep(*module, entry);
  if (failed(step))
    return 1;
  std::string cName = toCIdentifier(step->getSymName());
  if (cName != step->getSymName()) {
    if (module->lookupSymbol(cName)) {
      llvm::errs() << "mp-compile: error: the step's name '"
                   << step->getSymName() << "' is not a C identifier and '"
                   << cName << "' is taken; rename the function\n";
      return 1;
    }
    std::string original = step->getSymName().str();
    SymbolTable symbols(*module);
    if (failed(symbols.rename(*step, cName)))
      return 1;
    llvm::errs() << "mp-compile: note: the step '" << original
                 << "' is called '" << cName << "' in C\n";
  }
  AmpConfig config;
  config.mode = amp;
  config.options = ampOptions;
  LayoutConfig layoutConfig;
  layoutConfig.layout = layout;
  ParallelConfig parallel;
  parallel.enabled = dataParallel;
  parallel.bucketMb = bucketMb;
  // No weight shadows: a C caller would have to set each from its weight
  // (tg.shadow_of), which the header does not describe.
  FusionConfig fusion;
  fusion.shadows = false;
  reports.apply(layoutConfig, fusion);
  FailureOr<StepSignature> sig = lowerStep(*module, cName, config,
                                           NumericsConfig(), nullptr,
                                           layoutConfig, parallel, fusion);
  if (failed(sig))
    return 1;
  if (llvm::Error err = emitObjectFile(*module, output)) {
    llvm::errs() << "mp-compile: error: " << llvm::toString(std::move(err))
                 << "\n";
    return 1;
  }
  if (llvm::Error err = emitHeader(*sig, header, input)) {
    llvm::errs() << "mp-compile: error: " << llvm::toString(std::move(err))
                 << "\n";
    return 1;
  }
  return 0;
}
