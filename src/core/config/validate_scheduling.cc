#include <algorithm>
#include <array>
#include <optional>
#include <set>

#include "common/saturating_time.h"
#include "core/config/model_config_validate.h"
#include "core/config/validate_internal.h"

namespace nereid::config::internal {
namespace {

using Control = inference::ModelSequenceBatching::Control;

// Preferred batch sizes of both batchers: each in [1, max_batch_size].
Status ValidatePreferredSizes(const inference::ModelConfig& config, const char* section,
                              const google::protobuf::RepeatedField<int32_t>& sizes) {
  for (int32_t size : sizes) {
    if (size < 1) {
      return ModelError(config, std::string(section) +
                                    ": 'preferred_batch_size' must be positive, got " +
                                    std::to_string(size));
    }
    if (size > config.max_batch_size()) {
      return ModelError(config, std::string(section) + ": 'preferred_batch_size' " +
                                    std::to_string(size) + " must be <= max_batch_size " +
                                    std::to_string(config.max_batch_size()));
    }
  }
  return Status::Ok();
}

// A duration whose nanosecond form does not fit an int64 would overflow every deadline computed
// from it (issue 22 item 5): refused at load, naming the field.
Status ValidateDuration(const inference::ModelConfig& config, const std::string& field,
                        uint64_t us) {
  if (us <= kMaxDurationMicros) return Status::Ok();
  return ModelError(config, field + " " + std::to_string(us) +
                                " is too large: the largest accepted duration is " +
                                std::to_string(kMaxDurationMicros) + " microseconds");
}

Status ValidateQueuePolicy(const inference::ModelConfig& config, const std::string& field,
                           const inference::ModelQueuePolicy& policy) {
  return ValidateDuration(config, field + ".default_timeout_microseconds",
                          policy.default_timeout_microseconds());
}

bool DelaysWithTimeout(const inference::ModelQueuePolicy& policy) {
  return policy.default_timeout_microseconds() != 0 &&
         policy.timeout_action() == inference::ModelQueuePolicy::DELAY;
}

Status ValidateDynamicBatching(const inference::ModelConfig& config) {
  const auto& db = config.dynamic_batching();
  NEREID_RETURN_IF_ERROR(
      ValidatePreferredSizes(config, "dynamic_batching", db.preferred_batch_size()));
  NEREID_RETURN_IF_ERROR(ValidateDuration(config, "dynamic_batching.max_queue_delay_microseconds",
                                          db.max_queue_delay_microseconds()));
  NEREID_RETURN_IF_ERROR(ValidateQueuePolicy(config, "dynamic_batching.default_queue_policy",
                                             db.default_queue_policy()));
  {
    std::optional<uint64_t> bad;  // the smallest level, so the message is deterministic
    for (const auto& [level, policy] : db.priority_queue_policy()) {
      if (policy.default_timeout_microseconds() > kMaxDurationMicros && (!bad || level < *bad)) {
        bad = level;
      }
    }
    if (bad) {
      NEREID_RETURN_IF_ERROR(ValidateQueuePolicy(
          config, "dynamic_batching.priority_queue_policy[" + std::to_string(*bad) + "]",
          db.priority_queue_policy().at(*bad)));
    }
  }
  const uint64_t levels = db.priority_levels();
  const std::string range = "[1, " + std::to_string(levels) + "]";
  if (levels != 0) {
    if (db.default_priority_level() == 0 || db.default_priority_level() > levels) {
      return ModelError(config, "dynamic_batching: 'default_priority_level' " +
                                    std::to_string(db.default_priority_level()) +
                                    " must be in range " + range);
    }
    std::optional<uint64_t> bad;  // the smallest, so the message does not depend on map order
    for (const auto& [level, policy] : db.priority_queue_policy()) {
      if ((level == 0 || level > levels) && (!bad || level < *bad)) bad = level;
    }
    if (bad) {
      return ModelError(config, "dynamic_batching: 'priority_queue_policy' level " +
                                    std::to_string(*bad) + " must be in range " + range);
    }
  }
  if (db.preserve_ordering()) {
    if (levels > 1) {
      return ModelError(config,
                        "dynamic_batching: Only one priority level is allowed when "
                        "'preserve_ordering' is true");
    }
    bool delay = DelaysWithTimeout(db.default_queue_policy());
    for (const auto& [level, policy] : db.priority_queue_policy())
      delay |= DelaysWithTimeout(policy);
    if (delay) {
      return ModelError(config,
                        "dynamic_batching: Queue policy can not have DELAY as timeout action "
                        "when 'preserve_ordering' is true");
    }
  }
  return Status::Ok();
}

// START, END and READY carry a false/true pair of exactly one type; CORRID carries a data type.
Status ValidateControl(const inference::ModelConfig& config, const std::string& tensor,
                       const Control& c) {
  const std::string what =
      "sequence_batching: control input '" + tensor + "' kind " + Control::Kind_Name(c.kind());
  const int kinds_of_values = (c.int32_false_true_size() > 0) + (c.fp32_false_true_size() > 0) +
                              (c.bool_false_true_size() > 0);
  if (c.kind() == Control::CONTROL_SEQUENCE_CORRID) {
    if (kinds_of_values != 0) {
      return ModelError(config, what +
                                    ": must not specify 'int32_false_true', 'fp32_false_true' "
                                    "or 'bool_false_true'");
    }
    constexpr std::array kAllowed = {inference::TYPE_UINT64, inference::TYPE_INT64,
                                     inference::TYPE_UINT32, inference::TYPE_INT32,
                                     inference::TYPE_STRING};
    if (std::find(kAllowed.begin(), kAllowed.end(), c.data_type()) == kAllowed.end()) {
      return ModelError(config, what +
                                    ": unexpected 'data_type'; allowed data types are "
                                    "TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and "
                                    "TYPE_STRING");
    }
    return Status::Ok();
  }
  if (kinds_of_values != 1) {
    return ModelError(config, what +
                                  ": must specify exactly one of 'int32_false_true', "
                                  "'fp32_false_true' or 'bool_false_true'");
  }
  const int entries =
      c.int32_false_true_size() + c.fp32_false_true_size() + c.bool_false_true_size();
  if (entries != 2) {
    return ModelError(config, what + ": the false/true value list must have exactly 2 entries");
  }
  return Status::Ok();
}

Status ValidateControlInputs(const inference::ModelConfig& config) {
  std::set<std::string> names;
  std::array<int, 4> seen_kinds{};
  for (const auto& input : config.sequence_batching().control_input()) {
    if (input.name().empty()) {
      return ModelError(config, "sequence_batching: 'control_input' must specify 'name'");
    }
    if (!names.insert(input.name()).second) {
      return ModelError(config, "sequence_batching: control input '" + input.name() +
                                    "' is specified more than once");
    }
    for (const Control& c : input.control()) {
      if (!Control::Kind_IsValid(c.kind())) {
        return ModelError(config, "sequence_batching: control input '" + input.name() +
                                      "' has unknown 'kind' " + std::to_string(c.kind()));
      }
      if (++seen_kinds[c.kind()] > 1) {
        return ModelError(config, "sequence_batching: control kind " +
                                      Control::Kind_Name(c.kind()) +
                                      " is specified more than once");
      }
      NEREID_RETURN_IF_ERROR(ValidateControl(config, input.name(), c));
    }
  }
  return Status::Ok();
}

Status ValidateSequenceBatching(const inference::ModelConfig& config) {
  const auto& sb = config.sequence_batching();
  if (config.response_cache().enable()) {
    return ModelError(config,
                      "'response_cache' is not supported with sequence batching; disable the "
                      "response cache");
  }
  NEREID_RETURN_IF_ERROR(ValidateControlInputs(config));
  NEREID_RETURN_IF_ERROR(ValidateDuration(config,
                                          "sequence_batching.max_sequence_idle_microseconds",
                                          sb.max_sequence_idle_microseconds()));
  NEREID_RETURN_IF_ERROR(ValidateDuration(config,
                                          "sequence_batching.direct.max_queue_delay_microseconds",
                                          sb.direct().max_queue_delay_microseconds()));
  NEREID_RETURN_IF_ERROR(ValidateDuration(config,
                                          "sequence_batching.oldest.max_queue_delay_microseconds",
                                          sb.oldest().max_queue_delay_microseconds()));
  for (const auto& state : sb.state()) {
    if (state.input_name().empty() || state.output_name().empty()) {
      return ModelError(config,
                        "sequence_batching: 'state' must specify 'input_name' and 'output_name'");
    }
    if (state.data_type() == inference::TYPE_INVALID ||
        !inference::DataType_IsValid(state.data_type())) {
      return ModelError(config, "sequence_batching: state '" + state.input_name() +
                                    "' must specify a valid 'data_type'");
    }
    // Triton's words (core sequence_state.cc); Triton finds this when a sequence starts, and every
    // Nereid instance is a CPU one, so it is refused at load.
    if (state.use_growable_memory()) {
      if (!state.use_same_buffer_for_input_output()) {
        return ModelError(config,
                          "In order to 'use_growable_memory', you must also enable "
                          "'use_single_buffer' for state input name '" +
                              state.input_name() + "'.");
      }
      return ModelError(config,
                        "'use_growable_memory' can only work with KIND_GPU model instances right "
                        "now. Please either change the instance type to KIND_GPU or set "
                        "'use_growable_memory' to false for state input '" +
                            state.input_name() + "'.");
    }
  }
  if (sb.has_oldest()) {
    NEREID_RETURN_IF_ERROR(ValidatePreferredSizes(config, "sequence_batching.oldest",
                                                  sb.oldest().preferred_batch_size()));
  }
  if (sb.has_direct()) {
    const float u = sb.direct().minimum_slot_utilization();
    if (!(u >= 0.0f && u <= 1.0f)) {
      return ModelError(config,
                        "sequence_batching.direct: 'minimum_slot_utilization' must be in "
                        "range [0.0, 1.0], got " +
                            std::to_string(u));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateScheduling(const inference::ModelConfig& config) {
  if (config.has_dynamic_batching()) NEREID_RETURN_IF_ERROR(ValidateDynamicBatching(config));
  if (config.has_sequence_batching()) NEREID_RETURN_IF_ERROR(ValidateSequenceBatching(config));
  return ValidateEnsemble(config);
}

}  // namespace nereid::config::internal
