//===- DifferentiationFlags.h - the tools' autodiff options -----*- C++ -*-===//
//
// mp-runner and mp-compile take a forward function (tg.forward) as well as
// a training step; these flags are tg-make-train-step's options, passed on
// when the model is a forward function (and refused when it is a step).
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_DIFFERENTIATIONFLAGS_H
#define MP_TOOLS_DIFFERENTIATIONFLAGS_H

#include "llvm/Support/CommandLine.h"

#include <string>

namespace mp::tools {

struct DifferentiationFlags {
  explicit DifferentiationFlags(llvm::cl::OptionCategory &category);

  /// tg-make-train-step's options for the flags given on the command line
  /// ("loss=mse optimizer=adam"); empty when none was.
  std::string options() const;

  llvm::cl::opt<std::string> loss, label, optimizer;
  llvm::cl::opt<double> lr, momentum, weightDecay, beta1, beta2, epsilon;
  llvm::cl::opt<bool> nesterov;
  llvm::cl::list<std::string> noDecay;
};

} // namespace mp::tools

#endif // MP_TOOLS_DIFFERENTIATIONFLAGS_H
