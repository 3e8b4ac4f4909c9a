// Loads libnereid_onnxruntime.so with dlopen, as the core does, and runs the tiny models that
// testdata/make_models.py writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/plugin_harness.h"
#include "onnxruntime/ort_plugin_fixture.h"

namespace nereid::backends::ort {
namespace {

using ::nereid::backends::testing::EncodeBytes;
using ::nereid::backends::testing::FromRaw;
using ::nereid::backends::testing::Plugin;
using ::nereid::backends::testing::RawBytes;
using ::nereid::backends::testing::RecordingAllocator;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kAddSubConfig[] = R"({"name":"add_sub","platform":"onnxruntime_onnx",
  "backend":"onnxruntime","max_batch_size":8,
  "input":[{"name":"INPUT0","data_type":"TYPE_INT32","format":"FORMAT_NONE","dims":[16],
            "is_shape_tensor":false,"allow_ragged_batch":false,"optional":false},
           {"name":"INPUT1","data_type":"TYPE_INT32","format":"FORMAT_NONE","dims":[16],
            "is_shape_tensor":false,"allow_ragged_batch":false,"optional":false}],
  "output":[{"name":"OUTPUT0","data_type":"TYPE_INT32","dims":[16],"label_filename":""},
            {"name":"OUTPUT1","data_type":"TYPE_INT32","dims":[16],"label_filename":""}],
  "default_model_filename":"model.onnx",
  "parameters":{"intra_op_thread_count":{"string_value":"1"}}})";

// Batch of 2 rows: INPUT0[i] = i, INPUT1[i] = 1 (+ row).
struct AddSubRequest {
  AddSubRequest() {
    for (int i = 0; i < 32; ++i) {
      in0.push_back(i);
      in1.push_back(1 + i / 16);
    }
    raw0 = RawBytes(in0);
    raw1 = RawBytes(in1);
    inputs = {{"INPUT1", DataType::kInt32, shape, raw1}, {"INPUT0", DataType::kInt32, shape, raw0}};
  }
  backend::ExecuteArgs Args(RecordingAllocator* out) { return {inputs, out, 2}; }

  std::vector<int32_t> in0, in1;
  std::vector<char> raw0, raw1;
  std::vector<int64_t> shape{2, 16};
  std::vector<backend::TensorRef> inputs;
};

TEST_F(OrtPluginTest, ApiVersionAndInfo) {
  EXPECT_EQ(plugin_->ApiVersion(), backend::kBackendApiVersion);
  backend::BackendInfo info = backend_->Info();
  EXPECT_EQ(info.name, "onnxruntime");
  EXPECT_THAT(info.platforms, ElementsAre("onnxruntime_onnx"));
  EXPECT_EQ(info.default_model_filename, "model.onnx");
  EXPECT_TRUE(info.supports_auto_complete);
}

TEST_F(OrtPluginTest, ExecutesAddSub) {
  auto model = Load("add_sub", "add_sub.onnx", kAddSubConfig);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  ASSERT_NE(instance, nullptr);
  AddSubRequest request;
  for (int round = 0; round < 2; ++round) {  // scratch reuse across calls
    RecordingAllocator out;
    Status status = instance->Execute(request.Args(&out));
    ASSERT_TRUE(status.ok()) << status.ToString();
    ASSERT_EQ(out.outputs.size(), 2u);
    const auto& sum = out.outputs["OUTPUT0"];
    EXPECT_EQ(sum.data_type, DataType::kInt32);
    EXPECT_THAT(sum.shape, ElementsAre(2, 16));
    std::vector<int32_t> expected_sum, expected_diff;
    for (size_t i = 0; i < 32; ++i) {
      expected_sum.push_back(request.in0[i] + request.in1[i]);
      expected_diff.push_back(request.in0[i] - request.in1[i]);
    }
    EXPECT_THAT(FromRaw<int32_t>(sum.data), ElementsAreArray(expected_sum));
    EXPECT_THAT(FromRaw<int32_t>(out.outputs["OUTPUT1"].data), ElementsAreArray(expected_diff));
  }
}

TEST_F(OrtPluginTest, WritesOnlyRequestedOutputs) {
  auto model = Load("add_sub", "add_sub.onnx", kAddSubConfig);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  AddSubRequest request;
  RecordingAllocator out({"OUTPUT1"});
  ASSERT_TRUE(instance->Execute(request.Args(&out)).ok());
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs.begin()->first, "OUTPUT1");
  // When nothing is requested, everything is produced.
  RecordingAllocator none({"NOT_AN_OUTPUT"});
  ASSERT_TRUE(instance->Execute(request.Args(&none)).ok());
  EXPECT_EQ(none.outputs.size(), 2u);
}

TEST_F(OrtPluginTest, SeveralInstancesAndParameters) {
  std::string config = kAddSubConfig;
  config.replace(config.find(R"("intra_op_thread_count":{"string_value":"1"})"),
                 std::string(R"("intra_op_thread_count":{"string_value":"1"})").size(),
                 R"("intra_op_thread_count":{"string_value":"0"},
                    "allow_spinning":{"string_value":"true"},
                    "session.use_env_allocators":{"string_value":"0"})");
  config.insert(config.rfind('}'), R"(,"optimization":{"graph":{"level":1}})");
  auto model = Load("add_sub", "add_sub.onnx", config);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto first = Instance(**model, 0);
  auto second = Instance(**model, 1);  // opens a new session
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  AddSubRequest request;
  RecordingAllocator a, b;
  ASSERT_TRUE(first->Execute(request.Args(&a)).ok());
  ASSERT_TRUE(second->Execute(request.Args(&b)).ok());
  EXPECT_EQ(a.outputs["OUTPUT0"].data, b.outputs["OUTPUT0"].data);
}

TEST_F(OrtPluginTest, BadParameterFailsLoad) {
  std::string config = kAddSubConfig;
  config.replace(config.find(R"("string_value":"1")"), std::string(R"("string_value":"1")").size(),
                 R"("string_value":"many")");
  auto model = Load("add_sub", "add_sub.onnx", config);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("intra_op_thread_count"));
}

// Triton's enable_mem_arena / enable_mem_pattern: applied when present, a non-boolean fails the
// load naming the parameter.
TEST_F(OrtPluginTest, MemoryArenaAndPatternParameters) {
  for (const char* value : {"0", "false", "1", "true"}) {
    std::string config = kAddSubConfig;
    config.replace(config.find(R"("intra_op_thread_count":{"string_value":"1"})"),
                   std::string(R"("intra_op_thread_count":{"string_value":"1"})").size(),
                   std::string(R"("enable_mem_arena":{"string_value":")") + value +
                       R"("},"enable_mem_pattern":{"string_value":")" + value + R"("})");
    auto model = Load("add_sub", "add_sub.onnx", config);
    ASSERT_TRUE(model.ok()) << value << ": " << model.status().ToString();
    auto instance = Instance(**model, 0);
    ASSERT_NE(instance, nullptr);
    AddSubRequest request;
    RecordingAllocator out;
    ASSERT_TRUE(instance->Execute(request.Args(&out)).ok()) << value;
    EXPECT_EQ(out.outputs.size(), 2u);
  }
  for (const char* key : {"enable_mem_arena", "enable_mem_pattern"}) {
    std::string config = kAddSubConfig;
    config.replace(config.find(R"("intra_op_thread_count":{"string_value":"1"})"),
                   std::string(R"("intra_op_thread_count":{"string_value":"1"})").size(),
                   std::string("\"") + key + R"(":{"string_value":"sometimes"})");
    auto model = Load("add_sub", "add_sub.onnx", config);
    ASSERT_FALSE(model.ok()) << key;
    EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(model.status().message(), HasSubstr(std::string("parameter '") + key +
                                                    "' must be a boolean, got 'sometimes'"));
  }
}

TEST_F(OrtPluginTest, NotOnnxFileIsInvalidArgument) {
  auto model = Load("bad", "not_onnx.onnx", kAddSubConfig);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), StartsWith("failed to load model 'bad': "));
}

TEST_F(OrtPluginTest, MissingFileIsNotFound) {
  auto model = Load("gone", "no_such_model.onnx", kAddSubConfig);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr(ModelPath("no_such_model.onnx")));
}

TEST_F(OrtPluginTest, DatatypeMismatchFailsLoad) {
  std::string config = kAddSubConfig;
  config.replace(config.find("TYPE_INT32"), 10, "TYPE_FP32");
  auto model = Load("add_sub", "add_sub.onnx", config);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "unable to load model 'add_sub', configuration expects datatype TYPE_FP32 for input "
            "'INPUT0', model provides TYPE_INT32");
}

TEST_F(OrtPluginTest, ShapeMismatchFailsLoad) {
  std::string config = kAddSubConfig;
  config.replace(config.find("[16]"), 4, "[8]");
  auto model = Load("add_sub", "add_sub.onnx", config);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("tensor 'INPUT0'"));
}

TEST_F(OrtPluginTest, ExecuteErrorsLeaveTheInstanceUsable) {
  auto model = Load("add_sub", "add_sub.onnx", kAddSubConfig);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  AddSubRequest request;
  // A shape the model does not accept: ORT rejects the input.
  std::vector<int64_t> narrow_shape{1, 8};
  std::vector<backend::TensorRef> narrow = request.inputs;
  narrow[0].shape = narrow_shape;
  narrow[0].data = std::span<const char>(request.raw1).first(32);
  RecordingAllocator out;
  Status status = instance->Execute({narrow, &out, 2});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), StartsWith("onnxruntime execute failure: "));
  // Batch sizes that cannot broadcast: the Add kernel fails.
  std::vector<int64_t> tall_shape{3, 16};
  std::vector<char> tall_data(3 * 16 * sizeof(int32_t), 0);
  std::vector<backend::TensorRef> tall = request.inputs;
  tall[0].shape = tall_shape;
  tall[0].data = tall_data;
  status = instance->Execute({tall, &out, 3});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), StartsWith("onnxruntime execute failure: "));
  EXPECT_TRUE(out.outputs.empty());
  // Byte size that does not match the shape.
  std::vector<backend::TensorRef> short_data = request.inputs;
  short_data[1].data = std::span<const char>(request.raw0).first(100);
  status = instance->Execute({short_data, &out, 2});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), StartsWith("onnxruntime execute failure: "));
  // Wrong datatype and unknown input.
  std::vector<backend::TensorRef> wrong_type = request.inputs;
  wrong_type[0].data_type = DataType::kFp32;
  EXPECT_EQ(instance->Execute({wrong_type, &out, 2}).code(), StatusCode::kInvalidArgument);
  std::vector<backend::TensorRef> unknown = request.inputs;
  unknown[0].name = "NOPE";
  EXPECT_EQ(instance->Execute({unknown, &out, 2}).code(), StatusCode::kInvalidArgument);
  RecordingAllocator good;
  ASSERT_TRUE(instance->Execute(request.Args(&good)).ok());
  EXPECT_EQ(good.outputs.size(), 2u);
}

}  // namespace
}  // namespace nereid::backends::ort
