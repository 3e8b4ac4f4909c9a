// Request rescheduling under sequence batching (backend API v7 ExecuteArgs::release_flags):
// iterative sequences run a rescheduled request again in its slot, decoupled or not; every other
// path refuses it.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "core/scheduler/sequence/sequence_batch_scheduler.h"
#include "core/scheduler/sequence/sequence_batch_scheduler_fixture.h"

namespace nereid {
namespace {

using namespace std::chrono_literals;
using namespace sequence_test;

// Iterative sequences (backend API v7): each row counts its executions by CORRID and asks to be
// rescheduled until the count reaches IN; then OUT = the count. A decoupled model also sends the
// count of every execution. Rows' START controls are recorded.
class ReschedulingInstance : public backend::ModelInstance {
 public:
  explicit ReschedulingInstance(Backend* b) : b_(b) {}
  Status Execute(const backend::ExecuteArgs& args) override {
    const auto* in = Find(args, "IN");
    const auto* start = Find(args, "START");
    const auto* corrid = Find(args, "CORRID");
    if (!in || !start || !corrid) return Internal("missing input");
    if (args.release_flags.size() != static_cast<size_t>(args.batch_size)) {
      return Internal("one release flag per row expected");
    }
    std::vector<Row> rows;
    std::vector<float> done;
    for (int64_t r = 0; r < args.batch_size; ++r) {
      Row row{At<float>(in, r), At<int32_t>(start, r), 1, At<uint64_t>(corrid, r)};
      rows.push_back(row);
      float& count = counts_[row.corrid];
      count = row.start ? 1 : count + 1;
      const int64_t one[] = {1, 1};
      const backend::TensorRef out[] = {
          {"OUT", DataType::kFp32, one, {reinterpret_cast<const char*>(&count), 4}}};
      const bool again = count < row.in;
      if (!args.senders.empty()) {
        NEREID_RETURN_IF_ERROR(args.senders[r]->Send(out, again ? 0 : backend::kResponseFinal));
      }
      if (again) {
        args.release_flags[r] = backend::kReleaseReschedule;
      } else {
        done.push_back(count);
      }
    }
    {
      std::unique_lock<std::mutex> l(b_->mu);
      b_->executions.push_back(rows);
    }
    if (!args.senders.empty() || done.empty()) return Status::Ok();
    const int64_t shape[] = {static_cast<int64_t>(done.size()), 1};
    auto buf = args.outputs->Allocate("OUT", DataType::kFp32, shape, done.size() * 4);
    if (!buf.ok()) return buf.status();
    std::memcpy(buf->data(), done.data(), done.size() * 4);
    return Status::Ok();
  }

 private:
  Backend* b_;
  std::map<uint64_t, float> counts_;
};

class RescheduleTest : public SequenceBatchSchedulerTest {
 protected:
  void StartRescheduling(bool iterative) {
    options_.iterative = iterative;
    options_.states.clear();
    std::vector<std::unique_ptr<backend::ModelInstance>> list;
    list.push_back(std::make_unique<ReschedulingInstance>(&backend_));
    sched_ = std::make_unique<SequenceBatchScheduler>(&model_, &stats_, options_, std::move(list));
  }
};

TEST_F(RescheduleTest, RescheduledRequestRunsAgainWithoutStartKeepingItsSlot) {
  StartRescheduling(true);
  EXPECT_EQ(Value(Send(0, 3)), 3);  // three executions of one request
  const auto ex = Executions();
  ASSERT_EQ(ex.size(), 3u);
  for (size_t i = 0; i < ex.size(); ++i) {
    ASSERT_EQ(ex[i].size(), 1u) << i;
    EXPECT_EQ(ex[i][0].corrid, 1u);
    EXPECT_EQ(ex[i][0].start, i == 0 ? 1 : 0) << i;  // Triton's flags 0 when rescheduled
  }
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.execution_count, 3u);
  EXPECT_EQ(s.success.count, 3u);  // each execution counts, as Triton's backends report them
  // The released request ended its sequence: the next request without an ID starts a new one.
  EXPECT_EQ(Value(Send(0, 1)), 1);
  EXPECT_EQ(Executions().back()[0].corrid, 2u);
}

TEST_F(RescheduleTest, RescheduledRequestsBatchWithOthersAndEndApart) {
  StartRescheduling(true);
  auto a = Send(0, 4);
  auto b = Send(0, 2);
  EXPECT_EQ(Value(b), 2);
  EXPECT_EQ(Value(a), 4);
  std::map<uint64_t, int> rows;  // executions per sequence, whatever the batches (fillers: 0)
  for (const auto& e : Executions()) {
    for (const Row& r : e) ++rows[r.corrid];
  }
  EXPECT_EQ(rows[1], 4);
  EXPECT_EQ(rows[2], 2);
}

TEST_F(RescheduleTest, WithoutIterativeSequenceTheRescheduleFailsTheRequest) {
  StartRescheduling(false);
  auto r = Send(5, 2, true)->future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is "
            "not configured to handle such a flag.");
  EXPECT_EQ(Executions().size(), 1u);
}

TEST_F(RescheduleTest, DecoupledRescheduledRequestContinuesItsResponses) {
  model_.decoupled = true;
  StartRescheduling(true);
  std::mutex mu;
  std::vector<float> partial;
  Parameters params;
  auto reply = std::make_shared<Reply>();
  SchedulerJob job = test_support::OneFloatJob(3, std::move(params), reply);
  job.request->on_response = [&](StatusOr<std::unique_ptr<InferenceResponse>> r) {
    ASSERT_TRUE(r.ok());
    float v;
    std::memcpy(&v, (*r)->outputs.at(0).data.data(), 4);
    std::lock_guard<std::mutex> l(mu);
    partial.push_back(v);
  };
  sched_->Enqueue(std::move(job), false);
  auto result = reply->future.get();
  ASSERT_TRUE(result.ok()) << result.status().message();
  float last;
  std::memcpy(&last, (*result)->outputs.at(0).data.data(), 4);
  EXPECT_EQ(last, 3);
  sched_->Stop();
  EXPECT_EQ(partial, (std::vector<float>{1, 2}));
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.execution_count, 3u);
  // Response statistics go on by index across the executions.
  EXPECT_EQ(s.response_stats.at("0").success.count, 1u);
  EXPECT_EQ(s.response_stats.at("1").success.count, 1u);
  EXPECT_EQ(s.response_stats.at("2").success.count, 1u);
}

TEST_F(RescheduleTest, DecoupledWithoutIterativeSequenceEndsWithTheRefusal) {
  model_.decoupled = true;
  StartRescheduling(false);
  Parameters params;
  params.Set("sequence_id", uint64_t{4});
  params.Set("sequence_start", true);
  auto reply = std::make_shared<Reply>();
  SchedulerJob job = test_support::OneFloatJob(3, std::move(params), reply);
  job.request->on_response = [](StatusOr<std::unique_ptr<InferenceResponse>>) {};
  sched_->Enqueue(std::move(job), false);
  auto result = reply->future.get();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("TRITONSERVER_REQUEST_RELEASE_RESCHEDULE"),
            std::string::npos);
}

// A client that gives up on a request being rescheduled drops it as any queued sequence request:
// CANCELLED, and its sequence's slot is free again.
TEST_F(RescheduleTest, CancelledRescheduledRequestIsDropped) {
  StartRescheduling(true);
  auto token = std::make_shared<CancelToken>();
  auto reply = Send(0, 1e9f, false, false, token);
  while (Executions().size() < 3) std::this_thread::sleep_for(1ms);
  token->Cancel();
  ExpectCancelled(reply);
  EXPECT_EQ(Value(Send(0, 1)), 1);
}

}  // namespace
}  // namespace nereid
