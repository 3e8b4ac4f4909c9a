#include "frontends/metrics/cpu_metrics.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "common/thread_name.h"

namespace nereid {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

CpuMonitor::~CpuMonitor() { Stop(); }

void CpuMonitor::Start(int interval_ms) {
  auto first = ParseProcStat(ReadFile("/proc/stat"));
  if (first.ok()) last_ = *first;
  auto mem = ParseMemInfo(ReadFile("/proc/meminfo"));
  if (mem.ok()) {
    memory_total_.store(static_cast<double>(mem->total_bytes));
    memory_used_.store(static_cast<double>(mem->used_bytes));
  }
  const auto interval = std::chrono::milliseconds(std::max(1, interval_ms));
  thread_ = std::thread([this, interval] {
    NameThisThread("cpu-metrics");
    UniqueLock lock(mu_);
    while (!lock.WaitFor(cv_, interval, [this]() REQUIRES(mu_) { return stopping_; })) {
      lock.Unlock();
      Poll();
      lock.Lock();
    }
  });
}

void CpuMonitor::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CpuMonitor::Poll() {
  auto now = ParseProcStat(ReadFile("/proc/stat"));
  if (now.ok()) {
    utilization_.store(CpuUtilization(*now, last_));
    last_ = *now;
  }
  auto mem = ParseMemInfo(ReadFile("/proc/meminfo"));
  memory_total_.store(mem.ok() ? static_cast<double>(mem->total_bytes) : 0.0);
  memory_used_.store(mem.ok() ? static_cast<double>(mem->used_bytes) : 0.0);
}

CpuReading CpuMonitor::Read() const {
  return {utilization_.load(), memory_total_.load(), memory_used_.load()};
}

}  // namespace nereid
