// JSON form of a model configuration, exactly as Triton renders it for `GET .../config` and the
// `model_config` of the backend auto-complete round trip. Thread-safe pure functions.
#pragma once

#include <string>
#include <string_view>

#include "model_config.pb.h"
#include "nereid/status.h"

namespace nereid::config {

// Triton's rendering (core:src/model_config_utils.cc ModelConfigToJson): protobuf JSON with
// snake_case names, every primitive field printed even at its default, enums as names; then the
// 64-bit fields Triton lists (dims, reshape.shape, version_policy.specific.versions, the
// dynamic_batching delays/levels/timeouts, sequence_batching idle and queue delays, state and
// initial_state dims, ensemble step model_version, warmup input dims) are rewritten from JSON
// strings to JSON numbers. Other 64-bit values (map keys such as priority_queue_policy's, cuda
// graph_spec dims, secondary device ids) stay strings, as in Triton. Compact, no whitespace.
std::string ModelConfigToJson(const inference::ModelConfig& config);

// Parses the JSON form (the output above, a `config` load parameter or a backend's auto-completed
// config). 64-bit fields may be numbers or strings; enum names are case-insensitive (as Triton);
// unknown fields are InvalidArgument.
StatusOr<inference::ModelConfig> ModelConfigFromJson(std::string_view json);

}  // namespace nereid::config
