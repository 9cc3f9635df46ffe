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
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

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

//===----------------------------------------------------------------------===//
// Kernel profile (MP_PROFILE_KERNELS)
//===----------------------------------------------------------------------===//

namespace {

struct Profile {
  using Totals = std::map<std::string, std::pair<int64_t, double>>;
  std::string path;
  bool shapes = false; // MP_PROFILE_SHAPES: totals per signature too
  std::mutex mutex;
  Totals entries, signatures;

  Profile() {
    if (const char *p = std::getenv("MP_PROFILE_KERNELS"))
      path = p;
    const char *s = std::getenv("MP_PROFILE_SHAPES");
    shapes = !path.empty() && s && *s && std::strcmp(s, "0") != 0;
  }
  /// Where the totals go, as mp's tools write files (mp/Support/
  /// FileOutput.h; the runtime links no LLVM): one of the process's
  /// descriptors (/dev/stdout, /dev/fd/N) or a device or a FIFO is written
  /// in place; a symbolic link is followed to the file it names (as the
  /// kernel would, fs.protected_symlinks included), beside which the
  /// temporary goes. Sets `descriptor` or `inPlace`, or returns the file.
  static bool destination(const std::string &path, std::string &file,
                          int &descriptor, bool &inPlace, mode_t &mode) {
    descriptor = -1;
    inPlace = false;
    mode = 0;
    std::string current = path;
    for (int hops = 0; hops < 40; ++hops) {
      unsigned n = 0;
      char tail = 0;
      if (current == "/dev/stdout" || current == "/dev/stderr") {
        descriptor = current == "/dev/stdout" ? 1 : 2;
        return true;
      }
      if (std::sscanf(current.c_str(), "/dev/fd/%u%c", &n, &tail) == 1 ||
          std::sscanf(current.c_str(), "/proc/self/fd/%u%c", &n, &tail) ==
              1) {
        descriptor = int(n);
        return true;
      }
      struct stat st;
      if (::lstat(current.c_str(), &st) != 0) {
        file = current;
        return errno == ENOENT; // a new file
      }
      if (!S_ISLNK(st.st_mode)) {
        file = current;
        inPlace = !S_ISREG(st.st_mode);
        mode = st.st_mode & 07777;
        return !S_ISDIR(st.st_mode) && !S_ISSOCK(st.st_mode) &&
               (inPlace || ::access(current.c_str(), W_OK) == 0);
      }
      size_t slash = current.rfind('/');
      std::string dir =
          slash == std::string::npos ? "." : current.substr(0, slash + 1);
      struct stat dirSt;
      if (::stat(dir.c_str(), &dirSt) == 0 && (dirSt.st_mode & S_ISVTX) &&
          (dirSt.st_mode & S_IWOTH) && st.st_uid != dirSt.st_uid &&
          st.st_uid != ::geteuid())
        return false;
      char target[4096];
      ssize_t length = ::readlink(current.c_str(), target, sizeof(target));
      if (length < 0 || size_t(length) == sizeof(target))
        return false;
      target[length] = 0;
      current = target[0] == '/' || slash == std::string::npos
                    ? std::string(target)
                    : dir + target;
    }
    return false;
  }

  /// Writes the totals through a temporary file, so a reader never sees
  /// half of them.
  ~Profile() {
    if (path.empty())
      return;
    std::string target;
    int descriptor;
    bool inPlace;
    mode_t mode;
    bool ok = destination(path, target, descriptor, inPlace, mode);
    // The temporary is per process: runs sharing one profile path must
    // not write into each other's.
    std::string tmp = target + ".tmp" + std::to_string(getpid());
    FILE *f = nullptr;
    if (ok && descriptor >= 0) {
      std::fflush(stdout);
      int fd = ::dup(descriptor);
      f = fd < 0 ? nullptr : ::fdopen(fd, "w");
    } else if (ok) {
      f = std::fopen(inPlace ? target.c_str() : tmp.c_str(), "w");
      if (f && !inPlace && mode)
        (void)::fchmod(::fileno(f), mode);
    }
    bool renamed = descriptor < 0 && !inPlace;
    ok = f != nullptr;
    if (f) {
      // Names and signatures hold letters, digits, spaces, '?' and
      // []x,->, none of which JSON escapes.
      auto write = [&](const char *key, const Totals &totals) {
        std::fprintf(f, "\"%s\": {", key);
        const char *sep = "";
        for (auto &[name, total] : totals) {
          std::fprintf(f,
                       "%s\n  \"%s\": {\"calls\": %lld, \"seconds\": %.9f}",
                       sep, name.c_str(), static_cast<long long>(total.first),
                       total.second);
          sep = ",";
        }
        std::fprintf(f, "\n}");
      };
      std::fprintf(f, "{");
      write("entries", entries);
      if (shapes) {
        std::fprintf(f, ",\n");
        write("shapes", signatures);
      }
      std::fprintf(f, "}\n");
      ok = !std::ferror(f);
      ok &= std::fclose(f) == 0;
    }
    if (!ok || (renamed && std::rename(tmp.c_str(), target.c_str()) != 0)) {
      std::fprintf(stderr, "mp runtime: cannot write MP_PROFILE_KERNELS=%s\n",
                   path.c_str());
      if (renamed)
        std::remove(tmp.c_str());
    }
  }
};

Profile &profile() {
  static Profile p;
  return p;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

namespace {
thread_local std::string *activeSignature = nullptr;
} // namespace

std::string *mp::rt::timedSignature() { return activeSignature; }

mp::rt::EntryTimer::EntryTimer(const char *entry)
    : entry(entry), start(profile().path.empty() ? -1 : nowNs()) {
  if (start >= 0 && profile().shapes) {
    signature = entry;
    previous = activeSignature;
    activeSignature = &signature;
  }
}

mp::rt::EntryTimer::~EntryTimer() {
  if (start < 0)
    return;
  double seconds = (nowNs() - start) * 1e-9;
  if (activeSignature == &signature)
    activeSignature = previous;
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto add = [&](std::pair<int64_t, double> &total) {
    ++total.first;
    total.second += seconds;
  };
  add(p.entries[entry]);
  if (p.shapes)
    add(p.signatures[signature]);
}

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

  /// The cached blocks go back to the system at exit, so that a leak
  /// checker sees only what compiled code never freed.
  ~Allocator() { trim(); }

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
#define MPRT_TIMER(name) mp::rt::EntryTimer timer(#name);
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
