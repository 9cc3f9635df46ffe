//===- ImportOnnxMain.cpp - mp-import-onnx: ONNX models to tg -------------===//
//
// Imports an ONNX model (mp/Target/ONNX/ImportONNX.h) and writes the tg
// forward function as MLIR. The trained initializers' values go into the IR
// as dense resources for small models, or into a safetensors file next to
// the output for large ones, which mp-runner reads with --init-weights.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/mp-import-onnx/ImportOnnxMain.h"

#include "mp/Runner/Loading.h"
#include "mp/Runner/Weights.h"

#include "mp/Support/FileOutput.h"
#include "mp/Target/ONNX/ImportONNX.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mp;
using namespace mp::runner;
namespace cl = llvm::cl;

/// Models whose weights are larger than this keep them in a file by default.
constexpr uint64_t kEmbedLimit = uint64_t(1) << 20;

int mp::importOnnxMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  reportFileSizeLimitAsError();
  cl::OptionCategory category("mp-import-onnx options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx>"),
                             cl::Required, cl::cat(category));
  cl::opt<std::string> output("o", cl::desc("MLIR file to write (default: "
                                            "standard output)"),
                              cl::init("-"), cl::cat(category));
  cl::list<std::string> inputShape(
      "input-shape",
      cl::desc("The shape of an input with symbolic dimensions, "
               "<name>=<d0>x<d1>... (repeatable)"),
      cl::cat(category));
  cl::opt<int64_t> batchSize(
      "batch-size",
      cl::desc("The size of every input's symbolic first dimension"),
      cl::init(0), cl::cat(category));
  cl::list<std::string> freeze(
      "freeze",
      cl::desc("Globs of initializers to keep constant instead of training "
               "(comma-separated)"),
      cl::CommaSeparated, cl::cat(category));
  cl::opt<std::string> labels(
      "labels",
      cl::desc("The labels argument to train with: auto (default: i32 class "
               "indices unless the model computes its own loss), classes "
               "(for cross-entropy), targets (the prediction's type, for "
               "MSE) or none (the forward function as it is)"),
      cl::init("auto"), cl::cat(category));
  cl::opt<std::string> elementType(
      "element-type",
      cl::desc("f32 (default), or f64 to compute in double precision (for "
               "gradient checks)"),
      cl::init("f32"), cl::cat(category));
  cl::opt<std::string> functionName("function-name",
                                    cl::desc("The function's name"),
                                    cl::init("model"), cl::cat(category));
  cl::opt<bool> noRaise(
      "no-raise",
      cl::desc("Keep decomposed LayerNorm, GELU and softmax subgraphs as they "
               "are (no tg-raise-decomposed-ops)"),
      cl::init(false), cl::cat(category));
  cl::opt<std::string> weightsFile(
      "weights-file",
      cl::desc("Write the initial weights to this safetensors file (default: "
               "in the IR up to 1 MiB, else the output file with the extension .safetensors)"),
      cl::init(""), cl::cat(category));
  cl::opt<bool> embedWeights("embed-weights",
                             cl::desc("Keep the initial weights in the IR, "
                                      "however large"),
                             cl::init(false), cl::cat(category));
  cl::opt<bool> emitBytecode("emit-bytecode",
                             cl::desc("Write MLIR bytecode instead of text"),
                             cl::init(false), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "mp-import-onnx: import an ONNX model as a tg "
                              "forward function\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "mp-import-onnx: error: " << message << "\n";
    return 1;
  };
  OnnxImportOptions options;
  for (const std::string &spec : inputShape)
    if (llvm::Error err = parseInputShape(spec, options))
      return fail(llvm::toString(std::move(err)));
  if (batchSize < 0)
    return fail("--batch-size must be positive");
  options.batchSize = batchSize;
  options.freeze.assign(freeze.begin(), freeze.end());
  if (labels != "none" && labels != "classes" && labels != "targets" &&
      labels != "auto")
    return fail("--labels must be none, classes, targets or auto, not '" +
                labels + "'");
  options.labels = labels;
  if (elementType != "f32" && elementType != "f64")
    return fail("--element-type must be f32 or f64, not '" + elementType +
                "'");
  options.useF64 = elementType == "f64";
  if (functionName.empty())
    return fail("--function-name must not be empty");
  options.functionName = functionName;
  options.raiseDecomposedOps = !noRaise;
  if (embedWeights && !weightsFile.empty())
    return fail("--embed-weights and --weights-file exclude each other");

  Session session;
  OwningOpRef<ModuleOp> module =
      importOnnxModel(input, &session.context, options);
  if (!module)
    return 1;

  // Where the weights go.
  uint64_t bytes = initialWeightBytes(*module);
  std::string weightsPath = weightsFile;
  if (weightsPath.empty() && !embedWeights && bytes > kEmbedLimit) {
    if (output == "-")
      return fail("the model's weights take " + llvm::Twine(bytes >> 20) +
                  " MiB; write the IR to a file (-o) so that they go next "
                  "to it, or give --weights-file or --embed-weights");
    llvm::SmallString<256> path(output);
    llvm::sys::path::replace_extension(path, ".safetensors");
    weightsPath = path.str().str();
  }
  if (!weightsPath.empty()) {
    llvm::Expected<unsigned> moved =
        externaliseWeights(*module, weightsPath, input);
    if (!moved)
      return fail(llvm::toString(moved.takeError()));
    llvm::errs() << "mp-import-onnx: wrote the initial values of " << *moved
                 << " parameters to " << weightsPath
                 << "; train from them with mp-runner "
                 << (output == "-" ? std::string("<model.mlir>")
                                   : output.getValue())
                 << " --init-weights " << weightsPath << "\n";
  }

  if (llvm::Error err = writeFileAtomically(
          output, [&](llvm::raw_ostream &os) -> llvm::Error {
            if (emitBytecode) {
              if (failed(writeBytecodeToFile(*module, os)))
                return llvm::createStringError(
                    std::errc::io_error, "cannot write bytecode");
              return llvm::Error::success();
            }
            OpPrintingFlags flags;
            flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
            module->print(os, flags);
            return llvm::Error::success();
          }))
    return fail(llvm::toString(std::move(err)));
  return 0;
}
