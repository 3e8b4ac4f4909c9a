// InferenceServer with the real identity plugin: a request decoded against one served version
// runs on that version even when a reload replaces it in between (issue 14 item 4).
#include "core/server/inference_server.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/config/test_temp_dir.h"
#include "core/request/test_request.h"
#include "core/server/plugin_infer.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

constexpr char kConfig[] = R"(name: "m" backend: "identity" max_batch_size: 0
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [2] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [2] }])";

// The same model with INT32 tensors, as the load API's JSON override.
constexpr char kInt32Override[] =
    R"({"name": "m", "backend": "identity", "max_batch_size": 0,
        "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [2]}],
        "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [2]}]})";

std::unique_ptr<InferenceRequest> Fp32Request() { return testing::ZeroFp32Request("m", {2}); }

Status RunRequest(InferenceServer& server, std::unique_ptr<InferenceRequest> request,
                  std::optional<ServedModel> model = std::nullopt) {
  std::promise<Status> done;
  auto callback = [&done](StatusOr<std::unique_ptr<InferenceResponse>> r) {
    done.set_value(r.status());
  };
  if (model) {
    server.InferAsync(std::move(*model), std::move(request), callback);
  } else {
    server.InferAsync(std::move(request), callback);
  }
  return done.get_future().get();
}

class InferenceServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.WriteFile("m/config.pbtxt", kConfig);
    dir_.MakeDir("m/1");
    ServerOptions options;
    options.model_repositories = {dir_.path().string()};
    options.backend_directory = NEREID_TEST_BACKEND_DIR;
    options.model_control_mode = ModelControlMode::kExplicit;
    options.startup_models = {"m"};
    auto created = InferenceServer::Create(options);
    ASSERT_TRUE(created.ok()) << created.status().message();
    server_ = std::move(created).value();
  }
  void TearDown() override {
    if (server_) server_->Stop(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  }

  Status Reload(const char* config_json) {
    ModelLoadParameters params;
    params.config_json = config_json;
    std::promise<Status> done;
    server_->LoadModelAsync("m", std::move(params), [&done](Status s) { done.set_value(s); });
    return done.get_future().get();
  }

  config::testing::TempDir dir_;
  std::unique_ptr<InferenceServer> server_;
};

TEST_F(InferenceServerTest, AcquiredModelIsTheVersionThatRuns) {
  StatusOr<ServedModel> held = server_->AcquireModel("m", -1);
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ(held->version(), 1);
  ASSERT_TRUE(Reload(kInt32Override).ok());

  // The table now serves the INT32 version; the held one is still the FP32 version.
  EXPECT_EQ(held->config().input(0).data_type(), inference::TYPE_FP32);
  auto now = server_->GetModelConfig("m", -1);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ((*now)->input(0).data_type(), inference::TYPE_INT32);

  // An FP32 request decoded against the held version runs on it...
  EXPECT_TRUE(RunRequest(*server_, Fp32Request(), std::move(*held)).ok());
  // ...while a fresh lookup finds the INT32 version and refuses it.
  Status fresh = RunRequest(*server_, Fp32Request());
  EXPECT_EQ(fresh.code(), StatusCode::kInvalidArgument) << fresh.message();
}

TEST_F(InferenceServerTest, AcquireUsesTheInferenceErrors) {
  auto unknown = server_->AcquireModel("nope", -1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "Request for unknown model: 'nope' is not found");
  auto version = server_->AcquireModel("m", 7);
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.status().code(), StatusCode::kNotFound);
}

// A BLS call through the gate (backend API v8): with `inputs_owner` the called request reads the
// caller's bytes and holds their owner until it is released; without it, a copy.
struct CallerBytes {
  std::vector<float> values{1.5f, -2.0f};
  ~CallerBytes() { std::fill(values.begin(), values.end(), 99.0f); }  // read late: 99s
};

// Calls "m" through `gate` with `values` as INPUT0; `owner` (may be null) owns them. Once the call
// is made, the caller drops its reference to the owner and, without one, overwrites its buffer.
std::vector<float> CallIdentity(PluginInferGate& gate, std::span<float> values,
                                std::shared_ptr<const void> owner) {
  const std::vector<int64_t> shape{2};
  const backend::TensorRef input{
      "INPUT0", DataType::kFp32, shape,
      std::span<const char>(reinterpret_cast<const char*>(values.data()), values.size_bytes())};
  backend::InferCall call;
  call.model_name = "m";
  call.inputs = std::span<const backend::TensorRef>(&input, 1);
  call.inputs_owner = std::move(owner);
  std::promise<StatusOr<std::vector<backend::InferTensor>>> done;
  gate.Function()(call, [&done](StatusOr<std::vector<backend::InferTensor>> r) {
    done.set_value(std::move(r));
  });
  if (call.inputs_owner != nullptr) {
    call.inputs_owner.reset();  // only the called request holds it now
  } else {
    std::fill(values.begin(), values.end(), 7.0f);  // the caller reuses its buffer
  }
  StatusOr<std::vector<backend::InferTensor>> r = done.get_future().get();
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok() || r->size() != 1 || (*r)[0].data.size() != 8) return {};
  std::vector<float> out(2);
  std::memcpy(out.data(), (*r)[0].data.data(), 8);
  return out;
}

TEST_F(InferenceServerTest, AGateCallWithItsInputsOwnerReadsTheBytesWhileTheOwnerLives) {
  auto gate = std::make_shared<PluginInferGate>();
  gate->Attach(server_.get());
  auto bytes = std::make_shared<CallerBytes>();
  std::weak_ptr<CallerBytes> watch = bytes;
  const std::span<float> viewed(bytes->values);
  // Released early, the owner would leave 99s (or freed memory) for the model to read.
  EXPECT_EQ(CallIdentity(*gate, viewed, std::move(bytes)), (std::vector<float>{1.5f, -2.0f}));
  gate->Detach();
  server_->Stop(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  server_.reset();
  EXPECT_TRUE(watch.expired());  // released with the called request
}

TEST_F(InferenceServerTest, AGateCallWithoutAnInputsOwnerCopiesTheBytes) {
  auto gate = std::make_shared<PluginInferGate>();
  gate->Attach(server_.get());
  std::vector<float> values{1.5f, -2.0f};
  // The caller overwrites its buffer once the function returned: the model read a copy.
  EXPECT_EQ(CallIdentity(*gate, values, nullptr), (std::vector<float>{1.5f, -2.0f}));
  gate->Detach();
}

// A gate call with its caller's RequestInfo::trace as parent_trace (backend API v9) is traced as
// that trace's child; a call without one is not traced (Triton samples no BLS call on its own),
// and it takes no sample from the setting's count: the next client request is still traced.
TEST_F(InferenceServerTest, AGateCallWithAParentTraceIsTracedAsItsChild) {
  server_->Stop(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  server_.reset();
  const std::string file = (dir_.path() / "trace.json").string();
  ServerOptions options;
  options.model_repositories = {dir_.path().string()};
  options.backend_directory = NEREID_TEST_BACKEND_DIR;
  options.model_control_mode = ModelControlMode::kExplicit;
  options.startup_models = {"m"};
  options.trace.level = trace::kLevelTimestamps;
  options.trace.rate = 1;
  options.trace.count = 2;  // the parent below and one client request
  options.trace.file = file;
  auto created = InferenceServer::Create(options);
  ASSERT_TRUE(created.ok()) << created.status().message();
  server_ = std::move(created).value();
  auto gate = std::make_shared<PluginInferGate>();
  gate->Attach(server_.get());
  std::shared_ptr<trace::Trace> parent = server_->tracer().Sample("caller");
  ASSERT_NE(parent, nullptr);
  parent->Start("caller", 1, "parent", 1);
  const std::string parent_id = std::to_string(parent->id());
  auto call = [&gate](const std::string& id, std::shared_ptr<const void> parent_trace) {
    const std::vector<float> values{1.0f, 2.0f};
    const std::vector<int64_t> shape{2};
    const backend::TensorRef input{
        "INPUT0", DataType::kFp32, shape,
        std::span<const char>(reinterpret_cast<const char*>(values.data()),
                              values.size() * sizeof(float))};
    backend::InferCall c;
    c.model_name = "m";
    c.id = id;
    c.inputs = std::span<const backend::TensorRef>(&input, 1);
    c.parent_trace = std::move(parent_trace);
    std::promise<Status> done;
    gate->Function()(
        c, [&done](StatusOr<std::vector<backend::InferTensor>> r) { done.set_value(r.status()); });
    return done.get_future().get();
  };
  EXPECT_TRUE(call("child", parent).ok());
  EXPECT_TRUE(call("alone", nullptr).ok());
  auto client = Fp32Request();
  client->id = "client";
  EXPECT_TRUE(RunRequest(*server_, std::move(client)).ok());  // the count's second sample
  parent.reset();  // the parent's trace (with its child's records) is collected
  gate->Detach();
  server_->Stop(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  server_.reset();  // writes the trace file
  // With `count` run out the traces go to <file>.<i> (Triton's rule): read every trace file.
  std::string text;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    if (entry.path().filename().string().rfind("trace.json", 0) != 0) continue;
    std::ifstream in(entry.path());
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(text.find(R"("request_id":"child","parent_id":)" + parent_id + "}"), std::string::npos)
      << text;
  EXPECT_EQ(text.find(R"("request_id":"alone")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("request_id":"client"})"), std::string::npos) << text;
  EXPECT_EQ(text.find(R"("parent_id")"), text.rfind(R"("parent_id")")) << text;  // one child
}

}  // namespace
}  // namespace nereid

namespace nereid {
namespace {

TEST(PluginInferGate, RefusesCallsWhileDetached) {
  auto gate = std::make_shared<PluginInferGate>();
  backend::InferFunction infer = gate->Function();
  backend::InferCall call;
  call.model_name = "m";
  Status got = Status::Ok();
  int calls = 0;
  infer(call, [&](StatusOr<std::vector<backend::InferTensor>> r) {
    ++calls;
    got = r.status();
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got.code(), StatusCode::kUnavailable);
  gate->Attach(nullptr);
  gate->Detach();
  infer(call, [&](StatusOr<std::vector<backend::InferTensor>> r) {
    ++calls;
    got = r.status();
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(got.code(), StatusCode::kUnavailable);
}

TEST(PluginInferGate, ModelControlIsRefusedWhileDetached) {
  auto gate = std::make_shared<PluginInferGate>();
  backend::ModelControl control = gate->Control();
  ASSERT_TRUE(control.is_ready && control.load && control.unload);
  EXPECT_EQ(control.is_ready("m", -1).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(control.load("m", "", {}).code(), StatusCode::kUnavailable);
  EXPECT_EQ(control.unload("m", false).code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace nereid
