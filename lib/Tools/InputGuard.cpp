//===- InputGuard.cpp - checks run on input before the MLIR parser --------===//
//
// One linear scan over the text: brackets outside string literals and `//`
// comments raise or lower the depth; the `>` of an `->` arrow is not a
// bracket. Unbalanced closers clamp at zero, so the scan over-approximates no
// input's depth by more than its true nesting.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/InputGuard.h"

#include "mlir/Bytecode/BytecodeReader.h"

using namespace llvm;

LogicalResult mp::checkInputNesting(MemoryBufferRef buffer, raw_ostream &os,
                                    unsigned maxDepth) {
  if (mlir::isBytecode(buffer))
    return success();
  StringRef text = buffer.getBuffer();
  unsigned depth = 0, line = 1;
  size_t lineStart = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"':
      // Skip the string literal, honouring backslash escapes.
      for (++i; i < e && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      if (i < e && text[i] == '\n') {
        ++line;
        lineStart = i + 1;
      }
      break;
    case '/':
      if (i + 1 < e && text[i + 1] == '/')
        while (i + 1 < e && text[i + 1] != '\n')
          ++i;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (++depth > maxDepth) {
        os << buffer.getBufferIdentifier() << ":" << line << ":"
           << (i - lineStart + 1) << ": error: input nests brackets more than "
           << maxDepth << " levels deep\n";
        return failure();
      }
      break;
    case '>':
      if (i > 0 && text[i - 1] == '-')
        break;
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return success();
}
