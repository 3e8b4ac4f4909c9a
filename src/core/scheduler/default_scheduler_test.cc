// DefaultScheduler with a test backend held at a gate, so that requests queue behind a busy
// instance.
#include "core/scheduler/default_scheduler.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/scheduler/scheduler_test_support.h"

namespace nereid {
namespace {

struct Backend : test_support::ExecutionGate {
  std::vector<float> ran;  // first input value of each execution
};

// OUT = IN.
class EchoInstance : public backend::ModelInstance {
 public:
  explicit EchoInstance(Backend* b) : b_(b) {}
  Status Execute(const backend::ExecuteArgs& args) override {
    const backend::TensorRef& in = args.inputs[0];
    float first;
    std::memcpy(&first, in.data.data(), 4);
    {
      std::unique_lock<std::mutex> l(b_->mu);
      b_->ran.push_back(first);
      b_->Pass(l, first);
    }
    auto buf = args.outputs->Allocate("OUT", DataType::kFp32, in.shape, in.data.size());
    if (!buf.ok()) return buf.status();
    std::memcpy(buf->data(), in.data.data(), in.data.size());
    return Status::Ok();
  }

 private:
  Backend* b_;
};

using test_support::Reply;

ModelInfo OneFloatModel() {
  ModelInfo model;
  model.name = "m";
  model.version = 1;
  model.max_batch_size = 4;
  model.inputs = {{"IN", DataType::kFp32, {1}}};
  model.outputs = {{"OUT", DataType::kFp32, {1}}};
  return model;
}

// Issue 22 item 4: a request cancelled while it waits in the queue never runs.
TEST(DefaultSchedulerTest, CancelledQueuedRequestIsAnsweredNotRun) {
  const ModelInfo model = OneFloatModel();
  ModelStats stats(4);
  Backend backend;
  std::vector<std::unique_ptr<backend::ModelInstance>> list;
  list.push_back(std::make_unique<EchoInstance>(&backend));
  DefaultScheduler sched(&model, &stats, std::move(list));

  auto send = [&](float v, std::shared_ptr<const CancelToken> token) {
    auto reply = std::make_shared<Reply>();
    SchedulerJob job = test_support::OneFloatJob(v, {}, reply);
    job.request->cancel_token = std::move(token);
    sched.Enqueue(std::move(job), false);
    return reply;
  };
  backend.Close();
  auto busy = send(1, nullptr);
  backend.WaitRunning(1);
  auto cancel = std::make_shared<CancelToken>();
  auto cancelled = send(2, cancel);
  auto kept = send(3, nullptr);
  cancel->Cancel();
  backend.Open();
  EXPECT_TRUE(busy->future.get().ok());
  auto r = cancelled->future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(r.status().message(), "Request was cancelled");
  EXPECT_TRUE(kept->future.get().ok());
  sched.Stop();
  EXPECT_EQ(backend.ran, (std::vector<float>{1, 3}));
  const auto s = stats.Snapshot();
  EXPECT_EQ(s.fail_by_reason[static_cast<size_t>(FailureReason::kCanceled)], 1u);
  EXPECT_EQ(s.execution_count, 2u);
  EXPECT_EQ(s.pending_requests, 0);
}

std::vector<std::unique_ptr<backend::ModelInstance>> OneEchoInstance(Backend* backend) {
  std::vector<std::unique_ptr<backend::ModelInstance>> list;
  list.push_back(std::make_unique<EchoInstance>(backend));
  return list;
}

// A scheduler over one EchoInstance (members in construction order).
struct EchoScheduler {
  ModelInfo model = OneFloatModel();
  ModelStats stats{4};
  Backend backend;
  DefaultScheduler sched{&model, &stats, OneEchoInstance(&backend)};
};

// Footprint (issue 21): a model run only inline has no executor thread; the first job that has
// to wait starts them, and it still runs.
TEST(DefaultSchedulerTest, ExecutorsStartWithTheFirstQueuedJob) {
  EchoScheduler s;
  EXPECT_FALSE(s.sched.executors_started());

  auto inline_reply = std::make_shared<Reply>();
  s.sched.Enqueue(test_support::OneFloatJob(1, {}, inline_reply), /*allow_inline=*/true);
  EXPECT_TRUE(inline_reply->future.get().ok());
  EXPECT_FALSE(s.sched.executors_started());

  auto queued = std::make_shared<Reply>();
  s.sched.Enqueue(test_support::OneFloatJob(2, {}, queued), /*allow_inline=*/false);
  EXPECT_TRUE(s.sched.executors_started());
  EXPECT_TRUE(queued->future.get().ok());
  s.sched.Stop();
  EXPECT_EQ(s.backend.ran, (std::vector<float>{1, 2}));
}

TEST(DefaultSchedulerTest, StopWithoutExecutorsDestroysTheInstances) {
  EchoScheduler s;
  s.sched.Stop();
  EXPECT_FALSE(s.sched.executors_started());
  auto reply = std::make_shared<Reply>();
  s.sched.Enqueue(test_support::OneFloatJob(1, {}, reply), /*allow_inline=*/false);
  auto r = reply->future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(s.sched.executors_started());
  EXPECT_TRUE(s.backend.ran.empty());
}

}  // namespace
}  // namespace nereid
