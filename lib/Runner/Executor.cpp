//===- Executor.cpp - where a compiled step runs --------------------------===//

#include "mp/Runner/Executor.h"

#ifdef MP_RUNTIME_HAS_CUDA
#include "mp/Runtime/MPCuda.h"
#endif

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Host.h"

using namespace mp;
using namespace mp::runner;
using llvm::createStringError;

llvm::StringRef runner::backendName(Backend backend) {
  return backend == Backend::CUDA ? "cuda" : "cpu";
}


//===----------------------------------------------------------------------===//
// Device queries
//===----------------------------------------------------------------------===//

namespace {

/// The "model name" line of /proc/cpuinfo, else LLVM's name for the CPU.
std::string cpuName() {
  if (auto buffer = llvm::MemoryBuffer::getFileAsStream("/proc/cpuinfo")) {
    llvm::SmallVector<llvm::StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n');
    for (llvm::StringRef line : lines)
      if (line.starts_with("model name"))
        return line.split(':').second.trim().str();
  }
  return llvm::sys::getHostCPUName().str();
}

const char *yesNo(bool b) { return b ? "yes" : "no"; }

} // namespace

#ifdef MP_RUNTIME_HAS_CUDA
static llvm::Error runtimeError(llvm::StringRef what) {
  const char *message = mprtTakeError();
  return createStringError(std::errc::io_error, "%s: %s", what.str().c_str(),
                           message ? message : "unknown error");
}

/// Whether the machine has an NVIDIA GPU the kernel driver exposes.
static bool nvidiaDevicePresent() {
  return llvm::sys::fs::exists("/dev/nvidia0") ||
         llvm::sys::fs::exists("/dev/nvidiactl") ||
         llvm::sys::fs::exists("/proc/driver/nvidia/version");
}

/// The first GPU, when there is one (the one the CUDA backend uses).
static std::optional<mprtCudaDeviceInfo> firstGpu(std::string &why) {
  if (mprtCudaDeviceCount() < 1) {
    const char *message = mprtTakeError();
    why = message ? message : "no CUDA device";
    return std::nullopt;
  }
  mprtCudaDeviceInfo info;
  if (mprtCudaQueryDevice(0, &info) != MP_OK) {
    const char *message = mprtTakeError();
    why = message ? message : "cannot query device 0";
    return std::nullopt;
  }
  return info;
}
#endif

llvm::Expected<BackendChoice> runner::chooseBackend(llvm::StringRef option) {
  if (option == "cpu")
    return BackendChoice{Backend::CPU, ""};
  if (option != "cuda" && option != "auto")
    return createStringError(std::errc::invalid_argument,
                             "--backend must be cpu, cuda or auto, not '%s'",
                             option.str().c_str());
#ifdef MP_RUNTIME_HAS_CUDA
  // Without an NVIDIA device node there is no GPU to ask about: auto says
  // so plainly instead of relaying the CUDA runtime's complaint about a
  // missing driver, which reads like a broken installation.
  if (option == "auto" && !nvidiaDevicePresent())
    return BackendChoice{Backend::CPU, "no GPU found; using the CPU backend"};
  if (mprtCudaInitialize(0) == MP_OK)
    return BackendChoice{Backend::CUDA, ""};
  const char *message = mprtTakeError();
  std::string why = message ? message : "no CUDA device";
  if (option == "cuda")
    return createStringError(std::errc::no_such_device, "--backend=cuda: %s",
                             why.c_str());
  return BackendChoice{Backend::CPU, "a GPU is present but unusable (" + why +
                                         "); using the CPU backend"};
#else
  if (option == "cuda")
    return createStringError(std::errc::not_supported,
                             "--backend=cuda: this build has no CUDA backend; "
                             "use --backend=cpu or auto");
  return BackendChoice{Backend::CPU,
                       "this build has no CUDA backend; using the CPU backend"};
#endif
}

std::pair<std::string, std::string> runner::defaultAmp(Backend backend) {
#ifdef MP_RUNTIME_HAS_CUDA
  if (backend == Backend::CUDA) {
    std::string why;
    if (std::optional<mprtCudaDeviceInfo> gpu = firstGpu(why)) {
      if (gpu->bf16TensorCores)
        return {"bf16", "bf16 tensor cores (compute capability " +
                            std::to_string(gpu->major) + "." +
                            std::to_string(gpu->minor) + ")"};
      if (gpu->f16TensorCores)
        return {"f16", "f16 tensor cores, no bf16 (compute capability " +
                           std::to_string(gpu->major) + "." +
                           std::to_string(gpu->minor) + ")"};
      return {"off", "no tensor cores"};
    }
  }
#endif
  (void)backend;
  // On the CPU, bf16 pays where its matmuls run on bf16 instructions
  // (oneDNN on AVX512_BF16 or AMX): about twice the f32 GEMM rate
  // (benchmarks/README.md). Elsewhere f16 and bf16 multiply in f32 after a
  // conversion, which costs more than it saves, so auto stays FP32.
  mpCpuInfo cpu = mpGetCpuInfo();
  if (cpu.bf16Gemm)
    return {"bf16", std::string("bf16 matmuls on the CPU's ") +
                        (cpu.amx ? "AMX" : "AVX512_BF16") +
                        " instructions (oneDNN)"};
  const char *why =
      !cpu.fastKernels
          ? "FP32: the reference kernels (MP_REFERENCE_KERNELS) multiply f16 "
            "and bf16 in f32 after a conversion, slower than FP32"
      : cpu.avx512bf16 || cpu.amx
          ? "FP32: this build has no oneDNN, which the CPU backend's bf16 "
            "matmuls need, so f16 and bf16 would multiply in f32 after a "
            "conversion, slower than FP32"
          : "FP32: this CPU has no bf16 matmul instructions (AVX512_BF16 or "
            "AMX), so f16 and bf16 would multiply in f32 after a "
            "conversion, slower than FP32";
  return {"off", std::string(why) + "; ask for --amp=bf16 or --amp=f16 to "
                                    "train in mixed precision anyway"};
}

llvm::Error runner::checkAmpSupported(Backend backend, llvm::StringRef amp) {
#ifdef MP_RUNTIME_HAS_CUDA
  if (backend != Backend::CUDA || amp == "off")
    return llvm::Error::success();
  std::string why;
  std::optional<mprtCudaDeviceInfo> gpu = firstGpu(why);
  if (!gpu)
    return createStringError(std::errc::no_such_device, "%s", why.c_str());
  std::string device = llvm::formatv("{0} (compute capability {1}.{2})",
                                     gpu->name, gpu->major, gpu->minor)
                           .str();
  if (amp == "bf16" && !gpu->bf16TensorCores)
    return createStringError(
        std::errc::not_supported,
        "--amp=bf16: %s has no bf16 tensor cores (they need compute "
        "capability 8.0); use %s",
        device.c_str(),
        gpu->f16TensorCores ? "--amp=f16" : "--amp=off");
  if (amp == "f16" && !gpu->f16TensorCores)
    return createStringError(std::errc::not_supported,
                             "--amp=f16: %s has no f16 tensor cores (they "
                             "need compute capability 7.0); use --amp=off",
                             device.c_str());
#endif
  (void)backend;
  (void)amp;
  return llvm::Error::success();
}

#ifdef MP_RUNTIME_HAS_CUDA
/// The GPUs the CUDA backend sees, and what --amp=auto picks on them.
static void describeGpus(llvm::raw_ostream &os) {
  if (!nvidiaDevicePresent()) {
    os << "  no GPU found (no NVIDIA device on this machine)\n"
       << "  --backend=auto runs on the CPU\n";
    return;
  }
  int32_t count = mprtCudaDeviceCount();
  if (count < 1) {
    const char *message = mprtTakeError();
    os << "  no CUDA device: " << (message ? message : "none found") << "\n"
       << "  --backend=auto runs on the CPU\n";
    return;
  }
  for (int32_t d = 0; d < count; ++d) {
    mprtCudaDeviceInfo g;
    if (mprtCudaQueryDevice(d, &g) != MP_OK) {
      const char *message = mprtTakeError();
      os << "  GPU " << d << ": " << (message ? message : "cannot query")
         << "\n";
      continue;
    }
    os << llvm::formatv("  GPU {0}: {1}, compute capability {2}.{3}, {4} SMs, "
                        "{5:f1} GiB\n",
                        d, g.name, g.major, g.minor, g.multiprocessors,
                        g.totalMemory / double(1 << 30));
    os << llvm::formatv("    driver {0}.{1}, runtime {2}.{3}\n",
                        g.driverVersion / 1000, g.driverVersion % 1000 / 10,
                        g.runtimeVersion / 1000, g.runtimeVersion % 1000 / 10);
    os << "    tensor cores: f16 " << yesNo(g.f16TensorCores) << ", bf16 "
       << yesNo(g.bf16TensorCores) << ", tf32 " << yesNo(g.tf32TensorCores)
       << ", fp8 " << yesNo(g.fp8TensorCores) << "\n";
  }
  auto [gpuAmp, gpuWhy] = defaultAmp(Backend::CUDA);
  os << "  --amp=auto on the GPU: " << gpuAmp << " (" << gpuWhy << ")\n";
}

/// The CUDA libraries the backend opens at run time, and where they were
/// found (or where they were looked for).
static void describeCudaLibraries(llvm::raw_ostream &os) {
  os << "  CUDA libraries (opened at run time; MP_CUDA_LIBRARY_PATH adds "
        "directories):\n";
  bool missing = false;
  for (mprtCudaLibrary library :
       {MPRT_CUDA_CUBLASLT, MPRT_CUDA_CUDNN, MPRT_CUDA_NCCL}) {
    mprtCudaLibraryInfo info;
    if (mprtCudaFindLibrary(library, &info) != MP_OK)
      continue;
    const char *use = info.required ? "" : "; not used by this version";
    if (info.found) {
      os << "    " << info.name << " " << info.version << ": " << info.path
         << (info.required ? "" : " (not used by this version)") << "\n";
      continue;
    }
    missing = true;
    os << "    " << info.name << ": not found (" << info.soname << use << ")"
       << (*info.detail ? std::string("; ") + info.detail : "") << "\n";
  }
  if (missing)
    os << "    searched, in order: " << mprtCudaLibrarySearchOrder() << "\n";
}
#endif

void runner::describeDevices(llvm::raw_ostream &os) {
  mpCpuInfo f = mpGetCpuInfo();
  os << "CPU: " << cpuName() << "\n"
     << "  AVX2: " << yesNo(f.avx2) << ", AVX-512: " << yesNo(f.avx512)
     << ", AVX-512 BF16: " << yesNo(f.avx512bf16) << ", AMX: " << yesNo(f.amx)
     << ", F16C: " << yesNo(f.f16c) << "\n"
     << "CPU backend: available, " << f.threads << " thread"
     << (f.threads == 1 ? "" : "s") << "\n"
     << "  matmuls: "
     << (f.bf16Gemm ? "bf16 on bf16 instructions (oneDNN), f32 (oneDNN), "
                      "f16 widened to f32"
                    : "f32, with f16/bf16 widened to f32")
     << "\n  conversions: "
     << (f.avx512           ? "AVX-512"
         : f.avx2 && f.f16c ? "AVX2 and F16C"
         : f.avx2           ? "AVX2 (bf16), scalar (f16)"
                            : "scalar")
     << (f.fastKernels ? "" : " (reference kernels: MP_REFERENCE_KERNELS)")
     << "\n";
  auto [cpuAmp, cpuWhy] = defaultAmp(Backend::CPU);
  os << "  --amp=auto on the CPU: " << cpuAmp << " (" << cpuWhy << ")\n";
#ifdef MP_RUNTIME_HAS_CUDA
  os << "CUDA backend: built for " << MP_CUDA_ARCHITECTURES << "\n";
  describeGpus(os);
  describeCudaLibraries(os);
#else
  os << "CUDA backend: not part of this build (no CUDA toolkit was found, or "
        "MP_ENABLE_CUDA=OFF)\n";
#endif
}

//===----------------------------------------------------------------------===//
// Executors
//===----------------------------------------------------------------------===//

Executor::~Executor() = default;

namespace {

/// The buffers of the forward function: the step's arguments, then the
/// destination of its logits.
std::vector<unsigned> forwardBuffers(const StepSignature &sig) {
  std::vector<unsigned> buffers;
  for (unsigned k = 0; k < sig.arguments.size(); ++k)
    buffers.push_back(k);
  if (sig.forwardResult) {
    auto it = llvm::find(sig.destinations, *sig.forwardResult);
    buffers.push_back(sig.arguments.size() + (it - sig.destinations.begin()));
  }
  return buffers;
}

/// The step runs on the host buffers themselves.
class CpuExecutor final : public Executor {
public:
  CpuExecutor(CompiledStep &step, std::vector<HostTensor> &buffers)
      : step(step), buffers(buffers) {}

  llvm::Error upload(unsigned) override { return llvm::Error::success(); }
  llvm::Error download(unsigned) override { return llvm::Error::success(); }
  llvm::Error finish() override { return llvm::Error::success(); }
  llvm::Error run() override {
    std::vector<void *> pointers;
    for (HostTensor &t : buffers)
      pointers.push_back(t.data());
    return step.run(pointers);
  }
  llvm::Error runForward() override {
    std::vector<void *> pointers;
    for (unsigned k : forwardBuffers(step.signature()))
      pointers.push_back(buffers[k].data());
    return step.runForward(pointers);
  }
  mprtAllocatorStats allocatorStats() const override {
    mprtAllocatorStats stats;
    mprtGetAllocatorStats(&stats);
    return stats;
  }

private:
  CompiledStep &step;
  std::vector<HostTensor> &buffers;
};

#ifdef MP_RUNTIME_HAS_CUDA
/// Device buffers mirror the host buffers; after `kEagerSteps` eager steps
/// the step is captured once as a CUDA graph and replayed.
class CudaExecutor final : public Executor {
public:
  static constexpr int kEagerSteps = 2;

  CudaExecutor(CompiledStep &step, std::vector<HostTensor> &buffers,
               bool useGraphs)
      : step(step), buffers(buffers), useGraphs(useGraphs) {}

  ~CudaExecutor() override {
    mprtCudaSynchronize();
    mprtCudaDestroyGraph(graph);
    for (void *p : device)
      mprtCudaFree(p);
    mprtCudaForgetHostConstants();
    (void)mprtTakeError();
  }

  llvm::Error allocate() {
    for (HostTensor &t : buffers) {
      void *p = mprtCudaMalloc(t.byteSize());
      if (!p)
        return runtimeError("allocating a step buffer on the GPU");
      device.push_back(p);
    }
    return llvm::Error::success();
  }

  llvm::Error upload(unsigned k) override {
    if (mprtCudaCopyToDevice(device[k], buffers[k].data(),
                             buffers[k].byteSize()) != MP_OK)
      return runtimeError("copying to the GPU");
    return llvm::Error::success();
  }

  llvm::Error download(unsigned k) override {
    if (mprtCudaCopyToHost(buffers[k].data(), device[k],
                           buffers[k].byteSize()) != MP_OK)
      return runtimeError("copying from the GPU");
    return llvm::Error::success();
  }

  llvm::Error finish() override {
    if (mprtCudaSynchronize() != MP_OK)
      return runtimeError("running the step on the GPU");
    return llvm::Error::success();
  }

  llvm::Error runForward() override {
    std::vector<void *> pointers;
    for (unsigned k : forwardBuffers(step.signature()))
      pointers.push_back(device[k]);
    return step.runForward(pointers);
  }

  llvm::Error run() override {
    if (graph) {
      if (mprtCudaLaunchGraph(graph) != MP_OK)
        return runtimeError("replaying the step's CUDA graph");
      return llvm::Error::success();
    }
    if (!useGraphs || eagerSteps < kEagerSteps) {
      ++eagerSteps;
      return step.run(device);
    }
    if (mprtCudaBeginCapture() != MP_OK)
      return runtimeError("capturing the step as a CUDA graph");
    llvm::Error err = step.run(device);
    mprtCudaGraph *captured = nullptr;
    mpStatus ended = mprtCudaEndCapture(&captured);
    if (err)
      return err;
    if (ended != MP_OK)
      return runtimeError("capturing the step as a CUDA graph");
    graph = captured;
    if (mprtCudaLaunchGraph(graph) != MP_OK)
      return runtimeError("replaying the step's CUDA graph");
    return llvm::Error::success();
  }

  mprtAllocatorStats allocatorStats() const override {
    mprtAllocatorStats stats;
    mprtCudaGetAllocatorStats(&stats);
    return stats;
  }

private:
  CompiledStep &step;
  std::vector<HostTensor> &buffers;
  bool useGraphs;
  std::vector<void *> device;
  int eagerSteps = 0;
  mprtCudaGraph *graph = nullptr;
};
#endif

} // namespace

llvm::Expected<std::unique_ptr<Executor>>
Executor::create(Backend backend, CompiledStep &step,
                 std::vector<HostTensor> &hostBuffers, bool useGraphs) {
  if (backend == Backend::CPU)
    return std::make_unique<CpuExecutor>(step, hostBuffers);
#ifdef MP_RUNTIME_HAS_CUDA
  auto executor = std::make_unique<CudaExecutor>(step, hostBuffers, useGraphs);
  if (llvm::Error err = executor->allocate())
    return std::move(err);
  return std::unique_ptr<Executor>(std::move(executor));
#else
  (void)useGraphs;
  return createStringError(std::errc::not_supported,
                           "this build has no CUDA backend");
#endif
}
