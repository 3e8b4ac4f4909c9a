// DynamicBatchScheduler with a test backend whose executions can be held at a gate: batches form
// while an instance is busy, and ModelStats records what executed.
#include "core/scheduler/dynamic_batch_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>

#include "core/scheduler/scheduler_test_support.h"

namespace nereid {
namespace {

using namespace std::chrono_literals;

// Shared by every instance of one test: records executions and holds them while closed.
struct Backend : test_support::ExecutionGate {
  std::vector<int64_t> batch_sizes;
  std::vector<float> order;  // first value of each executed item, in execution order
};

class GatedInstance : public backend::ModelInstance {
 public:
  explicit GatedInstance(Backend* b) : b_(b) {}
  Status Execute(const backend::ExecuteArgs& args) override {
    const backend::TensorRef& in = args.inputs[0];
    {
      std::unique_lock<std::mutex> l(b_->mu);
      b_->batch_sizes.push_back(args.batch_size);
      const float* v = reinterpret_cast<const float*>(in.data.data());
      for (int64_t i = 0; i < args.batch_size; ++i) b_->order.push_back(v[i]);
      b_->Pass(l, v[0]);
    }
    // A negative value fails its request alone (API v6): it has no row in OUT.
    const float* src = reinterpret_cast<const float*>(in.data.data());
    std::vector<float> out;
    for (size_t i = 0; i < in.data.size() / 4; ++i) {
      if (src[i] < 0 && i < args.request_errors.size()) {
        args.request_errors[i] = InvalidArgument("negative value");
        continue;
      }
      out.push_back(2 * src[i]);
    }
    if (out.empty()) return Status::Ok();
    const int64_t shape[] = {static_cast<int64_t>(out.size()), 1};
    auto buf = args.outputs->Allocate("OUT", DataType::kFp32, shape, out.size() * 4);
    if (!buf.ok()) return buf.status();
    std::memcpy(buf->data(), out.data(), out.size() * 4);
    return Status::Ok();
  }

 private:
  Backend* b_;
};

using test_support::Reply;

Parameters HighPriority() {
  Parameters p;
  p.Set("priority", uint64_t{1});
  return p;
}

class DynamicBatchSchedulerTest : public ::testing::Test {
 protected:
  DynamicBatchSchedulerTest() {
    model_.name = "m";
    model_.version = 1;
    model_.max_batch_size = 4;
    model_.inputs = {{"IN", DataType::kFp32, {1}}};
    model_.outputs = {{"OUT", DataType::kFp32, {1}}};
    options_.max_batch_size = 4;
    options_.preferred_batch_sizes = {4};
  }

  void Start(int instances = 1) {
    std::vector<std::unique_ptr<backend::ModelInstance>> list;
    for (int i = 0; i < instances; ++i) list.push_back(std::make_unique<GatedInstance>(&backend_));
    sched_ = std::make_unique<DynamicBatchScheduler>(&model_, &stats_, options_, std::move(list));
  }

  // Enqueues one request of batch 1 carrying `value`; the reply lands in the returned slot.
  std::shared_ptr<Reply> Send(float value, Parameters params = {},
                              std::function<void()> on_done = {}) {
    auto reply = std::make_shared<Reply>();
    sched_->Enqueue(test_support::OneFloatJob(value, std::move(params), reply, std::move(on_done)),
                    false);
    return reply;
  }

  static float Value(const std::shared_ptr<Reply>& r) {
    auto result = r->future.get();
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (!result.ok()) return -1;
    float v;
    std::memcpy(&v, (*result)->outputs[0].data.data(), 4);
    return v;
  }

  // Holds the only instance busy with one request so that the next ones queue.
  // `params` lets it skip a level's timeout.
  std::shared_ptr<Reply> Occupy(Parameters params = {}) {
    backend_.Close();
    auto first = Send(100, std::move(params));
    backend_.WaitRunning(1);
    return first;
  }

  ModelInfo model_;
  DynamicBatchingOptions options_;
  Backend backend_;
  ModelStats stats_{4};
  std::unique_ptr<DynamicBatchScheduler> sched_;
};

TEST_F(DynamicBatchSchedulerTest, QueuedRequestsRunAsOneBatchAndStatsShowIt) {
  Start();
  auto first = Occupy();
  std::vector<std::shared_ptr<Reply>> replies;
  for (int i = 0; i < 4; ++i) replies.push_back(Send(static_cast<float>(i)));
  EXPECT_EQ(stats_.Snapshot().pending_requests, 4);
  backend_.Open();
  EXPECT_EQ(Value(first), 200);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Value(replies[i]), 2 * i);
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{1, 4}));
  const ModelStatsSnapshot s = stats_.Snapshot();
  EXPECT_EQ(s.execution_count, 2u);
  EXPECT_EQ(s.inference_count, 5u);
  EXPECT_EQ(s.success.count, 5u);
  EXPECT_EQ(s.pending_requests, 0);
  ASSERT_EQ(s.batch_stats.size(), 2u);
  EXPECT_EQ(s.batch_stats[0].batch_size, 1u);
  EXPECT_EQ(s.batch_stats[0].compute_infer.count, 1u);
  EXPECT_EQ(s.batch_stats[1].batch_size, 4u);
  EXPECT_EQ(s.batch_stats[1].compute_infer.count, 1u);
}

TEST_F(DynamicBatchSchedulerTest, RequestFailedAloneGetsItsErrorOthersTheirOutputs) {
  Start();
  auto first = Occupy();
  std::vector<std::shared_ptr<Reply>> replies;
  for (float v : {1.0F, -2.0F, 3.0F, -4.0F}) replies.push_back(Send(v));
  backend_.Open();
  EXPECT_EQ(Value(first), 200);
  EXPECT_EQ(Value(replies[0]), 2);
  EXPECT_EQ(Value(replies[2]), 6);
  for (size_t i : {1u, 3u}) {
    auto r = replies[i]->future.get();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "negative value");
  }
  auto lone = Send(-5);  // a batch of one: its error is the request's
  EXPECT_EQ(lone->future.get().status().message(), "negative value");
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{1, 4, 1}));
  const ModelStatsSnapshot s = stats_.Snapshot();
  EXPECT_EQ(s.execution_count, 3u);  // as Triton's backend reports each execution
  EXPECT_EQ(s.success.count, 3u);
  EXPECT_EQ(s.fail.count, 3u);
  EXPECT_EQ(s.fail_by_reason[static_cast<int>(FailureReason::kBackend)], 3u);
}

TEST_F(DynamicBatchSchedulerTest, MaxBatchSizeSplitsLongQueue) {
  Start();
  auto first = Occupy();
  std::vector<std::shared_ptr<Reply>> replies;
  for (int i = 0; i < 6; ++i) replies.push_back(Send(static_cast<float>(i)));
  backend_.Open();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Value(replies[i]), 2 * i);
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{1, 4, 2}));
}

// A batch that takes the whole queue (both priority levels) clears it in place; later arrivals
// queue and batch in their order again.
TEST_F(DynamicBatchSchedulerTest, QueueTakenWholeServesLaterArrivalsInOrder) {
  options_.priority_levels = 2;
  options_.default_priority_level = 2;
  Start();
  for (int round = 0; round < 2; ++round) {
    auto first = Occupy();
    std::vector<std::shared_ptr<Reply>> replies;
    replies.push_back(Send(10.0F * round + 1));
    replies.push_back(Send(10.0F * round + 2));
    replies.push_back(Send(10.0F * round + 3, HighPriority()));
    replies.push_back(Send(10.0F * round + 4));
    EXPECT_EQ(stats_.Snapshot().pending_requests, 4);
    backend_.Open();
    EXPECT_EQ(Value(first), 200);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(Value(replies[i]), 2 * (10.0F * round + i + 1));
    EXPECT_EQ(stats_.Snapshot().pending_requests, 0);
  }
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{1, 4, 1, 4}));
  EXPECT_EQ(backend_.order, (std::vector<float>{100, 3, 1, 2, 4, 100, 13, 11, 12, 14}));
}

TEST_F(DynamicBatchSchedulerTest, QueueFullRejectsAtOnce) {
  options_.default_policy.max_queue_size = 2;
  Start();
  auto first = Occupy();
  auto a = Send(1);
  auto b = Send(2);
  auto c = Send(3);
  ASSERT_EQ(c->future.wait_for(2s), std::future_status::ready);
  auto rejected = c->future.get();
  EXPECT_EQ(rejected.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(rejected.status().message(), "Exceeds maximum queue size");
  backend_.Open();
  EXPECT_EQ(Value(a), 2);
  EXPECT_EQ(Value(b), 4);
  sched_->Stop();
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.fail_by_reason[static_cast<int>(FailureReason::kRejected)], 1u);
}

TEST_F(DynamicBatchSchedulerTest, HigherPriorityOvertakes) {
  options_.max_batch_size = 1;
  options_.preferred_batch_sizes = {1};
  options_.priority_levels = 2;
  options_.default_priority_level = 2;
  Start();
  auto first = Occupy();
  Parameters high;
  high.Set("priority", uint64_t{1});
  Parameters out_of_range;  // beyond the levels: the default level (2), as in Triton
  out_of_range.Set("priority", uint64_t{9});
  auto low1 = Send(1);
  auto low2 = Send(2, out_of_range);
  auto high1 = Send(3, high);
  backend_.Open();
  Value(low1);
  Value(low2);
  Value(high1);
  sched_->Stop();
  EXPECT_EQ(backend_.order, (std::vector<float>{100, 3, 1, 2}));
}

TEST_F(DynamicBatchSchedulerTest, RejectTimeoutExpiresQueuedRequest) {
  // Level 2 (the default) times out after 1 ms; the occupying request uses level 1 (none).
  options_.priority_levels = 2;
  options_.level_policies[2].default_timeout_us = 1000;
  options_.default_priority_level = 2;
  Start();
  auto first = Occupy(HighPriority());
  auto late = Send(1);
  std::this_thread::sleep_for(20ms);
  backend_.Open();
  EXPECT_EQ(Value(first), 200);
  auto result = late->future.get();
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(result.status().message(), "Request timeout expired");
  sched_->Stop();
  EXPECT_EQ(stats_.Snapshot().fail_by_reason[static_cast<int>(FailureReason::kRejected)], 1u);
}

TEST_F(DynamicBatchSchedulerTest, RejectTimeoutAnswersWhileEveryInstanceIsBusy) {
  // The only instance stays busy: the timer thread, not an executor, answers the request.
  options_.priority_levels = 2;
  options_.level_policies[2].default_timeout_us = 1000;
  options_.default_priority_level = 2;
  Start();
  auto first = Occupy(HighPriority());
  const auto t0 = std::chrono::steady_clock::now();
  auto late = Send(1);
  ASSERT_EQ(late->future.wait_for(2s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  auto result = late->future.get();
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(result.status().message(), "Request timeout expired");
  EXPECT_EQ(stats_.Snapshot().pending_requests, 0);
  backend_.Open();
  EXPECT_EQ(Value(first), 200);
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{1}));  // it never ran
}

TEST_F(DynamicBatchSchedulerTest, DelayCountHoldsUntilThatManyAreQueuedThenFormsOneBatch) {
  options_.delay_count = 3;  // TRITONSERVER_DELAY_SCHEDULER=3
  Start(2);
  auto a = Send(1);
  auto b = Send(2);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(a->future.wait_for(0s), std::future_status::timeout);  // held, idle instances
  auto c = Send(3);
  EXPECT_EQ(Value(a), 2);
  EXPECT_EQ(Value(b), 4);
  EXPECT_EQ(Value(c), 6);
  auto d = Send(4);  // the hook holds only once
  EXPECT_EQ(Value(d), 8);
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{3, 1}));
}

TEST_F(DynamicBatchSchedulerTest, DelayCountHoldsTimeoutsTooAsTriton) {
  // Level 2 (default) expires after 1 ms; while held nothing is answered, then the expired one
  // is rejected and the other runs.
  options_.delay_count = 2;
  options_.priority_levels = 2;
  options_.level_policies[2].default_timeout_us = 1000;
  options_.default_priority_level = 2;
  Start();
  auto expiring = Send(1);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(expiring->future.wait_for(0s), std::future_status::timeout);
  auto kept = Send(2, HighPriority());
  EXPECT_EQ(expiring->future.get().status().message(), "Request timeout expired");
  EXPECT_EQ(Value(kept), 4);
  sched_->Stop();
}

TEST_F(DynamicBatchSchedulerTest, StopLetsTheDelayCountGo) {
  options_.delay_count = 5;
  Start();
  auto a = Send(1);
  sched_->Stop();
  EXPECT_EQ(Value(a), 2);
}

TEST_F(DynamicBatchSchedulerTest, RequestTimeoutOnlyLowersTheDefault) {
  options_.default_policy.default_timeout_us = 60'000'000;
  options_.default_policy.allow_timeout_override = true;
  Start();
  auto first = Occupy();
  Parameters shorter;
  shorter.Set("timeout", uint64_t{1000});
  auto a = Send(1, shorter);
  std::this_thread::sleep_for(20ms);
  backend_.Open();
  EXPECT_EQ(a->future.get().status().message(), "Request timeout expired");
  sched_->Stop();
}

TEST_F(DynamicBatchSchedulerTest, TimeoutOverrideIgnoredWithoutPermission) {
  options_.default_policy.default_timeout_us = 60'000'000;
  Start();
  auto first = Occupy();
  Parameters shorter;
  shorter.Set("timeout", uint64_t{1000});
  auto a = Send(1, shorter);
  std::this_thread::sleep_for(20ms);
  backend_.Open();
  EXPECT_EQ(Value(a), 2);
  sched_->Stop();
}

TEST_F(DynamicBatchSchedulerTest, DelayTimeoutMovesBehindButStillRuns) {
  options_.max_batch_size = 1;
  options_.preferred_batch_sizes = {1};
  options_.priority_levels = 2;
  options_.level_policies[2].default_timeout_us = 50'000;
  options_.level_policies[2].delay_on_timeout = true;
  options_.default_priority_level = 2;
  Start();
  auto first = Occupy(HighPriority());
  auto expiring = Send(1);
  std::this_thread::sleep_for(80ms);
  auto fresh = Send(2);  // young: within its 50 ms when the instance frees up just after
  backend_.Open();
  EXPECT_EQ(Value(expiring), 2);
  EXPECT_EQ(Value(fresh), 4);
  sched_->Stop();
  // The expired request was moved behind the live one.
  EXPECT_EQ(backend_.order, (std::vector<float>{100, 2, 1}));
}

TEST_F(DynamicBatchSchedulerTest, DelayedBatchingWaitsForMoreRequests) {
  options_.max_queue_delay_us = 200'000;  // long enough that the 4 arrive inside it
  Start();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<Reply>> replies;
  for (int i = 0; i < 4; ++i) replies.push_back(Send(static_cast<float>(i)));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Value(replies[i]), 2 * i);
  // A preferred batch (4) goes at once, without waiting for the delay.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 150ms);
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{4}));
}

TEST_F(DynamicBatchSchedulerTest, DelayedBatchingSendsPartialBatchAfterDelay) {
  options_.max_queue_delay_us = 30'000;
  Start();
  const auto t0 = std::chrono::steady_clock::now();
  auto a = Send(1);
  auto b = Send(2);
  EXPECT_EQ(Value(a), 2);
  EXPECT_EQ(Value(b), 4);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 30ms);
  EXPECT_LT(waited, 1s);
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{2}));
}

TEST_F(DynamicBatchSchedulerTest, PreserveOrderingAcrossInstances) {
  options_.preserve_ordering = true;
  options_.max_batch_size = 1;
  options_.preferred_batch_sizes = {1};
  Start(2);
  std::mutex mu;
  std::vector<int> delivered;
  auto record = [&](int i) {
    return [&, i] {
      std::lock_guard<std::mutex> l(mu);
      delivered.push_back(i);
    };
  };
  backend_.hold_only = 1;
  backend_.Close();
  auto a = Send(1, {}, record(1));  // held on one instance
  backend_.WaitRunning(1);
  // The other instance runs b to completion while a is held: b's reply must wait for a's.
  auto b = Send(2, {}, record(2));
  EXPECT_EQ(b->future.wait_for(100ms), std::future_status::timeout);
  {
    std::lock_guard<std::mutex> l(backend_.mu);
    EXPECT_EQ(backend_.batch_sizes.size(), 2u);  // b did execute
  }
  backend_.Open();
  EXPECT_EQ(Value(a), 2);
  EXPECT_EQ(Value(b), 4);
  sched_->Stop();
  EXPECT_EQ(delivered, (std::vector<int>{1, 2}));
}

TEST_F(DynamicBatchSchedulerTest, HugePriorityLevelCountCostsNothing) {
  // Levels are created on use: a config may declare up to 2^64-1 of them.
  options_.priority_levels = ~uint64_t{0};
  options_.default_priority_level = ~uint64_t{0};
  Start();
  Parameters p;
  p.Set("priority", uint64_t{123456789});
  auto a = Send(1, p);
  auto b = Send(2);
  EXPECT_EQ(Value(a), 2);
  EXPECT_EQ(Value(b), 4);
  sched_->Stop();
}

TEST_F(DynamicBatchSchedulerTest, StopRunsEverythingQueued) {
  options_.max_queue_delay_us = 10'000'000;  // would wait 10 s
  Start();
  auto a = Send(1);
  sched_->Stop();
  EXPECT_EQ(Value(a), 2);
  auto late = Send(2);
  EXPECT_EQ(late->future.get().status().code(), StatusCode::kUnavailable);
}

// Issue 22 item 4: a request cancelled while queued is answered CANCELLED and never executes; a
// full level makes room by dropping its cancelled requests.
TEST_F(DynamicBatchSchedulerTest, CancelledRequestsAreDroppedNotExecuted) {
  options_.default_policy.max_queue_size = 2;
  options_.max_queue_delay_us = 0;
  Start();
  auto busy = Occupy();
  auto cancel = std::make_shared<CancelToken>();
  auto send = [&](float v, std::shared_ptr<const CancelToken> token) {
    auto reply = std::make_shared<Reply>();
    SchedulerJob job = test_support::OneFloatJob(v, {}, reply);
    job.request->cancel_token = std::move(token);
    sched_->Enqueue(std::move(job), false);
    return reply;
  };
  auto dropped1 = send(7, cancel);
  auto dropped2 = send(7, cancel);
  cancel->Cancel();
  auto kept = send(3, nullptr);  // the level is full of cancelled requests: they make room
  backend_.Open();
  EXPECT_EQ(Value(busy), 200);
  EXPECT_EQ(Value(kept), 6);
  for (auto& r : {dropped1, dropped2}) {
    auto result = r->future.get();
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), StatusCode::kCancelled);
    EXPECT_EQ(result.status().message(), "Request was cancelled");
  }
  {
    std::lock_guard<std::mutex> l(backend_.mu);
    EXPECT_EQ(backend_.order, (std::vector<float>{100, 3}));
  }
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.fail_by_reason[static_cast<size_t>(FailureReason::kCanceled)], 2u);
  EXPECT_EQ(s.pending_requests, 0);
}

TEST_F(DynamicBatchSchedulerTest, DecoupledModelBatchGetsOneSenderPerRequest) {
  // A plugin that knows no senders serving a decoupled model: the batch's allocator outputs
  // become one FINAL response per request, in arrival order (preserve_ordering).
  model_.decoupled = true;
  options_.preserve_ordering = true;
  Start();
  auto first = Occupy();
  std::vector<std::shared_ptr<Reply>> replies;
  for (int i = 0; i < 4; ++i) replies.push_back(Send(static_cast<float>(i)));
  backend_.Open();
  EXPECT_EQ(Value(first), 200);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Value(replies[i]), 2 * i);
  sched_->Stop();
  EXPECT_EQ(backend_.batch_sizes, (std::vector<int64_t>{1, 4}));
  const auto snapshot = stats_.Snapshot();
  EXPECT_EQ(snapshot.execution_count, 2u);
  EXPECT_EQ(snapshot.inference_count, 5u);
  EXPECT_EQ(snapshot.success.count, 5u);
  EXPECT_EQ(snapshot.response_stats.at("0").success.count, 5u);
}

}  // namespace
}  // namespace nereid
