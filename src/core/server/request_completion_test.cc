#include "core/server/request_completion.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/block_recycler.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

using Result = StatusOr<std::unique_ptr<InferenceResponse>>;

// Answers every job at once with one FP32 output [1,3] of the values 0.2 0.9 0.1.
class AnsweringScheduler : public Scheduler {
 public:
  void Enqueue(SchedulerJob&& job, bool) override {
    auto r = std::make_unique<InferenceResponse>();
    InferOutput out;
    out.name = "OUT";
    out.data_type = DataType::kFp32;
    out.shape = {1, 3};
    const float values[] = {0.2f, 0.9f, 0.1f};
    out.data.assign(reinterpret_cast<const char*>(values), sizeof(values));
    r->outputs.push_back(std::move(out));
    r->request = std::move(job.request);
    job.done(std::move(r));
  }
  void Stop() override {}
  bool IsExecutorThread() const override { return false; }
};

std::shared_ptr<ModelVersion> LoadVersion() {
  auto config = std::make_shared<inference::ModelConfig>();
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(name: "m" max_batch_size: 0
         input [{ name: "IN" data_type: TYPE_FP32 dims: [ 1, 3 ] }]
         output [{ name: "OUT" data_type: TYPE_FP32 dims: [ 1, 3 ] }])",
      config.get()));
  ModelVersion::Options o;
  o.version = 1;
  o.config = config;
  o.config_json = std::make_shared<const std::string>("{}");
  o.make_scheduler = [](const ModelInfo&, ModelStats*) -> StatusOr<std::unique_ptr<Scheduler>> {
    return std::unique_ptr<Scheduler>(std::make_unique<AnsweringScheduler>());
  };
  auto v = ModelVersion::Load(o);
  EXPECT_TRUE(v.ok()) << v.status().message();
  return v.ok() ? *v : nullptr;
}

std::unique_ptr<InferenceRequest> Request(bool classify) {
  auto r = std::make_unique<InferenceRequest>();
  r->model_name = "m";
  static const float values[] = {0.2f, 0.9f, 0.1f};
  r->inputs.push_back(
      InferInput{"IN",
                 DataType::kFp32,
                 {1, 3},
                 std::span<const char>(reinterpret_cast<const char*>(values), sizeof(values)),
                 {}});
  if (classify) {
    RequestedOutput out{"OUT", {}, std::nullopt};
    out.parameters.Set("classification", int64_t{1});
    r->outputs.push_back(std::move(out));
  }
  return r;
}

TEST(RequestCompletionTest, CallsTheCallbackOnceThenReleasesTheVersionAndTheTicket) {
  std::shared_ptr<ModelVersion> version = LoadVersion();
  ASSERT_NE(version, nullptr);
  auto admission = Admission::Create();
  auto ticket = admission->Enter();
  ASSERT_TRUE(ticket.has_value());
  int calls = 0;
  int64_t inflight_during_call = -1;
  long version_uses_during_call = 0;
  auto marker = std::make_shared<int>(0);
  std::weak_ptr<int> watch = marker;
  InferCallback done =
      MakeRequestCompletion(std::move(*ticket), version, /*classify=*/false, ShmOutputTargets{},
                            [&, marker = std::move(marker)](Result r) {
                              ++calls;
                              ASSERT_TRUE(r.ok()) << r.status().message();
                              EXPECT_EQ((*r)->outputs.at(0).data_type, DataType::kFp32);
                              inflight_during_call = admission->inflight();
                              version_uses_during_call = version.use_count();
                            });
  version->InferHeld(Request(false), std::move(done), /*allow_inline=*/true);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(inflight_during_call, 1);      // counted while the callback runs
  EXPECT_EQ(version_uses_during_call, 2);  // the completion held the version
  EXPECT_TRUE(watch.expired());            // the frontend's callback was destroyed with it
  EXPECT_EQ(admission->inflight(), 0);     // and the ticket released after it
  EXPECT_EQ(version.use_count(), 1);
}

TEST(RequestCompletionTest, AppliesClassificationWhenAsked) {
  std::shared_ptr<ModelVersion> version = LoadVersion();
  ASSERT_NE(version, nullptr);
  auto admission = Admission::Create();
  std::string got;
  version->InferHeld(
      Request(true),
      MakeRequestCompletion(std::move(*admission->Enter()), version, true, ShmOutputTargets{},
                            [&](Result r) {
                              ASSERT_TRUE(r.ok()) << r.status().message();
                              const InferOutput& out = (*r)->outputs.at(0);
                              EXPECT_EQ(out.data_type, DataType::kBytes);
                              got = out.data.substr(4);  // past the length prefix
                            }),
      true);
  EXPECT_EQ(got, "0.900000:1");
}

TEST(RequestCompletionTest, ACompletionDroppedUnrunReleasesEverything) {
  std::shared_ptr<ModelVersion> version = LoadVersion();
  ASSERT_NE(version, nullptr);
  auto admission = Admission::Create();
  bool called = false;
  {
    InferCallback done = MakeRequestCompletion(std::move(*admission->Enter()), version, false,
                                               ShmOutputTargets{}, [&](Result) { called = true; });
    EXPECT_EQ(admission->inflight(), 1);
  }
  EXPECT_FALSE(called);
  EXPECT_EQ(admission->inflight(), 0);
  EXPECT_EQ(version.use_count(), 1);
}

TEST(RequestCompletionTest, TheCompletionsBlockIsReusedOnTheSameThread) {
  std::shared_ptr<ModelVersion> version = LoadVersion();
  ASSERT_NE(version, nullptr);
  auto admission = Admission::Create();
  auto once = [&] {
    version->InferHeld(Request(false),
                       MakeRequestCompletion(std::move(*admission->Enter()), version, false,
                                             ShmOutputTargets{}, [](Result) {}),
                       true);
  };
  once();
  const int cached = BlockRecycler::CachedOnThisThread();
  EXPECT_GE(cached, 1);
  once();  // takes the block and gives it back
  EXPECT_EQ(BlockRecycler::CachedOnThisThread(), cached);
}

}  // namespace
}  // namespace nereid
