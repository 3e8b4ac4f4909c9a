#include "frontends/metrics/cpu_metrics.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace nereid {
namespace {

uint64_t Sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }  // counters may wrap or reset

}  // namespace

StatusOr<CpuTimes> ParseProcStat(std::string_view text) {
  const std::string first(text.substr(0, text.find('\n')));
  if (first.rfind("cpu ", 0) != 0)
    return Internal("Failed to find aggregate CPU info in /proc/stat.");
  std::istringstream in(first.substr(4));
  CpuTimes t;
  if (!(in >> t.user >> t.nice >> t.system >> t.idle >> t.iowait >> t.irq >> t.softirq >>
        t.steal)) {
    return Internal("Failed to parse aggregate CPU info in /proc/stat.");
  }
  return t;
}

StatusOr<MemoryInfo> ParseMemInfo(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  uint64_t total = 0, available = 0;
  bool have_total = false, have_available = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    uint64_t kib = 0;
    if (!(fields >> name >> kib)) continue;
    if (name == "MemTotal:") {
      total = kib * 1024;
      have_total = true;
    } else if (name == "MemAvailable:") {
      available = kib * 1024;
      have_available = true;
    }
  }
  if (!have_total || !have_available) {
    return Internal("Failed to find desired values in /proc/meminfo.");
  }
  if (available > total) return Internal("Available bytes shouldn't be greater than Total bytes");
  return MemoryInfo{total, total - available};
}

double CpuUtilization(const CpuTimes& now, const CpuTimes& before) {
  const uint64_t busy = Sub(now.user, before.user) + Sub(now.nice, before.nice) +
                        Sub(now.system, before.system) + Sub(now.irq, before.irq) +
                        Sub(now.softirq, before.softirq) + Sub(now.steal, before.steal);
  const uint64_t idle = Sub(now.idle, before.idle) + Sub(now.iowait, before.iowait);
  if (busy + idle == 0) return 0.0;
  return static_cast<double>(busy) / static_cast<double>(busy + idle);
}

std::string ReadProcFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CpuMonitor::CpuMonitor(int interval_ms, Source source, Clock::time_point now)
    : period_(std::max(1, interval_ms / 2)), source_(std::move(source)) {
  MutexLock lock(mu_);
  Refresh(now);
  reading_.utilization = 0;  // nothing to compare the first reading with
}

CpuReading CpuMonitor::Read(Clock::time_point now) {
  MutexLock lock(mu_);
  if (now - last_at_ >= period_) Refresh(now);
  return reading_;
}

void CpuMonitor::Refresh(Clock::time_point now) {
  last_at_ = now;
  auto stat = ParseProcStat(source_("/proc/stat"));
  if (stat.ok()) {
    reading_.utilization = CpuUtilization(*stat, last_);
    last_ = *stat;
  }
  auto mem = ParseMemInfo(source_("/proc/meminfo"));
  reading_.memory_total_bytes = mem.ok() ? static_cast<double>(mem->total_bytes) : 0.0;
  reading_.memory_used_bytes = mem.ok() ? static_cast<double>(mem->used_bytes) : 0.0;
}

}  // namespace nereid
