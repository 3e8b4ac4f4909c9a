// The trace extension's untrusted input: a `POST /v2[/models/{m}]/trace/setting` body
// (`DecodeTraceSettingsRequest`). A decoded update is applied to a TraceManager (OFF, no file) and
// the model's setting encoded; the encoding, without its read-only `trace_file` and `trace_mode`,
// must decode back to the values read, and every error must have one of the codes Triton's
// handler answers with.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/trace/trace.h"
#include "frontends/http/trace_settings_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nereid::StatusCode;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto update = nereid::DecodeTraceSettingsRequest(body);
  if (!update.ok()) {
    const StatusCode code = update.status().code();
    if (code != StatusCode::kInvalidArgument && code != StatusCode::kInternal &&
        code != StatusCode::kUnsupported) {
      std::abort();
    }
    return 0;
  }
  static auto manager = nereid::trace::TraceManager::Create({});
  if (!manager.ok()) std::abort();
  const std::string model = size % 2 == 0 ? "" : "m";
  const nereid::Status applied = (*manager)->Update(model, *update);
  if (!applied.ok() && applied.code() != StatusCode::kInvalidArgument) std::abort();
  const nereid::trace::TraceConfig now = (*manager)->Get(model);
  std::string encoded = nereid::EncodeTraceSettings(now);
  const size_t file = encoded.find(",\"trace_file\"");
  if (file == std::string::npos) std::abort();
  encoded = encoded.substr(0, file) + "}";
  auto again = nereid::DecodeTraceSettingsRequest(encoded);
  if (!again.ok() || !again->level || !again->rate || !again->count || !again->log_frequency) {
    std::abort();
  }
  if (**again->rate != now.rate || **again->count != now.count ||
      **again->log_frequency != now.log_frequency || **again->level != now.level) {
    std::abort();
  }
  return 0;
}
