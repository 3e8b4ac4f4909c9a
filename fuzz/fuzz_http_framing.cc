// The RFC 9112 §6.3 header rewrite the HTTP server applies before Beast parses a request header
// (HeaderBlockEnd, FramingSafePrefix, DropContentLengthWhenChunked), on arbitrary bytes, with
// its invariants checked: offsets stay inside the input, the safe prefix never reaches a
// Content-Length or Transfer-Encoding line, a rewrite only removes lines (never grows the header,
// keeps its end) and is idempotent. A violated invariant aborts, which libFuzzer reports.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "frontends/http/http_wire.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void Run(std::string_view pending, bool at_start) {
  const size_t safe = nereid::FramingSafePrefix(pending, at_start);
  Check(safe <= pending.size());
  const std::optional<size_t> end = nereid::HeaderBlockEnd(pending, at_start);
  if (!end) return;
  Check(*end >= 2 && *end <= pending.size());
  const std::string_view head = pending.substr(0, *end);
  Check(head.substr(head.size() - 2) == "\r\n");
  const std::optional<std::string> fixed = nereid::DropContentLengthWhenChunked(head, at_start);
  if (!fixed) return;
  Check(fixed->size() < head.size());
  Check(fixed->size() >= 2 && fixed->substr(fixed->size() - 2) == "\r\n");
  Check(!nereid::DropContentLengthWhenChunked(*fixed, at_start).has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Run(bytes, true);
  Run(bytes, false);
  return 0;
}
