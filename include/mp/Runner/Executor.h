//===- Executor.h - where a compiled step runs --------------------*- C++ -*-===//
//
// A compiled step's buffers live on the host for the CPU backend and on the
// GPU for the CUDA backend. The trainer keeps host copies of every buffer
// (it fills batches and reads results there); an Executor moves buffers
// between the two and runs the step on its own. The CUDA executor runs the
// first steps eagerly (they fill the allocator's cache, upload constants
// and pick GEMM algorithms), then captures one step as a CUDA graph and
// replays it.
//
// Also here: backend selection, the device report of --device-info, and
// the AMP target a device supports.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_EXECUTOR_H
#define MP_RUNNER_EXECUTOR_H

#include "mp/Runner/CompiledStep.h"
#include "mp/Runner/HostTensor.h"

#include "mp/Runtime/MPCompiled.h"

namespace mp::runner {

enum class Backend { CPU, CUDA };

llvm::StringRef backendName(Backend backend);

/// What --backend resolved to, with a note for the user (why auto chose
/// what it chose).
struct BackendChoice {
  Backend backend = Backend::CPU;
  std::string note;
};

/// Resolves --backend (cpu, cuda, auto); initialises the GPU for CUDA.
/// cuda without a device is an error, auto falls back to the CPU.
llvm::Expected<BackendChoice> chooseBackend(llvm::StringRef option);

/// The AMP mode for --amp=auto on `backend`: what it runs fastest, with the
/// reason.
std::pair<std::string, std::string> defaultAmp(Backend backend);

/// Refuses an AMP mode the hardware cannot run fast, saying what to use.
llvm::Error checkAmpSupported(Backend backend, llvm::StringRef amp);

/// The --device-info report: the CPU's features and every GPU.
void describeDevices(llvm::raw_ostream &os);

/// Runs one compiled step over a fixed set of buffers (the step's
/// arguments, then its destinations), whose host copies the trainer owns.
class Executor {
public:
  virtual ~Executor();

  static llvm::Expected<std::unique_ptr<Executor>>
  create(Backend backend, CompiledStep &step,
         std::vector<HostTensor> &hostBuffers, bool useGraphs);

  /// Copies host buffer `k` to the step's buffer (no-op on the CPU).
  virtual llvm::Error upload(unsigned k) = 0;
  /// Copies the step's buffer `k` to its host copy; valid after finish().
  virtual llvm::Error download(unsigned k) = 0;
  /// Runs one step.
  virtual llvm::Error run() = 0;
  /// Runs the forward function (evaluation) on the step's arguments,
  /// writing the logits into the step's logits destination.
  virtual llvm::Error runForward() = 0;
  /// Waits for everything enqueued; reports asynchronous failures.
  virtual llvm::Error finish() = 0;
  /// The allocator statistics of this backend.
  virtual mprtAllocatorStats allocatorStats() const = 0;
};

} // namespace mp::runner

#endif // MP_RUNNER_EXECUTOR_H
