// train-step: trains a model from C++ through the runner library
// (mp/Runner/Runner.h), the way a compiler that embeds mp would, without
// running mp-runner: loads a forward function, differentiates it, compiles
// the step with AMP for the CPU, trains on the built-in synthetic task,
// evaluates on its held-out split and writes a checkpoint.
#include "mp/Runner/Runner.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mp::runner;

static int fail(llvm::Error err) {
  llvm::handleAllErrors(
      std::move(err), [](const DiagnosedError &) {},
      [](const llvm::ErrorInfoBase &e) {
        llvm::errs() << "train-step: error: " << e.message() << "\n";
      });
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 5)
    return llvm::errs() << "usage: train-step <forward.mlir> <off|f16|bf16> "
                           "<steps> <checkpoint.safetensors>\n",
           2;
  int64_t steps = std::atoll(argv[3]);
  Session session;
  mlir::OwningOpRef<mlir::ModuleOp> model =
      loadModel(session, argv[1], mp::OnnxImportOptions());
  if (!model || failed(makeTrainStep(*model, "", "optimizer=adam lr=0.01")))
    return 1;
  mlir::FailureOr<mlir::func::FuncOp> step = findTrainStep(*model, "");
  if (failed(step))
    return 1;
  ModelShape shape = inspectModel(*step);

  CompileOptions options;
  options.amp.mode = argv[2];
  options.backend = Backend::CPU;
  llvm::Expected<std::unique_ptr<Trainer>> trainer =
      compileTrainer(*model, options, argv[2]);
  if (!trainer)
    return fail(trainer.takeError());
  llvm::Expected<Dataset> data = makeSyntheticDataset(
      (*trainer)->signature(), shape, /*seed=*/1, /*trainSamples=*/4096,
      /*evalSamples=*/1024);
  if (!data)
    return fail(data.takeError());
  if (llvm::Error err = (*trainer)->initialize(/*seed=*/1))
    return fail(std::move(err));

  double firstLoss = 0, lastLoss = 0;
  for (int64_t i = 0; i < steps; ++i) {
    llvm::Expected<StepRecord> record = (*trainer)->step(i, *data);
    if (!record)
      return fail(record.takeError());
    (i == 0 ? firstLoss : lastLoss) = record->loss;
    if (i == 0 || i + 1 == steps)
      llvm::outs() << llvm::formatv("step {0}: loss {1:f4}, loss scale {2}\n",
                                    record->step, record->loss,
                                    formatScale(*record));
  }
  llvm::Expected<std::vector<bool>> correct =
      (*trainer)->evaluate(*data, 0, [](int64_t, int64_t) {});
  if (!correct)
    return fail(correct.takeError());
  llvm::outs() << llvm::formatv(
      "held-out accuracy {0:f2}% on {1} samples\n",
      100.0 * llvm::count(*correct, true) / correct->size(), correct->size());

  llvm::Expected<Checkpoint> checkpoint =
      (*trainer)->checkpoint(steps, {{"amp", argv[2]}});
  if (!checkpoint)
    return fail(checkpoint.takeError());
  if (llvm::Error err = writeSafetensors(argv[4], *checkpoint))
    return fail(std::move(err));
  llvm::outs() << "checkpoint written: " << argv[4] << " ("
               << checkpoint->tensors.size() << " tensors)\n";
  if (!(lastLoss < firstLoss))
    return llvm::errs() << "train-step: the loss did not fall\n", 1;
  return 0;
}
