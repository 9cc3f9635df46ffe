//===- FuzzerSupport.cpp - what the fuzz targets share --------------------===//

#include "FuzzerSupport.h"

#include "mp/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

using namespace mlir;

namespace {
/// The private directory, removed with what it holds at exit.
struct PrivateDirectory {
  std::string path;
  PrivateDirectory() {
    // tmpfs where there is one: the targets write every input.
    const char *base = "/dev/shm";
    if (!llvm::sys::fs::is_directory(base)) {
      if (const char *tmp = std::getenv("TMPDIR"))
        base = tmp;
      else
        base = "/tmp";
    }
    llvm::SmallString<128> dir(base);
    llvm::sys::path::append(dir, "mp-fuzz-%%%%%%%%");
    llvm::SmallString<128> made;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(dir, made))
      mp::fuzz::reportBug("cannot make a directory in " + llvm::Twine(base) +
                          ": " + ec.message());
    // The %s become random characters, and a suffix is added.
    path = made.str().str();
  }
  ~PrivateDirectory() { llvm::sys::fs::remove_directories(path); }
};

class VerifyEachPass : public PassInstrumentation {
  void runAfterPass(Pass *pass, Operation *op) override {
    if (succeeded(verify(op)))
      return;
    std::string ir;
    llvm::raw_string_ostream os(ir);
    op->print(os, OpPrintingFlags().assumeVerified());
    mp::fuzz::reportBug("pass '" + pass->getArgument() +
                        "' succeeded but left IR that does not verify:\n" + ir);
  }
};
} // namespace

const std::string &mp::fuzz::privateDirectory() {
  static PrivateDirectory dir;
  return dir.path;
}

std::string mp::fuzz::writeInput(const uint8_t *data, size_t size,
                                 llvm::StringRef name) {
  llvm::SmallString<128> path(privateDirectory());
  llvm::sys::path::append(path, name);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    reportBug("cannot write " + path);
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      reportBug("cannot write " + path);
    }
    done += size_t(n);
  }
  ::close(fd);
  return path.str().str();
}

bool mp::fuzz::verbose() {
  static bool isVerbose = std::getenv("MP_FUZZ_VERBOSE") != nullptr;
  return isVerbose;
}

void mp::fuzz::silenceDiagnostics(MLIRContext &context) {
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler([](Diagnostic &diag) {
    if (verbose())
      llvm::errs() << diag.getLocation() << ": " << diag << "\n";
  });
}

DialectRegistry &mp::fuzz::registry() {
  static DialectRegistry *r = [] {
    auto *reg = new DialectRegistry;
    mp::registerAllDialects(*reg);
    return reg;
  }();
  return *r;
}

void mp::fuzz::runPipeline(ModuleOp module, llvm::StringRef pipeline) {
  PassManager pm(module.getContext());
  std::string error;
  llvm::raw_string_ostream errorOs(error);
  if (failed(parsePassPipeline(pipeline, pm, errorOs)))
    reportBug("the fuzzer's pipeline does not parse: " + error);
  pm.enableVerifier(false);
  pm.addInstrumentation(std::make_unique<VerifyEachPass>());
  bool ran = succeeded(pm.run(module));
  if (verbose())
    llvm::errs() << "the pipeline " << (ran ? "succeeded" : "failed") << ": "
                 << pipeline << "\n";
  if (ran && failed(verify(module)))
    reportBug("the pipeline succeeded on IR that does not verify");
}

void mp::fuzz::reportBug(const llvm::Twine &what) {
  llvm::errs() << "mp fuzz target: " << what << "\n";
  llvm::errs().flush();
  std::abort();
}
