//===- DifferentiationFlags.cpp - the tools' autodiff options -------------===//

#include "mp/Tools/DifferentiationFlags.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mp::tools;
namespace cl = llvm::cl;

DifferentiationFlags::DifferentiationFlags(cl::OptionCategory &category)
    : loss("loss",
           cl::desc("For a forward function: auto (default: the function's "
                    "own loss, else softmax-cross-entropy for integer labels "
                    "and mse for float ones), softmax-cross-entropy or mse"),
           cl::cat(category)),
      label("label",
            cl::desc("For a forward function: the label argument the loss "
                     "compares with (default: the only one)"),
            cl::cat(category)),
      optimizer("optimizer",
                cl::desc("For a forward function: sgd (default), adam or "
                         "adamw"),
                cl::cat(category)),
      lr("lr",
         cl::desc("For a forward function: the learning rate (default 0.01 "
                  "for sgd, 0.001 for adam and adamw)"),
         cl::cat(category)),
      momentum("momentum", cl::desc("SGD momentum (default 0)"),
               cl::cat(category)),
      weightDecay("weight-decay",
                  cl::desc("Weight decay (default 0.01 for adamw, 0 "
                           "otherwise)"),
                  cl::cat(category)),
      beta1("beta1", cl::desc("Adam's beta1 (default 0.9)"),
            cl::cat(category)),
      beta2("beta2", cl::desc("Adam's beta2 (default 0.999)"),
            cl::cat(category)),
      epsilon("epsilon", cl::desc("Adam's epsilon (default 1e-8)"),
              cl::cat(category)),
      nesterov("nesterov", cl::desc("Nesterov momentum (SGD)"),
               cl::cat(category)),
      noDecay("no-decay",
              cl::desc("Globs of parameter names without weight decay "
                       "(e.g. '*.bias')"),
              cl::CommaSeparated, cl::cat(category)) {}

std::string DifferentiationFlags::options() const {
  std::string out;
  auto add = [&](const llvm::Twine &option) {
    out += (out.empty() ? "" : " ") + option.str();
  };
  auto addString = [&](const cl::opt<std::string> &o) {
    if (o.getNumOccurrences())
      add(o.ArgStr + "=" + o.getValue());
  };
  auto addNumber = [&](const cl::opt<double> &o) {
    if (o.getNumOccurrences())
      add(o.ArgStr + "=" + llvm::formatv("{0}", llvm::format("%.17g", o.getValue())).str());
  };
  addString(loss);
  addString(label);
  addString(optimizer);
  addNumber(lr);
  addNumber(momentum);
  addNumber(weightDecay);
  addNumber(beta1);
  addNumber(beta2);
  addNumber(epsilon);
  if (nesterov.getNumOccurrences())
    add(nesterov ? "nesterov=true" : "nesterov=false");
  if (!noDecay.empty()) {
    std::string globs;
    for (const std::string &g : noDecay)
      globs += (globs.empty() ? "" : ",") + g;
    add("no-decay=" + globs);
  }
  return out;
}
