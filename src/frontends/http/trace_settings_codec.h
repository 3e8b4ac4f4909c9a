// The JSON body of Triton's trace extension, `GET|POST /v2[/models/{m}]/trace/setting`
// (REFERENCE-2.md §12.2), decoded and encoded without I/O so the handler stays thin and the
// decoder can be fuzzed. Stateless functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/trace/trace_settings.h"
#include "nereid/status.h"

namespace nereid {

// A POST body with Triton's keys, types and errors: any `trace_file` key (even null) is
// UNSUPPORTED "trace file location can not be updated through network protocol"; `trace_level`
// is an array of strings; `trace_rate`, `trace_count`, `log_frequency` are strings (a number is
// INTERNAL "attempt to access JSON non-string as string", as TritonJson answers); null clears a
// key; unknown keys are ignored. Nothing is applied here. An empty body changes nothing.
StatusOr<trace::TraceSettingsUpdate> DecodeTraceSettingsRequest(std::string_view body);

// `{"trace_level":["OFF"],"trace_rate":"1000","trace_count":"-1","log_frequency":"0",
// "trace_file":"","trace_mode":"triton"}`: every value a string, the level a list.
std::string EncodeTraceSettings(const trace::TraceConfig& config);

}  // namespace nereid
