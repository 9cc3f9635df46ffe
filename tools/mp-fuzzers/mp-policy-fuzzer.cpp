//===- mp-policy-fuzzer.cpp - precision policy files ----------------------===//
//
// An input is a JSON policy file (docs/MixedPrecision.md), given to
// tg-mixed-precision as --amp-policy gives it, on a small training step
// whose ops and layer names the overrides can match. The IR is verified
// after every pass.
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"

#include "mp/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using mp::fuzz::registry;

// A two-layer MLP classifier's forward function, its layers named as an
// imported model's are.
static const char *const kModel = R"mlir(
func.func @mlp(%x: tensor<8x16xf32> {tg.input = "x"},
               %labels: tensor<8xi32> {tg.label = "labels"},
               %w1: tensor<16x32xf32> {tg.param = "fc1.weight"},
               %b1: tensor<32xf32> {tg.param = "fc1.bias"},
               %w2: tensor<32x4xf32> {tg.param = "head.weight"})
    -> (tensor<8x4xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %h = tg.matmul %x, %w1 :
      (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
      loc("fc1.matmul")
  %z = tg.add %h, %b1 :
      (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("fc1.bias_add")
  %r = tg.relu %z : tensor<8x32xf32> loc("fc1.relu")
  %o = tg.matmul %r, %w2 :
      (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32> loc("head.matmul")
  return %o : tensor<8x4xf32>
}
)mlir";

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  mp::registerAllPasses();
  registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = mp::fuzz::writeInput(data, size, "policy.json");
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  mp::fuzz::silenceDiagnostics(context);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModel, &context);
  if (!module || failed(verify(*module)))
    mp::fuzz::reportBug("the fuzzer's model does not parse");
  // The passes of the module's pass manager (no anchor: one would nest).
  std::string pipeline = "tg-make-train-step{optimizer=sgd},"
                         "tg-mixed-precision{compute-type=bf16 policy=" +
                         path + "}";
  mp::fuzz::runPipeline(*module, pipeline);
  return 0;
}
