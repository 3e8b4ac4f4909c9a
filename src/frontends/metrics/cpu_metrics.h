// CPU utilisation and memory for nv_cpu_utilization, nv_cpu_memory_total_bytes and
// nv_cpu_memory_used_bytes, computed as Triton's Metrics::PollCpuMetrics does: utilisation from
// the aggregate "cpu" line of /proc/stat between two polls (user+nice+system+irq+softirq+steal over
// that plus idle+iowait), used memory as MemTotal - MemAvailable from /proc/meminfo.
//
// The parsers are pure functions. CpuMonitor polls on its own thread every interval and publishes
// the last values through atomics, so a scrape never reads /proc.
//
// Thread-safety: CpuMonitor::Read from any thread; Start/Stop from one controlling thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <string_view>
#include <thread>

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

class CpuMonitor {
 public:
  CpuMonitor() = default;
  ~CpuMonitor();  // Stop()
  CpuMonitor(const CpuMonitor&) = delete;
  CpuMonitor& operator=(const CpuMonitor&) = delete;

  // Takes a first reading at once, then one every `interval_ms` on a thread.
  void Start(int interval_ms) EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);
  CpuReading Read() const;

 private:
  void Poll();

  CpuTimes last_;  // poller thread only (and Start, before the thread exists)
  std::atomic<double> utilization_{0};
  std::atomic<double> memory_total_{0};
  std::atomic<double> memory_used_{0};
  Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace nereid
