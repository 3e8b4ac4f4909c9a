#include "core/trace/trace_settings.h"

#include <cctype>
#include <limits>

namespace nereid::trace {
namespace {

enum class IntError { kNone, kInvalid, kRange };

// std::stoi: optional blanks, an optional sign, at least one digit; the rest is ignored.
IntError StoiLike(std::string_view text, int64_t* out) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) {
    return IntError::kInvalid;
  }
  int64_t v = 0;
  bool overflow = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    if (v > std::numeric_limits<int32_t>::max()) overflow = true;  // keep scanning digits
    if (!overflow) v = v * 10 + (text[i] - '0');
  }
  if (negative) v = -v;
  if (overflow || v > std::numeric_limits<int32_t>::max() ||
      v < std::numeric_limits<int32_t>::min()) {
    return IntError::kRange;
  }
  *out = v;
  return IntError::kNone;
}

}  // namespace

std::vector<std::string> LevelNames(uint32_t level) {
  if (level == kLevelOff) return {"OFF"};
  std::vector<std::string> names;
  if (level & kLevelTimestamps) names.push_back("TIMESTAMPS");
  if (level & kLevelTensors) names.push_back("TENSORS");
  return names;
}

StatusOr<std::optional<uint32_t>> ParseLevels(const std::vector<std::string>& names) {
  std::optional<uint32_t> level;
  for (const std::string& name : names) {
    if (name == "OFF") {
      if (names.size() != 1) {
        return InvalidArgument("Expect only one trace level 'OFF' is specified");
      }
      level = kLevelOff;
    } else if (name == "TIMESTAMPS") {
      level = level.value_or(kLevelOff) | kLevelTimestamps;
    } else if (name == "TENSORS") {
      level = level.value_or(kLevelOff) | kLevelTensors;
    }
  }
  return level;
}

StatusOr<uint32_t> ParseUnsigned(std::string_view key, std::string_view text) {
  int64_t v = 0;
  const IntError e = StoiLike(text, &v);
  const std::string prefix = "Unable to parse '" + std::string(key) + "'";
  if (e == IntError::kInvalid) return InvalidArgument(prefix + ", got: " + std::string(text));
  if (e == IntError::kRange || v < 0) {
    return InvalidArgument(prefix +
                           ", value is out of range [ 0, 4294967295 ], got: " + std::string(text));
  }
  return static_cast<uint32_t>(v);
}

StatusOr<int32_t> ParseCount(std::string_view text, bool grpc) {
  int64_t v = 0;
  const IntError e = StoiLike(text, &v);
  if (e == IntError::kInvalid) {
    return InvalidArgument("Unable to parse 'trace_count', got: " + std::string(text));
  }
  if (e == IntError::kRange) {
    return InvalidArgument("Unable to parse 'trace_count', value is out of range [ -1, " +
                           std::to_string(std::numeric_limits<int32_t>::max()) +
                           " ], got: " + std::string(text));
  }
  if (v < -1) {
    return InvalidArgument(std::string("Unable to parse 'trace_count'. Expecting value >= -1, ") +
                           (grpc ? "got: " : "got:") + std::string(text));
  }
  return static_cast<int32_t>(v);
}

std::string InvalidReason(const TraceConfig& config) {
  if (config.level == kLevelOff) return "tracing is disabled";
  if (config.rate == 0) return "sample rate must be non-zero";
  if (config.mode == "triton" && config.file.empty()) return "trace file name is not given";
  return "";
}

}  // namespace nereid::trace
