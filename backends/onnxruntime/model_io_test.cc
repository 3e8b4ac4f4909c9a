#include "onnxruntime/model_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nereid::backends::ort {
namespace {

using ::testing::HasSubstr;

ModelIo SimpleIo() {
  return {{{"INPUT0", DataType::kInt32, {-1, 16}}, {"INPUT1", DataType::kInt32, {-1, 16}}},
          {{"OUTPUT0", DataType::kInt32, {-1, 16}}, {"OUTPUT1", DataType::kInt32, {-1, 16}}}};
}

IoConfig Io(std::string name, DataType type, std::vector<int64_t> dims) {
  IoConfig io;
  io.name = std::move(name);
  io.data_type = type;
  io.dims = std::move(dims);
  return io;
}

ModelConfig SimpleConfig() {
  ModelConfig config;
  config.name = "simple";
  config.max_batch_size = 8;
  config.inputs = {Io("INPUT0", DataType::kInt32, {16}), Io("INPUT1", DataType::kInt32, {16})};
  config.outputs = {Io("OUTPUT0", DataType::kInt32, {16})};  // a subset of outputs is fine
  return config;
}

TEST(OrtModelIoTest, ModelCanBatch) {
  EXPECT_TRUE(ModelCanBatch(SimpleIo()));
  ModelIo fixed = SimpleIo();
  fixed.inputs[1].shape = {2, 16};
  EXPECT_FALSE(ModelCanBatch(fixed));
  ModelIo scalar = SimpleIo();
  scalar.outputs[0].shape = {};
  EXPECT_FALSE(ModelCanBatch(scalar));
  EXPECT_FALSE(ModelCanBatch(ModelIo{}));
}

TEST(OrtModelIoTest, AcceptsMatchingConfig) {
  EXPECT_TRUE(ValidateModelIo("simple", SimpleConfig(), SimpleIo()).ok());
}

// Triton's ragged model: IN [-1] ragged, INDEX a batch input, OUT [-1] scattered.
ModelIo RaggedIo() {
  return {{{"IN", DataType::kFp32, {-1}}, {"INDEX", DataType::kInt32, {-1}}},
          {{"SUM", DataType::kFp32, {-1, 1}}, {"OUT", DataType::kFp32, {-1}}}};
}

ModelConfig RaggedConfig() {
  ModelConfig config;
  config.name = "ragged";
  config.max_batch_size = 8;
  config.inputs = {Io("IN", DataType::kFp32, {-1})};
  config.inputs[0].ragged = true;
  config.outputs = {Io("SUM", DataType::kFp32, {1}), Io("OUT", DataType::kFp32, {-1})};
  config.batch_inputs = {{"BATCH_ACCUMULATED_ELEMENT_COUNT", {"INDEX"}, DataType::kInt32, "IN"}};
  config.batch_output_targets = {"OUT"};
  return config;
}

TEST(OrtModelIoTest, RaggedInputsSkipTheBatchDimension) {
  EXPECT_TRUE(ValidateModelIo("ragged", RaggedConfig(), RaggedIo()).ok());
  ModelIo batched = RaggedIo();
  batched.inputs[0].shape = {-1, -1};
  Status s = ValidateModelIo("ragged", RaggedConfig(), batched);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "unable to load model 'ragged', configuration expects model provides input with "
            "shape [-1]  for ragged input 'IN', model provides [-1,-1]");
}

TEST(OrtModelIoTest, BatchInputTargetsAreModelInputsOfTheirType) {
  ModelConfig no_batch_input = RaggedConfig();
  no_batch_input.batch_inputs.clear();
  EXPECT_THAT(ValidateModelIo("ragged", no_batch_input, RaggedIo()).message(),
              HasSubstr("model input 'INDEX' is missing from the model configuration"));
  ModelConfig unknown = RaggedConfig();
  unknown.batch_inputs[0].target_names = {"NOPE"};
  EXPECT_THAT(ValidateModelIo("ragged", unknown, RaggedIo()).message(),
              HasSubstr("unexpected inference input 'NOPE' (batch input), allowed inputs are: "
                        "IN, INDEX"));
  ModelConfig fp32 = RaggedConfig();
  fp32.batch_inputs[0].data_type = DataType::kFp32;
  EXPECT_THAT(ValidateModelIo("ragged", fp32, RaggedIo()).message(),
              HasSubstr("configuration expects datatype TYPE_FP32 for batch input 'INDEX', model "
                        "provides TYPE_INT32"));
}

TEST(OrtModelIoTest, BatchOutputShapeIsNotCompared) {
  ModelConfig config = RaggedConfig();
  config.outputs[1].dims = {-1, 3};
  EXPECT_TRUE(ValidateModelIo("ragged", config, RaggedIo()).ok());
  config.batch_output_targets.clear();
  EXPECT_FALSE(ValidateModelIo("ragged", config, RaggedIo()).ok());
}

TEST(OrtModelIoTest, AcceptsNonBatchingConfigWithFullShape) {
  ModelConfig config = SimpleConfig();
  config.max_batch_size = 0;
  config.inputs[0].dims = {4, 16};
  config.inputs[1].dims = {-1, -1};
  config.outputs[0].dims = {-1, 16};
  EXPECT_TRUE(ValidateModelIo("simple", config, SimpleIo()).ok());
}

TEST(OrtModelIoTest, ReshapeIsComparedInsteadOfDims) {
  ModelConfig config = SimpleConfig();
  config.inputs[0].dims = {4, 4};
  config.inputs[0].reshape = std::vector<int64_t>{16};
  EXPECT_TRUE(ValidateModelIo("simple", config, SimpleIo()).ok());
  config.inputs[0].reshape = std::vector<int64_t>{4, 4};
  EXPECT_FALSE(ValidateModelIo("simple", config, SimpleIo()).ok());
}

TEST(OrtModelIoTest, DatatypeMismatchReadsLikeTriton) {
  ModelConfig config = SimpleConfig();
  config.inputs[0].data_type = DataType::kFp32;
  Status status = ValidateModelIo("simple", config, SimpleIo());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "unable to load model 'simple', configuration expects datatype TYPE_FP32 for input "
            "'INPUT0', model provides TYPE_INT32");
}

TEST(OrtModelIoTest, UnknownTensorListsTheModelNames) {
  ModelConfig config = SimpleConfig();
  config.inputs[1].name = "INPUTX";
  Status status = ValidateModelIo("simple", config, SimpleIo());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("unexpected inference input 'INPUTX'"));
  EXPECT_THAT(status.message(), HasSubstr("allowed inputs are: INPUT0, INPUT1"));
  config = SimpleConfig();
  config.outputs[0].name = "OUT";
  status = ValidateModelIo("simple", config, SimpleIo());
  EXPECT_THAT(status.message(), HasSubstr("allowed outputs are: OUTPUT0, OUTPUT1"));
}

TEST(OrtModelIoTest, EveryModelInputMustBeConfigured) {
  ModelConfig config = SimpleConfig();
  config.inputs.pop_back();
  Status status = ValidateModelIo("simple", config, SimpleIo());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("model input 'INPUT1' is missing"));
}

TEST(OrtModelIoTest, ShapeMismatch) {
  ModelConfig config = SimpleConfig();
  config.inputs[0].dims = {8};
  Status status = ValidateModelIo("simple", config, SimpleIo());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'INPUT0': the model expects 2 dimensions "
                                          "(shape [-1,16])"));
  EXPECT_THAT(status.message(), HasSubstr("complete shape [-1,8]"));
  config.inputs[0].dims = {16, 1};
  EXPECT_FALSE(ValidateModelIo("simple", config, SimpleIo()).ok());
  config.max_batch_size = 0;
  config.inputs[0].dims = {16};
  status = ValidateModelIo("simple", config, SimpleIo());
  EXPECT_THAT(status.message(), HasSubstr("specifies 1 dimensions (shape [16])"));
}

TEST(OrtModelIoTest, BatchingNeedsDynamicFirstDimension) {
  ModelIo io = SimpleIo();
  io.inputs[0].shape = {4, 16};
  Status status = ValidateModelIo("simple", SimpleConfig(), io);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("first dimension must be -1"));
}

}  // namespace
}  // namespace nereid::backends::ort
