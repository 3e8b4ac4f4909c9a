// Test support of the SequenceBatchScheduler tests (sequence_batch_scheduler_test.cc,
// sequence_reschedule_test.cc): a test backend that accumulates IN into the implicit state and
// records every execution's rows (IN, START, READY, CORRID), optionally held at a gate so that
// requests queue while the instance is busy, and the fixture that builds a scheduler on it.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/scheduler/scheduler_test_support.h"
#include "core/scheduler/sequence/sequence_batch_scheduler.h"

namespace nereid::sequence_test {

using namespace std::chrono_literals;

struct Row {
  float in;
  int32_t start;
  int32_t ready;
  uint64_t corrid;
};

struct Backend : test_support::ExecutionGate {
  std::vector<std::vector<Row>> executions;
};

inline const backend::TensorRef* Find(const backend::ExecuteArgs& args, const std::string& name) {
  for (const auto& t : args.inputs) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

template <typename T>
T At(const backend::TensorRef* t, int64_t row) {
  T v;
  std::memcpy(&v, t->data.data() + row * sizeof(T), sizeof(T));
  return v;
}

// OUT = STATE_OUT = IN on START, else IN + STATE_IN.
class AccumulatingInstance : public backend::ModelInstance {
 public:
  explicit AccumulatingInstance(Backend* b) : b_(b) {}
  Status Execute(const backend::ExecuteArgs& args) override {
    const auto* in = Find(args, "IN");
    const auto* start = Find(args, "START");
    const auto* ready = Find(args, "READY");
    const auto* corrid = Find(args, "CORRID");
    const auto* state = Find(args, "STATE_IN");
    if (!in || !start || !ready || !corrid || !state) return Internal("missing input");
    std::vector<Row> rows;
    for (int64_t r = 0; r < args.batch_size; ++r) {
      rows.push_back({At<float>(in, r), At<int32_t>(start, r), At<int32_t>(ready, r),
                      At<uint64_t>(corrid, r)});
    }
    {
      std::unique_lock<std::mutex> l(b_->mu);
      b_->executions.push_back(rows);
      b_->Pass(l, rows[0].in);
    }
    // A negative IN fails its request alone (API v6): its row is left out of the outputs.
    std::vector<int64_t> kept;
    for (int64_t r = 0; r < args.batch_size; ++r) {
      if (rows[r].in < 0 && static_cast<size_t>(r) < args.request_errors.size()) {
        args.request_errors[r] = InvalidArgument("negative value");
      } else {
        kept.push_back(r);
      }
    }
    const int64_t shape[] = {static_cast<int64_t>(kept.size()), 1};
    for (const char* name : {"OUT", "STATE_OUT"}) {
      if (kept.empty() || !args.outputs->IsRequested(name)) continue;
      auto buf = args.outputs->Allocate(name, DataType::kFp32, shape, kept.size() * 4);
      if (!buf.ok()) return buf.status();
      for (size_t k = 0; k < kept.size(); ++k) {
        const int64_t r = kept[k];
        float v = rows[r].in + (rows[r].start ? 0.0f : At<float>(state, r));
        std::memcpy(buf->data() + k * 4, &v, 4);
      }
    }
    return Status::Ok();
  }

 private:
  Backend* b_;
};

using test_support::Reply;

class SequenceBatchSchedulerTest : public ::testing::Test {
 protected:
  SequenceBatchSchedulerTest() {
    model_.name = "m";
    model_.version = 1;
    model_.max_batch_size = 4;
    model_.inputs = {{"IN", DataType::kFp32, {1}}};
    model_.outputs = {{"OUT", DataType::kFp32, {1}}};
    options_.max_batch_size = 4;
    options_.slots_per_instance = 4;
    auto flag = [](const char* name) {
      return ControlSpec{
          name, DataType::kInt32, {std::string(4, '\0'), std::string("\1\0\0\0", 4)}};
    };
    options_.start = flag("START");
    options_.ready = flag("READY");
    options_.corrid = CorridSpec{"CORRID", DataType::kUint64};
    StateSpec s;
    s.input_name = "STATE_IN";
    s.output_name = "STATE_OUT";
    s.data_type = DataType::kFp32;
    s.dims = {1};
    options_.states = {s};
  }
  ~SequenceBatchSchedulerTest() override {
    backend_.Open();
    if (sched_) sched_->Stop();
  }

  void Start(int instances = 1) {
    std::vector<std::unique_ptr<backend::ModelInstance>> list;
    for (int i = 0; i < instances; ++i) {
      list.push_back(std::make_unique<AccumulatingInstance>(&backend_));
    }
    sched_ = std::make_unique<SequenceBatchScheduler>(&model_, &stats_, options_, std::move(list));
  }

  std::shared_ptr<Reply> Send(uint64_t id, float value, bool start = false, bool end = false,
                              std::shared_ptr<const CancelToken> cancel = nullptr,
                              uint64_t timeout_us = 0) {
    Parameters params;
    params.Set("sequence_id", id);
    if (start) params.Set("sequence_start", true);
    if (end) params.Set("sequence_end", true);
    if (timeout_us != 0) params.Set("timeout", timeout_us);
    auto reply = std::make_shared<Reply>();
    SchedulerJob job = test_support::OneFloatJob(value, std::move(params), reply);
    job.request->cancel_token = std::move(cancel);
    sched_->Enqueue(std::move(job), false);
    return reply;
  }

  static void ExpectCancelled(const std::shared_ptr<Reply>& r) {
    auto result = r->future.get();
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), StatusCode::kCancelled);
    EXPECT_EQ(result.status().message(), "Request was cancelled");
  }

  static float Value(const std::shared_ptr<Reply>& r) {
    auto result = r->future.get();
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (!result.ok()) return -1;
    EXPECT_EQ((*result)->outputs.size(), 1u);  // the state output is not the client's
    float v;
    std::memcpy(&v, (*result)->outputs[0].data.data(), 4);
    return v;
  }

  std::vector<std::vector<Row>> Executions() {
    std::lock_guard<std::mutex> l(backend_.mu);
    return backend_.executions;
  }

  ModelInfo model_;
  ModelStats stats_{4};
  SequenceOptions options_;
  Backend backend_;
  std::unique_ptr<SequenceBatchScheduler> sched_;
};

}  // namespace nereid::sequence_test
