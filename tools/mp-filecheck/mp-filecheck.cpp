//===- mp-filecheck.cpp - FileCheck for the distribution's tests ----------===//
//
// LLVM's FileCheck, as lit tests call it, over LLVM's FileCheck library:
// the options the mp tests use and the common ones besides, with
// upstream's names and defaults. Exit codes as upstream: 0 when the input
// matches, 1 when it does not, 2 for bad usage or unreadable files.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/SmallString.h"
#include "llvm/FileCheck/FileCheck.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::opt<std::string> checkFilename(cl::Positional,
                                          cl::desc("<check-file>"),
                                          cl::Required);
static cl::opt<std::string> inputFilename("input-file",
                                          cl::desc("File to check"),
                                          cl::init("-"));
static cl::list<std::string> checkPrefixes("check-prefix",
                                           cl::desc("Prefix of directives"));
static cl::alias checkPrefixesAlias("check-prefixes",
                                    cl::aliasopt(checkPrefixes),
                                    cl::CommaSeparated, cl::NotHidden);
static cl::list<std::string> commentPrefixes("comment-prefixes",
                                             cl::CommaSeparated);
static cl::list<std::string>
    implicitCheckNot("implicit-check-not",
                     cl::desc("Pattern that must not occur anywhere"));
static cl::list<std::string> defines("D", cl::AlwaysPrefix,
                                     cl::desc("Define a variable: -DVAR=VALUE"));
static cl::opt<bool> allowEmpty("allow-empty",
                                cl::desc("Allow an empty input"));
static cl::opt<bool> allowUnusedPrefixes("allow-unused-prefixes");
static cl::opt<bool> strictWhitespace("strict-whitespace");
static cl::opt<bool> matchFullLines("match-full-lines");
static cl::opt<bool> ignoreCase("ignore-case");
static cl::opt<bool> enableVarScope("enable-var-scope");
static cl::opt<bool> verbose("v");
// Accepted for compatibility with lit's RUN lines; the input is not dumped.
static cl::opt<std::string> dumpInput("dump-input", cl::init("fail"));

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "FileCheck (mp distribution)\n");

  FileCheckRequest req;
  for (const std::string &prefix : checkPrefixes)
    req.CheckPrefixes.push_back(prefix);
  if (req.CheckPrefixes.empty()) {
    req.CheckPrefixes.push_back("CHECK");
    req.IsDefaultCheckPrefix = true;
  }
  if (commentPrefixes.empty()) {
    req.CommentPrefixes.push_back("COM");
    req.CommentPrefixes.push_back("RUN");
  } else {
    for (const std::string &prefix : commentPrefixes)
      req.CommentPrefixes.push_back(prefix);
  }
  for (const std::string &pattern : implicitCheckNot)
    req.ImplicitCheckNot.push_back(pattern);
  for (const std::string &define : defines)
    req.GlobalDefines.push_back(define);
  req.AllowEmptyInput = allowEmpty;
  req.AllowUnusedPrefixes = allowUnusedPrefixes;
  req.NoCanonicalizeWhiteSpace = strictWhitespace;
  req.MatchFullLines = matchFullLines;
  req.IgnoreCase = ignoreCase;
  req.EnableVarScope = enableVarScope;
  req.Verbose = verbose;

  FileCheck fc(req);
  if (!fc.ValidateCheckPrefixes()) {
    errs() << "FileCheck: supplied check prefix must start with a letter and "
              "contain only alphanumeric characters, hyphens and underscores\n";
    return 2;
  }

  SourceMgr sm;
  ErrorOr<std::unique_ptr<MemoryBuffer>> checkFile =
      MemoryBuffer::getFileOrSTDIN(checkFilename, /*IsText=*/true);
  if (!checkFile) {
    errs() << "FileCheck: could not open check file '" << checkFilename
           << "': " << checkFile.getError().message() << "\n";
    return 2;
  }
  SmallString<4096> checkBuffer;
  StringRef checkText = fc.CanonicalizeFile(**checkFile, checkBuffer);
  sm.AddNewSourceBuffer(MemoryBuffer::getMemBuffer(
                            checkText, (*checkFile)->getBufferIdentifier()),
                        SMLoc());
  std::pair<unsigned, unsigned> implicitPatterns;
  if (fc.readCheckFile(sm, checkText, &implicitPatterns))
    return 2;

  ErrorOr<std::unique_ptr<MemoryBuffer>> input =
      MemoryBuffer::getFileOrSTDIN(inputFilename, /*IsText=*/true);
  if (!input) {
    errs() << "FileCheck: could not open input file '" << inputFilename
           << "': " << input.getError().message() << "\n";
    return 2;
  }
  if ((*input)->getBuffer().empty() && !allowEmpty) {
    errs() << "FileCheck error: '" << inputFilename << "' is empty.\n"
           << "FileCheck command line: ";
    for (int k = 0; k < argc; ++k)
      errs() << (k ? " " : "") << argv[k];
    errs() << "\n";
    return 2;
  }
  SmallString<4096> inputBuffer;
  StringRef inputText = fc.CanonicalizeFile(**input, inputBuffer);
  sm.AddNewSourceBuffer(
      MemoryBuffer::getMemBuffer(inputText, (*input)->getBufferIdentifier()),
      SMLoc());
  return fc.checkInput(sm, inputText) ? 0 : 1;
}
