// SequenceBatchScheduler with a test backend that accumulates IN into the implicit state and
// records every execution's rows (IN, START, READY, CORRID), optionally held at a gate so that
// requests queue while the instance is busy.
#include "core/scheduler/sequence/sequence_batch_scheduler.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <thread>

#include "core/scheduler/sequence/sequence_batch_scheduler_fixture.h"

namespace nereid {
namespace {

using namespace std::chrono_literals;
using namespace sequence_test;

TEST_F(SequenceBatchSchedulerTest, StateCarriesFromRequestToRequest) {
  Start();
  EXPECT_EQ(Value(Send(7, 1, true)), 1);
  EXPECT_EQ(Value(Send(7, 2)), 3);
  EXPECT_EQ(Value(Send(7, 3, false, true)), 6);
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.success.count, 3u);
  EXPECT_EQ(s.execution_count, 3u);
}

TEST_F(SequenceBatchSchedulerTest, DirectBatchesSlotsInTheirRowsWithFillers) {
  Start();
  // a -> slot 0, b -> slot 1, c -> slot 2; all started, then a ends and frees slot 0.
  for (uint64_t id : {1, 2, 3}) EXPECT_EQ(Value(Send(id, 10.0f * id, true)), 10.0f * id);
  EXPECT_EQ(Value(Send(1, 1, false, true)), 11);
  backend_.Close();
  auto hold = Send(2, 1);  // runs alone in row 1 and is held
  backend_.WaitRunning(1);
  auto c1 = Send(3, 5);
  auto b2 = Send(2, 5);
  backend_.Open();
  EXPECT_EQ(Value(hold), 21);
  EXPECT_EQ(Value(c1), 35);
  EXPECT_EQ(Value(b2), 26);
  const auto ex = Executions();
  ASSERT_EQ(ex.size(), 6u);
  // Execution 5: b alone in row 1; row 0 is a filler (READY 0, CORRID 0).
  ASSERT_EQ(ex[4].size(), 2u);
  EXPECT_EQ(ex[4][0].ready, 0);
  EXPECT_EQ(ex[4][0].corrid, 0u);
  EXPECT_EQ(ex[4][1].corrid, 2u);
  EXPECT_EQ(ex[4][1].ready, 1);
  // Execution 6: b (row 1) and c (row 2) together, row 0 a filler.
  ASSERT_EQ(ex[5].size(), 3u);
  EXPECT_EQ(ex[5][0].ready, 0);
  EXPECT_EQ(ex[5][1].corrid, 2u);
  EXPECT_EQ(ex[5][2].corrid, 3u);
  EXPECT_EQ(ex[5][1].start, 0);
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.inference_count, 7u);  // fillers are not inferences
  EXPECT_EQ(s.execution_count, 6u);
  ASSERT_EQ(s.batch_stats.size(), 2u);  // executions of 1 and of 2 real requests
  EXPECT_EQ(s.batch_stats[0].batch_size, 1u);
  EXPECT_EQ(s.batch_stats[0].compute_infer.count, 5u);
  EXPECT_EQ(s.batch_stats[1].batch_size, 2u);
  EXPECT_EQ(s.batch_stats[1].compute_infer.count, 1u);
}

TEST_F(SequenceBatchSchedulerTest, RequestFailedAloneKeepsItsSequenceStateAndTheOthersRun) {
  Start();
  for (uint64_t id : {1, 2, 3}) EXPECT_EQ(Value(Send(id, 10.0f * id, true)), 10.0f * id);
  backend_.Close();
  auto hold = Send(3, 1);  // held, so that the next two share an execution
  backend_.WaitRunning(1);
  auto failed = Send(1, -1);
  auto other = Send(2, 5);
  backend_.Open();
  EXPECT_EQ(Value(hold), 31);
  auto r = failed->future.get();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "negative value");
  EXPECT_EQ(Value(other), 25);
  EXPECT_EQ(Value(Send(1, 1, false, true)), 11);  // the failed request left the state as it was
  const auto ex = Executions();
  ASSERT_EQ(ex.size(), 6u);
  EXPECT_EQ(ex[4].size(), 2u);  // sequences 1 and 2 together, in slots 0 and 1
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.success.count, 6u);
  EXPECT_EQ(s.fail.count, 1u);
  EXPECT_EQ(s.execution_count, 6u);
}

TEST_F(SequenceBatchSchedulerTest, BacklogRunsWhenASlotFrees) {
  options_.slots_per_instance = 1;
  Start();
  EXPECT_EQ(Value(Send(1, 1, true)), 1);
  auto waiting = Send(2, 100, true, true);
  EXPECT_EQ(waiting->future.wait_for(100ms), std::future_status::timeout);
  EXPECT_EQ(Value(Send(1, 1, false, true)), 2);
  EXPECT_EQ(Value(waiting), 100);
}

TEST_F(SequenceBatchSchedulerTest, OldestNeverBatchesTwoRequestsOfOneSequence) {
  options_.strategy = SequenceOptions::Strategy::kOldest;
  options_.preferred_batch_sizes = {4};
  Start();
  EXPECT_EQ(Value(Send(1, 1, true)), 1);
  EXPECT_EQ(Value(Send(2, 10, true)), 10);
  backend_.Close();
  auto hold = Send(3, 100, true);
  backend_.WaitRunning(1);
  auto a1 = Send(1, 1);
  auto a2 = Send(1, 1);
  auto b1 = Send(2, 1);
  backend_.Open();
  EXPECT_EQ(Value(hold), 100);
  EXPECT_EQ(Value(a1), 2);
  EXPECT_EQ(Value(b1), 11);
  EXPECT_EQ(Value(a2), 3);
  const auto ex = Executions();
  ASSERT_EQ(ex.size(), 5u);
  ASSERT_EQ(ex[3].size(), 2u);  // a1 and b1, oldest first; no filler rows
  EXPECT_EQ(ex[3][0].corrid, 1u);
  EXPECT_EQ(ex[3][1].corrid, 2u);
  EXPECT_EQ(ex[3][0].ready, 1);
  ASSERT_EQ(ex[4].size(), 1u);  // a2 alone
  EXPECT_EQ(ex[4][0].corrid, 1u);
}

TEST_F(SequenceBatchSchedulerTest, OldestPreserveOrderingAcrossInstances) {
  options_.strategy = SequenceOptions::Strategy::kOldest;
  options_.preserve_ordering = true;
  Start(2);
  EXPECT_EQ(Value(Send(1, 1, true)), 1);  // instance 0
  EXPECT_EQ(Value(Send(2, 1, true)), 1);  // instance 1
  backend_.hold_only = 50.0f;
  backend_.Close();
  auto first = Send(1, 50);  // held on instance 0
  backend_.WaitRunning(1);
  auto second = Send(2, 7);  // runs at once on instance 1, but is delivered after `first`
  EXPECT_EQ(second->future.wait_for(100ms), std::future_status::timeout);
  backend_.Open();
  EXPECT_EQ(Value(first), 51);
  EXPECT_EQ(Value(second), 8);
}

TEST_F(SequenceBatchSchedulerTest, OldestWithoutOrderingDeliversWhenDone) {
  options_.strategy = SequenceOptions::Strategy::kOldest;
  Start(2);
  EXPECT_EQ(Value(Send(1, 1, true)), 1);
  EXPECT_EQ(Value(Send(2, 1, true)), 1);
  backend_.hold_only = 50.0f;
  backend_.Close();
  auto first = Send(1, 50);
  backend_.WaitRunning(1);
  EXPECT_EQ(Value(Send(2, 7)), 8);  // not held behind `first`
  backend_.Open();
  EXPECT_EQ(Value(first), 51);
}

TEST_F(SequenceBatchSchedulerTest, SequencesStayOnTheirInstance) {
  Start(2);
  for (uint64_t id = 1; id <= 4; ++id) EXPECT_EQ(Value(Send(id, 1, true)), 1);
  std::vector<std::shared_ptr<Reply>> replies;
  for (int step = 0; step < 5; ++step) {
    for (uint64_t id = 1; id <= 4; ++id) replies.push_back(Send(id, 1, false, step == 4));
  }
  for (size_t k = 0; k < replies.size(); ++k) EXPECT_EQ(Value(replies[k]), 2 + k / 4);
}

TEST_F(SequenceBatchSchedulerTest, ErrorsOfTheSequenceParameters) {
  Start();
  auto missing = Send(0, 1, true);
  auto r = missing->future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "inference request to model 'm' must specify a non-zero or non-empty correlation ID");
  auto no_start = Send(9, 1);
  r = no_start->future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "inference request for sequence 9 to model 'm' must specify the START flag on the "
            "first request of the sequence");
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.fail.count, 2u);
}

TEST_F(SequenceBatchSchedulerTest, StopRunsQueuedRequestsAndFailsTheBacklog) {
  options_.slots_per_instance = 1;
  Start();
  EXPECT_EQ(Value(Send(1, 1, true)), 1);
  backend_.Close();
  auto held = Send(1, 2);  // a's request, running
  backend_.WaitRunning(1);
  auto queued = Send(1, 3);            // a's next request, queued in a's slot
  auto backlogged = Send(2, 9, true);  // b waits for a slot that a never frees
  std::thread stopper([&] { sched_->Stop(); });
  backend_.Open();
  stopper.join();
  EXPECT_EQ(Value(held), 3);
  EXPECT_EQ(Value(queued), 6);  // a sequence in flight finishes
  auto r = backlogged->future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "model 'm' is unloading");
  EXPECT_EQ(stats_.Snapshot().pending_requests, 0);
  auto after = Send(3, 1, true)->future.get();  // new requests are refused
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
}

TEST_F(SequenceBatchSchedulerTest, IdleSequenceIsReleased) {
  options_.idle_ns = 50'000'000;  // 50 ms
  Start();
  EXPECT_EQ(Value(Send(5, 1, true)), 1);
  std::this_thread::sleep_for(200ms);
  auto r = Send(5, 1)->future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("START"), std::string::npos);
}

// Issue 22 item 4: cancelled backlogged sequences give their place up at once; a fresh sequence
// behind them gets the slot as soon as it frees, and the cancelled requests never execute.
TEST_F(SequenceBatchSchedulerTest, CancelledBacklogNeverRunsNorHoldsTheSlot) {
  options_.slots_per_instance = 1;
  options_.idle_ns = 3'600'000'000'000;  // an hour: only END frees the slot
  Start();
  EXPECT_EQ(Value(Send(1, 1, true)), 1);
  auto cancel = std::make_shared<CancelToken>();
  std::vector<std::shared_ptr<Reply>> abandoned;
  for (uint64_t id = 100; id < 110; ++id) abandoned.push_back(Send(id, 7, true, false, cancel));
  auto fresh = Send(2, 42, true);
  EXPECT_EQ(fresh->future.wait_for(50ms), std::future_status::timeout);  // every slot is taken
  cancel->Cancel();
  EXPECT_EQ(Value(Send(1, 1, false, true)), 2);  // frees the only slot
  EXPECT_EQ(Value(fresh), 42);
  for (auto& r : abandoned) ExpectCancelled(r);
  for (const auto& ex : Executions()) {
    for (const Row& row : ex) EXPECT_NE(row.in, 7.0f);  // no cancelled request ran
  }
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.fail.count, 10u);
  EXPECT_EQ(s.fail_by_reason[static_cast<size_t>(FailureReason::kCanceled)], 10u);
  EXPECT_EQ(s.pending_requests, 0);
  auto again = Send(100, 1)->future.get();  // a dropped sequence is forgotten: START needed
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
}

// A cancelled request at the head of a sequence that owns a slot drops the rest of the sequence
// (as Triton) and frees the slot for the backlog.
TEST_F(SequenceBatchSchedulerTest, CancelledHeadDropsTheSequenceAndFreesItsSlot) {
  options_.slots_per_instance = 1;
  options_.idle_ns = 3'600'000'000'000;
  Start();
  EXPECT_EQ(Value(Send(1, 1, true)), 1);
  backend_.Close();
  auto held = Send(1, 2);  // running
  backend_.WaitRunning(1);
  auto cancel = std::make_shared<CancelToken>();
  auto cancelled = Send(1, 3, false, false, cancel);
  auto behind = Send(1, 4);  // same sequence, not itself cancelled
  auto backlogged = Send(2, 50, true);
  cancel->Cancel();
  backend_.Open();
  EXPECT_EQ(Value(held), 3);
  ExpectCancelled(cancelled);
  ExpectCancelled(behind);
  EXPECT_EQ(Value(backlogged), 50);
}

// Issue 22 item 4: the backlog is bounded; a full backlog refuses a request that would wait there
// with Triton's queue-full error, never one of the slot holder (whose END frees the slot), and
// cancelled backlogged requests make room first.
TEST_F(SequenceBatchSchedulerTest, BoundedBacklogRefusesWhenFull) {
  options_.slots_per_instance = 1;
  options_.idle_ns = 3'600'000'000'000;
  options_.max_backlog_size = 3;
  Start();
  EXPECT_EQ(Value(Send(1, 1, true)), 1);  // owns the slot, nothing queued
  auto cancel = std::make_shared<CancelToken>();
  auto b = Send(2, 1, true, false, cancel);
  auto c = Send(3, 1, true);
  auto d = Send(3, 1);
  auto refused = Send(4, 1, true)->future.get();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(refused.status().message(), "Exceeds maximum queue size");
  auto refused_too = Send(3, 1)->future.get();  // c is backlogged: it would wait there too
  ASSERT_FALSE(refused_too.ok());
  EXPECT_EQ(refused_too.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Value(Send(1, 5)), 6);  // the slot holder is never refused
  cancel->Cancel();
  auto e = Send(4, 60, true, true);  // b's place
  ExpectCancelled(b);
  EXPECT_EQ(Value(Send(1, 1, false, true)), 7);
  EXPECT_EQ(Value(c), 1);
  EXPECT_EQ(Value(d), 2);
  EXPECT_EQ(Value(Send(3, 0, false, true)), 2);
  EXPECT_EQ(Value(e), 60);
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.fail_by_reason[static_cast<size_t>(FailureReason::kRejected)], 2u);
  EXPECT_EQ(s.fail_by_reason[static_cast<size_t>(FailureReason::kCanceled)], 1u);
}

// Triton: a request's `timeout` bounds the wait of its sequence in the backlog; the reaper answers
// the whole backlogged sequence at once, while the slot holder keeps running.
TEST_F(SequenceBatchSchedulerTest, BackloggedSequenceTimesOutWhileTheSlotIsBusy) {
  options_.slots_per_instance = 1;
  options_.idle_ns = 3'600'000'000'000;
  Start();
  EXPECT_EQ(Value(Send(1, 1, true, false, nullptr, 1000)), 1);  // a slot holder never times out
  backend_.Close();
  auto held = Send(1, 2);
  backend_.WaitRunning(1);
  const auto t0 = std::chrono::steady_clock::now();
  auto first = Send(2, 10, true, false, nullptr, 20'000);  // expires at +20 ms
  auto second = Send(2, 11);                               // same backlogged sequence
  auto patient = Send(3, 30, true, true);                  // no timeout
  for (auto* r : {&first, &second}) {
    ASSERT_EQ((*r)->future.wait_for(2s), std::future_status::ready);
    auto result = (*r)->future.get();
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(result.status().message(), "timeout of the corresponding sequence has been expired");
  }
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  backend_.Open();
  EXPECT_EQ(Value(held), 3);
  auto forgotten = Send(2, 1)->future.get();  // the expired sequence is forgotten
  ASSERT_FALSE(forgotten.ok());
  EXPECT_EQ(forgotten.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Value(Send(1, 1, false, true)), 4);
  EXPECT_EQ(Value(patient), 30);
  const auto s = stats_.Snapshot();
  EXPECT_EQ(s.fail_by_reason[static_cast<size_t>(FailureReason::kRejected)], 3u);
  EXPECT_EQ(s.pending_requests, 0);
}

// TRITONSERVER_DELAY_SCHEDULER=N under Direct: nothing runs until N requests wait in slots, then
// they run as one batch.
TEST_F(SequenceBatchSchedulerTest, DelayCountMakesADirectBatchOfExactlyN) {
  options_.delay_count = 3;
  Start();
  auto a = Send(1, 1, true);
  auto b = Send(2, 2, true);
  EXPECT_EQ(a->future.wait_for(50ms), std::future_status::timeout);
  auto c = Send(3, 3, true);
  EXPECT_EQ(Value(a), 1);
  EXPECT_EQ(Value(b), 2);
  EXPECT_EQ(Value(c), 3);
  const auto ex = Executions();
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].size(), 3u);
}

// TRITONSERVER_BACKLOG_DELAY_SCHEDULER=M: Direct also waits for M backlogged requests.
TEST_F(SequenceBatchSchedulerTest, BacklogDelayCountAlsoWaitsForTheBacklog) {
  options_.slots_per_instance = 2;
  options_.delay_count = 2;
  options_.backlog_delay_count = 1;
  Start();
  auto a = Send(1, 1, true, true);
  auto b = Send(2, 2, true, true);
  EXPECT_EQ(a->future.wait_for(50ms), std::future_status::timeout);  // 2 in slots, 0 in backlog
  auto c = Send(3, 3, true, true);
  EXPECT_EQ(Value(a), 1);
  EXPECT_EQ(Value(b), 2);
  EXPECT_EQ(Value(c), 3);
  const auto ex = Executions();
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].size(), 2u);
}

TEST_F(SequenceBatchSchedulerTest, DelayCountUnderOldestCountsCandidateSequences) {
  options_.strategy = SequenceOptions::Strategy::kOldest;
  options_.delay_count = 2;
  Start();
  auto a = Send(1, 1, true);
  auto a2 = Send(1, 5);  // same sequence: still one candidate
  EXPECT_EQ(a->future.wait_for(50ms), std::future_status::timeout);
  auto b = Send(2, 2, true);
  EXPECT_EQ(Value(a), 1);
  EXPECT_EQ(Value(b), 2);
  EXPECT_EQ(Value(a2), 6);
  const auto ex = Executions();
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].size(), 2u);
}

TEST_F(SequenceBatchSchedulerTest, StopLetsTheDelayCountGo) {
  options_.delay_count = 5;
  Start();
  auto a = Send(1, 1, true);
  sched_->Stop();
  EXPECT_EQ(Value(a), 1);
}

// iterative_sequence with a backend that never reschedules (Triton's IterativeSequencer): a
// request without a correlation ID gets 1, 2, ... and START; each request ends its sequence.
TEST_F(SequenceBatchSchedulerTest, IterativeSequenceMakesEachRequestASequenceOfItsOwn) {
  options_.iterative = true;
  Start();
  EXPECT_EQ(Value(Send(0, 5)), 5);  // no ID: START, so the state restarts
  EXPECT_EQ(Value(Send(0, 6)), 6);
  EXPECT_EQ(Value(Send(9, 1, true)), 1);
  auto again = Send(9, 2)->future.get();  // the sequence ended with its first request
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
  const auto ex = Executions();
  ASSERT_EQ(ex.size(), 3u);
  EXPECT_EQ(ex[0][0].corrid, 1u);
  EXPECT_EQ(ex[0][0].start, 1);
  EXPECT_EQ(ex[1][0].corrid, 2u);
  EXPECT_EQ(ex[2][0].corrid, 9u);
}

TEST_F(SequenceBatchSchedulerTest, WithoutIterativeSequenceAnIdIsRequired) {
  Start();
  auto r = Send(0, 5)->future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "inference request to model 'm' must specify a non-zero or non-empty correlation ID");
}

// A decoupled model: row r's sender gets OUT = 10 * IN[r], then a flags-only FINAL.
class SendingInstance : public backend::ModelInstance {
 public:
  explicit SendingInstance(Backend* b) : b_(b) {}
  Status Execute(const backend::ExecuteArgs& args) override {
    const auto* in = Find(args, "IN");
    if (in == nullptr || args.senders.size() != static_cast<size_t>(args.batch_size)) {
      return Internal("one sender per row expected");
    }
    {
      std::unique_lock<std::mutex> l(b_->mu);
      b_->executions.push_back(std::vector<Row>(args.senders.size()));
      b_->Pass(l, At<float>(in, 0));
    }
    const int64_t one[] = {1, 1};
    for (size_t r = 0; r < args.senders.size(); ++r) {
      const float v = 10 * At<float>(in, static_cast<int64_t>(r));
      const backend::TensorRef out[] = {
          {"OUT", DataType::kFp32, one, {reinterpret_cast<const char*>(&v), 4}}};
      NEREID_RETURN_IF_ERROR(args.senders[r]->Send(out, 0));
      NEREID_RETURN_IF_ERROR(args.senders[r]->Send({}, backend::kResponseFinal));
    }
    return Status::Ok();
  }

 private:
  Backend* b_;
};

TEST_F(SequenceBatchSchedulerTest, DecoupledSequencesShareAnExecutionWithOneSenderEach) {
  model_.decoupled = true;
  options_.states.clear();
  std::vector<std::unique_ptr<backend::ModelInstance>> list;
  list.push_back(std::make_unique<SendingInstance>(&backend_));
  sched_ = std::make_unique<SequenceBatchScheduler>(&model_, &stats_, options_, std::move(list));
  std::mutex mu;
  std::map<uint64_t, std::vector<float>> partial;  // by sequence id
  auto send = [&](uint64_t id, float value) {
    Parameters params;
    params.Set("sequence_id", id);
    params.Set("sequence_start", true);
    auto reply = std::make_shared<Reply>();
    SchedulerJob job = test_support::OneFloatJob(value, std::move(params), reply);
    job.request->on_response = [&, id](StatusOr<std::unique_ptr<InferenceResponse>> r) {
      ASSERT_TRUE(r.ok());
      float v;
      std::memcpy(&v, (*r)->outputs.at(0).data.data(), 4);
      std::lock_guard<std::mutex> l(mu);
      partial[id].push_back(v);
    };
    sched_->Enqueue(std::move(job), false);
    return reply;
  };
  backend_.Close();
  auto first = send(1, 1);
  backend_.WaitRunning(1);
  auto second = send(2, 2);
  auto third = send(3, 3);
  backend_.Open();
  for (auto* r : {&first, &second, &third}) {
    auto result = (*r)->future.get();
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_TRUE((*result)->outputs.empty());  // the flags-only FINAL
  }
  sched_->Stop();
  EXPECT_EQ(partial[1], std::vector<float>{10});
  EXPECT_EQ(partial[2], std::vector<float>{20});
  EXPECT_EQ(partial[3], std::vector<float>{30});
  const auto snapshot = stats_.Snapshot();
  EXPECT_EQ(snapshot.inference_count, 3u);
  EXPECT_EQ(snapshot.execution_count, 2u);  // sequences 2 and 3 (slots 1 and 2) shared one
  EXPECT_EQ(snapshot.response_stats.at("0").success.count, 3u);
}

}  // namespace
}  // namespace nereid
