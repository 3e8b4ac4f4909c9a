// Loads libnereid_identity.so with dlopen, as the core does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/plugin_harness.h"

namespace nereid::backends::identity {
namespace {

using ::nereid::backends::testing::EncodeBytes;
using ::nereid::backends::testing::Plugin;
using ::nereid::backends::testing::RawBytes;
using ::nereid::backends::testing::RecordingAllocator;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kConfig[] = R"({"name":"id","backend":"identity","max_batch_size":8,
  "input":[{"name":"INPUT0","data_type":"TYPE_FP32","dims":[-1]},
           {"name":"INPUT1","data_type":"TYPE_STRING","dims":[-1]},
           {"name":"EXTRA","data_type":"TYPE_INT8","dims":[1]}],
  "output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[-1]},
            {"name":"OUTPUT1","data_type":"TYPE_STRING","dims":[-1]}],
  "parameters":{}})";

// Runs first, before the fixture keeps the library open for the rest of the process.
TEST(IdentityPluginUnloadTest, UnloadsCleanly) {
  void* handle = dlopen(NEREID_IDENTITY_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto create = reinterpret_cast<NereidBackendCreateFn>(dlsym(handle, "NereidBackendCreate"));
  ASSERT_NE(create, nullptr);
  std::string error;
  backend::BackendOptions options;
  delete create(&options, &error);
  EXPECT_EQ(dlclose(handle), 0);
}

class IdentityPluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (plugin_ == nullptr) plugin_ = new Plugin(NEREID_IDENTITY_PLUGIN);
  }

  void SetUp() override {
    ASSERT_TRUE(plugin_->ok()) << plugin_->error();
    std::string error;
    backend_ = plugin_->Create(backend::BackendOptions{}, &error);
    ASSERT_NE(backend_, nullptr) << error;
  }

  StatusOr<std::unique_ptr<backend::Model>> Load(const std::string& config) {
    backend::ModelLoadOptions options;
    options.model_name = "id";
    options.version = 1;
    options.config_json = config;
    return backend_->LoadModel(options);
  }

  inline static Plugin* plugin_ = nullptr;
  std::unique_ptr<backend::Backend> backend_;
};

TEST_F(IdentityPluginTest, Info) {
  EXPECT_EQ(plugin_->ApiVersion(), backend::kBackendApiVersion);
  backend::BackendInfo info = backend_->Info();
  EXPECT_EQ(info.name, "identity");
  EXPECT_TRUE(info.platforms.empty());
  EXPECT_EQ(info.default_model_filename, "");
  EXPECT_FALSE(info.supports_auto_complete);
  EXPECT_EQ(backend_->AutoCompleteConfig({}).status().code(), StatusCode::kUnsupported);
}

TEST_F(IdentityPluginTest, CopiesInputsToOutputsByPosition) {
  auto model = Load(kConfig);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = (*model)->CreateInstance({"id_0", 0, "KIND_CPU", {}});
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  const std::vector<char> floats = RawBytes(std::vector<float>{1.5f, -2, 3, 4, 5, 6});
  const std::vector<char> strings = EncodeBytes({"a", "", "xyz", "q", "r", "s"});
  const std::vector<int64_t> float_shape{2, 3};
  const std::vector<int64_t> string_shape{3, 2};
  // Request order differs from config order: pairing is by config position, lookup by name.
  std::vector<backend::TensorRef> inputs = {{"INPUT1", DataType::kBytes, string_shape, strings},
                                            {"INPUT0", DataType::kFp32, float_shape, floats}};
  RecordingAllocator out;
  Status status = (*instance)->Execute({inputs, &out, 2});
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(out.outputs.size(), 2u);
  EXPECT_EQ(out.outputs["OUTPUT0"].data_type, DataType::kFp32);
  EXPECT_THAT(out.outputs["OUTPUT0"].shape, ElementsAre(2, 3));
  EXPECT_EQ(out.outputs["OUTPUT0"].data, floats);
  EXPECT_EQ(out.outputs["OUTPUT1"].data_type, DataType::kBytes);
  EXPECT_THAT(out.outputs["OUTPUT1"].shape, ElementsAre(3, 2));
  EXPECT_EQ(out.outputs["OUTPUT1"].data, strings);

  RecordingAllocator only({"OUTPUT1"});
  ASSERT_TRUE((*instance)->Execute({inputs, &only, 2}).ok());
  ASSERT_EQ(only.outputs.size(), 1u);
  EXPECT_EQ(only.outputs.begin()->first, "OUTPUT1");

  // An unrequested output's input may be missing.
  std::vector<backend::TensorRef> just_strings = {inputs[0]};
  RecordingAllocator strings_only({"OUTPUT1"});
  EXPECT_TRUE((*instance)->Execute({just_strings, &strings_only, 2}).ok());
  RecordingAllocator both;
  Status missing = (*instance)->Execute({just_strings, &both, 2});
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("input 'INPUT0' is required for output 'OUTPUT0'"));
}

TEST_F(IdentityPluginTest, EmptyTensor) {
  auto model = Load(kConfig);
  ASSERT_TRUE(model.ok());
  auto instance = (*model)->CreateInstance({"id_0", 0, "KIND_CPU", {}});
  const std::vector<int64_t> shape{1, 0};
  std::vector<backend::TensorRef> inputs = {{"INPUT0", DataType::kFp32, shape, {}}};
  RecordingAllocator out({"OUTPUT0"});
  ASSERT_TRUE((*instance)->Execute({inputs, &out, 1}).ok());
  EXPECT_TRUE(out.outputs["OUTPUT0"].data.empty());
  EXPECT_THAT(out.outputs["OUTPUT0"].shape, ElementsAre(1, 0));
}

TEST_F(IdentityPluginTest, FewerInputsThanOutputsFailsLoad) {
  auto model = Load(R"({"input":[{"name":"I","data_type":"TYPE_FP32","dims":[1]}],
    "output":[{"name":"A","data_type":"TYPE_FP32","dims":[1]},
              {"name":"B","data_type":"TYPE_FP32","dims":[1]}]})");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("1 inputs and 2 outputs"));
}

TEST_F(IdentityPluginTest, DatatypeMismatchFailsLoad) {
  auto model = Load(R"({"input":[{"name":"I","data_type":"TYPE_INT32","dims":[1]}],
    "output":[{"name":"O","data_type":"TYPE_FP32","dims":[1]}]})");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "unable to load model 'id', identity output 'O' (TYPE_FP32) must have the datatype "
            "of input 'I' (TYPE_INT32)");
}

TEST_F(IdentityPluginTest, BadConfigFailsLoad) {
  EXPECT_EQ(Load("{").status().code(), StatusCode::kInvalidArgument);
  auto model = Load(R"({"parameters":{"execute_delay_ms":{"string_value":"-5"}}})");
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("execute_delay_ms"));
}

TEST_F(IdentityPluginTest, ExecuteDelay) {
  auto model = Load(R"({"input":[{"name":"I","data_type":"TYPE_INT8","dims":[1]}],
    "output":[{"name":"O","data_type":"TYPE_INT8","dims":[1]}],
    "parameters":{"execute_delay_ms":{"string_value":"20"}}})");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = (*model)->CreateInstance({"id_0", 0, "KIND_CPU", {}});
  const std::vector<char> data{7};
  const std::vector<int64_t> shape{1};
  std::vector<backend::TensorRef> inputs = {{"I", DataType::kInt8, shape, data}};
  RecordingAllocator out;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*instance)->Execute({inputs, &out, 0}).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
  EXPECT_EQ(out.outputs["O"].data, data);
}

}  // namespace
}  // namespace nereid::backends::identity
