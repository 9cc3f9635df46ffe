//===- InputGuard.cpp - checks run on input before the MLIR parser --------===//
//
// Text: one linear scan. Brackets outside string literals and `//` comments
// raise or lower the depth; the `>` of an `->` arrow or of `>=` is not a
// bracket. Unbalanced closers clamp at zero, so the scan over-approximates no
// input's depth by more than its true nesting. Inside the body of an
// `affine_map<...>` or `affine_set<...>` the scan also counts operators,
// because the affine parser recurses once per operator, not per bracket.
//
// IR (bytecode input): a depth-first traversal with explicit stacks. Regions
// are counted on the way down; attributes and types (a DAG, since they are
// uniqued) get a memoised height, so each distinct one is visited once and
// any path longer than the bound is found.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/InputGuard.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Operation.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>

using namespace llvm;

static bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '.';
}

LogicalResult mp::checkInputNesting(MemoryBufferRef buffer, raw_ostream &os,
                                    unsigned maxDepth) {
  if (mlir::isBytecode(buffer))
    return success();
  StringRef text = buffer.getBuffer();
  unsigned depth = 0, line = 1;
  size_t lineStart = 0;
  // The affine map or set being scanned: the depth its body opened at,
  // where it starts, and how many operators it holds so far.
  // -1 outside affine bodies.
  int64_t affineDepth = -1;
  unsigned affineLine = 0, affineColumn = 0, operators = 0;
  auto error = [&](unsigned l, unsigned c, const Twine &what) {
    os << buffer.getBufferIdentifier() << ":" << l << ":" << c
       << ": error: " << what << "\n";
    return failure();
  };
  auto countOperator = [&]() -> LogicalResult {
    if (affineDepth < 0 || ++operators <= kMaxAffineOperators)
      return success();
    return error(affineLine, affineColumn,
                 "affine expression with more than " +
                     Twine(kMaxAffineOperators) + " operators");
  };
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
      if (++depth > maxDepth)
        return error(line, i - lineStart + 1,
                     "input nests brackets more than " + Twine(maxDepth) +
                         " levels deep");
      break;
    case '>':
      if ((i > 0 && text[i - 1] == '-') || (i + 1 < e && text[i + 1] == '='))
        break;
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      if (affineDepth >= 0 && depth <= affineDepth)
        affineDepth = -1;
      break;
    case '+':
    case '*':
      if (failed(countOperator()))
        return failure();
      break;
    case '-':
      if ((i + 1 >= e || text[i + 1] != '>') && failed(countOperator()))
        return failure();
      break;
    default: {
      if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_') ||
          (i > 0 && (isIdentifierChar(text[i - 1]) ||
                     StringRef("%@#^!").contains(text[i - 1]))))
        break;
      size_t end = i;
      while (end < e && isIdentifierChar(text[end]))
        ++end;
      StringRef word = text.slice(i, end);
      if ((word == "affine_map" || word == "affine_set") && end < e &&
          text[end] == '<' && affineDepth < 0) {
        affineDepth = depth;
        affineLine = line;
        affineColumn = i - lineStart + 1;
        operators = 0;
      } else if (affineDepth >= 0 &&
                 (word == "floordiv" || word == "ceildiv" || word == "mod")) {
        if (failed(countOperator()))
          return failure();
      }
      i = end - 1;
      break;
    }
    }
  }
  return success();
}

namespace {

/// An attribute or a type, by its opaque pointer.
struct Node {
  const void *ptr;
  bool isType;
  bool expanded = false;
};

/// Memoised heights of attributes and types, measured without recursion.
class NestingMeter {
public:
  explicit NestingMeter(unsigned maxDepth) : maxDepth(maxDepth) {}

  /// Whether `root`, found `base` levels down, stays within the bound.
  bool fits(Node root, unsigned base) {
    if (!root.ptr)
      return true;
    if (auto it = heights.find(root.ptr); it != heights.end())
      return base + it->second <= maxDepth;
    stack.assign(1, root);
    unsigned path = 0;
    while (!stack.empty()) {
      Node top = stack.back();
      if (!top.expanded) {
        if (heights.count(top.ptr)) {
          stack.pop_back();
          continue;
        }
        stack.back().expanded = true;
        heights[top.ptr] = 0; // in progress: a cycle counts nothing
        if (base + ++path > maxDepth)
          return false;
        forEachChild(top, [&](Node child) {
          if (!heights.count(child.ptr))
            stack.push_back(child);
        });
        continue;
      }
      unsigned height = 0;
      forEachChild(top, [&](Node child) {
        height = std::max(height, heights.lookup(child.ptr));
      });
      heights[top.ptr] = height + 1;
      --path;
      stack.pop_back();
      if (base + height + 1 > maxDepth)
        return false;
    }
    return true;
  }

  bool fits(mlir::Attribute attr, unsigned base) {
    return fits(Node{attr.getAsOpaquePointer(), false}, base);
  }
  bool fits(mlir::Type type, unsigned base) {
    return fits(Node{type.getAsOpaquePointer(), true}, base);
  }

private:
  template <typename Fn> static void forEachChild(Node n, Fn fn) {
    auto onAttr = [&](mlir::Attribute a) {
      if (a)
        fn(Node{a.getAsOpaquePointer(), false});
    };
    auto onType = [&](mlir::Type t) {
      if (t)
        fn(Node{t.getAsOpaquePointer(), true});
    };
    if (n.isType)
      mlir::Type::getFromOpaquePointer(n.ptr).walkImmediateSubElements(onAttr,
                                                                       onType);
    else
      mlir::Attribute::getFromOpaquePointer(n.ptr).walkImmediateSubElements(
          onAttr, onType);
  }

  unsigned maxDepth;
  DenseMap<const void *, unsigned> heights;
  std::vector<Node> stack;
};

} // namespace

LogicalResult mp::checkIRNesting(mlir::Operation *root, raw_ostream &os,
                                 StringRef where, unsigned maxDepth) {
  NestingMeter meter(maxDepth);
  std::vector<std::pair<mlir::Operation *, unsigned>> ops{{root, 0}};
  while (!ops.empty()) {
    mlir::Operation *op = ops.back().first;
    unsigned depth = ops.back().second;
    ops.pop_back();
    auto fail = [&](StringRef what) {
      os << where << ": error: input nests " << what << " more than "
         << maxDepth << " levels deep (in '" << op->getName() << "')\n";
      return failure();
    };
    if (depth > maxDepth)
      return fail("regions");
    bool fits = meter.fits(op->getAttrDictionary(), depth) &&
                meter.fits(mlir::Attribute(op->getLoc()), depth);
    for (mlir::Type t : op->getResultTypes())
      fits = fits && meter.fits(t, depth);
    for (mlir::Region &region : op->getRegions())
      for (mlir::Block &block : region)
        for (mlir::BlockArgument arg : block.getArguments())
          fits = fits && meter.fits(arg.getType(), depth) &&
                 meter.fits(mlir::Attribute(arg.getLoc()), depth);
    if (!fits)
      return fail("attributes and types");
    for (mlir::Region &region : op->getRegions())
      for (mlir::Block &block : region)
        for (mlir::Operation &nested : block)
          ops.push_back({&nested, depth + 1});
  }
  return success();
}

LogicalResult mp::checkBytecodeNesting(MemoryBufferRef buffer,
                                       const mlir::DialectRegistry &registry,
                                       bool allowUnregisteredDialects,
                                       raw_ostream &os) {
  if (!mlir::isBytecode(buffer))
    return success();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects(allowUnregisteredDialects);
  // A file that does not read is reported by the real parse.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return success(); });
  auto block = std::make_unique<mlir::Block>();
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/false);
  if (failed(mlir::readBytecodeFile(buffer, block.get(), config)))
    return success();
  for (mlir::Operation &op : *block) {
    if (succeeded(checkIRNesting(&op, os, buffer.getBufferIdentifier())))
      continue;
    // Destroying IR nested that deep would recurse as deeply: leave it.
    (void)block.release();
    return failure();
  }
  return success();
}
