//===- Memory.cpp - sizes checked before they are allocated ---------------===//

#include "mp/Support/Memory.h"

#include "llvm/Support/FormatVariadic.h"

#include <fstream>
#include <optional>
#include <string>

#include <sys/resource.h>
#include <sys/sysinfo.h>

using namespace llvm;

uint64_t mp::memoryCeiling() {
  uint64_t ceiling = UINT64_MAX;
  struct sysinfo info;
  if (::sysinfo(&info) == 0)
    ceiling = (uint64_t(info.totalram) + uint64_t(info.totalswap)) *
              uint64_t(info.mem_unit);
  struct rlimit limit;
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    ceiling = std::min<uint64_t>(ceiling, limit.rlim_cur);
  // A container's memory limit: cgroup v2's memory.max (plus
  // memory.swap.max) of the process's cgroup, or v1's
  // memory.limit_in_bytes; absent or "max" where there is none.
  auto readBytes = [](const std::string &path) -> std::optional<uint64_t> {
    std::ifstream file(path);
    std::string value;
    uint64_t bytes;
    if (file >> value && !StringRef(value).getAsInteger(10, bytes))
      return bytes;
    return std::nullopt;
  };
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    StringRef entry(line);
    std::optional<uint64_t> limit;
    if (entry.consume_front("0::")) {
      std::string dir = "/sys/fs/cgroup" + entry.str();
      if ((limit = readBytes(dir + "/memory.max")))
        *limit += readBytes(dir + "/memory.swap.max").value_or(0);
    } else if (size_t at = entry.find(":memory:"); at != StringRef::npos) {
      std::string dir =
          "/sys/fs/cgroup/memory" + entry.drop_front(at + 8).str();
      limit = readBytes(dir + "/memory.limit_in_bytes");
      if (!limit) // the cgroup's own directory is not visible here
        limit = readBytes("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    }
    if (limit)
      ceiling = std::min(ceiling, *limit);
  }
  return ceiling;
}

std::string mp::formatBytes(uint64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = double(bytes);
  unsigned unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0)
    return formatv("{0} B", bytes).str();
  return formatv("{0:f1} {1}", value, units[unit]).str();
}

Error mp::checkAllocation(uint64_t bytes, const Twine &what) {
  uint64_t ceiling = memoryCeiling();
  if (bytes <= ceiling)
    return Error::success();
  return createStringError(std::errc::not_enough_memory,
                           "%s needs %s; this machine has %s of memory and "
                           "swap (or a lower ulimit -v or container limit)",
                           what.str().c_str(), formatBytes(bytes).c_str(),
                           formatBytes(ceiling).c_str());
}
