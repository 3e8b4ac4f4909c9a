#include "common/config_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nereid::backends {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kSimple[] = R"({
  "name": "simple", "platform": "onnxruntime_onnx", "backend": "onnxruntime",
  "max_batch_size": 8,
  "input": [
    {"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16], "optional": false},
    {"name": "INPUT1", "data_type": "TYPE_STRING", "dims": ["4", "-1"],
     "reshape": {"shape": [2, 2, -1]}, "optional": true}],
  "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP16", "dims": [16]}],
  "parameters": {"intra_op_thread_count": {"string_value": "2"},
                 "allow_spinning": {"string_value": "TRUE"}},
  "optimization": {"graph": {"level": -1}}
})";

TEST(BackendConfigReaderTest, ParsesTheFieldsBackendsUse) {
  StatusOr<ModelConfig> config = ParseModelConfig(kSimple);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->name, "simple");
  EXPECT_EQ(config->platform, "onnxruntime_onnx");
  EXPECT_EQ(config->backend, "onnxruntime");
  EXPECT_EQ(config->max_batch_size, 8);
  ASSERT_EQ(config->inputs.size(), 2u);
  EXPECT_EQ(config->inputs[0].name, "INPUT0");
  EXPECT_EQ(config->inputs[0].data_type, DataType::kInt32);
  EXPECT_THAT(config->inputs[0].dims, ElementsAre(16));
  EXPECT_FALSE(config->inputs[0].reshape.has_value());
  EXPECT_FALSE(config->inputs[0].optional);
  EXPECT_EQ(config->inputs[1].data_type, DataType::kBytes);
  EXPECT_THAT(config->inputs[1].dims, ElementsAre(4, -1));  // int64 as strings accepted
  ASSERT_TRUE(config->inputs[1].reshape.has_value());
  EXPECT_THAT(*config->inputs[1].reshape, ElementsAre(2, 2, -1));
  EXPECT_TRUE(config->inputs[1].optional);
  ASSERT_EQ(config->outputs.size(), 1u);
  EXPECT_EQ(config->outputs[0].data_type, DataType::kFp16);
  EXPECT_EQ(config->graph_optimization_level, -1);
  ASSERT_NE(config->FindParameter("intra_op_thread_count"), nullptr);
  EXPECT_EQ(*config->FindParameter("intra_op_thread_count"), "2");
  EXPECT_EQ(config->FindParameter("missing"), nullptr);
}

TEST(BackendConfigReaderTest, SequenceControlAndStateTensorsAreModelIo) {
  StatusOr<ModelConfig> config = ParseModelConfig(R"({
    "max_batch_size": 4,
    "input": [{"name": "IN", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]},
               {"name": "S_OUT", "data_type": "TYPE_FP32", "dims": [-1]}],
    "sequence_batching": {
      "control_input": [
        {"name": "A", "control": [{"kind": "CONTROL_SEQUENCE_START", "int32_false_true": [0, 1],
                                   "fp32_false_true": [], "bool_false_true": [],
                                   "data_type": "TYPE_INVALID"}]},
        {"name": "B", "control": [{"kind": "CONTROL_SEQUENCE_END", "int32_false_true": [],
                                   "fp32_false_true": [0, 1], "bool_false_true": [],
                                   "data_type": "TYPE_INVALID"}]},
        {"name": "C", "control": [{"kind": "CONTROL_SEQUENCE_READY", "int32_false_true": [],
                                   "fp32_false_true": [], "bool_false_true": [false, true],
                                   "data_type": "TYPE_INVALID"}]},
        {"name": "D", "control": [{"kind": "CONTROL_SEQUENCE_CORRID",
                                   "data_type": "TYPE_STRING"}]}],
      "state": [{"input_name": "S_IN", "output_name": "S_OUT", "data_type": "TYPE_FP32",
                 "dims": [-1]}]}
  })");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->inputs.size(), 6u);
  const DataType types[] = {DataType::kInt32, DataType::kFp32, DataType::kBool, DataType::kBytes};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(config->inputs[1 + i].name, std::string(1, static_cast<char>('A' + i)));
    EXPECT_EQ(config->inputs[1 + i].data_type, types[i]);
    EXPECT_THAT(config->inputs[1 + i].dims, ElementsAre(1));
  }
  EXPECT_EQ(config->inputs[5].name, "S_IN");
  EXPECT_THAT(config->inputs[5].dims, ElementsAre(-1));
  ASSERT_EQ(config->outputs.size(), 2u);  // S_OUT was already configured
}

TEST(BackendConfigReaderTest, RaggedInputsBatchInputsAndBatchOutputs) {
  StatusOr<ModelConfig> config = ParseModelConfig(R"({
    "max_batch_size": 4,
    "input": [{"name": "IN", "data_type": "TYPE_FP32", "dims": [-1], "allow_ragged_batch": true},
              {"name": "OTHER", "data_type": "TYPE_FP32", "dims": [2]}],
    "output": [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [-1]}],
    "batch_input": [{"kind": "BATCH_ACCUMULATED_ELEMENT_COUNT", "target_name": ["IDX", "IDX2"],
                     "data_type": "TYPE_FP32", "source_input": ["IN"]},
                    {"target_name": ["N"], "data_type": "TYPE_INT32", "source_input": ["IN"]}],
    "batch_output": [{"target_name": ["OUT"], "kind": "BATCH_SCATTER_WITH_INPUT_SHAPE",
                      "source_input": ["IN"]}]
  })");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->inputs[0].ragged);
  EXPECT_FALSE(config->inputs[1].ragged);
  EXPECT_THAT(ModelSideShape(config->inputs[0], 4), ElementsAre(-1));  // flat, no batch dim
  EXPECT_THAT(ModelSideShape(config->inputs[1], 4), ElementsAre(-1, 2));
  ASSERT_EQ(config->batch_inputs.size(), 2u);
  EXPECT_EQ(config->batch_inputs[0].kind, "BATCH_ACCUMULATED_ELEMENT_COUNT");
  EXPECT_THAT(config->batch_inputs[0].target_names, ElementsAre("IDX", "IDX2"));
  EXPECT_EQ(config->batch_inputs[0].data_type, DataType::kFp32);
  EXPECT_EQ(config->batch_inputs[0].source_input, "IN");
  EXPECT_EQ(config->batch_inputs[1].kind, "BATCH_ELEMENT_COUNT");
  EXPECT_TRUE(config->IsBatchOutput("OUT"));
  EXPECT_FALSE(config->IsBatchOutput("IN"));
}

TEST(BackendConfigReaderTest, EmptyObjectGivesDefaults) {
  StatusOr<ModelConfig> config = ParseModelConfig("{}");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_batch_size, 0);
  EXPECT_TRUE(config->inputs.empty());
  EXPECT_EQ(config->graph_optimization_level, 0);
}

TEST(BackendConfigReaderTest, InvalidTypeIsKeptAsInvalid) {
  StatusOr<ModelConfig> config =
      ParseModelConfig(R"({"input":[{"name":"A","data_type":"TYPE_INVALID","dims":[]}]})");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->inputs[0].data_type, DataType::kInvalid);
}

TEST(BackendConfigReaderTest, RejectsMalformedConfigs) {
  const char* bad[] = {
      "",
      "[1]",
      "{\"max_batch_size\": \"x\"}",
      "{\"max_batch_size\": -1}",
      "{\"input\": {}}",
      "{\"input\": [{\"data_type\": \"TYPE_FP32\"}]}",
      "{\"input\": [{\"name\": \"A\", \"data_type\": \"TYPE_NOPE\"}]}",
      "{\"input\": [{\"name\": \"A\", \"dims\": [1.5]}]}",
      "{\"output\": [{\"name\": \"A\", \"reshape\": {\"shape\": \"x\"}}]}",
      "{\"parameters\": []}",
  };
  for (const char* json : bad) {
    StatusOr<ModelConfig> config = ParseModelConfig(json);
    ASSERT_FALSE(config.ok()) << json;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(config.status().message(), HasSubstr("model configuration")) << json;
  }
}

TEST(BackendConfigReaderTest, ModelSideShapeUsesReshapeAndBatchDimension) {
  IoConfig io;
  io.dims = {16};
  EXPECT_THAT(ModelSideShape(io, 0), ElementsAre(16));
  EXPECT_THAT(ModelSideShape(io, 4), ElementsAre(-1, 16));
  io.reshape = std::vector<int64_t>{4, 4};
  EXPECT_THAT(ModelSideShape(io, 0), ElementsAre(4, 4));
  EXPECT_THAT(ModelSideShape(io, 4), ElementsAre(-1, 4, 4));
  io.reshape = std::vector<int64_t>{};
  EXPECT_THAT(ModelSideShape(io, 4), ElementsAre(-1));
}

TEST(BackendConfigReaderTest, IntParameter) {
  ModelConfig config;
  config.parameters = {{"n", "3"}, {"neg", "-1"}, {"junk", "3x"}, {"empty", ""}};
  EXPECT_EQ(*IntParameter(config, "n", 1, 0, 10), 3);
  EXPECT_EQ(*IntParameter(config, "absent", 7, 0, 10), 7);
  EXPECT_FALSE(IntParameter(config, "neg", 1, 0, 10).ok());
  EXPECT_FALSE(IntParameter(config, "n", 1, 0, 2).ok());
  EXPECT_FALSE(IntParameter(config, "junk", 1, 0, 10).ok());
  StatusOr<int64_t> empty = IntParameter(config, "empty", 1, 0, 10);
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("parameter 'empty'"));
}

TEST(BackendConfigReaderTest, BoolParameter) {
  ModelConfig config;
  config.parameters = {{"a", "1"}, {"b", "True"}, {"c", "off"}, {"d", "0"}, {"e", "maybe"}};
  EXPECT_TRUE(*BoolParameter(config, "a", false));
  EXPECT_TRUE(*BoolParameter(config, "b", false));
  EXPECT_FALSE(*BoolParameter(config, "c", true));
  EXPECT_FALSE(*BoolParameter(config, "d", true));
  EXPECT_TRUE(*BoolParameter(config, "absent", true));
  EXPECT_FALSE(BoolParameter(config, "e", true).ok());
}

TEST(BackendConfigReaderTest, ShapeToString) {
  EXPECT_EQ(ShapeToString(std::vector<int64_t>{}), "[]");
  EXPECT_EQ(ShapeToString(std::vector<int64_t>{-1, 16}), "[-1,16]");
}

}  // namespace
}  // namespace nereid::backends
