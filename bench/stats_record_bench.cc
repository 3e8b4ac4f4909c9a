// What recording statistics costs per request: the ModelStats calls the default scheduler makes
// for one successful request (RecordExecution + RecordSuccess), single-threaded and with threads
// recording into the same model at once (relaxed atomics on shared cache lines), with and without
// a latency-summary observer. Compare with the ~90 µs a small model's request takes end to end.
#include <benchmark/benchmark.h>
#include <prometheus/summary.h>

#include "core/stats/model_stats.h"

namespace nereid {
namespace {

ExecutionTimes Times(uint64_t base) { return {base + 100, base + 200, base + 900, base + 1000}; }

ModelStats& Shared() {
  static ModelStats stats(8);
  return stats;
}

void BM_RecordRequest(benchmark::State& state) {
  ModelStats& stats = Shared();
  uint64_t t = 1;
  for (auto _ : state) {
    const ExecutionTimes exec = Times(t);
    stats.RecordExecution(1, exec);
    stats.RecordSuccess(1, t, t + 50, exec, t + 1100);
    t += 2000;
  }
}
BENCHMARK(BM_RecordRequest)->Threads(1)->Threads(2)->Threads(4);

void BM_NowNs(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(NowNs());
}
BENCHMARK(BM_NowNs);

class SummaryObserver : public LatencyObserver {
 public:
  SummaryObserver() : summary_({{0.5, 0.05}, {0.9, 0.01}, {0.99, 0.001}}) {}
  void Observe(const RequestLatencies& l) override {
    summary_.Observe(static_cast<double>(l.request_ns / 1000));
  }

 private:
  prometheus::Summary summary_;
};

void BM_RecordRequestWithSummary(benchmark::State& state) {
  ModelStats stats(8);
  stats.SetLatencyObserver(std::make_unique<SummaryObserver>());
  uint64_t t = 1;
  for (auto _ : state) {
    const ExecutionTimes exec = Times(t);
    stats.RecordExecution(1, exec);
    // Latencies spread over 1..1000 µs, as real traffic has them.
    stats.RecordSuccess(1, t, t + 50, exec, t + 1100 + (t * 7919) % 1000000);
    t += 2000;
  }
}
BENCHMARK(BM_RecordRequestWithSummary);

}  // namespace
}  // namespace nereid

BENCHMARK_MAIN();
