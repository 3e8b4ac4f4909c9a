#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/config/validate_test_util.h"

namespace nereid::config {
namespace {

using testing::ExpectInvalid;
using testing::Make;
using testing::Validate;

TEST(ValidateSchedulingTest, PreferredBatchSizeMustBePositive) {
  auto config = Make("dynamic_batching { preferred_batch_size: [ 0 ] }");
  ExpectInvalid(config, {"dynamic_batching", "'preferred_batch_size' must be positive"});
}

TEST(ValidateSchedulingTest, PreferredBatchSizeMustNotExceedMax) {
  auto config = Make("dynamic_batching { preferred_batch_size: [ 4, 16 ] }");
  ExpectInvalid(config,
                {"dynamic_batching", "'preferred_batch_size' 16 must be <= max_batch_size 8"});
}

TEST(ValidateSchedulingTest, DynamicBatchingWithoutBatchingAllowsNoPreferredSize) {
  auto config = Make("dynamic_batching { }");
  config.set_max_batch_size(0);
  config.mutable_dynamic_batching()->clear_preferred_batch_size();
  EXPECT_TRUE(Validate(config).ok());
  config.mutable_dynamic_batching()->add_preferred_batch_size(1);
  ExpectInvalid(config, {"'preferred_batch_size' 1 must be <= max_batch_size 0"});
}

TEST(ValidateSchedulingTest, DefaultPriorityLevelMustBeInRange) {
  auto config = Make("dynamic_batching { priority_levels: 3 default_priority_level: 4 }");
  ExpectInvalid(config, {"'default_priority_level' 4 must be in range [1, 3]"});
  config.mutable_dynamic_batching()->set_default_priority_level(0);
  ExpectInvalid(config, {"'default_priority_level' 0 must be in range [1, 3]"});
}

TEST(ValidateSchedulingTest, PriorityQueuePolicyLevelMustBeInRange) {
  auto config = Make(
      "dynamic_batching { priority_levels: 2 default_priority_level: 1 "
      "priority_queue_policy { key: 5 value {} } }");
  ExpectInvalid(config, {"'priority_queue_policy' level 5 must be in range [1, 2]"});
}

TEST(ValidateSchedulingTest, PreserveOrderingAllowsOnePriorityLevel) {
  auto config = Make(
      "dynamic_batching { preserve_ordering: true priority_levels: 2 "
      "default_priority_level: 1 }");
  ExpectInvalid(config, {"Only one priority level is allowed when 'preserve_ordering' is true"});
}

TEST(ValidateSchedulingTest, PreserveOrderingForbidsDelayedTimeouts) {
  auto config = Make(
      "dynamic_batching { preserve_ordering: true default_queue_policy { "
      "timeout_action: DELAY default_timeout_microseconds: 10 } }");
  ExpectInvalid(config, {"DELAY", "'preserve_ordering'"});
}

// Issue 22 item 5: durations whose nanoseconds overflow an int64 are refused, naming the field;
// the largest one that fits (9223372036854775 us, about 292 years) is accepted.
TEST(ValidateSchedulingTest, DurationsMustFitInt64Nanoseconds) {
  const std::string max = "9223372036854775";
  const std::string over = "9223372036854776";
  struct Case {
    std::string config;
    std::string field;
  };
  const Case cases[] = {
      {"dynamic_batching { max_queue_delay_microseconds: X }",
       "dynamic_batching.max_queue_delay_microseconds"},
      {"dynamic_batching { default_queue_policy { default_timeout_microseconds: X } }",
       "dynamic_batching.default_queue_policy.default_timeout_microseconds"},
      {"dynamic_batching { priority_levels: 3 default_priority_level: 1 "
       "priority_queue_policy { key: 3 value { default_timeout_microseconds: X } } "
       "priority_queue_policy { key: 2 value { default_timeout_microseconds: X } } }",
       "dynamic_batching.priority_queue_policy[2].default_timeout_microseconds"},
      {"sequence_batching { max_sequence_idle_microseconds: X }",
       "sequence_batching.max_sequence_idle_microseconds"},
      {"sequence_batching { direct { max_queue_delay_microseconds: X } }",
       "sequence_batching.direct.max_queue_delay_microseconds"},
      {"sequence_batching { oldest { max_queue_delay_microseconds: X } }",
       "sequence_batching.oldest.max_queue_delay_microseconds"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config);
    auto with = [&](const std::string& value) {
      std::string text = c.config;
      for (size_t at = text.find('X'); at != std::string::npos; at = text.find('X'))
        text.replace(at, 1, value);
      return Make(text);
    };
    EXPECT_TRUE(Validate(with(max)).ok()) << Validate(with(max)).message();
    const std::string too_large = c.field + " " + over + " is too large";
    const std::string largest = "the largest accepted duration is " + max + " microseconds";
    ExpectInvalid(with(over), {too_large.c_str(), largest.c_str()});
    ExpectInvalid(with("18446744073709551615"), {c.field.c_str()});
  }
}

TEST(ValidateSchedulingTest, ControlKindAtMostOnce) {
  auto config = Make(R"cfg(
    sequence_batching {
      control_input [
        { name: "S1" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
        { name: "S2" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }
      ]
    })cfg");
  ExpectInvalid(config,
                {"sequence_batching", "CONTROL_SEQUENCE_START is specified more than once"});
}

TEST(ValidateSchedulingTest, ControlInputNameUnique) {
  auto config = Make(R"cfg(
    sequence_batching {
      control_input [
        { name: "S" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
        { name: "S" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] }
      ]
    })cfg");
  ExpectInvalid(config, {"control input 'S' is specified more than once"});
}

TEST(ValidateSchedulingTest, BooleanControlNeedsTwoValues) {
  auto config = Make(R"cfg(
    sequence_batching {
      control_input [
        { name: "S" control [ { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0 ] } ] }
      ]
    })cfg");
  ExpectInvalid(config, {"control input 'S' kind CONTROL_SEQUENCE_READY", "exactly 2 entries"});
}

TEST(ValidateSchedulingTest, BooleanControlNeedsOneValueType) {
  auto config = Make(R"cfg(
    sequence_batching {
      control_input [ { name: "S" control [ { kind: CONTROL_SEQUENCE_END } ] } ]
    })cfg");
  ExpectInvalid(config, {"control input 'S' kind CONTROL_SEQUENCE_END", "exactly one of"});
}

TEST(ValidateSchedulingTest, CorrIdControlDataType) {
  auto config = Make(R"cfg(
    sequence_batching {
      control_input [
        { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } ] }
      ]
    })cfg");
  ExpectInvalid(config, {"CONTROL_SEQUENCE_CORRID", "'data_type'", "TYPE_UINT64"});
}

TEST(ValidateSchedulingTest, ValidSequenceBatchingConfig) {
  auto config = Make(R"cfg(
    sequence_batching {
      oldest { max_candidate_sequences: 4 }
      control_input [
        {
          name: "START"
          control [ { kind: CONTROL_SEQUENCE_START bool_false_true: [ false, true ] } ]
        },
        { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
      ]
      state [ { input_name: "SI" output_name: "SO" data_type: TYPE_INT32 dims: [ 1 ] } ]
    })cfg");
  EXPECT_TRUE(Validate(config).ok()) << Validate(config).ToString();
}

TEST(ValidateSchedulingTest, OldestPreferredBatchSizeWithinMax) {
  auto config = Make("sequence_batching { oldest { preferred_batch_size: [ 9 ] } }");
  ExpectInvalid(config, {"sequence_batching.oldest", "'preferred_batch_size' 9"});
}

TEST(ValidateSchedulingTest, DirectSlotUtilizationInRange) {
  auto config = Make("sequence_batching { direct { minimum_slot_utilization: 1.5 } }");
  ExpectInvalid(config, {"'minimum_slot_utilization' must be in range [0.0, 1.0]"});
}

TEST(ValidateSchedulingTest, StateNeedsNames) {
  auto config = Make("sequence_batching { state [ { data_type: TYPE_INT32 } ] }");
  ExpectInvalid(config, {"'state' must specify 'input_name' and 'output_name'"});
}

TEST(ValidateSchedulingTest, SameBufferForInputOutputIsAccepted) {
  auto config = Make(
      "sequence_batching { state [ { input_name: \"SI\" output_name: \"SO\" "
      "data_type: TYPE_INT32 dims: [ 1 ] use_same_buffer_for_input_output: true } ] }");
  EXPECT_TRUE(Validate(config).ok()) << Validate(config).ToString();
}

TEST(ValidateSchedulingTest, GrowableMemoryNeedsASingleBufferAsTriton) {
  auto config = Make(
      "sequence_batching { state [ { input_name: \"SI\" output_name: \"SO\" "
      "data_type: TYPE_INT32 dims: [ 1 ] use_growable_memory: true } ] }");
  ExpectInvalid(config, {"In order to 'use_growable_memory', you must also enable "
                         "'use_single_buffer' for state input name 'SI'."});
}

TEST(ValidateSchedulingTest, GrowableMemoryNeedsGpuInstancesAsTriton) {
  auto config = Make(
      "sequence_batching { state [ { input_name: \"SI\" output_name: \"SO\" "
      "data_type: TYPE_INT32 dims: [ 1 ] use_same_buffer_for_input_output: true "
      "use_growable_memory: true } ] }");
  ExpectInvalid(config, {"'use_growable_memory' can only work with KIND_GPU model instances "
                         "right now. Please either change the instance type to KIND_GPU or set "
                         "'use_growable_memory' to false for state input 'SI'."});
}

}  // namespace
}  // namespace nereid::config
