// Loads libnereid_pytorch.so with dlopen, as the core does (which loads its LibTorch runtime on
// the first model load), and runs the TorchScript modules scripts/torch_models.py writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/plugin_harness.h"
#include "nereid/backend_api.h"

namespace nereid::backends::pytorch {
namespace {

using ::nereid::backends::testing::EncodeBytes;
using ::nereid::backends::testing::FromRaw;
using ::nereid::backends::testing::Plugin;
using ::nereid::backends::testing::RawBytes;
using ::nereid::backends::testing::RecordingAllocator;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string Tensor(const std::string& name, const std::string& type, const std::string& dims,
                   const std::string& extra = "") {
  return R"({"name":")" + name + R"(","data_type":")" + type + R"(","dims":)" + dims + extra + "}";
}

std::string Config(const std::string& name, int max_batch_size, const std::string& inputs,
                   const std::string& outputs, const std::string& more = "") {
  return R"({"name":")" + name + R"(","platform":"pytorch_libtorch","backend":"pytorch",)" +
         R"("max_batch_size":)" + std::to_string(max_batch_size) + R"(,"input":[)" + inputs +
         R"(],"output":[)" + outputs + "]" + more + "}";
}

std::string AddSubConfig(const std::string& extra = "") {
  return Config(
      "add_sub", 8,
      Tensor("INPUT__0", "TYPE_INT32", "[4]") + "," + Tensor("INPUT__1", "TYPE_INT32", "[4]"),
      Tensor("OUTPUT__0", "TYPE_INT32", "[4]") + "," + Tensor("OUTPUT__1", "TYPE_INT32", "[4]"),
      extra);
}

class TorchPluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (plugin_ == nullptr) plugin_ = new Plugin(NEREID_PYTORCH_PLUGIN);
  }

  void SetUp() override {
    ASSERT_TRUE(plugin_->ok()) << plugin_->error();
    backend::BackendOptions options;
    options.log = [this](backend::LogLevel, std::string_view m) { log_.emplace_back(m); };
    std::string error;
    backend_ = plugin_->Create(options, &error);
    ASSERT_NE(backend_, nullptr) << error;
  }

  StatusOr<std::unique_ptr<backend::Model>> Load(const std::string& file,
                                                 const std::string& config) {
    backend::ModelLoadOptions options;
    options.model_name = "m";
    options.version = 1;
    options.model_path = std::string(NEREID_PYTORCH_TEST_MODELS) + "/" + file;
    options.config_json = config;
    return backend_->LoadModel(options);
  }

  std::unique_ptr<backend::ModelInstance> Instance(backend::Model& model, int index = 0) {
    auto instance = model.CreateInstance({"m_" + std::to_string(index), index, "KIND_CPU", {}});
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
    return instance.ok() ? std::move(instance).value() : nullptr;
  }

  inline static Plugin* plugin_ = nullptr;  // never unloaded, as in the server
  std::unique_ptr<backend::Backend> backend_;
  std::vector<std::string> log_;
};

TEST_F(TorchPluginTest, InfoNamesTritonsPlatformAndFile) {
  backend::BackendInfo info = backend_->Info();
  EXPECT_EQ(info.name, "pytorch");
  EXPECT_THAT(info.platforms, ElementsAre("pytorch_libtorch"));
  EXPECT_EQ(info.default_model_filename, "model.pt");
  EXPECT_EQ(info.default_cpu_instance_count, 1);
}

TEST_F(TorchPluginTest, AutoCompleteLeavesTheConfigAndWarnsLikeTriton) {
  backend::AutoCompleteOptions options;
  options.model_name = "m";
  options.config_json = R"({"name":"m"})";
  auto completed = backend_->AutoCompleteConfig(options);
  ASSERT_TRUE(completed.ok());
  EXPECT_EQ(*completed, options.config_json);
  ASSERT_FALSE(log_.empty());
  EXPECT_EQ(
      log_.back(),
      "skipping model configuration auto-complete for 'm': not supported for pytorch backend");
}

TEST_F(TorchPluginTest, ExecutesAddSubByNamedIndex) {
  auto model = Load("add_sub.pt", AddSubConfig());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  ASSERT_NE(instance, nullptr);
  std::vector<int32_t> a{1, 2, 3, 4, 5, 6, 7, 8}, b{10, 10, 10, 10, 1, 1, 1, 1};
  auto ra = RawBytes(a), rb = RawBytes(b);
  std::vector<int64_t> shape{2, 4};
  // Request order differs from argument order: the names decide.
  std::vector<backend::TensorRef> inputs{{"INPUT__1", DataType::kInt32, shape, rb},
                                         {"INPUT__0", DataType::kInt32, shape, ra}};
  for (int round = 0; round < 2; ++round) {
    RecordingAllocator out;
    Status status = instance->Execute({inputs, &out, 2});
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_THAT(out.outputs["OUTPUT__0"].shape, ElementsAre(2, 4));
    EXPECT_THAT(FromRaw<int32_t>(out.outputs["OUTPUT__0"].data),
                ElementsAre(11, 12, 13, 14, 6, 7, 8, 9));
    EXPECT_THAT(FromRaw<int32_t>(out.outputs["OUTPUT__1"].data),
                ElementsAre(-9, -8, -7, -6, 4, 5, 6, 7));
  }
  RecordingAllocator only_diff({"OUTPUT__1"});
  ASSERT_TRUE(instance->Execute({inputs, &only_diff, 2}).ok());
  EXPECT_EQ(only_diff.outputs.size(), 1u);
}

TEST_F(TorchPluginTest, ForwardArgumentNamesMapByName) {
  auto config =
      Config("named", 0,
             Tensor("subtrahend", "TYPE_FP32", "[2]") + "," + Tensor("minuend", "TYPE_FP32", "[2]"),
             Tensor("OUTPUT__0", "TYPE_FP32", "[2]"));
  auto model = Load("named_args.pt", config);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  std::vector<float> m{5, 7}, s{1, 2};
  auto rm = RawBytes(m), rs = RawBytes(s);
  std::vector<int64_t> shape{2};
  std::vector<backend::TensorRef> inputs{{"minuend", DataType::kFp32, shape, rm},
                                         {"subtrahend", DataType::kFp32, shape, rs}};
  RecordingAllocator out;
  ASSERT_TRUE(instance->Execute({inputs, &out, 0}).ok());
  EXPECT_THAT(FromRaw<float>(out.outputs["OUTPUT__0"].data), ElementsAre(4, 5));
}

TEST_F(TorchPluginTest, DictInputAndStrings) {
  auto dict =
      Load("dict_input.pt",
           Config("d", 0, Tensor("x", "TYPE_INT64", "[2]") + "," + Tensor("y", "TYPE_INT64", "[2]"),
                  Tensor("OUTPUT__0", "TYPE_INT64", "[2]")));
  ASSERT_TRUE(dict.ok()) << dict.status().ToString();
  auto di = Instance(**dict);
  std::vector<int64_t> x{10, 20}, y{1, 2};
  auto rx = RawBytes(x), ry = RawBytes(y);
  std::vector<int64_t> shape{2};
  std::vector<backend::TensorRef> inputs{{"y", DataType::kInt64, shape, ry},
                                         {"x", DataType::kInt64, shape, rx}};
  RecordingAllocator out;
  ASSERT_TRUE(di->Execute({inputs, &out, 0}).ok());
  EXPECT_THAT(FromRaw<int64_t>(out.outputs["OUTPUT__0"].data), ElementsAre(9, 18));

  auto strings = Load("strings.pt", Config("s", 0, Tensor("INPUT__0", "TYPE_STRING", "[-1]"),
                                           Tensor("OUTPUT__0", "TYPE_STRING", "[-1]") + "," +
                                               Tensor("OUTPUT__1", "TYPE_INT64", "[-1]")));
  ASSERT_TRUE(strings.ok()) << strings.status().ToString();
  auto si = Instance(**strings);
  auto raw = EncodeBytes({"ab", "", "xyz"});
  std::vector<int64_t> three{3};
  std::vector<backend::TensorRef> in{{"INPUT__0", DataType::kBytes, three, raw}};
  RecordingAllocator sout;
  Status status = si->Execute({in, &sout, 0});
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(sout.outputs["OUTPUT__0"].data, EncodeBytes({"AB", "", "XYZ"}));
  EXPECT_THAT(sout.outputs["OUTPUT__0"].shape, ElementsAre(3));
  EXPECT_THAT(FromRaw<int64_t>(sout.outputs["OUTPUT__1"].data), ElementsAre(2, 0, 3));
}

TEST_F(TorchPluginTest, ImplicitStateTensorsAreOrdinaryInputsAndOutputs) {
  // What the sequence batcher will hand the instance: the control and the state by name; the
  // state output is produced when asked for.
  auto config = Config("acc", 4, Tensor("INPUT__0", "TYPE_INT32", "[1]"),
                       Tensor("OUTPUT__0", "TYPE_INT32", "[1]"),
                       R"(,"sequence_batching":{"control_input":[{"name":"START__1","control":[
                         {"kind":"CONTROL_SEQUENCE_START","int32_false_true":[0,1]}]}],
                         "state":[{"input_name":"STATE__2","output_name":"OUTPUT_STATE__1",
                                   "data_type":"TYPE_INT32","dims":[1]}]})");
  auto model = Load("accumulator.pt", config);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  std::vector<int64_t> shape{1, 1};
  int32_t state = -999;  // garbage on the first request, as Triton gives without initial_state
  for (int32_t value : {5, 7, 11}) {
    const int32_t start = value == 5 ? 1 : 0;
    auto rv = RawBytes(std::vector<int32_t>{value});
    auto rs = RawBytes(std::vector<int32_t>{start});
    auto rst = RawBytes(std::vector<int32_t>{state});
    std::vector<backend::TensorRef> in{{"INPUT__0", DataType::kInt32, shape, rv},
                                       {"START__1", DataType::kInt32, shape, rs},
                                       {"STATE__2", DataType::kInt32, shape, rst}};
    RecordingAllocator out;
    Status status = instance->Execute({in, &out, 1});
    ASSERT_TRUE(status.ok()) << status.ToString();
    state = FromRaw<int32_t>(out.outputs["OUTPUT_STATE__1"].data).at(0);
    EXPECT_EQ(FromRaw<int32_t>(out.outputs["OUTPUT__0"].data).at(0), state);
  }
  EXPECT_EQ(state, 5 + 7 + 11);
}

TEST_F(TorchPluginTest, LoadErrors) {
  auto missing = Load("no_such.pt", AddSubConfig());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("unable to find"));
  auto garbage = Load("not_torchscript.pt", AddSubConfig());
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), StartsWith("failed to load model 'm': "));
  EXPECT_THAT(garbage.status().message(), Not(HasSubstr("frame #")));
  auto three = Load("add_sub.pt", Config("m", 8,
                                         Tensor("INPUT__0", "TYPE_INT32", "[4]") + "," +
                                             Tensor("INPUT__1", "TYPE_INT32", "[4]") + "," +
                                             Tensor("INPUT__2", "TYPE_INT32", "[4]"),
                                         Tensor("OUTPUT__0", "TYPE_INT32", "[4]")));
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.status().message(),
            "unable to load model 'm', configuration expects 3 inputs, model provides 2");
  auto dict_out = Load("returns_dict.pt", Config("m", 0, Tensor("INPUT__0", "TYPE_FP32", "[2]"),
                                                 Tensor("OUTPUT__0", "TYPE_FP32", "[2]")));
  ASSERT_FALSE(dict_out.ok());
  EXPECT_THAT(dict_out.status().message(), HasSubstr("returns Dict(str, Tensor)"));
  auto bad_param =
      Load("add_sub.pt",
           AddSubConfig(R"(,"parameters":{"INTRA_OP_THREAD_COUNT":{"string_value":"many"}})"));
  ASSERT_FALSE(bad_param.ok());
  EXPECT_THAT(bad_param.status().message(), HasSubstr("INTRA_OP_THREAD_COUNT"));
}

TEST_F(TorchPluginTest, ExecuteErrorsLeaveTheInstanceUsable) {
  auto wrong_type = Load("to_float.pt", Config("m", 0, Tensor("INPUT__0", "TYPE_INT32", "[2]"),
                                               Tensor("OUTPUT__0", "TYPE_INT32", "[2]")));
  ASSERT_TRUE(wrong_type.ok()) << wrong_type.status().ToString();
  auto wi = Instance(**wrong_type);
  auto two = RawBytes(std::vector<int32_t>{1, 2});
  std::vector<int64_t> shape2{2};
  std::vector<backend::TensorRef> in2{{"INPUT__0", DataType::kInt32, shape2, two}};
  RecordingAllocator out;
  Status status = wi->Execute({in2, &out, 0});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "configuration expects datatype TYPE_INT32 for output 'OUTPUT__0', model provides "
            "TYPE_FP32");

  auto matmul = Load("matmul4.pt", Config("m", 8, Tensor("INPUT__0", "TYPE_FP32", "[-1]"),
                                          Tensor("OUTPUT__0", "TYPE_FP32", "[4]")));
  ASSERT_TRUE(matmul.ok()) << matmul.status().ToString();
  auto mi = Instance(**matmul);
  auto three = RawBytes(std::vector<float>{1, 2, 3});
  std::vector<int64_t> shape13{1, 3};
  std::vector<backend::TensorRef> bad{{"INPUT__0", DataType::kFp32, shape13, three}};
  RecordingAllocator bad_out;
  status = mi->Execute({bad, &bad_out, 1});
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_THAT(status.message(), StartsWith("PyTorch execute failure: "));
  auto four = RawBytes(std::vector<float>{1, 2, 3, 4});
  std::vector<int64_t> shape14{1, 4};
  std::vector<backend::TensorRef> good{{"INPUT__0", DataType::kFp32, shape14, four}};
  RecordingAllocator good_out;
  status = mi->Execute({good, &good_out, 1});
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THAT(FromRaw<float>(good_out.outputs["OUTPUT__0"].data), ElementsAre(3, 6, 9, 12));

  auto take = Load("take_two.pt", Config("m", 8, Tensor("INPUT__0", "TYPE_FP32", "[4]"),
                                         Tensor("OUTPUT__0", "TYPE_FP32", "[4]")));
  ASSERT_TRUE(take.ok()) << take.status().ToString();
  auto ti = Instance(**take);
  RecordingAllocator take_out;
  status = ti->Execute({good, &take_out, 1});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("output 'OUTPUT__0' has shape [1,2], the model "
                                          "configuration expects [-1,4]"));
}

TEST_F(TorchPluginTest, IntraOpThreadCountZeroMeansLibtorchsDefault) {
  auto model =
      Load("add_sub.pt",
           AddSubConfig(R"(,"parameters":{"INTRA_OP_THREAD_COUNT":{"string_value":"0"}})"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  // libtorch's default (one per physical core, or OMP_NUM_THREADS) replaces the 0.
  int threads = 0;
  for (const std::string& line : log_) {
    const std::string prefix = "model 'm': ";
    if (line.starts_with(prefix) && line.find(" intra-op thread(s)") != std::string::npos) {
      threads = std::atoi(line.c_str() + prefix.size());
    }
  }
  EXPECT_GE(threads, 1);
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env != nullptr) {
    EXPECT_EQ(threads, std::atoi(env));
  }
}

TEST_F(TorchPluginTest, InstancesRunConcurrentlyWithAndWithoutWeightSharing) {
  for (const char* sharing : {"false", "true"}) {
    auto model = Load("add_sub.pt",
                      AddSubConfig(std::string(R"(,"parameters":{)") +
                                   R"("ENABLE_WEIGHT_SHARING":{"string_value":")" + sharing +
                                   R"("},"INTRA_OP_THREAD_COUNT":)" + R"({"string_value":"2"}})"));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::vector<std::unique_ptr<backend::ModelInstance>> instances;
    for (int i = 0; i < 3; ++i) instances.push_back(Instance(**model, i));
    std::vector<std::thread> threads;
    std::vector<int> failures(instances.size(), 0);
    for (size_t t = 0; t < instances.size(); ++t) {
      threads.emplace_back([&, t] {
        for (int32_t round = 0; round < 50; ++round) {
          std::vector<int32_t> a(4, round), b(4, static_cast<int32_t>(t));
          auto ra = RawBytes(a), rb = RawBytes(b);
          std::vector<int64_t> shape{1, 4};
          std::vector<backend::TensorRef> in{{"INPUT__0", DataType::kInt32, shape, ra},
                                             {"INPUT__1", DataType::kInt32, shape, rb}};
          RecordingAllocator out;
          if (!instances[t]->Execute({in, &out, 1}).ok() ||
              FromRaw<int32_t>(out.outputs["OUTPUT__0"].data).at(3) !=
                  round + static_cast<int32_t>(t)) {
            ++failures[t];
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_THAT(failures, ElementsAre(0, 0, 0)) << "weight sharing " << sharing;
  }
}

}  // namespace
}  // namespace nereid::backends::pytorch
