// perf_analyzer's text report and CSV for nereid_perf's measurements.
#ifndef NEREID_BENCH_PERF_PERF_REPORT_H_
#define NEREID_BENCH_PERF_PERF_REPORT_H_

#include <string>
#include <vector>

#include "perf_options.h"
#include "perf_stats.h"

namespace nereid::perf {

// One concurrency level's merged windows.
struct LevelResult {
  int concurrency = 0;  // closed loop: outstanding requests; rate mode: the most outstanding
  double rate = 0;      // rate mode: requests/s asked for (0: closed loop)
  bool stable = false;
  WindowResult merged;
  uint64_t p50_us = 0, p90_us = 0, p95_us = 0, p99_us = 0;
};

// Computes the percentiles of `merged` (sorting its latencies).
LevelResult Summarize(int concurrency, double rate, bool stable, WindowResult merged);

std::string SettingsText(const PerfOptions& o);
// "Request concurrency: N\n  Client: ...\n  Server: ..." as perf_analyzer prints it.
std::string LevelText(const LevelResult& r, const PerfOptions& o);
// "Inferences/Second vs. Client Average Batch Latency" and one line per level.
std::string SummaryText(const std::vector<LevelResult>& levels);

// perf_analyzer's CSV columns (µs), plus the error count.
std::string CsvText(const std::vector<LevelResult>& levels);

}  // namespace nereid::perf

#endif  // NEREID_BENCH_PERF_PERF_REPORT_H_
