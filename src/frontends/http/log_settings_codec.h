// The JSON body of Triton's logging extension, `GET|POST /v2/logging` (REFERENCE-2.md §12.1),
// decoded and encoded without I/O so the handler stays thin and the decoder can be fuzzed.
// Stateless functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/logging.h"
#include "nereid/status.h"

namespace nereid {

// The keys of a POST body with Triton's types and errors: `log_file` (any non-null value is
// UNSUPPORTED, the file is never set over the network), `log_info|log_warning|log_error` (bool),
// `log_verbose_level` (unsigned integer), `log_format` ("default"|"ISO8601", else UNAVAILABLE as
// in Triton). `null` values and unknown keys are ignored. The whole body is checked before
// anything is applied, so a failing key changes nothing. An empty body changes nothing.
StatusOr<logging::SettingsUpdate> DecodeLogSettingsRequest(std::string_view body);

// `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":0,
// "log_format":"default"}`.
std::string EncodeLogSettings(const logging::Settings& settings);

}  // namespace nereid
