#include "app/config_flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace nereid {
namespace {

using Setting = std::pair<std::string, std::pair<std::string, std::string>>;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Splits "<name><first><setting>=<value>" where `first` is optional (npos: no name). The '=' is
// searched after the name delimiter, as in Triton.
struct Parts {
  size_t name_end;  // npos when there is no name delimiter
  size_t eq;        // npos when there is no '='
};

Parts Split(std::string_view arg, char first) {
  const size_t name_end = arg.find(first);
  const size_t from = name_end == std::string_view::npos ? 0 : name_end + 1;
  return {name_end, arg.find('=', from)};
}

Status TraceLevel(std::string_view value) {
  const std::string v = Lower(value);
  for (const char* ok : {"false", "off", "true", "on", "min", "max", "timestamps", "tensors"}) {
    if (v == ok) return Status::Ok();
  }
  return InvalidArgument("invalid value for trace level option: " + std::string(value));
}

uint32_t TraceLevelBits(std::string_view value) {
  const std::string v = Lower(value);
  if (v == "tensors") return trace::kLevelTensors;
  if (v == "timestamps" || v == "true" || v == "on" || v == "min" || v == "max") {
    return trace::kLevelTimestamps;
  }
  return trace::kLevelOff;
}

Status TraceMode(std::string_view value, std::string* mode) {
  *mode = Lower(value);
  if (*mode == "triton" || *mode == "opentelemetry") return Status::Ok();
  return InvalidArgument("invalid value for trace mode option: " + std::string(value) +
                         ". Available options are \"triton\" and \"opentelemetry\"");
}

}  // namespace

Status BadOption(std::string_view flag, const Status& error) {
  if (error.ok()) return error;
  return InvalidArgument("Bad option: \"--" + std::string(flag) + "\". " + error.message());
}

StatusOr<int64_t> ParseTritonInteger(std::string_view arg, int64_t min, int64_t max) {
  const std::string s(arg);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str()) return InvalidArgument("Invalid option value. Got " + s);
  if (errno == ERANGE || v < min || v > max) {
    return InvalidArgument("Provided option value is out of bound. Got " + s);
  }
  return static_cast<int64_t>(v);
}

StatusOr<bool> ParseTritonBool(std::string_view arg) {
  const std::string v = Lower(arg);
  if (v == "true" || v == "on" || v == "1") return true;
  if (v == "false" || v == "off" || v == "0") return false;
  return InvalidArgument("invalid value for bool option: " + std::string(arg));
}

StatusOr<Setting> ParseBackendConfigOption(std::string_view arg) {
  const Parts p = Split(arg, ',');
  const std::string a(arg);
  if (p.name_end == 0) {
    return InvalidArgument(
        "No backend specified. --backend-config option format is <backend name>,<setting>=<value> "
        "or <setting>=<value>. Got " +
        a);
  }
  const std::string format =
      "--backend-config option format is '<backend name>,<setting>=<value>'. Got " + a;
  if (p.eq == std::string_view::npos) return InvalidArgument(format);
  const size_t key_start = p.name_end == std::string_view::npos ? 0 : p.name_end + 1;
  std::string backend = p.name_end == std::string_view::npos ? "" : a.substr(0, p.name_end);
  std::string key = a.substr(key_start, p.eq - key_start);
  std::string value = a.substr(p.eq + 1);
  if (key.empty() || value.empty()) return InvalidArgument(format);
  return Setting{std::move(backend), {std::move(key), std::move(value)}};
}

StatusOr<Setting> ParseCacheConfigOption(std::string_view arg) {
  const Parts p = Split(arg, ',');
  const std::string a(arg);
  if (p.name_end == std::string_view::npos || p.name_end == 0) {
    return InvalidArgument(
        "No cache specified. --cache-config option format is <cache name>,<setting>=<value>. "
        "Got " +
        a);
  }
  const std::string format =
      "--cache-config option format is '<cache name>,<setting>=<value>'. Got " + a;
  if (p.eq == std::string_view::npos) return InvalidArgument(format);
  std::string key = a.substr(p.name_end + 1, p.eq - p.name_end - 1);
  std::string value = a.substr(p.eq + 1);
  if (key.empty() || value.empty()) return InvalidArgument(format);
  return Setting{a.substr(0, p.name_end), {std::move(key), std::move(value)}};
}

Status CheckHostPolicyOption(std::string_view arg) {
  const Parts p = Split(arg, ',');
  const std::string format =
      "--host-policy option format is '<policy name>,<setting>=<value>'. Got " + std::string(arg);
  if (p.name_end == std::string_view::npos || p.eq == std::string_view::npos) {
    return InvalidArgument(format);
  }
  if (p.name_end == 0 || p.eq == p.name_end + 1 || p.eq + 1 == arg.size()) {
    return InvalidArgument(format);
  }
  return Status::Ok();
}

Status CheckRateLimitResourceOption(std::string_view arg) {
  const std::string format =
      "--rate-limit-resource option format is '<resource_name>:<count>:<device>' or "
      "'<resource_name>:<count>'. Got " +
      std::string(arg);
  const size_t first = arg.find(':');
  if (first == std::string_view::npos) return InvalidArgument(format);
  const size_t second = arg.find(':', first + 1);
  constexpr int64_t kMin = std::numeric_limits<int>::min();
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (second == std::string_view::npos) {
    return ParseTritonInteger(arg.substr(first + 1), kMin, kMax).status();
  }
  if (arg.find(':', second + 1) != std::string_view::npos) return InvalidArgument(format);
  NEREID_RETURN_IF_ERROR(
      ParseTritonInteger(arg.substr(first + 1, second - first - 1), kMin, kMax).status());
  return ParseTritonInteger(arg.substr(second + 1), kMin, kMax).status();
}

Status CheckPairOption(std::string_view arg, bool second_is_real, char delimiter) {
  const size_t colon = arg.find(delimiter);
  if (colon == std::string_view::npos) {
    return InvalidArgument(
        "Cannot parse pair option due to incorrect number of inputs.--<pair option> argument "
        "requires format <first>" +
        std::string(1, delimiter) + "<second>. Found: " + std::string(arg));
  }
  NEREID_RETURN_IF_ERROR(ParseTritonInteger(arg.substr(0, colon), std::numeric_limits<int>::min(),
                                            std::numeric_limits<int>::max())
                             .status());
  const std::string second(arg.substr(colon + 1));
  if (second_is_real) {
    char* end = nullptr;
    errno = 0;
    std::strtod(second.c_str(), &end);
    if (end == second.c_str()) return InvalidArgument("Invalid option value. Got " + second);
    if (errno == ERANGE)
      return InvalidArgument("Provided option value is out of bound. Got " + second);
    return Status::Ok();
  }
  return ParseTritonInteger(second, std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max())
      .status();
}

Status CheckTraceConfig(const std::vector<std::string>& args) {
  // mode group ("" global, "triton", "opentelemetry") -> settings in order.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> groups;
  for (const std::string& a : args) {
    const Parts p = Split(a, ',');
    std::string mode;
    if (p.name_end == 0) {
      return BadOption("trace-config",
                       InvalidArgument("No trace mode specified. --trace-config option format is "
                                       "<trace mode>,<setting>=<value> or <setting>=<value>. Got " +
                                       a));
    }
    if (p.name_end != std::string::npos) {
      NEREID_RETURN_IF_ERROR(BadOption("trace-config", TraceMode(a.substr(0, p.name_end), &mode)));
    }
    const std::string format =
        "--trace-config option format is '<trace mode>,<setting>=<value>'. Got " + a;
    if (p.eq == std::string::npos) return BadOption("trace-config", InvalidArgument(format));
    const size_t key_start = p.name_end == std::string::npos ? 0 : p.name_end + 1;
    std::string key = a.substr(key_start, p.eq - key_start);
    std::string value = a.substr(p.eq + 1);
    if (key.empty() || value.empty()) return BadOption("trace-config", InvalidArgument(format));
    groups[mode].emplace_back(std::move(key), std::move(value));
  }
  constexpr int64_t kIntMin = std::numeric_limits<int>::min();
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  for (const auto& [key, value] : groups[""]) {
    Status s;
    if (key == "rate" || key == "count") {
      s = ParseTritonInteger(value, kIntMin, kIntMax).status();
    } else if (key == "level") {
      s = TraceLevel(value);
    } else if (key == "mode") {
      std::string mode;
      s = TraceMode(value, &mode);
    }
    if (!s.ok()) return BadOption("trace-config " + key, s);
  }
  for (const auto& [key, value] : groups["triton"]) {
    if (key != "log-frequency") continue;
    Status s = ParseTritonInteger(value, kIntMin, kIntMax).status();
    if (!s.ok()) return BadOption("trace-config triton," + key, s);
  }
  return Status::Ok();
}

namespace {

const std::vector<std::string>& Values(const std::map<std::string, std::vector<std::string>>& m,
                                       const std::string& flag) {
  static const std::vector<std::string> kNone;
  auto it = m.find(flag);
  return it == m.end() ? kNone : it->second;
}

// Each occurrence of `flag` through `check`, errors wrapped as Triton wraps them.
template <typename Check>
Status EachValue(const std::map<std::string, std::vector<std::string>>& compat,
                 const std::string& flag, Check check) {
  for (const auto& v : Values(compat, flag)) {
    NEREID_RETURN_IF_ERROR(BadOption(flag.substr(2), check(v)));
  }
  return Status::Ok();
}

Status CheckCache(const std::map<std::string, std::vector<std::string>>& compat) {
  std::vector<std::string> caches;
  for (const auto& v : Values(compat, "--cache-config")) {
    auto setting = ParseCacheConfigOption(v);
    if (!setting.ok()) return BadOption("cache-config", setting.status());
    if (std::find(caches.begin(), caches.end(), setting->first) == caches.end()) {
      caches.push_back(setting->first);
    }
  }
  const bool byte_size = !Values(compat, "--response-cache-byte-size").empty();
  if (byte_size && !caches.empty()) {
    return InvalidArgument(
        "Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. "
        "Please provide one or the other.");
  }
  // Triton's core refuses this when the server is created.
  if (caches.size() > 1) {
    return InvalidArgument(
        "found multiple cache configurations, but only a single cache is currently supported");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<trace::TraceConfig> TraceConfigFromFlags(
    const std::map<std::string, std::vector<std::string>>& compat,
    std::vector<std::string>* warnings) {
  constexpr int64_t kIntMin = std::numeric_limits<int>::min();
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  trace::TraceConfig c;
  auto deprecated = [&](const char* flag, const char* replacement) {
    const auto& values = Values(compat, flag);
    if (!values.empty()) {
      warnings->push_back(std::string("Warning: '") + flag +
                          "' has been deprecated and will be removed in future releases. Please "
                          "use '--trace-config " +
                          replacement + " instead.");
    }
    return values;
  };
  for (const auto& v : deprecated("--trace-file", "triton,file=<filepath>'")) c.file = v;
  for (const auto& v : deprecated("--trace-level", "level=<OFF|TIMESTAMPS|TENSORS>'")) {
    c.level |= TraceLevelBits(v);
  }
  for (const auto& v : deprecated("--trace-rate", "rate=<rate value>'")) {
    NEREID_ASSIGN_OR_RETURN(int64_t n, ParseTritonInteger(v, kIntMin, kIntMax));
    c.rate = static_cast<uint32_t>(n);
  }
  for (const auto& v : deprecated("--trace-count", "count=<count value>'")) {
    NEREID_ASSIGN_OR_RETURN(int64_t n, ParseTritonInteger(v, kIntMin, kIntMax));
    c.count = static_cast<int32_t>(n);
  }
  for (const auto& v : deprecated("--trace-log-frequency", "triton,log-frequency=<value>'")) {
    NEREID_ASSIGN_OR_RETURN(int64_t n, ParseTritonInteger(v, kIntMin, kIntMax));
    c.log_frequency = static_cast<uint32_t>(n);
  }
  bool level_from_config = false;
  for (const std::string& a : Values(compat, "--trace-config")) {
    const Parts p = Split(a, ',');
    const bool grouped = p.name_end != std::string::npos;
    const std::string mode = grouped ? Lower(a.substr(0, p.name_end)) : "";
    const size_t key_start = grouped ? p.name_end + 1 : 0;
    const std::string key = a.substr(key_start, p.eq - key_start);
    const std::string value = a.substr(p.eq + 1);
    if (mode.empty() && key == "level") {
      if (!level_from_config) c.level = trace::kLevelOff;  // --trace-config replaces the old flag
      level_from_config = true;
      c.level |= TraceLevelBits(value);
    } else if (mode.empty() && (key == "rate" || key == "count")) {
      NEREID_ASSIGN_OR_RETURN(int64_t n, ParseTritonInteger(value, kIntMin, kIntMax));
      if (key == "rate") c.rate = static_cast<uint32_t>(n);
      if (key == "count") c.count = static_cast<int32_t>(n);
    } else if (mode.empty() && key == "mode") {
      c.mode = Lower(value);
    } else if (mode == "triton" && key == "file") {
      c.file = value;
    } else if (mode == "triton" && key == "log-frequency") {
      NEREID_ASSIGN_OR_RETURN(int64_t n, ParseTritonInteger(value, kIntMin, kIntMax));
      c.log_frequency = static_cast<uint32_t>(n);
    }
  }
  if (c.count < -1) {
    return BadOption("trace-config count",
                     InvalidArgument("Unable to parse 'trace_count'. Expecting value >= -1, got:" +
                                     std::to_string(c.count)));
  }
  return c;
}

Status CheckCompatFlags(const std::map<std::string, std::vector<std::string>>& compat) {
  constexpr int64_t kIntMin = std::numeric_limits<int>::min();
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
  constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
  auto integer = [](int64_t lo, int64_t hi) {
    return [lo, hi](const std::string& v) { return ParseTritonInteger(v, lo, hi).status(); };
  };
  auto boolean = [](const std::string& v) { return ParseTritonBool(v).status(); };
  for (const char* flag : {"--grpc-infer-allocation-pool-size", "--model-load-retry-count",
                           "--buffer-manager-thread-count", "--trace-rate", "--trace-count",
                           "--trace-log-frequency", "--sagemaker-port", "--sagemaker-thread-count",
                           "--vertex-ai-port", "--vertex-ai-thread-count"}) {
    NEREID_RETURN_IF_ERROR(EachValue(compat, flag, integer(kIntMin, kIntMax)));
  }
  for (const char* flag : {"--pinned-memory-pool-byte-size", "--response-cache-byte-size"}) {
    NEREID_RETURN_IF_ERROR(EachValue(compat, flag, integer(kI64Min, kI64Max)));
  }
  for (const char* flag : {"--allow-gpu-metrics", "--model-namespacing", "--enable-peer-access",
                           "--allow-client-shm", "--allow-sagemaker", "--allow-vertex-ai"}) {
    NEREID_RETURN_IF_ERROR(EachValue(compat, flag, boolean));
  }
  NEREID_RETURN_IF_ERROR(
      EachValue(compat, "--grpc-max-response-pool-size", [](const std::string& v) {
        auto n = ParseTritonInteger(v, kIntMin, kIntMax);
        if (!n.ok()) return n.status();
        if (*n <= 0) {
          return InvalidArgument("Error: --grpc-max-response-pool-size must be greater than 0.");
        }
        return Status::Ok();
      }));
  NEREID_RETURN_IF_ERROR(EachValue(compat, "--rate-limit", [](const std::string& v) {
    const std::string l = Lower(v);
    if (l == "execution_count" || l == "off") return Status::Ok();
    return InvalidArgument("invalid argument for --rate-limit");
  }));
  NEREID_RETURN_IF_ERROR(EachValue(compat, "--rate-limit-resource", CheckRateLimitResourceOption));
  NEREID_RETURN_IF_ERROR(EachValue(compat, "--host-policy", CheckHostPolicyOption));
  NEREID_RETURN_IF_ERROR(EachValue(compat, "--cuda-memory-pool-byte-size",
                                   [](const std::string& v) { return CheckPairOption(v, false); }));
  NEREID_RETURN_IF_ERROR(EachValue(compat, "--cuda-virtual-address-size",
                                   [](const std::string& v) { return CheckPairOption(v, false); }));
  NEREID_RETURN_IF_ERROR(EachValue(compat, "--sagemaker-safe-port-range", [](const std::string& v) {
    return CheckPairOption(v, /*second_is_real=*/false, '-');
  }));
  NEREID_RETURN_IF_ERROR(EachValue(compat, "--model-load-gpu-limit",
                                   [](const std::string& v) { return CheckPairOption(v, true); }));
  NEREID_RETURN_IF_ERROR(
      EachValue(compat, "--min-supported-compute-capability", [](const std::string& v) {
        char* end = nullptr;
        std::strtod(v.c_str(), &end);
        return end == v.c_str() ? InvalidArgument("Invalid option value. Got " + v) : Status::Ok();
      }));
  NEREID_RETURN_IF_ERROR(
      EachValue(compat, "--trace-level", [](const std::string& v) { return TraceLevel(v); }));
  std::vector<std::string> trace = Values(compat, "--trace-config");
  NEREID_RETURN_IF_ERROR(CheckTraceConfig(trace));
  return CheckCache(compat);
}

}  // namespace nereid
