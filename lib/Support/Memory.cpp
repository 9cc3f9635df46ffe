//===- Memory.cpp - sizes checked before they are allocated ---------------===//

#include "mp/Support/Memory.h"

#include "llvm/Support/FormatVariadic.h"

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
                           "swap (or a lower ulimit -v)",
                           what.str().c_str(), formatBytes(bytes).c_str(),
                           formatBytes(ceiling).c_str());
}
