// CPU utilisation and memory for nv_cpu_utilization, nv_cpu_memory_total_bytes and
// nv_cpu_memory_used_bytes, computed as Triton's Metrics::PollCpuMetrics does: utilisation from
// the aggregate "cpu" line of /proc/stat between two polls (user+nice+system+irq+softirq+steal over
// that plus idle+iowait), used memory as MemTotal - MemAvailable from /proc/meminfo.
//
// The parsers are pure functions. CpuMonitor reads /proc on scrape, not on a thread of its own:
// a reading older than half of --metrics-interval-ms (Triton's poll period: its poller sleeps
// interval/2 between polls) is refreshed by the scrape that finds it, and utilisation is the busy
// share since the reading before; a scrape within that period returns the last values, so the
// gauges change at most once per period, as Triton's do. Unlike Triton's, the utilisation of a
// scrape that comes long after the last covers the whole time since (docs/protocol_coverage.md).
//
// Thread-safety: CpuMonitor::Read from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/thread_annotations.h"
#include "nereid/status.h"

namespace nereid {

struct CpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
};

struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t used_bytes = 0;  // MemTotal - MemAvailable
};

StatusOr<CpuTimes> ParseProcStat(std::string_view text);
StatusOr<MemoryInfo> ParseMemInfo(std::string_view text);
// Busy share of the time between two readings, in [0, 1]; 0 when no time passed.
double CpuUtilization(const CpuTimes& now, const CpuTimes& before);

struct CpuReading {
  double utilization = 0;
  double memory_total_bytes = 0;
  double memory_used_bytes = 0;
};

// Reads a whole file ("" when it cannot be read); CpuMonitor's source of /proc/stat and
// /proc/meminfo.
std::string ReadProcFile(const char* path);

class CpuMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  using Source = std::function<std::string(const char* path)>;

  // Takes the first reading now. `interval_ms` is --metrics-interval-ms (positive).
  explicit CpuMonitor(int interval_ms, Source source = ReadProcFile,
                      Clock::time_point now = Clock::now());
  CpuMonitor(const CpuMonitor&) = delete;
  CpuMonitor& operator=(const CpuMonitor&) = delete;

  // The values at `now`: read afresh when the last reading is at least one period old.
  CpuReading Read(Clock::time_point now = Clock::now()) EXCLUDES(mu_);

  std::chrono::milliseconds period() const { return period_; }

 private:
  void Refresh(Clock::time_point now) REQUIRES(mu_);

  const std::chrono::milliseconds period_;
  const Source source_;
  Mutex mu_;
  Clock::time_point last_at_ GUARDED_BY(mu_);
  CpuTimes last_ GUARDED_BY(mu_);
  CpuReading reading_ GUARDED_BY(mu_);
};

}  // namespace nereid
