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
