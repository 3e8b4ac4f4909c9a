// Test-only helpers shared by the scheduler unit tests: a gate that test backends hold their
// executions at (so that requests queue while an instance is busy) and a one-float request whose
// reply lands in a future.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>

#include "core/request/inference_request.h"
#include "core/scheduler/scheduler.h"
#include "core/stats/model_stats.h"  // NowNs

namespace nereid::test_support {

// Executions call Pass() under `mu`; while the gate is closed they wait there.
struct ExecutionGate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;
  std::optional<float> hold_only;  // when set, only an execution whose first value is it waits
  int running = 0;

  void Close() {
    std::lock_guard<std::mutex> l(mu);
    open = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu);
      open = true;
    }
    cv.notify_all();
  }
  void WaitRunning(int n) {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(5), [&] { return running >= n; }));
  }
  // `lock` holds `mu`. Counts the execution as running (waking WaitRunning) until it may go on.
  void Pass(std::unique_lock<std::mutex>& lock, float first) {
    ++running;
    cv.notify_all();
    if (!hold_only || *hold_only == first) cv.wait(lock, [&] { return open; });
    --running;
  }
};

struct Reply {
  std::promise<StatusOr<std::unique_ptr<InferenceResponse>>> promise;
  std::future<StatusOr<std::unique_ptr<InferenceResponse>>> future = promise.get_future();
};

// A job of batch 1 whose FP32 input "IN" of shape [1, 1] holds `value`; `params` become the
// request's parameters. The result is set on `reply` after `on_done` runs.
inline SchedulerJob OneFloatJob(float value, Parameters params, std::shared_ptr<Reply> reply,
                                std::function<void()> on_done = {}) {
  auto r = std::make_unique<InferenceRequest>();
  auto buf = std::make_shared<float>(value);
  InferInput in;
  in.name = "IN";
  in.data_type = DataType::kFp32;
  in.shape = {1, 1};
  in.data = std::span<const char>(reinterpret_cast<const char*>(buf.get()), 4);
  r->inputs.push_back(in);
  r->KeepAlive(buf);
  r->parameters = std::move(params);
  SchedulerJob job;
  job.request = std::move(r);
  job.batch_size = 1;
  job.request_start_ns = NowNs();
  job.done = [reply = std::move(reply),
              on_done = std::move(on_done)](StatusOr<std::unique_ptr<InferenceResponse>> result) {
    if (on_done) on_done();
    reply->promise.set_value(std::move(result));
  };
  return job;
}

}  // namespace nereid::test_support
