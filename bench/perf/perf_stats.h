// Figures of one measurement: client latency percentiles, the server statistics diff and
// perf_analyzer's stability rule over consecutive windows. Pure logic, no I/O.
#ifndef NEREID_BENCH_PERF_PERF_STATS_H_
#define NEREID_BENCH_PERF_PERF_STATS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nereid::perf {

// One phase of the statistics extension's inference_stats: {count, ns}.
struct PhaseStat {
  uint64_t count = 0;
  uint64_t ns = 0;
};

// A snapshot of v2/models/<m>/stats (every listed version summed).
struct ServerStats {
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  PhaseStat success, fail, queue, compute_input, compute_infer, compute_output;
};

// later - earlier, field by field (a counter that went down, e.g. after a reload, gives 0).
ServerStats DiffStats(const ServerStats& later, const ServerStats& earlier);

// Mean ns of a phase in microseconds (0 when the phase has no count).
double PhaseAvgUs(const PhaseStat& p);

// The p-th percentile (0 < p <= 100) of `values`, nearest-rank on the sorted values (what
// perf_analyzer reports). `values` is sorted in place; 0 when empty.
uint64_t Percentile(std::vector<uint64_t>& values, double p);

// One measurement window's client side.
struct WindowResult {
  double seconds = 0;
  uint64_t ok = 0;                     // successful responses completed in the window
  uint64_t errors = 0;                 // transport errors and non-success responses
  std::vector<uint64_t> latencies_ns;  // of the successful responses
  ServerStats server;                  // statistics diff over the window
  double Throughput() const { return seconds > 0 ? ok / seconds : 0; }
  double AvgLatencyUs() const;
};

// perf_analyzer's rule: the last three windows are stable when each one's throughput and average
// latency are within `percentage` % of the three windows' mean.
bool IsStable(const std::vector<WindowResult>& windows, double percentage);

// The last `n` windows merged into one (latencies concatenated, counts and server diffs summed).
WindowResult MergeLast(const std::vector<WindowResult>& windows, size_t n);

}  // namespace nereid::perf

#endif  // NEREID_BENCH_PERF_PERF_STATS_H_
