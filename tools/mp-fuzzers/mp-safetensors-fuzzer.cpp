//===- mp-safetensors-fuzzer.cpp - checkpoints and initial weights --------===//
//
// An input is a safetensors file, read as --resume and --init-weights read
// one. A file that reads is written back and read again: the second reading
// must equal the first.
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"

#include "mp/Runner/HostTensor.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mp::runner;

static bool sameTensor(const HostTensor &a, const HostTensor &b) {
  // An empty tensor's storage may be null, which memcmp must not be given.
  return a.type == b.type && a.shape == b.shape &&
         (a.byteSize() == 0 ||
          std::memcmp(a.data(), b.data(), a.byteSize()) == 0);
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = mp::fuzz::writeInput(data, size, "in.safetensors");
  llvm::Expected<Checkpoint> first = readSafetensors(path);
  if (!first) {
    std::string why = llvm::toString(first.takeError());
    if (mp::fuzz::verbose())
      llvm::errs() << "refused: " << why << "\n";
    return 0;
  }
  for (const auto &[name, tensor] : first->tensors)
    countNonFinite(tensor);
  std::string copy = mp::fuzz::privateDirectory() + "/copy.safetensors";
  if (llvm::Error err = writeSafetensors(copy, *first))
    mp::fuzz::reportBug("a checkpoint that reads does not write: " +
                        llvm::toString(std::move(err)));
  llvm::Expected<Checkpoint> second = readSafetensors(copy);
  if (!second)
    mp::fuzz::reportBug("a checkpoint written back does not read: " +
                        llvm::toString(second.takeError()));
  if (first->metadata != second->metadata ||
      first->tensors.size() != second->tensors.size())
    mp::fuzz::reportBug("a checkpoint written back reads differently");
  for (const auto &[name, tensor] : first->tensors) {
    auto it = second->tensors.find(name);
    if (it == second->tensors.end() || !sameTensor(tensor, it->second))
      mp::fuzz::reportBug("tensor '" + name + "' reads differently once "
                          "written back");
  }
  if (mp::fuzz::verbose())
    llvm::errs() << "read, written and read back equal\n";
  return 0;
}
