//===- StepLog.h - mp-runner's per-step output ------------------*- C++ -*-===//
//
// What the runner prints while it trains (a redrawn progress line on a
// terminal, about ten plain lines otherwise) and the --log file (every
// step, JSON lines or CSV). The log file is written to a temporary next to
// it and renamed into place when the run ends (mp/Support/FileOutput.h): a
// failing write is an error that leaves an earlier log untouched.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPRUNNER_STEPLOG_H
#define MP_TOOLS_MPRUNNER_STEPLOG_H

#include "RunReport.h"

#include "mp/Support/FileOutput.h"

namespace mp::tools {

class StepLog {
public:
  struct Config {
    std::string path;     // --log; empty for none
    int64_t every = 0;    // --log-every; 0: about ten lines
    int64_t steps = 0;    // the last step
    bool progress = true; // redraw one line when stdout is a terminal
  };

  StepLog(Config config, llvm::ArrayRef<Run *> runs, int64_t first);

  /// Opens the log file (a temporary until finish()).
  llvm::Error open();
  /// The column header of the plain lines.
  void header();
  /// Reports step `step` of every run (their last record).
  llvm::Error record(int64_t step);
  /// Ends the progress line and renames the log file into place.
  llvm::Error finish();
  /// Whether output goes to a terminal (progress bars).
  bool isTerminal() const { return terminal; }

private:
  Config config;
  llvm::ArrayRef<Run *> runs;
  int64_t first, every;
  bool terminal = false, csv = false, lineOpen = false;
  std::unique_ptr<AtomicFile> file;
};

} // namespace mp::tools

#endif // MP_TOOLS_MPRUNNER_STEPLOG_H
