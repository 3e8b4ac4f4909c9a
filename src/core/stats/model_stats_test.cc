// ModelStats: what each Record* call adds, the inclusion rules of seed 004, batch statistics by
// size, response statistics by index, and that concurrent recording loses nothing.
#include "core/stats/model_stats.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/stats/process_memory.h"

namespace nereid {
namespace {

ExecutionTimes Exec(uint64_t start, uint64_t input, uint64_t infer, uint64_t output) {
  return {start, start + input, start + input + infer, start + input + infer + output};
}

TEST(ModelStatsTest, StartsEmpty) {
  ModelStats stats(8);
  ModelStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.inference_count, 0u);
  EXPECT_EQ(s.execution_count, 0u);
  EXPECT_EQ(s.last_inference_ms, 0u);
  EXPECT_EQ(s.success.count, 0u);
  EXPECT_TRUE(s.batch_stats.empty());
  EXPECT_TRUE(s.response_stats.empty());
}

TEST(ModelStatsTest, SuccessRecordsEveryPhase) {
  ModelStats stats(8);
  const ExecutionTimes exec = Exec(1000, 10, 200, 30);
  stats.RecordExecution(4, exec);
  stats.RecordSuccess(4, 900, 950, exec, 1300);
  ModelStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.inference_count, 4u);  // a batch of 4 counts 4
  EXPECT_EQ(s.execution_count, 1u);
  EXPECT_EQ(s.success.count, 1u);
  EXPECT_EQ(s.success.ns, 400u);
  EXPECT_EQ(s.queue.ns, 50u);
  EXPECT_EQ(s.compute_input.ns, 10u);
  EXPECT_EQ(s.compute_infer.ns, 200u);
  EXPECT_EQ(s.compute_output.ns, 30u);
  EXPECT_EQ(s.fail.count, 0u);
  EXPECT_GT(s.last_inference_ms, 1600000000000u);  // wall clock, ms since the epoch
  ASSERT_EQ(s.batch_stats.size(), 1u);
  EXPECT_EQ(s.batch_stats[0].batch_size, 4u);
  EXPECT_EQ(s.batch_stats[0].compute_infer.count, 1u);
  EXPECT_EQ(s.batch_stats[0].compute_infer.ns, 200u);
}

TEST(ModelStatsTest, QueueTimesOfSuccessesAndCacheHitsAreBucketed) {
  ModelStats stats(8);
  // queue: compute_start (1000 + 3000) - queue_start (1000) = 3 µs -> bucket [2, 4) µs.
  stats.RecordSuccess(1, 1000, 1000, Exec(4000, 10, 20, 30), 5000);
  // a cache hit: lookup_start - queue_start = 1.5 µs -> bucket [1, 2) µs.
  stats.RecordCacheHit(0, 0, 1500, 1600);
  stats.RecordFailure(FailureReason::kBackend, 0, 900000);  // failures are not queued time
  const ModelStatsSnapshot s = stats.Snapshot();
  uint64_t total = 0;
  for (uint64_t c : s.queue_histogram) total += c;
  EXPECT_EQ(total, 2u);
  EXPECT_EQ(s.queue_histogram[2], 1u);
  EXPECT_EQ(s.queue_histogram[1], 1u);
}

TEST(ModelStatsTest, NonBatchingModelCountsOneInference) {
  ModelStats stats(0);
  const ExecutionTimes exec = Exec(10, 1, 1, 1);
  stats.RecordExecution(0, exec);
  stats.RecordSuccess(0, 0, 5, exec, 20);
  ModelStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.inference_count, 1u);
  ASSERT_EQ(s.batch_stats.size(), 1u);
  EXPECT_EQ(s.batch_stats[0].batch_size, 1u);
}

TEST(ModelStatsTest, FailureCountsOnlyInFailWithItsReason) {
  ModelStats stats(8);
  stats.RecordFailure(FailureReason::kBackend, 100, 350);
  stats.RecordFailure(FailureReason::kRejected, 100, 110);
  ModelStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.fail.count, 2u);
  EXPECT_EQ(s.fail.ns, 260u);
  EXPECT_EQ(s.success.count, 0u);
  EXPECT_EQ(s.inference_count, 0u);
  EXPECT_EQ(s.execution_count, 0u);
  EXPECT_EQ(s.queue.count, 0u);
  EXPECT_EQ(s.last_inference_ms, 0u);  // only successful inferences move it
  EXPECT_EQ(s.fail_by_reason[static_cast<int>(FailureReason::kBackend)], 1u);
  EXPECT_EQ(s.fail_by_reason[static_cast<int>(FailureReason::kRejected)], 1u);
  EXPECT_EQ(s.fail_by_reason[static_cast<int>(FailureReason::kOther)], 0u);
}

TEST(ModelStatsTest, BatchStatsAreKeptPerSizeAscending) {
  ModelStats stats(8);
  stats.RecordExecution(8, Exec(0, 1, 80, 1));
  stats.RecordExecution(2, Exec(0, 1, 20, 1));
  stats.RecordExecution(8, Exec(0, 1, 80, 1));
  stats.RecordExecution(9, Exec(0, 1, 90, 1));  // beyond max_batch_size: counted, not indexed
  ModelStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.execution_count, 4u);
  ASSERT_EQ(s.batch_stats.size(), 2u);
  EXPECT_EQ(s.batch_stats[0].batch_size, 2u);
  EXPECT_EQ(s.batch_stats[1].batch_size, 8u);
  EXPECT_EQ(s.batch_stats[1].compute_infer.count, 2u);
  EXPECT_EQ(s.batch_stats[1].compute_infer.ns, 160u);
}

TEST(ModelStatsTest, ResponseStatsByIndex) {
  ModelStats stats(1);
  stats.RecordResponse(0, true, 100, 10);
  stats.RecordResponse(0, false, 50, 5);
  stats.RecordResponse(2, true, 7, 3);
  ModelStatsSnapshot s = stats.Snapshot();
  ASSERT_EQ(s.response_stats.size(), 2u);
  const ResponseStat& first = s.response_stats.at("0");
  EXPECT_EQ(first.compute_infer.count, 2u);
  EXPECT_EQ(first.compute_infer.ns, 150u);
  EXPECT_EQ(first.success.count, 1u);
  EXPECT_EQ(first.success.ns, 110u);
  EXPECT_EQ(first.fail.count, 1u);
  EXPECT_EQ(first.fail.ns, 55u);
  EXPECT_EQ(s.response_stats.at("2").success.ns, 10u);
}

TEST(ModelStatsTest, LastInferenceMovesWithExecutionsOnly) {
  ModelStats stats(1);
  const ExecutionTimes exec = Exec(10, 1, 1, 1);
  stats.RecordSuccess(1, 0, 5, exec, 20);  // a success alone does not move it (Triton: batch stats)
  EXPECT_EQ(stats.Snapshot().last_inference_ms, 0u);
  stats.RecordExecution(1, exec);
  const uint64_t first = stats.Snapshot().last_inference_ms;
  EXPECT_GT(first, 1600000000000u);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  stats.RecordExecution(1, exec);
  EXPECT_GT(stats.Snapshot().last_inference_ms, first);
}

class RecordingObserver : public LatencyObserver {
 public:
  explicit RecordingObserver(std::vector<RequestLatencies>* seen) : seen_(seen) {}
  void Observe(const RequestLatencies& l) override { seen_->push_back(l); }
  void ObserveFailure(uint64_t request_ns) override { failures.push_back(request_ns); }
  std::vector<uint64_t> failures;

 private:
  std::vector<RequestLatencies>* seen_;
};

TEST(ModelStatsTest, ObserverSeesSuccessesAndFailuresApart) {
  std::vector<RequestLatencies> seen;
  ModelStats stats(8);
  auto observer = std::make_unique<RecordingObserver>(&seen);
  RecordingObserver* o = observer.get();
  stats.SetLatencyObserver(std::move(observer));
  const ExecutionTimes exec = Exec(1000, 10, 200, 30);
  stats.RecordSuccess(2, 900, 950, exec, 1300);
  stats.RecordFailure(FailureReason::kBackend, 0, 100);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].request_ns, 400u);
  EXPECT_EQ(seen[0].queue_ns, 50u);
  EXPECT_EQ(seen[0].compute_input_ns, 10u);
  EXPECT_EQ(seen[0].compute_infer_ns, 200u);
  EXPECT_EQ(seen[0].compute_output_ns, 30u);
  EXPECT_EQ(o->failures, std::vector<uint64_t>{100});
}

TEST(ModelStatsTest, LoadFactsAreReported) {
  ModelStats stats(1);
  stats.SetLoadDuration(123456);
  stats.SetMemoryUsage({{"CPU", 0, 4096}});
  ModelStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.load_duration_ns, 123456u);
  ASSERT_EQ(s.memory_usage.size(), 1u);
  EXPECT_EQ(s.memory_usage[0].type, "CPU");
  EXPECT_EQ(s.memory_usage[0].byte_size, 4096u);
}

TEST(ModelStatsTest, PendingNeverReadsNegative) {
  ModelStats stats(1);
  stats.AddPending(2);
  EXPECT_EQ(stats.Snapshot().pending_requests, 2);
  stats.AddPending(-3);
  EXPECT_EQ(stats.Snapshot().pending_requests, 0);
}

TEST(ModelStatsTest, ConcurrentRecordingLosesNothing) {
  ModelStats stats(4);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const ExecutionTimes exec = Exec(100, 1, 2, 3);
        stats.RecordExecution(t + 1, exec);
        stats.RecordSuccess(t + 1, 90, 95, exec, 110);
      }
    });
  }
  for (auto& th : threads) th.join();
  ModelStatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.execution_count, uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(s.inference_count, uint64_t{kPerThread} * (1 + 2 + 3 + 4));
  EXPECT_EQ(s.success.ns, uint64_t{kThreads} * kPerThread * 20);
  ASSERT_EQ(s.batch_stats.size(), 4u);
  for (const BatchStat& b : s.batch_stats) EXPECT_EQ(b.compute_infer.count, uint64_t{kPerThread});
}

TEST(ProcessMemoryTest, ResidentBytesGrowsWithTouchedMemory) {
  const uint64_t before = ResidentBytes();
  ASSERT_GT(before, 0u);
  std::vector<char> block(64 << 20, 1);  // 64 MiB, every page written
  // The block escapes: clang otherwise writes it after the reading below, or not at all.
  asm volatile("" : : "r"(block.data()) : "memory");
  const uint64_t after = ResidentBytes();
  EXPECT_GE(after, before + (48u << 20)) << "block[0]=" << int(block[0]);
}

}  // namespace
}  // namespace nereid
