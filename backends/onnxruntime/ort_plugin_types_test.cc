// Every supported datatype through a real ORT session (identity_types.onnx), BYTES parsing and
// serialization, and the plugin's auto-complete.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/config_json.h"
#include "common/testing/plugin_harness.h"
#include "onnxruntime/ort_plugin_fixture.h"

namespace nereid::backends::ort {
namespace {

using ::nereid::backends::testing::EncodeBytes;
using ::nereid::backends::testing::RecordingAllocator;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct TypeCase {
  const char* suffix;  // tensor name suffix in identity_types.onnx
  DataType type;
};

constexpr TypeCase kTypes[] = {
    {"BOOL", DataType::kBool},     {"UINT8", DataType::kUint8},   {"UINT16", DataType::kUint16},
    {"UINT32", DataType::kUint32}, {"UINT64", DataType::kUint64}, {"INT8", DataType::kInt8},
    {"INT16", DataType::kInt16},   {"INT32", DataType::kInt32},   {"INT64", DataType::kInt64},
    {"FP16", DataType::kFp16},     {"FP32", DataType::kFp32},     {"FP64", DataType::kFp64},
    {"BF16", DataType::kBf16},     {"STRING", DataType::kBytes}};

std::string TypesConfig() {
  std::string inputs, outputs;
  for (const TypeCase& t : kTypes) {
    const std::string type(DataTypeConfigName(t.type));
    if (!inputs.empty()) inputs += ',', outputs += ',';
    inputs += R"({"name":"IN_)" + std::string(t.suffix) + R"(","data_type":")" + type +
              R"(","dims":[-1]})";
    outputs += R"({"name":"OUT_)" + std::string(t.suffix) + R"(","data_type":")" + type +
               R"(","dims":[-1]})";
  }
  return R"({"name":"types","max_batch_size":4,"input":[)" + inputs + R"(],"output":[)" + outputs +
         "]}";
}

TEST_F(OrtPluginTest, EveryDatatypeRoundTrips) {
  auto model = Load("types", "identity_types.onnx", TypesConfig());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  ASSERT_NE(instance, nullptr);
  const std::vector<int64_t> shape{1, 3};
  std::vector<std::vector<char>> data;
  std::vector<backend::TensorRef> inputs;
  data.reserve(std::size(kTypes));
  for (const TypeCase& t : kTypes) {
    if (t.type == DataType::kBytes) {
      data.push_back(EncodeBytes({"", std::string("a\0b", 3), "hello"}));
    } else if (t.type == DataType::kBool) {
      data.push_back({1, 0, 1});
    } else {
      std::vector<char> bytes(3 * DataTypeByteSize(t.type));
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 1);
      data.push_back(bytes);
    }
    inputs.push_back({"", t.type, shape, data.back()});
  }
  std::vector<std::string> names;
  for (const TypeCase& t : kTypes) names.push_back(std::string("IN_") + t.suffix);
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i].name = names[i];
  RecordingAllocator out;
  Status status = instance->Execute({inputs, &out, 1});
  ASSERT_TRUE(status.ok()) << status.ToString();
  for (size_t i = 0; i < std::size(kTypes); ++i) {
    const auto& output = out.outputs[std::string("OUT_") + kTypes[i].suffix];
    EXPECT_EQ(output.data_type, kTypes[i].type) << kTypes[i].suffix;
    EXPECT_THAT(output.shape, ElementsAre(1, 3)) << kTypes[i].suffix;
    EXPECT_EQ(output.data, data[i]) << kTypes[i].suffix;
  }
}

TEST_F(OrtPluginTest, MalformedBytesInputIsRejected) {
  auto model = Load("types", "identity_types.onnx", TypesConfig());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  const std::vector<int64_t> shape{1, 2};
  const std::vector<std::vector<char>> bad = {
      {'\x05', 0, 0, 0, 'a'},                                // length past the end
      {'\x01', 0, 0, 0, 'a', '\x01', 0},                     // truncated prefix
      {'\x01', 0, 0, 0, 'a'},                                // one element short
      {'\x00', 0, 0, 0, '\x00', 0, 0, 0, '\x00', 0, 0, 0}};  // one element too many
  for (const std::vector<char>& data : bad) {
    std::vector<backend::TensorRef> inputs = {{"IN_STRING", DataType::kBytes, shape, data}};
    RecordingAllocator out({"OUT_STRING"});
    Status status = instance->Execute({inputs, &out, 1});
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), StartsWith("onnxruntime execute failure: input 'IN_STRING'"));
  }
}

TEST_F(OrtPluginTest, EmptyBatchOfStrings) {
  auto model = Load("types", "identity_types.onnx", TypesConfig());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  const std::vector<int64_t> shape{1, 0};
  std::vector<backend::TensorRef> inputs;
  std::vector<std::string> names;
  for (const TypeCase& t : kTypes) names.push_back(std::string("IN_") + t.suffix);
  for (size_t i = 0; i < names.size(); ++i) inputs.push_back({names[i], kTypes[i].type, shape, {}});
  RecordingAllocator out({"OUT_STRING", "OUT_FP32"});
  Status status = instance->Execute({inputs, &out, 1});
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THAT(out.outputs["OUT_STRING"].shape, ElementsAre(1, 0));
  EXPECT_TRUE(out.outputs["OUT_STRING"].data.empty());
  EXPECT_TRUE(out.outputs["OUT_FP32"].data.empty());
}

StatusOr<std::string> AutoComplete(backend::Backend& backend, const std::string& name,
                                   const std::string& path, const std::string& config) {
  backend::AutoCompleteOptions options;
  options.model_name = name;
  options.model_path = path;
  options.config_json = config;
  options.default_max_batch_size = 4;
  return backend.AutoCompleteConfig(options);
}

TEST_F(OrtPluginTest, AutoCompletesABatchableModelThatThenLoads) {
  StatusOr<std::string> completed =
      AutoComplete(*backend_, "add_sub", ModelPath("add_sub.onnx"), R"({"name":"add_sub"})");
  ASSERT_TRUE(completed.ok()) << completed.status().ToString();
  rapidjson::Document doc;
  ASSERT_TRUE(ParseJsonObject(*completed, "completed", &doc).ok());
  EXPECT_EQ(IntMember(doc, "max_batch_size", 0).value(), 4);
  EXPECT_EQ(StringMember(doc, "platform"), "onnxruntime_onnx");
  ASSERT_EQ(doc["input"].Size(), 2u);
  EXPECT_EQ(StringMember(doc["input"][1], "name"), "INPUT1");
  EXPECT_EQ(StringMember(doc["input"][1], "data_type"), "TYPE_INT32");
  EXPECT_THAT(IntArrayMember(doc["output"][0], "dims").value(), ElementsAre(16));
  auto model = Load("add_sub", "add_sub.onnx", *completed);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
}

TEST_F(OrtPluginTest, AutoCompletesAFixedShapeModel) {
  StatusOr<std::string> completed =
      AutoComplete(*backend_, "relu", ModelPath("fixed_relu.onnx"), "{}");
  ASSERT_TRUE(completed.ok()) << completed.status().ToString();
  rapidjson::Document doc;
  ASSERT_TRUE(ParseJsonObject(*completed, "completed", &doc).ok());
  EXPECT_EQ(IntMember(doc, "max_batch_size", 0).value(), 0);
  EXPECT_THAT(IntArrayMember(doc["input"][0], "dims").value(), ElementsAre(2, 3));
  EXPECT_EQ(StringMember(doc["output"][0], "data_type"), "TYPE_FP32");
  auto model = Load("relu", "fixed_relu.onnx", *completed);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  std::vector<float> x{-1, 2, -3, 4, -5, 6};
  std::vector<char> raw = testing::RawBytes(x);
  const std::vector<int64_t> shape{2, 3};
  std::vector<backend::TensorRef> inputs = {{"X", DataType::kFp32, shape, raw}};
  RecordingAllocator out;
  ASSERT_TRUE(instance->Execute({inputs, &out, 0}).ok());
  EXPECT_THAT(testing::FromRaw<float>(out.outputs["Y"].data), ElementsAre(0, 2, 0, 4, 0, 6));
}

TEST_F(OrtPluginTest, AutoCompleteErrors) {
  StatusOr<std::string> bad = AutoComplete(*backend_, "bad", ModelPath("not_onnx.onnx"), "{}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), StartsWith("failed to load model 'bad': "));
  StatusOr<std::string> gone = AutoComplete(*backend_, "gone", ModelPath("nope.onnx"), "{}");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(gone.status().message(), HasSubstr("nope.onnx"));
  StatusOr<std::string> json = AutoComplete(*backend_, "j", ModelPath("add_sub.onnx"), "{");
  EXPECT_EQ(json.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace nereid::backends::ort
