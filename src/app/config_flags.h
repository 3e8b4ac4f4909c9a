// Triton's "<name>,<setting>=<value>"-style and pair flags (--backend-config, --cache-config,
// --trace-config, --host-policy, --rate-limit-resource,
// --cuda-memory-pool-byte-size, --cuda-virtual-address-size, --model-load-gpu-limit), checked
// with the texts of Triton's server:src/command_line_parser.cc so a command line Triton refuses is
// refused here with the same words. Each function checks one occurrence of its flag; the flags
// may all be repeated.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/trace/trace_settings.h"
#include "nereid/status.h"

namespace nereid {

// "<backend>,<setting>=<value>" or "<setting>=<value>" (every backend): {backend, {key, value}}.
StatusOr<std::pair<std::string, std::pair<std::string, std::string>>> ParseBackendConfigOption(
    std::string_view arg);

// "<cache>,<setting>=<value>": {cache, {key, value}}. A cache name is required.
StatusOr<std::pair<std::string, std::pair<std::string, std::string>>> ParseCacheConfigOption(
    std::string_view arg);

// "--host-policy <name>,<setting>=<value>".
Status CheckHostPolicyOption(std::string_view arg);
// "<resource>:<count>[:<device>]".
Status CheckRateLimitResourceOption(std::string_view arg);
// "<int>:<integer>" (--cuda-memory-pool-byte-size, --cuda-virtual-address-size), "<int>:<real>"
// (--model-load-gpu-limit) or "<int>-<int>" (--sagemaker-safe-port-range).
Status CheckPairOption(std::string_view arg, bool second_is_real, char delimiter = ':');

// Every --trace-config occurrence, then their combined meaning as Triton's PostProcessTraceArgs
// reads it: mode, level, rate, count, and in triton mode log-frequency. Returns the first error.
Status CheckTraceConfig(const std::vector<std::string>& args);

// The trace extension's starting setting, as Triton's PostProcessTraceArgs builds it: the
// deprecated --trace-file/-level/-rate/-count/-log-frequency first (each adds a deprecation
// warning to `warnings`), then every --trace-config in order. Global keys: level (repeatable,
// OR-ed; off/false, timestamps/true/on/min/max, tensors), rate, count, mode; "triton," keys: file,
// log-frequency. Values were checked by CheckCompatFlags. mode=opentelemetry is accepted here
// and refused when the server starts (TraceManager::Create).
StatusOr<trace::TraceConfig> TraceConfigFromFlags(
    const std::map<std::string, std::vector<std::string>>& compat,
    std::vector<std::string>* warnings);

// The compatibility flags (no effect in this build) still get Triton's checks, so a command line
// Triton refuses is refused here: --cache-config (and its conflict with
// --response-cache-byte-size, and one cache only), --trace-config, --host-policy,
// --rate-limit(-resource), the pair flags, --grpc-max-response-pool-size and the numeric ones.
// `compat` maps each flag ("--cache-config") to its values in order.
Status CheckCompatFlags(const std::map<std::string, std::vector<std::string>>& compat);

// Triton's ParseOption<int>/<int64_t> (std::stoi/stoll): leading blanks and trailing junk are
// accepted ("12abc" is 12); no digits gives "Invalid option value. Got X", overflow gives
// "Provided option value is out of bound. Got X".
StatusOr<int64_t> ParseTritonInteger(std::string_view arg, int64_t min, int64_t max);

// Triton's ParseOption<bool>: true/on/1 or false/off/0, any case; else
// "invalid value for bool option: X".
StatusOr<bool> ParseTritonBool(std::string_view arg);

// Triton's wrapper around an error of one occurrence of --<flag>.
Status BadOption(std::string_view flag, const Status& error);

}  // namespace nereid
