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
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;

namespace {

std::error_code lastError() {
  return std::error_code(errno, std::generic_category());
}

/// The descriptor a path names, when it is one of this process's: a
/// shell's /dev/stdout, /dev/fd/63 of `>(...)`, /proc/self/fd/N. Opening
/// such a path anew would start at offset 0 (or truncate); writing to a
/// duplicate of the descriptor continues where it stands.
std::optional<int> descriptorOf(StringRef path) {
  if (path == "/dev/stdout")
    return 1;
  if (path == "/dev/stderr")
    return 2;
  std::string self = "/proc/" + std::to_string(::getpid()) + "/fd/";
  for (StringRef prefix :
       {StringRef("/dev/fd/"), StringRef("/proc/self/fd/"),
        StringRef("/proc/thread-self/fd/"), StringRef(self)}) {
    unsigned n;
    if (path.consume_front(prefix) && !path.getAsInteger(10, n))
      return int(n);
  }
  return std::nullopt;
}

/// What a path to be written finally names: a file (which need not exist
/// yet), following symbolic links as the kernel would (a relative target
/// is relative to the link's directory), or a descriptor of this process.
struct Resolved {
  std::string file;
  std::optional<int> descriptor;
};

ErrorOr<Resolved> resolve(StringRef path) {
  std::string current = path.str();
  for (int hops = 0; hops < 40; ++hops) {
    if (std::optional<int> fd = descriptorOf(current))
      return Resolved{current, fd};
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0)
      return errno == ENOENT ? ErrorOr<Resolved>(Resolved{current, {}})
                             : lastError();
    if (!S_ISLNK(st.st_mode))
      return Resolved{current, {}};
    // fs.protected_symlinks: the kernel follows a link in a sticky,
    // world-writable directory (/tmp) only for its owner or the
    // directory's; neither does mp.
    SmallString<256> dir(current);
    sys::path::remove_filename(dir);
    struct stat dirSt;
    if (::stat(dir.empty() ? "." : dir.c_str(), &dirSt) == 0 &&
        (dirSt.st_mode & S_ISVTX) && (dirSt.st_mode & S_IWOTH) &&
        st.st_uid != dirSt.st_uid && st.st_uid != ::geteuid())
      return std::make_error_code(std::errc::permission_denied);
    SmallString<256> target;
    target.resize(4096);
    ssize_t n = ::readlink(current.c_str(), target.data(), target.size());
    if (n < 0)
      return lastError();
    if (size_t(n) == target.size())
      return std::make_error_code(std::errc::filename_too_long);
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
  std::string target =
      destination == given ? std::string() : " (" + destination + ")";
  return createStringError(ec, "cannot %s '%s'%s: %s", what.str().c_str(),
                           given.c_str(), target.c_str(), ec.message().c_str());
}

Error mp::AtomicFile::writeInPlace(int fd) {
  if (fd < 0)
    return cannot(lastError(), "write");
  file = std::make_unique<raw_fd_ostream>(fd, /*shouldClose=*/true);
  stream = file.get();
  inPlace = true;
  return Error::success();
}

Expected<std::unique_ptr<mp::AtomicFile>>
mp::AtomicFile::create(StringRef path) {
  std::unique_ptr<AtomicFile> out(new AtomicFile());
  out->given = out->destination = path.str();
  if (path == "-") {
    out->stream = &llvm::outs();
    return out;
  }
  ErrorOr<Resolved> target = resolve(path);
  if (!target)
    return out->cannot(target.getError(), "write");
  if (target->descriptor) {
    // One of this process's descriptors: written where it stands, after
    // what the tool printed there so far.
    llvm::outs().flush();
    if (Error err =
            out->writeInPlace(::fcntl(*target->descriptor, F_DUPFD_CLOEXEC, 3)))
      return std::move(err);
    return out;
  }
  struct stat st;
  bool exists = ::stat(target->file.c_str(), &st) == 0;
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
    // over it would replace it. Nothing can be taken back there; a FIFO
    // waits for its reader, as a shell's redirection does.
    if (Error err = out->writeInPlace(
            ::open(target->file.c_str(), O_WRONLY | O_CLOEXEC)))
      return std::move(err);
    return out;
  }
  // A regular file, or a new one: the temporary goes next to the file the
  // links lead to, and replaces that file, not the links.
  out->destination = target->file;
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
