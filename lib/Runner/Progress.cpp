//===- Progress.cpp - what a long compilation is doing --------------------===//

#include "mp/Runner/Progress.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <unistd.h>

using namespace mlir;
using namespace mp::runner;

/// Reports the top-level passes of one pass manager (nested pipelines run
/// inside one of them).
class CompileProgress::Instrumentation : public PassInstrumentation {
public:
  Instrumentation(CompileProgress &progress, unsigned total)
      : progress(progress), total(total) {}
  void runBeforePass(Pass *pass, Operation *op) override {
    if (op->getParentOp())
      return;
    llvm::StringRef name = pass->getArgument();
    progress.beginPass(name.empty() ? pass->getName() : name, ++count, total);
  }

private:
  CompileProgress &progress;
  unsigned total, count = 0;
};

CompileProgress::CompileProgress(int fd, std::string tool, double after,
                                 double every)
    : fd(fd), tool(std::move(tool)), after(after), every(std::max(every, 1.0)) {
  if (after > 0 && after <= 1e6)
    thread = std::thread([this] { watcher(); });
}

CompileProgress::~CompileProgress() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (thread.joinable())
    thread.join();
}

void CompileProgress::beginPhase(llvm::StringRef name, llvm::StringRef of) {
  std::lock_guard<std::mutex> lock(mutex);
  phase = name.str();
  size = of.str();
  step.clear();
  phaseStart = std::chrono::steady_clock::now();
  printed = false;
  if (after <= 0)
    printLocked();
  wake.notify_all();
}

void CompileProgress::endPhase() {
  std::lock_guard<std::mutex> lock(mutex);
  phase.clear();
  wake.notify_all();
}

void CompileProgress::watch(PassManager &pm) {
  pm.addInstrumentation(std::make_unique<Instrumentation>(*this, pm.size()));
}

std::string CompileProgress::countOps(Operation *op) {
  uint64_t count = 0;
  op->walk([&](Operation *) { ++count; });
  return llvm::formatv("{0} ops", count).str();
}

void CompileProgress::beginPass(llvm::StringRef pass, unsigned k, unsigned n) {
  std::lock_guard<std::mutex> lock(mutex);
  step = llvm::formatv("pass {0} of {1} ({2})", k, n, pass).str();
  if (after <= 0)
    printLocked();
}

void CompileProgress::printLocked() {
  if (phase.empty())
    return;
  auto now = std::chrono::steady_clock::now();
  std::string line = tool + ": compiling: " + phase;
  if (!size.empty())
    line += " (" + size + ")";
  if (!step.empty())
    line += ", " + step;
  if (after > 0)
    line +=
        llvm::formatv(", {0:f0} s so far",
                      std::chrono::duration<double>(now - phaseStart).count())
            .str();
  line += "\n";
  for (size_t done = 0; done < line.size();) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; // nowhere to report progress: not worth failing for
    done += size_t(n);
  }
  printed = true;
  lastPrinted = now;
}

void CompileProgress::watcher() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mutex);
  // When the current phase is next due (it may have changed while waiting).
  auto due = [&] {
    return std::chrono::time_point_cast<Clock::duration>(
        printed ? lastPrinted + std::chrono::duration<double>(every)
                : phaseStart + std::chrono::duration<double>(after));
  };
  while (!stopping) {
    if (phase.empty()) {
      wake.wait(lock);
      continue;
    }
    wake.wait_until(lock, due());
    if (!stopping && !phase.empty() && Clock::now() >= due())
      printLocked();
  }
}
