//===- Progress.h - what a long compilation is doing ------------*- C++ -*-===//
//
// Compiling a step of a hundred thousand ops takes minutes, most of it in
// one pass or in LLVM's optimiser, and a tool that prints nothing meanwhile
// cannot be told from a hung one. A CompileProgress names the phase (and
// the pass, k of n) once it has lasted a while, then again periodically
// with the time so far, from a thread of its own; fast compilations print
// nothing. The drivers hand it to the compilation (CompileOptions, and the
// `progress` arguments of CompiledStep.h).
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_PROGRESS_H
#define MP_RUNNER_PROGRESS_H

#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace mlir {
class PassManager;
} // namespace mlir

namespace mp::runner {

class CompileProgress {
public:
  /// Lines go to the file descriptor `fd` (2: stderr), each starting with
  /// `tool` and written with one write(2), so that they never tear
  /// diagnostics written meanwhile: a phase is named once it has lasted
  /// `after` seconds (0: as it begins, from the calling thread, so that the
  /// lines are deterministic; more than a million: never), then every
  /// `every` seconds while it lasts.
  CompileProgress(int fd, std::string tool, double after, double every = 10);
  ~CompileProgress();
  CompileProgress(const CompileProgress &) = delete;
  CompileProgress &operator=(const CompileProgress &) = delete;

  /// Begins a phase ("parsing model.mlir", "mixed precision"); `size` says
  /// how large its input is ("12345 ops").
  void beginPhase(llvm::StringRef name, llvm::StringRef size = "");
  /// Ends the current phase.
  void endPhase();
  /// Ends the current phase when it goes out of scope (also on an early
  /// return): what a function that begins phases holds.
  class Scope {
  public:
    explicit Scope(CompileProgress *progress) : progress(progress) {}
    ~Scope() {
      if (progress)
        progress->endPhase();
    }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    CompileProgress *progress;
  };
  /// Reports the passes `pm` runs as steps of the current phase.
  void watch(mlir::PassManager &pm);

  /// The number of ops in `op`, nested ones included, as "12345 ops".
  static std::string countOps(mlir::Operation *op);

private:
  class Instrumentation;
  void beginPass(llvm::StringRef pass, unsigned k, unsigned n);
  /// Prints the current phase (under the lock).
  void printLocked();
  void watcher();

  int fd;
  std::string tool;
  double after, every;
  std::mutex mutex;
  std::condition_variable wake;
  std::thread thread;
  bool stopping = false;
  /// The phase and its step, and when each began; an empty phase is none.
  std::string phase, size, step;
  std::chrono::steady_clock::time_point phaseStart, lastPrinted;
  bool printed = false;
};

} // namespace mp::runner

#endif // MP_RUNNER_PROGRESS_H
