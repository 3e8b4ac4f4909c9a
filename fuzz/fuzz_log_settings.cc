// The logging extension's untrusted input: a `POST /v2/logging` body (`DecodeLogSettingsRequest`).
// A decoded update is applied and the settings encoded again; the encoding must decode back to
// the same values (with `log_file` dropped, which is never settable) and every error must have one
// of the codes Triton's handler answers with.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "frontends/http/log_settings_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nereid::StatusCode;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto update = nereid::DecodeLogSettingsRequest(body);
  if (!update.ok()) {
    const StatusCode code = update.status().code();
    if (code != StatusCode::kInvalidArgument && code != StatusCode::kInternal &&
        code != StatusCode::kUnavailable && code != StatusCode::kUnsupported) {
      std::abort();
    }
    return 0;
  }
  if (update->verbose_level && *update->verbose_level > nereid::logging::kMaxVerboseLevel) {
    std::abort();
  }
  nereid::logging::Apply(*update);
  const nereid::logging::Settings now = nereid::logging::CurrentSettings();
  std::string encoded = nereid::EncodeLogSettings(now);
  const std::string file_key = "\"log_file\":\"\",";
  if (encoded.find(file_key) != 1) std::abort();
  encoded.erase(1, file_key.size());
  auto again = nereid::DecodeLogSettingsRequest(encoded);
  if (!again.ok() || again->info != now.info || again->warning != now.warning ||
      again->error != now.error || again->verbose_level != now.verbose_level ||
      again->format != now.format) {
    std::abort();
  }
  return 0;
}
