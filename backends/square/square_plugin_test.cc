// The square plugin loaded with dlopen as the core loads it, driven through a recording response
// sender: Triton's load-time checks, N responses then a flags-only FINAL, CUSTOM_FAIL_COUNT /
// CUSTOM_EMPTY_COUNT, cancellation, and refusals.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/testing/plugin_harness.h"
#include "nereid/backend_api.h"

namespace nereid {
namespace {

using ::nereid::backends::testing::Plugin;

struct Sent {
  std::vector<int32_t> out;  // OUT's value; empty for a flags-only or error response
  uint32_t flags = 0;
  Status status;
};

class RecordingSender final : public backend::ResponseSender {
 public:
  Status Send(std::span<const backend::TensorRef> outputs, uint32_t flags) override {
    Sent s;
    s.flags = flags;
    for (const auto& t : outputs) {
      if (t.name != "OUT" || t.data.size() != sizeof(int32_t)) return Internal("bad output");
      int32_t v;
      std::memcpy(&v, t.data.data(), sizeof(v));
      s.out.push_back(v);
    }
    Record(std::move(s));
    return Status::Ok();
  }
  Status SendError(const Status& error, uint32_t flags) override {
    Sent s;
    s.flags = flags;
    s.status = error;
    Record(std::move(s));
    return Status::Ok();
  }
  bool IsCancelled() const override { return cancelled_.load(); }

  void Cancel() { cancelled_ = true; }
  // Waits for the FINAL (or `count` responses) and returns what was sent.
  std::vector<Sent> Wait(size_t count = 0) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] {
      return (count > 0 && sent_.size() >= count) ||
             (!sent_.empty() && (sent_.back().flags & backend::kResponseFinal) != 0);
    });
    return sent_;
  }

 private:
  void Record(Sent s) {
    std::lock_guard lock(mu_);
    sent_.push_back(std::move(s));
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Sent> sent_;
  std::atomic<bool> cancelled_{false};
};

std::string Config(std::string_view input = "IN", std::string_view dtype = "TYPE_INT32",
                   std::string_view parameters = "{}") {
  return R"({"name":"sq","backend":"square","max_batch_size":0,"input":[{"name":")" +
         std::string(input) + R"(","data_type":")" + std::string(dtype) +
         R"(","dims":[1]}],"output":[{"name":"OUT","data_type":"TYPE_INT32","dims":[1]}],)" +
         R"("parameters":)" + std::string(parameters) + "}";
}

std::string Param(std::string_view key, std::string_view value) {
  return "\"" + std::string(key) + R"(":{"string_value":")" + std::string(value) + "\"}";
}

class SquarePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static Plugin* plugin = new Plugin(NEREID_SQUARE_PLUGIN);
    ASSERT_TRUE(plugin->ok()) << plugin->error();
    std::string error;
    backend_ = plugin->Create(backend::BackendOptions{}, &error);
    ASSERT_NE(backend_, nullptr) << error;
  }

  StatusOr<std::unique_ptr<backend::Model>> Load(const std::string& config) {
    backend::ModelLoadOptions options;
    options.model_name = "sq";
    options.version = 1;
    options.config_json = config;
    return backend_->LoadModel(options);
  }

  // Runs one request with IN = [n] on a fresh instance of `model`; returns Execute's status.
  Status Run(backend::Model& model, int32_t n, const std::shared_ptr<RecordingSender>& sender) {
    auto instance = model.CreateInstance({"sq_0", 0, "KIND_CPU", {}});
    if (!instance.ok()) return instance.status();
    instance_ = std::move(*instance);
    const int64_t shape[] = {1};
    const backend::TensorRef in[] = {
        {"IN", DataType::kInt32, shape, {reinterpret_cast<const char*>(&n), sizeof(n)}}};
    const std::shared_ptr<backend::ResponseSender> senders[] = {sender};
    backend::ExecuteArgs args;
    args.inputs = in;
    args.senders = senders;
    return instance_->Execute(args);
  }

  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<backend::ModelInstance> instance_;  // joins its threads when destroyed
};

TEST_F(SquarePluginTest, LoadChecksAreTritons) {
  EXPECT_EQ(Load(Config("INPUT")).status().message(),
            "expected first input tensor name to be IN, got INPUT");
  EXPECT_EQ(Load(Config("IN", "TYPE_FP32")).status().message(),
            "expected IN datatype to be INT32, got TYPE_FP32");
  EXPECT_TRUE(Load(Config()).ok());
}

TEST_F(SquarePluginTest, NResponsesThenAFlagsOnlyFinal) {
  auto model = Load(Config());
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto sender = std::make_shared<RecordingSender>();
  ASSERT_TRUE(Run(**model, 3, sender).ok());
  const std::vector<Sent> sent = sender->Wait();
  ASSERT_EQ(sent.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sent[i].out, std::vector<int32_t>{3});
    EXPECT_EQ(sent[i].flags, 0u);
  }
  EXPECT_TRUE(sent[3].out.empty());
  EXPECT_EQ(sent[3].flags, backend::kResponseFinal);
  EXPECT_TRUE(sent[3].status.ok());
}

TEST_F(SquarePluginTest, ZeroSendsOnlyTheFinal) {
  auto model = Load(Config());
  ASSERT_TRUE(model.ok());
  auto sender = std::make_shared<RecordingSender>();
  ASSERT_TRUE(Run(**model, 0, sender).ok());
  const std::vector<Sent> sent = sender->Wait();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].flags, backend::kResponseFinal);
}

TEST_F(SquarePluginTest, FailAndEmptyCounts) {
  auto model = Load(
      Config("IN", "TYPE_INT32",
             "{" + Param("CUSTOM_FAIL_COUNT", "2") + "," + Param("CUSTOM_EMPTY_COUNT", "1") + "}"));
  ASSERT_TRUE(model.ok());
  auto sender = std::make_shared<RecordingSender>();
  ASSERT_TRUE(Run(**model, 5, sender).ok());
  const std::vector<Sent> sent = sender->Wait();
  ASSERT_EQ(sent.size(), 5u);  // 2 successes, 2 failures, index 4 not sent, the FINAL
  EXPECT_EQ(sent[1].out, std::vector<int32_t>{5});
  EXPECT_EQ(sent[2].status.code(), StatusCode::kUnknown);
  EXPECT_EQ(sent[3].status.message(), "simulated failure");
  EXPECT_EQ(sent[4].flags, backend::kResponseFinal);
}

TEST_F(SquarePluginTest, CancelledRequestEndsWithCancelled) {
  auto model = Load(Config("IN", "TYPE_INT32",
                           "{" + Param("CUSTOM_INFER_DELAY_NS", "20000000") + "," +
                               Param("CUSTOM_CANCEL_DELAY_NS", "1000") + "}"));
  ASSERT_TRUE(model.ok());
  auto sender = std::make_shared<RecordingSender>();
  ASSERT_TRUE(Run(**model, 1000, sender).ok());  // 20 s if never cancelled
  sender->Wait(1);
  sender->Cancel();
  const std::vector<Sent> sent = sender->Wait();
  ASSERT_FALSE(sent.empty());
  EXPECT_LT(sent.size(), 100u);
  EXPECT_EQ(sent.back().flags, backend::kResponseFinal);
  EXPECT_EQ(sent.back().status.code(), StatusCode::kCancelled);
  EXPECT_EQ(sent.back().status.message(), "cancelled");
}

TEST_F(SquarePluginTest, NegativeCountIsRefused) {
  auto model = Load(Config());
  ASSERT_TRUE(model.ok());
  auto sender = std::make_shared<RecordingSender>();
  const Status s = Run(**model, -2, sender);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "unexpected value for IN input: -2 (expected the number of responses, 0 or more)");
}

}  // namespace
}  // namespace nereid
