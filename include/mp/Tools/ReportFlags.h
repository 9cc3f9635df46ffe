//===- ReportFlags.h - the tools' pass report options -----------*- C++ -*-===//
//
// mp-runner and mp-compile lower a step through the same passes
// (runner::lowerStep) and can write the reports of those that choose
// something: the layout, the fused epilogues and the folded transposes.
// (The AMP pass's report is its own option, --amp-options=report=FILE;
// tg-shadow-weights' is mp-runner's alone, as mp-compile does not run it.)
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_REPORTFLAGS_H
#define MP_TOOLS_REPORTFLAGS_H

#include "mp/Runner/CompiledStep.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mp::tools {

struct ReportFlags {
  explicit ReportFlags(llvm::cl::OptionCategory &category);

  /// The checks that need no model: a layout report needs a layout pass
  /// (`layout` is the tool's --layout value).
  llvm::Error check(llvm::StringRef layout) const;

  /// Sets the report files of the layout and fusion configurations.
  void apply(runner::LayoutConfig &layoutConfig,
             runner::FusionConfig &fusion) const;

  llvm::cl::opt<std::string> layout, fusion, transposes;
};

} // namespace mp::tools

#endif // MP_TOOLS_REPORTFLAGS_H
