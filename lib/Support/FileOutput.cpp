//===- FileOutput.cpp - files written whole or not at all -----------------===//
//
// The temporary is created in the directory of the file the path finally
// names (a rename across file systems is not atomic, and renaming over a
// symbolic link would replace the link), with a unique name, so concurrent
// writers of one destination never share a temporary; it takes the mode of
// the file it replaces. Errors are checked after the last write and again
// after close, where a network or quota file system may report them.
//
//===----------------------------------------------------------------------===//

#include "mp/Support/FileOutput.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;

namespace {

std::error_code lastError() { return std::error_code(errno, std::generic_category()); }

/// The file `path` finally names, following symbolic links (a relative
/// target is relative to the link's directory); it need not exist yet.
ErrorOr<std::string> followLinks(StringRef path) {
  std::string current = path.str();
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0)
      return errno == ENOENT ? ErrorOr<std::string>(current) : lastError();
    if (!S_ISLNK(st.st_mode))
      return current;
    SmallString<256> target;
    target.resize(4096);
    ssize_t n = ::readlink(current.c_str(), target.data(), target.size());
    if (n < 0)
      return lastError();
    target.resize(n);
    if (sys::path::is_relative(target)) {
      SmallString<256> resolved(current);
      sys::path::remove_filename(resolved);
      sys::path::append(resolved, target);
      current = std::string(resolved);
    } else {
      current = std::string(target);
    }
  }
  return std::error_code(ELOOP, std::generic_category());
}

} // namespace

Error mp::AtomicFile::cannot(std::error_code ec, StringRef what) const {
  std::string target = destination == given ? std::string()
                                           : " (" + destination + ")";
  return createStringError(ec, "cannot %s '%s'%s: %s", what.str().c_str(),
                           given.c_str(), target.c_str(),
                           ec.message().c_str());
}

Expected<std::unique_ptr<mp::AtomicFile>>
mp::AtomicFile::create(StringRef path) {
  std::unique_ptr<AtomicFile> out(new AtomicFile());
  out->given = out->destination = path.str();
  if (path == "-") {
    out->stream = &llvm::outs();
    return out;
  }
  // What the path names once links are followed (the kernel's own links,
  // /dev/stdout or a shell's /dev/fd/63, included).
  struct stat st;
  bool exists = ::stat(out->given.c_str(), &st) == 0;
  if (!exists && errno != ENOENT)
    return out->cannot(lastError(), "write");
  if (exists && S_ISDIR(st.st_mode))
    return out->cannot(std::make_error_code(std::errc::is_a_directory),
                       "write");
  if (exists && S_ISSOCK(st.st_mode))
    return out->cannot(std::make_error_code(std::errc::not_supported),
                       "write to the socket");
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO: written in place, since renaming a regular file
    // over it would replace it. Nothing can be taken back there.
    int fd = ::open(out->given.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return out->cannot(lastError(), "write");
    out->file = std::make_unique<raw_fd_ostream>(fd, /*shouldClose=*/true);
    out->stream = out->file.get();
    out->inPlace = true;
    return out;
  }
  // A regular file, or a new one: the temporary goes next to the file the
  // links lead to, and replaces that file, not the links.
  ErrorOr<std::string> target = followLinks(path);
  if (!target)
    return out->cannot(target.getError(), "write");
  out->destination = *target;
  if (exists && ::access(out->destination.c_str(), W_OK) != 0)
    return out->cannot(lastError(), "write");
  int fd = -1;
  if (std::error_code ec = sys::fs::createUniqueFile(
          out->destination + ".tmp-%%%%%%", fd, out->temporary))
    return out->cannot(ec, "write");
  if (exists)
    (void)::fchmod(fd, st.st_mode & 07777);
  out->file = std::make_unique<raw_fd_ostream>(fd, /*shouldClose=*/true);
  out->stream = out->file.get();
  return out;
}

mp::AtomicFile::~AtomicFile() {
  if (!done)
    discard();
}

Error mp::AtomicFile::fail(std::error_code ec, StringRef what) {
  discard();
  return cannot(ec, what);
}

Error mp::AtomicFile::check() {
  if (done)
    return Error::success();
  stream->flush();
  raw_fd_ostream *fdStream = file ? file.get() : nullptr;
  if (!fdStream && stream == &llvm::outs())
    fdStream = &llvm::outs();
  if (fdStream && fdStream->has_error()) {
    std::error_code ec = fdStream->error();
    fdStream->clear_error();
    return fail(ec, "write");
  }
  return Error::success();
}

Error mp::AtomicFile::commit() {
  if (Error err = check())
    return err;
  if (!file) {
    done = true;
    return Error::success();
  }
  file->close();
  if (file->has_error()) {
    std::error_code ec = file->error();
    file->clear_error();
    return fail(ec, "write");
  }
  if (!inPlace)
    if (std::error_code ec = sys::fs::rename(temporary, destination))
      return fail(ec, "write");
  done = true;
  return Error::success();
}

void mp::AtomicFile::discard() {
  done = true;
  if (!file)
    return;
  file->clear_error();
  file->close();
  file->clear_error();
  if (!inPlace)
    (void)sys::fs::remove(temporary);
}

Error mp::writeFileAtomically(StringRef path,
                              function_ref<Error(raw_ostream &)> write) {
  Expected<std::unique_ptr<AtomicFile>> file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  if (Error err = write((*file)->os())) {
    (*file)->discard();
    return err;
  }
  return (*file)->commit();
}

void mp::reportFileSizeLimitAsError() {
#ifdef SIGXFSZ
  std::signal(SIGXFSZ, SIG_IGN);
#endif
}
