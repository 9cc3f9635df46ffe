//===- mp-npy-fuzzer.cpp - NumPy training data ----------------------------===//
//
// An input is a .npy file, read as --data reads one. A file that reads is
// written back and read again: the second reading must equal the first.
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"

#include "mp/Runner/HostTensor.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mp::runner;

extern "C" int LLVMFuzzerInitialize(int *, char ***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = mp::fuzz::writeInput(data, size, "in.npy");
  llvm::Expected<HostTensor> first = readNpy(path);
  if (!first) {
    std::string why = llvm::toString(first.takeError());
    if (mp::fuzz::verbose())
      llvm::errs() << "refused: " << why << "\n";
    return 0;
  }
  countNonFinite(*first);
  std::string copy = mp::fuzz::privateDirectory() + "/copy.npy";
  if (llvm::Error err = writeNpy(copy, *first))
    mp::fuzz::reportBug("an array that reads does not write: " +
                        llvm::toString(std::move(err)));
  llvm::Expected<HostTensor> second = readNpy(copy);
  if (!second)
    mp::fuzz::reportBug("an array written back does not read: " +
                        llvm::toString(second.takeError()));
  // An empty array's storage may be null, which memcmp must not be given.
  if (first->type != second->type || first->shape != second->shape ||
      (first->byteSize() != 0 &&
       std::memcmp(first->data(), second->data(), first->byteSize()) != 0))
    mp::fuzz::reportBug("an array written back reads differently");
  if (mp::fuzz::verbose())
    llvm::errs() << "read, written and read back equal\n";
  return 0;
}
