//===- ReportFlags.cpp - the tools' pass report options -------------------===//

#include "mp/Tools/ReportFlags.h"

using namespace mp;
using namespace mp::tools;
namespace cl = llvm::cl;

ReportFlags::ReportFlags(cl::OptionCategory &category)
    : layout("layout-report",
             cl::desc("Write tg-assign-layout's report (JSON) here"),
             cl::init(""), cl::cat(category)),
      fusion("fusion-report",
             cl::desc("Write tg-fuse-epilogues' report (JSON) here: each "
                      "matmul, what joined its epilogue, and where its chain "
                      "stopped"),
             cl::init(""), cl::cat(category)),
      transposes("transposes-report",
                 cl::desc("Write tg-fold-transposes' report (JSON) here: "
                          "each transpose, and whether it was folded into "
                          "the matmuls, computed as a swapped product, or "
                          "kept, and why"),
                 cl::init(""), cl::cat(category)) {}

llvm::Error ReportFlags::check(llvm::StringRef layoutValue) const {
  if (!layout.empty() && layoutValue == "off")
    return llvm::createStringError(
        std::errc::invalid_argument,
        "--layout-report needs a layout other than off");
  return llvm::Error::success();
}

void ReportFlags::apply(runner::LayoutConfig &layoutConfig,
                        runner::FusionConfig &fusionConfig) const {
  layoutConfig.reportFile = layout;
  fusionConfig.reportFile = fusion;
  fusionConfig.transposesReportFile = transposes;
}
