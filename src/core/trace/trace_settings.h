// Triton's trace settings (REFERENCE-2.md §12.2): the values, their text forms and the checks the
// trace extension applies to values a client sends (HTTP JSON strings, gRPC string lists), with
// Triton's error texts. Pure functions and plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nereid/status.h"

namespace nereid::trace {

// Bit set of TRITONSERVER_InferenceTraceLevel; 0 is OFF.
inline constexpr uint32_t kLevelOff = 0;
inline constexpr uint32_t kLevelTimestamps = 1u << 2;
inline constexpr uint32_t kLevelTensors = 1u << 3;

// One complete setting (global, or a model's after falling back on the global one).
struct TraceConfig {
  uint32_t level = kLevelOff;
  uint32_t rate = 1000;
  int32_t count = -1;  // -1: unlimited
  uint32_t log_frequency = 0;
  std::string file;  // never settable over the network
  std::string mode = "triton";
};

// A requested change: an absent field is left alone; a present empty inner optional clears the
// key so that it falls back on the global value (HTTP null, gRPC empty list).
template <typename T>
using Change = std::optional<std::optional<T>>;
struct TraceSettingsUpdate {
  Change<uint32_t> level;
  Change<uint32_t> rate;
  Change<int32_t> count;
  Change<uint32_t> log_frequency;
  bool empty() const { return !level && !rate && !count && !log_frequency; }
};

// ["OFF"] / ["TIMESTAMPS", "TENSORS"], as Triton answers.
std::vector<std::string> LevelNames(uint32_t level);

// The level a list of names asks for: "OFF" alone, or TIMESTAMPS/TENSORS (unknown names are
// ignored, as Triton does; nullopt when no name was known). "OFF" with another name is
// INVALID_ARGUMENT "Expect only one trace level 'OFF' is specified".
StatusOr<std::optional<uint32_t>> ParseLevels(const std::vector<std::string>& names);

// `trace_rate` or `log_frequency`: std::stoi's reading (leading blanks, trailing junk ignored).
// No number: "Unable to parse '<key>', got: X". Above INT_MAX or negative: "Unable to parse
// '<key>', value is out of range [ 0, 4294967295 ], got: X" (Triton wraps a negative value into
// a huge unsigned one; Nereid refuses it).
StatusOr<uint32_t> ParseUnsigned(std::string_view key, std::string_view text);

// `trace_count`: at least -1, "Unable to parse 'trace_count'. Expecting value >= -1, got:X"
// (gRPC has a blank after "got:", as in Triton's gRPC frontend).
StatusOr<int32_t> ParseCount(std::string_view text, bool grpc);

// Triton's validity rule for a setting that is not OFF: "sample rate must be non-zero", or in
// triton mode "trace file name is not given". Empty when valid.
std::string InvalidReason(const TraceConfig& config);

}  // namespace nereid::trace
