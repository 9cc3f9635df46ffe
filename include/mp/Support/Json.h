//===- Json.h - JSON from untrusted files -----------------------*- C++ -*-===//
//
// llvm::json::parse recurses once per nesting level, so a policy file or a
// checkpoint header of a few hundred kilobytes of `[[[[...` overflows the
// stack. mp's readers parse through parseJson, which first measures the
// nesting (one linear scan, strings skipped) and refuses anything deeper
// than real files ever are. Its writers go through writeJsonFile: the
// same indentation everywhere, and the file written whole or not at all.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SUPPORT_JSON_H
#define MP_SUPPORT_JSON_H

#include "llvm/Support/JSON.h"

namespace mp {

/// The deepest JSON nesting mp's readers accept.
constexpr unsigned kMaxJsonNesting = 256;

/// llvm::json::parse, after checking that `text` nests arrays and objects
/// at most kMaxJsonNesting levels deep.
llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text);

/// `v` as a JSON number; JSON has no infinities or NaNs, so they become
/// null.
llvm::json::Value jsonNumber(double v);

/// Writes `value` to `path` indented by two spaces, with a final newline,
/// through writeFileAtomically (FileOutput.h).
llvm::Error writeJsonFile(llvm::StringRef path, const llvm::json::Value &value);

} // namespace mp

#endif // MP_SUPPORT_JSON_H
