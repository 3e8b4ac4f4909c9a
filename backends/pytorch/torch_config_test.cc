#include "pytorch/torch_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nereid::backends::pytorch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string WithParameters(const std::string& params) {
  return R"({"name":"m","backend":"pytorch","max_batch_size":0,
    "input":[{"name":"INPUT__0","data_type":"TYPE_FP32","dims":[4]}],
    "output":[{"name":"OUTPUT__0","data_type":"TYPE_FP32","dims":[4]}],
    "parameters":{)" +
         params + "}}";
}

StatusOr<TorchSettings> Settings(const std::string& params) {
  auto config = ParseTorchModelConfig(WithParameters(params));
  if (!config.ok()) return config.status();
  return ReadTorchSettings(config->base);
}

TEST(TorchSettingsTest, DefaultsKeepOneThreadAndInferenceMode) {
  auto s = Settings("");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->optimized_execution);
  EXPECT_TRUE(s->inference_mode);
  EXPECT_FALSE(s->jit_executor.has_value());
  EXPECT_FALSE(s->jit_profiling.has_value());
  EXPECT_FALSE(s->tensor_fuser.has_value());
  EXPECT_FALSE(s->weight_sharing);
  EXPECT_EQ(s->intra_op_threads, 1);
  EXPECT_FALSE(s->inter_op_threads.has_value());
}

TEST(TorchSettingsTest, ReadsTritonParameters) {
  auto s = Settings(R"("DISABLE_OPTIMIZED_EXECUTION":{"string_value":"true"},
    "INFERENCE_MODE":{"string_value":"false"},"ENABLE_JIT_EXECUTOR":{"string_value":"false"},
    "ENABLE_JIT_PROFILING":{"string_value":"0"},"ENABLE_TENSOR_FUSER":{"string_value":"on"},
    "ENABLE_WEIGHT_SHARING":{"string_value":"TRUE"},"INTRA_OP_THREAD_COUNT":{"string_value":"2"},
    "INTER_OP_THREAD_COUNT":{"string_value":"3"})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->optimized_execution);
  EXPECT_FALSE(s->inference_mode);
  EXPECT_EQ(s->jit_executor, false);
  EXPECT_EQ(s->jit_profiling, false);
  EXPECT_EQ(s->tensor_fuser, true);
  EXPECT_TRUE(s->weight_sharing);
  EXPECT_EQ(s->intra_op_threads, 2);
  EXPECT_EQ(s->inter_op_threads, 3);
}

TEST(TorchSettingsTest, BadValuesFail) {
  auto bad_bool = Settings(R"("DISABLE_OPTIMIZED_EXECUTION":{"string_value":"maybe"})");
  ASSERT_FALSE(bad_bool.ok());
  EXPECT_THAT(bad_bool.status().message(), HasSubstr("DISABLE_OPTIMIZED_EXECUTION"));
  auto bad_int = Settings(R"("INTRA_OP_THREAD_COUNT":{"string_value":"two"})");
  ASSERT_FALSE(bad_int.ok());
  EXPECT_THAT(bad_int.status().message(), HasSubstr("INTRA_OP_THREAD_COUNT"));
  EXPECT_FALSE(Settings(R"("INTER_OP_THREAD_COUNT":{"string_value":"0"})").ok());
  EXPECT_FALSE(Settings(R"("INTRA_OP_THREAD_COUNT":{"string_value":"-1"})").ok());
}

TEST(TorchModelConfigTest, ReadsSequenceControlsAndStates) {
  auto config = ParseTorchModelConfig(R"({"name":"acc","max_batch_size":4,
    "input":[{"name":"INPUT__0","data_type":"TYPE_INT32","dims":[1]}],
    "output":[{"name":"OUTPUT__0","data_type":"TYPE_INT32","dims":[1]}],
    "sequence_batching":{
      "control_input":[
        {"name":"START__1","control":[{"kind":"CONTROL_SEQUENCE_START",
          "int32_false_true":[0,1],"fp32_false_true":[],"bool_false_true":[],
          "data_type":"TYPE_INVALID"}]},
        {"name":"CORRID__3","control":[{"kind":"CONTROL_SEQUENCE_CORRID",
          "int32_false_true":[],"fp32_false_true":[],"bool_false_true":[],
          "data_type":"TYPE_UINT64"}]}],
      "state":[{"input_name":"STATE__2","output_name":"OUTPUT_STATE__1",
                "data_type":"TYPE_INT32","dims":[1]}]}})");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->controls.size(), 2u);
  EXPECT_EQ(config->controls[0].name, "START__1");
  EXPECT_EQ(config->controls[0].data_type, DataType::kInt32);
  EXPECT_EQ(config->controls[1].data_type, DataType::kUint64);
  ASSERT_EQ(config->state_inputs.size(), 1u);
  EXPECT_EQ(config->state_inputs[0].name, "STATE__2");
  EXPECT_EQ(config->state_outputs[0].name, "OUTPUT_STATE__1");
  EXPECT_THAT(config->state_outputs[0].dims, ElementsAre(1));
}

TEST(TorchModelConfigTest, SupportedTypes) {
  EXPECT_TRUE(TorchSupports(DataType::kBool));
  EXPECT_TRUE(TorchSupports(DataType::kFp16));
  EXPECT_TRUE(TorchSupports(DataType::kBytes));
  EXPECT_FALSE(TorchSupports(DataType::kUint16));
  EXPECT_FALSE(TorchSupports(DataType::kUint32));
  EXPECT_FALSE(TorchSupports(DataType::kUint64));
}

}  // namespace
}  // namespace nereid::backends::pytorch
