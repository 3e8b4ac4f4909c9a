#include "core/config/model_config_json.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "core/config/model_config_io.h"

namespace nereid::config {
namespace {

using ::testing::HasSubstr;

inference::ModelConfig Parse(const char* text) {
  auto config = ParseModelConfigText(text, "test.pbtxt");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : inference::ModelConfig();
}

constexpr char kRepresentative[] = R"cfg(
name: "mymodel"
platform: "onnxruntime_onnx"
backend: "onnxruntime"
max_batch_size: 8
version_policy: { specific: { versions: [ 1, 3 ] } }
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, 16 ] reshape: { shape: [ -1, 4, 4 ] } } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 16 ] label_filename: "labels.txt" } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  priority_levels: 2
  default_priority_level: 1
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 500 max_queue_size: 3 }
  priority_queue_policy { key: 1 value: { default_timeout_microseconds: 18446744073709551615 } }
}
instance_group [ { name: "g" kind: KIND_CPU count: 2 } ]
default_model_filename: "model.onnx"
parameters { key: "k" value: { string_value: "v" } }
model_warmup [ {
  name: "w"
  batch_size: 1
  count: 2
  inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } }
} ]
)cfg";

// Checked by hand against REFERENCE §2.4: snake_case names in declaration order, every
// primitive field present, enums as names, the listed 64-bit fields as numbers (including a
// uint64 above INT64_MAX), the priority_queue_policy key still a string.
constexpr char kRepresentativeJson[] =
    R"({"name":"mymodel","platform":"onnxruntime_onnx","backend":"onnxruntime","runtime":"",)"
    R"("version_policy":{"specific":{"versions":[1,3]}},"max_batch_size":8,)"
    R"("input":[{"name":"INPUT0","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[-1,16],)"
    R"("reshape":{"shape":[-1,4,4]},"is_shape_tensor":false,"allow_ragged_batch":false,)"
    R"("optional":false,"is_non_linear_format_io":false}],)"
    R"("output":[{"name":"OUTPUT0","data_type":"TYPE_STRING","dims":[16],)"
    R"("label_filename":"labels.txt","is_shape_tensor":false,"is_non_linear_format_io":false}],)"
    R"("batch_input":[],"batch_output":[],)"
    R"("dynamic_batching":{"preferred_batch_size":[4,8],"max_queue_delay_microseconds":100,)"
    R"("preserve_ordering":false,"priority_levels":2,"default_priority_level":1,)"
    R"("default_queue_policy":{"timeout_action":"DELAY","default_timeout_microseconds":500,)"
    R"("allow_timeout_override":false,"max_queue_size":3},)"
    R"("priority_queue_policy":{"1":{"timeout_action":"REJECT",)"
    R"("default_timeout_microseconds":18446744073709551615,"allow_timeout_override":false,)"
    R"("max_queue_size":0}}},)"
    R"("instance_group":[{"name":"g","kind":"KIND_CPU","count":2,"gpus":[],)"
    R"("secondary_devices":[],"profile":[],"passive":false,"host_policy":""}],)"
    R"("default_model_filename":"model.onnx","cc_model_filenames":{},"metric_tags":{},)"
    R"("parameters":{"k":{"string_value":"v"}},)"
    R"("model_warmup":[{"name":"w","batch_size":1,)"
    R"("inputs":{"INPUT0":{"data_type":"TYPE_FP32","dims":[16],"zero_data":true}},"count":2}]})";

constexpr char kSequence[] = R"cfg(
name: "seq"
backend: "identity"
max_batch_size: 4
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  oldest {
    max_candidate_sequences: 4
    preferred_batch_size: [ 2 ]
    max_queue_delay_microseconds: 300
  }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }
  ]
  state [ {
    input_name: "IN_STATE"
    output_name: "OUT_STATE"
    data_type: TYPE_INT32
    dims: [ -1, 2 ]
    initial_state [ { data_type: TYPE_INT32 dims: [ 1, 2 ] zero_data: true name: "zeros" } ]
  } ]
}
)cfg";

constexpr char kEnsemble[] = R"cfg(
name: "ens"
platform: "ensemble"
ensemble_scheduling {
  step [ {
    model_name: "a"
    model_version: -1
    input_map { key: "x" value: "in" }
    output_map { key: "y" value: "out" }
  } ]
}
)cfg";

TEST(ModelConfigToJsonTest, RendersRepresentativeConfigExactly) {
  EXPECT_EQ(ModelConfigToJson(Parse(kRepresentative)), kRepresentativeJson);
}

TEST(ModelConfigToJsonTest, EmptyConfigPrintsAllPrimitiveFields) {
  EXPECT_EQ(ModelConfigToJson(inference::ModelConfig()),
            R"({"name":"","platform":"","backend":"","runtime":"","max_batch_size":0,)"
            R"("input":[],"output":[],"batch_input":[],"batch_output":[],"instance_group":[],)"
            R"("default_model_filename":"","cc_model_filenames":{},"metric_tags":{},)"
            R"("parameters":{},"model_warmup":[]})");
}

TEST(ModelConfigToJsonTest, SequenceBatchingSixtyFourBitFieldsAreNumbers) {
  const std::string json = ModelConfigToJson(Parse(kSequence));
  EXPECT_THAT(json, HasSubstr(R"("oldest":{"max_candidate_sequences":4,)"
                              R"("preferred_batch_size":[2],"max_queue_delay_microseconds":300,)"
                              R"("preserve_ordering":false})"));
  EXPECT_THAT(json, HasSubstr(R"("max_sequence_idle_microseconds":5000000)"));
  EXPECT_THAT(json, HasSubstr(R"("data_type":"TYPE_INT32","dims":[-1,2],)"));
  EXPECT_THAT(json, HasSubstr(R"("initial_state":[{"data_type":"TYPE_INT32","dims":[1,2],)"
                              R"("name":"zeros","zero_data":true}])"));
  EXPECT_THAT(json, HasSubstr(R"("kind":"CONTROL_SEQUENCE_START","int32_false_true":[0,1],)"));
}

TEST(ModelConfigToJsonTest, SequenceDirectDelayIsANumber) {
  auto config = Parse("sequence_batching { direct { max_queue_delay_microseconds: 7 } }");
  EXPECT_THAT(ModelConfigToJson(config), HasSubstr(R"("direct":{"max_queue_delay_microseconds":7,)"
                                                   R"("minimum_slot_utilization":0})"));
}

TEST(ModelConfigToJsonTest, EnsembleModelVersionIsASignedNumber) {
  EXPECT_THAT(ModelConfigToJson(Parse(kEnsemble)),
              HasSubstr(R"("step":[{"model_name":"a","model_version":-1,)"
                        R"("input_map":{"x":"in"},"output_map":{"y":"out"},)"
                        R"("model_namespace":""}],"max_inflight_requests":0})"));
}

TEST(ModelConfigToJsonTest, ExtremeSixtyFourBitValuesStayExact) {
  auto config = Parse(
      "version_policy { specific { versions: [ 9223372036854775807 ] } }\n"
      "input [ { name: \"x\" dims: [ -9223372036854775808 ] } ]");
  const std::string json = ModelConfigToJson(config);
  EXPECT_THAT(json, HasSubstr(R"("versions":[9223372036854775807])"));
  EXPECT_THAT(json, HasSubstr(R"("dims":[-9223372036854775808])"));
}

// Triton leaves these 64-bit fields as protobuf renders them.
TEST(ModelConfigToJsonTest, UnlistedSixtyFourBitFieldsStayStrings) {
  auto config = Parse(
      "optimization { cuda { graph_spec [ { batch_size: 1 input { key: \"x\" value { dim: [ 3 ] "
      "} } } ] } }\n"
      "instance_group [ { kind: KIND_CPU secondary_devices [ { device_id: 5 } ] } ]");
  const std::string json = ModelConfigToJson(config);
  EXPECT_THAT(json, HasSubstr(R"("input":{"x":{"dim":["3"]}})"));
  EXPECT_THAT(json, HasSubstr(R"("device_id":"5")"));
}

void ExpectRoundTrip(const inference::ModelConfig& config) {
  auto back = ModelConfigFromJson(ModelConfigToJson(config));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(config, *back))
      << back->DebugString();
}

TEST(ModelConfigJsonRoundTripTest, RepresentativeConfig) {
  ExpectRoundTrip(Parse(kRepresentative));
}
TEST(ModelConfigJsonRoundTripTest, SequenceConfig) { ExpectRoundTrip(Parse(kSequence)); }
TEST(ModelConfigJsonRoundTripTest, EnsembleConfig) { ExpectRoundTrip(Parse(kEnsemble)); }
TEST(ModelConfigJsonRoundTripTest, EmptyConfig) { ExpectRoundTrip(inference::ModelConfig()); }

TEST(ModelConfigFromJsonTest, AcceptsNumbersAndStringsForSixtyFourBitFields) {
  auto config = ModelConfigFromJson(
      R"({"name":"m","input":[{"name":"x","dims":[1,"2",-1]}],)"
      R"("dynamic_batching":{"max_queue_delay_microseconds":"10","priority_levels":3}})");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_THAT(config->input(0).dims(), ::testing::ElementsAre(1, 2, -1));
  EXPECT_EQ(config->dynamic_batching().max_queue_delay_microseconds(), 10u);
  EXPECT_EQ(config->dynamic_batching().priority_levels(), 3u);
}

TEST(ModelConfigFromJsonTest, EnumNamesAreCaseInsensitive) {
  auto config = ModelConfigFromJson(R"({"input":[{"data_type":"type_fp32"}]})");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->input(0).data_type(), inference::TYPE_FP32);
}

TEST(ModelConfigFromJsonTest, UnknownFieldIsAnError) {
  auto config = ModelConfigFromJson(R"({"name":"m","bogus":1})");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("bogus"));
}

TEST(ModelConfigFromJsonTest, BadValueIsAnError) {
  auto config = ModelConfigFromJson(R"({"max_batch_size":1.5})");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("max_batch_size"));
}

TEST(ModelConfigFromJsonTest, SyntaxErrorIsOneLine) {
  auto config = ModelConfigFromJson("{\"name\": ");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              ::testing::StartsWith("failed to parse model configuration JSON: "));
  EXPECT_EQ(config.status().message().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace nereid::config
