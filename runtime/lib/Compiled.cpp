//===- Compiled.cpp - entry points for compiled training steps ------------===//
//
// Decodes the argument blocks described in MPCompiled.h and calls the
// backend's kernels, keeps the sticky error compiled code cannot handle
// itself, and implements MLIR's generic allocation functions as a caching
// allocator: freed blocks go to a free list of their exact size, and since a
// training step allocates the same sizes in the same order every step, the
// second step is served entirely from the cache.
//
//===----------------------------------------------------------------------===//

#include "Entry.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

std::string pendingError;
std::string takenError;
bool errorPending = false;
std::string detail;

} // namespace

void mp::rt::failMessage(const std::string &message) {
  if (errorPending)
    return;
  errorPending = true;
  pendingError = message;
}

void mp::rt::setDetail(std::string text) { detail = std::move(text); }

std::string mp::rt::takeDetail() { return std::exchange(detail, {}); }

void mp::rt::fail(const char *entry, int64_t site, const std::string &reason) {
  if (errorPending)
    return;
  errorPending = true;
  pendingError = std::string("mprt_") + entry + " (call site " +
                 std::to_string(site) + "): " + reason;
}

bool mp::rt::hasError() { return errorPending; }

namespace {

using mp::rt::fail;

//===----------------------------------------------------------------------===//
// Caching allocator
//===----------------------------------------------------------------------===//

constexpr size_t kAlignment = 64;

struct Allocator {
  std::map<size_t, std::vector<void *>> freeLists;
  std::unordered_map<void *, size_t> live;
  mprtAllocatorStats stats{};

  void *allocate(size_t size) {
    size_t rounded = (std::max<size_t>(size, 1) + kAlignment - 1) /
                     kAlignment * kAlignment;
    void *ptr = nullptr;
    auto it = freeLists.find(rounded);
    if (it != freeLists.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      ++stats.cacheHits;
    } else {
      ptr = std::aligned_alloc(kAlignment, rounded);
      if (!ptr)
        return nullptr;
      ++stats.systemAllocations;
      stats.bytesReserved += static_cast<int64_t>(rounded);
    }
    live[ptr] = rounded;
    stats.bytesInUse += static_cast<int64_t>(rounded);
    stats.peakBytesInUse = std::max(stats.peakBytesInUse, stats.bytesInUse);
    return ptr;
  }

  void release(void *ptr) {
    if (!ptr)
      return;
    auto it = live.find(ptr);
    if (it == live.end()) {
      // Not ours: compiled code frees only what it allocated, so this is a
      // bug in the caller; leaking is safer than freeing foreign memory.
      fail("free", -1, "pointer not allocated by the runtime");
      return;
    }
    stats.bytesInUse -= static_cast<int64_t>(it->second);
    freeLists[it->second].push_back(ptr);
    live.erase(it);
  }

  void trim() {
    for (auto &[size, list] : freeLists) {
      for (void *ptr : list)
        std::free(ptr);
      stats.bytesReserved -= static_cast<int64_t>(size * list.size());
      list.clear();
    }
  }
};

Allocator &allocator() {
  static Allocator instance;
  return instance;
}

} // namespace

extern "C" {

const char *mprtTakeError(void) {
  if (!errorPending)
    return nullptr;
  errorPending = false;
  takenError = std::move(pendingError);
  return takenError.c_str();
}

void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocator().allocate(size);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  if (alignment > kAlignment) {
    fail("alloc", -1, "alignment above 64 bytes is not supported");
    return nullptr;
  }
  return allocator().allocate(size);
}

void _mlir_memref_to_llvm_free(void *ptr) { allocator().release(ptr); }

void mprtGetAllocatorStats(mprtAllocatorStats *stats) {
  if (stats)
    *stats = allocator().stats;
}

void mprtReleaseCachedMemory(void) { allocator().trim(); }

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

#define MPRT_ENTRY_NAME(name) mprt_##name
#define MPRT_KERNEL(fn) ::fn
#define MPRT_RESOLVE nullptr
#include "Entries.inc"
#undef MPRT_ENTRY_NAME
#undef MPRT_KERNEL
#undef MPRT_RESOLVE

const mprtSymbol *mprtGetSymbols(int32_t *count) {
#define MPRT_SYMBOL(name, fields)                                              \
  {"mprt_" #name, reinterpret_cast<void *>(&mprt_##name)},
  static const mprtSymbol symbols[] = {
      MPRT_ENTRY_POINTS(MPRT_SYMBOL)
      {"_mlir_memref_to_llvm_alloc",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_alloc)},
      {"_mlir_memref_to_llvm_aligned_alloc",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_aligned_alloc)},
      {"_mlir_memref_to_llvm_free",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_free)},
  };
#undef MPRT_SYMBOL
  if (count)
    *count = static_cast<int32_t>(sizeof(symbols) / sizeof(symbols[0]));
  return symbols;
}

} // extern "C"
