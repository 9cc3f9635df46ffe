//===- DummyFuzzerMain.cpp - run a fuzz target on files -------------------===//
//
// The main of a fuzz target built without libFuzzer (upstream's
// Dummy*Fuzzer.cpp arrangement): runs LLVMFuzzerTestOneInput once on each
// file named on the command line and on each file under each directory
// named, in name order, as libFuzzer's `-runs=0 DIR...` does. Arguments
// starting with '-' are libFuzzer's flags and are ignored. Prints how many
// inputs ran; a path that cannot be read is an error.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);

static bool collect(llvm::StringRef path, std::vector<std::string> &files) {
  if (!llvm::sys::fs::is_directory(path)) {
    files.push_back(path.str());
    return true;
  }
  std::vector<std::string> found;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(path, ec), end;
       it != end && !ec; it.increment(ec))
    if (!llvm::sys::fs::is_directory(it->path()))
      found.push_back(it->path());
  if (ec) {
    llvm::errs() << "error: cannot list '" << path << "': " << ec.message()
                 << "\n";
    return false;
  }
  std::sort(found.begin(), found.end());
  files.insert(files.end(), found.begin(), found.end());
  return true;
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int k = 1; k < argc; ++k)
    if (argv[k][0] != '-' && !collect(argv[k], files))
      return 1;
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::errs() << "error: cannot read '" << file
                   << "': " << buffer.getError().message() << "\n";
      return 1;
    }
    llvm::StringRef bytes = (*buffer)->getBuffer();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  llvm::outs() << "ran " << files.size() << " inputs\n";
  return 0;
}
