//===- FileOutput.h - files written whole or not at all ---------*- C++ -*-===//
//
// Every file mp's tools write (reports, checkpoints, logs, summaries, plots,
// compiled objects and headers, mp-opt's output) goes through a temporary
// file next to its destination that is renamed over it only once everything
// was written and closed without error. A full disk, a file-size limit or an
// I/O error is reported as an llvm::Error naming the file, the temporary is
// removed, and the previous file is left as it was; nothing is
// half-written and nothing aborts (raw_fd_ostream would report_fatal_error
// on an unchecked error when destroyed).
//
// The files are the user's: a path that is a symbolic link is written
// through to the file it names (the link stays, and the temporary is made
// beside the target, on its file system); a device or a FIFO (/dev/null,
// /dev/stdout, a shell's process substitution) is written in place, never
// replaced by a regular file; a directory, a socket or a file the user may
// not write is an error naming the path.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SUPPORT_FILEOUTPUT_H
#define MP_SUPPORT_FILEOUTPUT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace mp {

/// A file being written: a temporary next to the file `path` names until
/// commit(). Destroying an uncommitted AtomicFile removes the temporary.
/// The path "-" writes to standard output directly; a device or a FIFO is
/// written directly (commit() reports its write errors, and nothing written
/// there can be taken back).
class AtomicFile {
public:
  /// Creates the temporary file.
  static llvm::Expected<std::unique_ptr<AtomicFile>>
  create(llvm::StringRef path);
  ~AtomicFile();

  llvm::raw_ostream &os() { return *stream; }
  /// The path as given.
  llvm::StringRef path() const { return given; }
  /// Flushes and reports a write error that has happened so far, without
  /// ending the file (for files written incrementally, such as logs).
  llvm::Error check();
  /// Closes the temporary and renames it over the destination.
  llvm::Error commit();
  /// Removes the temporary; the destination is untouched.
  void discard();

private:
  AtomicFile() = default;
  /// "cannot <what> '<path>' (<target>): <reason>".
  llvm::Error cannot(std::error_code ec, llvm::StringRef what) const;
  /// Writes directly to `fd` (a device, a FIFO, one of the process's
  /// descriptors), without a temporary; a negative `fd` is the error in
  /// errno.
  llvm::Error writeInPlace(int fd);
  /// Discards the file and returns cannot(ec, what).
  llvm::Error fail(std::error_code ec, llvm::StringRef what);

  /// The path as given, and the file it names (links followed).
  std::string given, destination;
  llvm::SmallString<128> temporary;
  std::unique_ptr<llvm::raw_fd_ostream> file;
  llvm::raw_ostream *stream = nullptr;
  /// A device or a FIFO, written directly.
  bool inPlace = false;
  bool done = false;
};

/// Writes `path` whole: `write` fills the stream, which goes to a temporary
/// renamed over `path` when `write` succeeded and nothing failed.
llvm::Error
writeFileAtomically(llvm::StringRef path,
                    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

/// Makes writes beyond the file-size limit (`ulimit -f`) fail with EFBIG
/// instead of killing the process with SIGXFSZ, so that they are reported
/// like any other write error. Tools call it once at start-up.
void reportFileSizeLimitAsError();

} // namespace mp

#endif // MP_SUPPORT_FILEOUTPUT_H
