//===- FileOutput.cpp - files written whole or not at all -----------------===//
//
// The temporary is created in the destination's directory (a rename across
// file systems is not atomic) with a unique name, so concurrent writers of
// one destination never share a temporary. Errors are checked after the
// last write and again after close, where a network or quota file system
// may report them.
//
//===----------------------------------------------------------------------===//

#include "mp/Support/FileOutput.h"

#include "llvm/Support/FileSystem.h"

#include <csignal>

using namespace llvm;

Expected<std::unique_ptr<mp::AtomicFile>>
mp::AtomicFile::create(StringRef path) {
  std::unique_ptr<AtomicFile> out(new AtomicFile());
  out->destination = path.str();
  if (path == "-") {
    out->stream = &llvm::outs();
    return out;
  }
  if (path == "/dev/null") {
    out->discarded = std::make_unique<raw_null_ostream>();
    out->stream = out->discarded.get();
    return out;
  }
  int fd = -1;
  if (std::error_code ec =
          sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, out->temporary))
    return createStringError(ec, "cannot write '%s': %s", path.str().c_str(),
                             ec.message().c_str());
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
  return createStringError(ec, "cannot %s '%s': %s", what.str().c_str(),
                           destination.c_str(), ec.message().c_str());
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
