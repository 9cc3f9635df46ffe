//===- Libraries.cpp - find and open the CUDA libraries at run time --------===//
//
// Each library is looked for by its CUDA 13 soname, first where the user
// says (MP_CUDA_LIBRARY_PATH), then where the dynamic loader looks by
// itself, then in the places GPU machines keep CUDA without telling the
// loader: the toolkit's directories and the `nvidia-*` wheels PyTorch and
// JAX install (CUDA 13 wheels put their libraries in nvidia/cu13/lib, NCCL
// in nvidia/nccl/lib, cuDNN in nvidia/cudnn/lib). Python environments are
// found without running Python: the prefix of each `python3` on PATH (a
// virtual environment's bin/ is usually there), $VIRTUAL_ENV, $CONDA_PREFIX
// and the usual system prefixes. The first file that opens wins; a file that
// exists but does not open (a missing dependency, another architecture) is
// named in the message, so a broken install is not mistaken for a missing
// one.
//
//===----------------------------------------------------------------------===//

#include "Libraries.h"

#include "../Entry.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace mp;
using namespace mp::cuda;

namespace {

#if defined(__aarch64__)
constexpr const char *kTargetDir = "targets/sbsa-linux/lib";
#else
constexpr const char *kTargetDir = "targets/x86_64-linux/lib";
#endif

struct Spec {
  const char *name;
  const char *soname;
  bool required;
  /// Directories below a site-packages' `nvidia/` that hold it.
  const char *wheelDirs[2];
  /// The library's version function and how to read its number.
  const char *versionFunction;
  enum { SizeT, IntOut } versionKind;
};

const Spec kSpecs[] = {
    {"cuBLASLt", "libcublasLt.so.13", true, {"cu13/lib", "cublas/lib"},
     "cublasLtGetVersion", Spec::SizeT},
    {"cuDNN", "libcudnn.so.9", false, {"cudnn/lib", "cu13/lib"},
     "cudnnGetVersion", Spec::SizeT},
    {"NCCL", "libnccl.so.2", false, {"nccl/lib", "cu13/lib"},
     "ncclGetVersion", Spec::IntOut},
};
constexpr int kNumLibraries = sizeof(kSpecs) / sizeof(kSpecs[0]);

/// What the places searched are called in a message, in search order.
constexpr const char *kSearchedPlaces =
    "MP_CUDA_LIBRARY_PATH, the dynamic loader's path (LD_LIBRARY_PATH, "
    "ld.so.cache, /lib, /usr/lib), $CUDA_HOME, $CUDA_PATH, "
    "/usr/local/cuda{,-13,-13.*}, the nvidia wheels of Python environments "
    "(beside each python3 on PATH, $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, "
    "/usr/local, /usr, PYTHONPATH) and $CONDA_PREFIX/lib";

std::vector<std::string> splitPath(const char *value) {
  std::vector<std::string> parts;
  if (!value)
    return parts;
  std::string all(value);
  size_t start = 0;
  while (start <= all.size()) {
    size_t end = all.find(':', start);
    if (end == std::string::npos)
      end = all.size();
    if (end > start)
      parts.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::vector<std::string> expand(const std::string &pattern) {
  std::vector<std::string> paths;
  glob_t g;
  if (glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &g) == 0)
    for (size_t k = 0; k < g.gl_pathc; ++k)
      paths.push_back(g.gl_pathv[k]);
  globfree(&g);
  return paths;
}

std::string parentOf(const std::string &dir) {
  size_t slash = dir.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "/"
                                                  : dir.substr(0, slash);
}

/// Installation prefixes of Python environments, most specific first.
std::vector<std::string> pythonPrefixes() {
  std::vector<std::string> prefixes;
  for (const std::string &dir : splitPath(std::getenv("PATH")))
    if (access((dir + "/python3").c_str(), X_OK) == 0)
      prefixes.push_back(parentOf(dir));
  for (const char *var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char *value = std::getenv(var); value && *value)
      prefixes.push_back(value);
  if (const char *home = std::getenv("HOME"); home && *home)
    prefixes.push_back(std::string(home) + "/.local");
  prefixes.push_back("/usr/local");
  prefixes.push_back("/usr");
  return prefixes;
}

std::string formatVersion(const Spec &spec, void *handle) {
  void *fn = dlsym(handle, spec.versionFunction);
  if (!fn)
    return "";
  long v = 0;
  if (spec.versionKind == Spec::SizeT) {
    v = long(reinterpret_cast<size_t (*)()>(fn)());
  } else {
    int out = 0;
    if (reinterpret_cast<int (*)(int *)>(fn)(&out) != 0)
      return "";
    v = out;
  }
  // cuBLASLt, cuDNN 9 and NCCL 2.9+ all number major * 10000 + minor * 100
  // + patch.
  char text[32];
  std::snprintf(text, sizeof(text), "%ld.%ld.%ld", v / 10000, v / 100 % 100,
                v % 100);
  return text;
}

struct Found {
  void *handle = nullptr;
  std::string path, version;
  /// Files that exist but do not open, and why ("" when there are none).
  std::string failures;
};

/// The file `handle` was opened from.
std::string pathOf(void *handle, const std::string &fallback) {
  struct link_map *map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
      *map->l_name)
    return map->l_name;
  return fallback;
}

Found find(mprtCudaLibrary library) {
  const Spec &spec = kSpecs[library];
  Found found;
  auto tryOpen = [&](const std::string &file, bool mustExist) {
    if (mustExist && access(file.c_str(), F_OK) != 0)
      return false;
    dlerror();
    void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      // The bare soname failing on the loader's path is the normal case.
      if (mustExist) {
        const char *error = dlerror();
        found.failures += std::string(found.failures.empty() ? "" : "; ") +
                          file + " exists but does not open: " +
                          (error ? error : "unknown error");
      }
      return false;
    }
    found.handle = handle;
    found.path = pathOf(handle, file);
    found.version = formatVersion(spec, handle);
    return true;
  };
  for (const std::string &dir : splitPath(std::getenv("MP_CUDA_LIBRARY_PATH")))
    if (tryOpen(dir + "/" + spec.soname, true))
      return found;
  if (tryOpen(spec.soname, false))
    return found;
  for (const std::string &dir : searchDirectories(library))
    if (tryOpen(dir + "/" + spec.soname, true))
      return found;
  return found;
}

/// Why `library` is missing, in full: for error messages.
std::string notFoundMessage(mprtCudaLibrary library, const Found &f) {
  const Spec &spec = kSpecs[library];
  return std::string(spec.name) + " (" + spec.soname + ") was not found in " +
         kSearchedPlaces + (f.failures.empty() ? "" : "; " + f.failures) +
         "; set MP_CUDA_LIBRARY_PATH to the directory that holds it";
}

/// Each library is searched once per process.
const Found &cached(mprtCudaLibrary library) {
  static std::once_flag once[kNumLibraries];
  static Found results[kNumLibraries];
  std::call_once(once[library], [&] { results[library] = find(library); });
  return results[library];
}

CublasLt loaded;

} // namespace

std::vector<std::string> mp::cuda::searchDirectories(mprtCudaLibrary library) {
  const Spec &spec = kSpecs[library];
  std::vector<std::string> dirs;
  auto toolkit = [&](const std::string &root) {
    dirs.push_back(root + "/lib64");
    dirs.push_back(root + "/lib");
    dirs.push_back(root + "/" + kTargetDir);
  };
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(var); value && *value)
      toolkit(value);
  toolkit("/usr/local/cuda");
  toolkit("/usr/local/cuda-13");
  for (const std::string &root : expand("/usr/local/cuda-13.*"))
    toolkit(root);
  for (const std::string &prefix : pythonPrefixes())
    for (const char *sub : spec.wheelDirs)
      for (const std::string &dir :
           expand(prefix + "/lib/python3*/*-packages/nvidia/" + sub))
        dirs.push_back(dir);
  for (const std::string &entry : splitPath(std::getenv("PYTHONPATH")))
    for (const char *sub : spec.wheelDirs)
      dirs.push_back(entry + "/nvidia/" + sub);
  if (const char *conda = std::getenv("CONDA_PREFIX"); conda && *conda)
    dirs.push_back(std::string(conda) + "/lib");
  return dirs;
}

const CublasLt *mp::cuda::loadCublasLt() {
  static std::once_flag once;
  static bool complete = false;
  static std::string missing;
  std::call_once(once, [] {
    const Found &f = cached(MPRT_CUDA_CUBLASLT);
    if (!f.handle) {
      missing = notFoundMessage(MPRT_CUDA_CUBLASLT, f);
      return;
    }
#define MP_CUBLASLT_RESOLVE(name)                                              \
  loaded.name = reinterpret_cast<decltype(loaded.name)>(dlsym(f.handle, #name)); \
  if (!loaded.name)                                                            \
    missing += std::string(missing.empty() ? "" : ", ") + #name;
    MP_CUBLASLT_FUNCTIONS(MP_CUBLASLT_RESOLVE)
#undef MP_CUBLASLT_RESOLVE
    if (!missing.empty()) {
      missing = f.path + " lacks " + missing + " (not a CUDA 13 cuBLASLt?)";
      return;
    }
    complete = true;
  });
  if (!complete) {
    rt::setDetail(missing);
    return nullptr;
  }
  return &loaded;
}

const CublasLt &mp::cuda::lt() { return loaded; }

extern "C" mpStatus mprtCudaFindLibrary(mprtCudaLibrary library,
                                        mprtCudaLibraryInfo *info) {
  if (!info || int(library) < 0 || int(library) >= kNumLibraries)
    return MP_ERROR_INVALID_ARGUMENT;
  const Spec &spec = kSpecs[library];
  const Found &f = cached(library);
  *info = mprtCudaLibraryInfo{};
  info->name = spec.name;
  info->soname = spec.soname;
  info->required = spec.required;
  info->found = f.handle != nullptr;
  std::string detail = f.failures;
  if (library == MPRT_CUDA_CUBLASLT && f.handle && !loadCublasLt()) {
    info->found = 0;
    detail = rt::takeDetail();
  }
  std::snprintf(info->version, sizeof(info->version), "%s",
                f.version.c_str());
  std::snprintf(info->path, sizeof(info->path), "%s", f.path.c_str());
  std::snprintf(info->detail, sizeof(info->detail), "%s", detail.c_str());
  return MP_OK;
}

extern "C" const char *mprtCudaLibrarySearchOrder(void) {
  return kSearchedPlaces;
}
