//===- Context.cpp - device state, memory and graphs of the CUDA backend --===//
//
// The context (device, stream, cuBLASLt handle and workspace), the caching
// allocator behind compiled steps' buffers, device copies of host
// constants, CUDA graph capture, and the device queries of
// `mp-runner --device-info`.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Kernels.h"
#include "Libraries.h"

#include "../Entry.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

using namespace mp;
using namespace mp::cuda;

namespace {

Context ctx;
bool initialized = false;

//===----------------------------------------------------------------------===//
// Caching allocator
//===----------------------------------------------------------------------===//

/// Sizes are rounded to this; cudaMalloc returns 256-byte aligned memory.
constexpr size_t kGranule = 512;

size_t roundedSize(size_t size) {
  return (std::max<size_t>(size, 1) + kGranule - 1) / kGranule * kGranule;
}

struct DeviceAllocator {
  std::map<size_t, std::vector<void *>> freeLists;
  std::unordered_map<void *, size_t> live;
  /// Blocks handed out while a graph is being captured.
  bool capturing = false;
  std::set<void *> captured;
  mprtAllocatorStats stats{};

  void *allocate(size_t size) {
    size_t rounded = roundedSize(size);
    void *ptr = nullptr;
    auto it = freeLists.find(rounded);
    if (it != freeLists.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      ++stats.cacheHits;
    } else {
      cudaError_t status = cudaMalloc(&ptr, rounded);
      // Freeing synchronises the device, which a capture must not do.
      if (status == cudaErrorMemoryAllocation && !capturing && releaseCached())
        status = cudaMalloc(&ptr, rounded);
      if (!ok(status, "cudaMalloc"))
        return nullptr;
      ++stats.systemAllocations;
      stats.bytesReserved += int64_t(rounded);
    }
    live[ptr] = rounded;
    if (capturing)
      captured.insert(ptr);
    stats.bytesInUse += int64_t(rounded);
    stats.peakBytesInUse = std::max(stats.peakBytesInUse, stats.bytesInUse);
    return ptr;
  }

  bool release(void *ptr) {
    auto it = live.find(ptr);
    if (it == live.end())
      return false;
    stats.bytesInUse -= int64_t(it->second);
    freeLists[it->second].push_back(ptr);
    live.erase(it);
    return true;
  }

  /// Frees every cached block; whether there was any.
  bool releaseCached() {
    bool any = false;
    for (auto &[size, list] : freeLists) {
      for (void *ptr : list)
        cudaFree(ptr);
      any |= !list.empty();
      stats.bytesReserved -= int64_t(size * list.size());
      list.clear();
    }
    return any;
  }

  /// Takes the captured blocks out of the free lists: a graph owns them.
  std::vector<std::pair<void *, size_t>> reserveCaptured() {
    std::vector<std::pair<void *, size_t>> owned;
    for (auto &[size, list] : freeLists) {
      auto keep = std::partition(list.begin(), list.end(), [&](void *p) {
        return !captured.count(p);
      });
      for (auto it = keep; it != list.end(); ++it)
        owned.push_back({*it, size});
      list.erase(keep, list.end());
    }
    captured.clear();
    return owned;
  }
};

DeviceAllocator &allocator() {
  static DeviceAllocator instance;
  return instance;
}

/// Device copies of host constants, by host address and size.
std::map<std::pair<const void *, size_t>, void *> &hostConstants() {
  static std::map<std::pair<const void *, size_t>, void *> instance;
  return instance;
}

} // namespace

//===----------------------------------------------------------------------===//
// Errors and checks
//===----------------------------------------------------------------------===//

bool mp::cuda::ok(cudaError_t status, const char *call) {
  if (status == cudaSuccess)
    return true;
  (void)cudaGetLastError(); // clear a non-sticky error
  rt::setDetail(std::string(call) + ": " + cudaGetErrorString(status) + " (" +
                cudaGetErrorName(status) + ")");
  return false;
}

bool mp::cuda::ok(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return true;
  rt::setDetail(std::string(call) + ": " + lt().cublasLtGetStatusString(status) +
                " (" + lt().cublasLtGetStatusName(status) + ")");
  return false;
}

bool mp::cuda::launched(const char *kernel) {
  return ok(cudaGetLastError(), kernel);
}

Context *mp::cuda::context() {
  if (!initialized) {
    rt::setDetail("the CUDA backend is not initialised (mprtCudaInitialize)");
    return nullptr;
  }
  return &ctx;
}

void *mp::cuda::allocate(size_t size) { return allocator().allocate(size); }

void mp::cuda::release(void *ptr) {
  if (ptr)
    allocator().release(ptr);
}

bool mp::cuda::validFloat(const mpTensor *t) {
  if (!t || !isFloatType(t->elementType))
    return false;
  int64_t n = mpNumElements(t);
  return n == 0 || (n > 0 && t->data);
}

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

namespace {

mpStatus failWith(mpStatus status, const char *function) {
  std::string detail = rt::takeDetail();
  rt::failMessage(std::string(function) + ": " + mpStatusString(status) +
                  (detail.empty() ? "" : ": " + detail));
  return status;
}

/// The number of devices; 0 with the reason as the detail.
int deviceCount() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (!ok(status, "cudaGetDeviceCount"))
    return 0;
  if (!count)
    rt::setDetail("no CUDA device");
  return count;
}

} // namespace

extern "C" {

int32_t mprtCudaDeviceCount(void) {
  int count = deviceCount();
  if (!count)
    failWith(MP_ERROR_NO_DEVICE, "mprtCudaDeviceCount");
  return count;
}

mpStatus mprtCudaQueryDevice(int32_t device, mprtCudaDeviceInfo *info) {
  if (!info)
    return MP_ERROR_INVALID_ARGUMENT;
  cudaDeviceProp p{};
  if (!ok(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties"))
    return failWith(MP_ERROR_NO_DEVICE, "mprtCudaQueryDevice");
  *info = mprtCudaDeviceInfo{};
  snprintf(info->name, sizeof(info->name), "%s", p.name);
  info->major = p.major;
  info->minor = p.minor;
  info->multiprocessors = p.multiProcessorCount;
  info->totalMemory = int64_t(p.totalGlobalMem);
  cudaDriverGetVersion(&info->driverVersion);
  cudaRuntimeGetVersion(&info->runtimeVersion);
  int cc = p.major * 10 + p.minor;
  info->f16TensorCores = cc >= 70;
  info->bf16TensorCores = cc >= 80;
  info->tf32TensorCores = cc >= 80;
  info->fp8TensorCores = cc >= 89;
  return MP_OK;
}

mpStatus mprtCudaInitialize(int32_t device) {
  if (initialized)
    return device == ctx.device
               ? MP_OK
               : (rt::setDetail("already initialised on device " +
                                std::to_string(ctx.device)),
                  failWith(MP_ERROR_INVALID_ARGUMENT, "mprtCudaInitialize"));
  int count = deviceCount();
  if (!count)
    return failWith(MP_ERROR_NO_DEVICE, "mprtCudaInitialize");
  if (device < 0 || device >= count) {
    rt::setDetail("device " + std::to_string(device) + " does not exist (" +
                  std::to_string(count) + " found)");
    return failWith(MP_ERROR_NO_DEVICE, "mprtCudaInitialize");
  }
  if (!loadCublasLt())
    return failWith(MP_ERROR_BACKEND, "mprtCudaInitialize");
  Context c;
  c.device = device;
  c.workspaceSize = size_t(32) << 20; // cuBLASLt's recommendation for Hopper
  if (!ok(cudaSetDevice(device), "cudaSetDevice") ||
      !ok(cudaGetDeviceProperties(&c.properties, device),
          "cudaGetDeviceProperties") ||
      !ok(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags") ||
      !ok(lt().cublasLtCreate(&c.lt), "cublasLtCreate") ||
      !ok(cudaMalloc(&c.workspace, c.workspaceSize), "cudaMalloc"))
    return failWith(MP_ERROR_BACKEND, "mprtCudaInitialize");
  ctx = c;
  initialized = true;
  return MP_OK;
}

void *mprtCudaMalloc(size_t size) {
  if (!context()) {
    failWith(MP_ERROR_BACKEND, "mprtCudaMalloc");
    return nullptr;
  }
  void *ptr = allocator().allocate(size);
  if (!ptr)
    failWith(MP_ERROR_OUT_OF_MEMORY, "mprtCudaMalloc");
  return ptr;
}

void mprtCudaFree(void *ptr) {
  if (ptr && !allocator().release(ptr))
    rt::failMessage("mprtCudaFree: pointer not allocated by the runtime");
}

void mprtCudaGetAllocatorStats(mprtAllocatorStats *stats) {
  if (stats)
    *stats = allocator().stats;
}

static mpStatus copy(void *to, const void *from, size_t bytes,
                     cudaMemcpyKind kind, const char *function) {
  if (!bytes)
    return MP_OK;
  if (!context() ||
      !ok(cudaMemcpyAsync(to, from, bytes, kind, ctx.stream),
          "cudaMemcpyAsync"))
    return failWith(MP_ERROR_BACKEND, function);
  return MP_OK;
}

mpStatus mprtCudaCopyToDevice(void *device, const void *host, size_t bytes) {
  return copy(device, host, bytes, cudaMemcpyHostToDevice,
              "mprtCudaCopyToDevice");
}

mpStatus mprtCudaCopyToHost(void *host, const void *device, size_t bytes) {
  return copy(host, device, bytes, cudaMemcpyDeviceToHost,
              "mprtCudaCopyToHost");
}

mpStatus mprtCudaCopyOnDevice(void *to, const void *from, size_t bytes) {
  return copy(to, from, bytes, cudaMemcpyDeviceToDevice,
              "mprtCudaCopyOnDevice");
}

mpStatus mprtCudaSynchronize(void) {
  if (!context() ||
      !ok(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize"))
    return failWith(MP_ERROR_BACKEND, "mprtCudaSynchronize");
  return MP_OK;
}

void mprtCudaForgetHostConstants(void) {
  for (auto &[key, ptr] : hostConstants())
    allocator().freeLists[roundedSize(key.second)].push_back(ptr);
  hostConstants().clear();
}

struct mprtCudaGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<std::pair<void *, size_t>> memory;
};

mpStatus mprtCudaBeginCapture(void) {
  // Relaxed: a size the cache does not hold yet (another step's graph took
  // it) may still be cudaMalloc'ed while capturing; the block then belongs
  // to this graph.
  if (!context() || !ok(cudaStreamBeginCapture(ctx.stream,
                                               cudaStreamCaptureModeRelaxed),
                        "cudaStreamBeginCapture"))
    return failWith(MP_ERROR_BACKEND, "mprtCudaBeginCapture");
  allocator().capturing = true;
  return MP_OK;
}

mpStatus mprtCudaEndCapture(mprtCudaGraph **result) {
  if (!result || !context())
    return failWith(MP_ERROR_INVALID_ARGUMENT, "mprtCudaEndCapture");
  *result = nullptr;
  allocator().capturing = false;
  auto *g = new mprtCudaGraph();
  g->memory = allocator().reserveCaptured();
  cudaError_t status = cudaStreamEndCapture(ctx.stream, &g->graph);
  if (!ok(status, "cudaStreamEndCapture") ||
      !ok(cudaGraphInstantiate(&g->exec, g->graph, 0),
          "cudaGraphInstantiate")) {
    mprtCudaDestroyGraph(g);
    return failWith(MP_ERROR_BACKEND, "mprtCudaEndCapture");
  }
  *result = g;
  return MP_OK;
}

mpStatus mprtCudaLaunchGraph(mprtCudaGraph *graph) {
  if (!graph || !context())
    return failWith(MP_ERROR_INVALID_ARGUMENT, "mprtCudaLaunchGraph");
  if (!ok(cudaGraphLaunch(graph->exec, ctx.stream), "cudaGraphLaunch"))
    return failWith(MP_ERROR_BACKEND, "mprtCudaLaunchGraph");
  return MP_OK;
}

void mprtCudaDestroyGraph(mprtCudaGraph *graph) {
  if (!graph)
    return;
  if (graph->exec)
    cudaGraphExecDestroy(graph->exec);
  if (graph->graph)
    cudaGraphDestroy(graph->graph);
  for (auto [ptr, size] : graph->memory)
    allocator().freeLists[size].push_back(ptr);
  delete graph;
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Pointer resolution for the entry points
//===----------------------------------------------------------------------===//

namespace mp::cuda {

/// Entry points' Block hook: device memory from the allocator is used as it
/// is; anything else is a host constant of the compiled module, uploaded
/// once and read from its device copy.
void *resolvePointer(void *data, size_t bytes, bool output, const char *entry,
                     int64_t site) {
  DeviceAllocator &a = allocator();
  if (a.live.count(data))
    return data;
  if (output) {
    rt::fail(entry, site,
             "output buffer is not device memory from the runtime's "
             "allocator");
    return nullptr;
  }
  auto key = std::make_pair(static_cast<const void *>(data), bytes);
  auto it = hostConstants().find(key);
  if (it != hostConstants().end())
    return it->second;
  if (!context()) {
    rt::fail(entry, site, rt::takeDetail());
    return nullptr;
  }
  void *copy = a.allocate(bytes);
  // A synchronous upload: this happens in the first (eager) step only, never
  // inside a captured one.
  if (!copy || !ok(cudaMemcpy(copy, data, bytes, cudaMemcpyHostToDevice),
                   "cudaMemcpy")) {
    rt::fail(entry, site, "uploading a host constant: " + rt::takeDetail());
    return nullptr;
  }
  a.live.erase(copy); // not a buffer compiled code may free or write
  a.stats.bytesInUse -= int64_t(roundedSize(bytes));
  hostConstants()[key] = copy;
  return copy;
}

} // namespace mp::cuda
