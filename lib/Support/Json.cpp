//===- Json.cpp - JSON from untrusted files -------------------------------===//

#include "mp/Support/Json.h"

#include "mp/Support/FileOutput.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;

Expected<json::Value> mp::parseJson(StringRef text) {
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    switch (text[i]) {
    case '"':
      // Skip the string, honouring backslash escapes.
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '[':
    case '{':
      if (++depth > kMaxJsonNesting)
        return createStringError(std::errc::invalid_argument,
                                 "[byte=%zu]: nests arrays and objects more "
                                 "than %u levels deep",
                                 i, kMaxJsonNesting);
      break;
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return json::parse(text);
}

json::Value mp::jsonNumber(double v) {
  if (std::isfinite(v))
    return v;
  return nullptr;
}

Error mp::writeJsonFile(StringRef path, const json::Value &value) {
  return writeFileAtomically(path, [&](raw_ostream &os) {
    os << formatv("{0:2}", value) << "\n";
    return Error::success();
  });
}
