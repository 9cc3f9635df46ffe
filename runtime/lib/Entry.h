//===- Entry.h - argument-block decoding shared by the backends -*- C++ -*-===//
//
// Internal to the runtime. The sticky error of MPCompiled.h and the decoder
// of the argument blocks compiled code passes to `mprt_<entry>`. Both
// backends decode blocks with this class (Entries.inc instantiates the entry
// points once per backend); a backend whose kernels cannot read host memory
// passes a `resolve` hook that maps pointers to its own memory.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_LIB_ENTRY_H
#define MP_RUNTIME_LIB_ENTRY_H

#include "mp/Runtime/MPCompiled.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace mp::rt {

/// Records the first error since the last mprtTakeError: "mprt_<entry>
/// (call site N): reason". Later errors are dropped.
void fail(const char *entry, int64_t site, const std::string &reason);
/// Records `message` as it is (errors outside an entry point).
void failMessage(const std::string &message);
/// Whether an error is pending (every entry point then returns at once).
bool hasError();
/// A kernel that returns a failing status may leave the detail behind it
/// here (the CUDA or cuBLAS call and its status string); Block::check adds
/// it to the message.
void setDetail(std::string detail);
std::string takeDetail();

/// Maps a tensor's data pointer for the backend's kernels. `output` says
/// whether the kernel writes it. Returns null (after recording an error) for
/// a pointer the backend cannot use.
using ResolveFn = void *(*)(void *data, size_t bytes, bool output,
                            const char *entry, int64_t site);

/// Adds the time from construction to destruction to `entry`'s total when
/// MP_PROFILE_KERNELS names a file; the totals (calls and seconds per entry
/// point) are written there as JSON when the process exits. With
/// MP_PROFILE_SHAPES=1 as well, each call is also added to the total of its
/// signature: the entry and the arguments its Block decoded, in order
/// (integers, lists of them in brackets, types, and tensors as type[shape],
/// written ones after "->"), so that one entry's calls split by shape. CPU
/// backend only: CUDA entry points return before their kernels finish.
class EntryTimer {
public:
  explicit EntryTimer(const char *entry);
  ~EntryTimer();
  EntryTimer(const EntryTimer &) = delete;
  EntryTimer &operator=(const EntryTimer &) = delete;

private:
  const char *entry;
  int64_t start; // nanoseconds; -1 when profiling is off
  std::string signature; // what the Block decoded, under MP_PROFILE_SHAPES
  std::string *previous = nullptr; // the signature active before this one
};

/// The signature of the EntryTimer timing this thread's entry point, when
/// it records one; null otherwise (the Block then records nothing).
std::string *timedSignature();

class Block {
public:
  Block(const char *entry, const int64_t *words, ResolveFn resolve = nullptr)
      : entry(entry), p(words), site(*p++), resolve(resolve),
        sig(timedSignature()) {}

  int64_t i() {
    if (sig)
      *sig += ' ' + std::to_string(*p);
    return *p++;
  }
  double f() {
    double d;
    std::memcpy(&d, p++, sizeof(d));
    return d;
  }
  mpElementType type() {
    auto t = static_cast<mpElementType>(*p++);
    if (sig)
      *sig += std::string(" ") + mpElementTypeName(t);
    return t;
  }
  /// A tensor the kernel reads.
  mpTensor tensor() { return decode(/*output=*/false); }
  /// A tensor the kernel writes.
  mpTensor output() { return decode(/*output=*/true); }
  std::vector<int64_t> ints(int64_t n) {
    std::vector<int64_t> v(p, p + n);
    p += n;
    if (sig) {
      *sig += " [";
      for (size_t k = 0; k < v.size(); ++k)
        *sig += (k ? "," : "") + std::to_string(v[k]);
      *sig += ']';
    }
    return v;
  }
  /// Records a failing status; returns whether the call succeeded.
  bool check(mpStatus status) {
    if (status == MP_OK)
      return true;
    std::string reason = mpStatusString(status);
    std::string detail = takeDetail();
    if (!detail.empty())
      reason += ": " + detail;
    fail(entry, site, reason);
    return false;
  }
  const char *name() const { return entry; }
  int64_t callSite() const { return site; }

private:
  mpTensor decode(bool output) {
    mpTensor t{};
    t.data = reinterpret_cast<void *>(static_cast<intptr_t>(*p++));
    t.elementType = static_cast<mpElementType>(*p++);
    int64_t rank = *p++;
    if (rank < 0 || rank > MP_MAX_RANK) {
      fail(entry, site, "tensor rank out of range");
      rank = 0;
    }
    t.rank = static_cast<int32_t>(rank);
    for (int64_t d = 0; d < rank; ++d)
      t.shape[d] = *p++;
    if (sig) {
      *sig += output ? " ->" : " ";
      *sig += std::string(mpElementTypeName(t.elementType)) + '[';
      for (int64_t d = 0; d < rank; ++d)
        *sig += (d ? "x" : "") + std::to_string(t.shape[d]);
      *sig += ']';
    }
    if (resolve && t.data) {
      int64_t n = mpNumElements(&t);
      size_t bytes = n < 0 ? 0 : size_t(n) * mpElementSize(t.elementType);
      t.data = resolve(t.data, bytes, output, entry, site);
    }
    return t;
  }

  const char *entry;
  const int64_t *p;
  int64_t site;
  ResolveFn resolve;
  std::string *sig; // where the decoded arguments go, under
                    // MP_PROFILE_SHAPES (timedSignature)
};

} // namespace mp::rt

#endif // MP_RUNTIME_LIB_ENTRY_H
