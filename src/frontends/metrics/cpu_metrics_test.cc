// /proc parsing, the utilisation formula (Triton's Metrics::CpuUtilization) and reading on scrape.
#include "frontends/metrics/cpu_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace nereid {
namespace {

TEST(CpuMetricsTest, ParsesTheAggregateLine) {
  auto t = ParseProcStat("cpu  10 20 30 400 50 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->user, 10u);
  EXPECT_EQ(t->idle, 400u);
  EXPECT_EQ(t->steal, 8u);
}

TEST(CpuMetricsTest, RejectsMissingAggregateLine) {
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4 5 6 7 8\n").ok());
  EXPECT_FALSE(ParseProcStat("cpu  1 2\n").ok());
  EXPECT_FALSE(ParseProcStat("").ok());
}

TEST(CpuMetricsTest, UtilizationIsBusyOverBusyPlusIdle) {
  CpuTimes before{100, 0, 100, 1000, 0, 0, 0, 0};
  CpuTimes now{130, 10, 110, 1040, 10, 0, 0, 0};  // busy 50, idle 50
  EXPECT_DOUBLE_EQ(CpuUtilization(now, before), 0.5);
  EXPECT_DOUBLE_EQ(CpuUtilization(before, before), 0.0);
  EXPECT_DOUBLE_EQ(CpuUtilization(before, now), 0.0);  // counters going back count as nothing
}

TEST(CpuMetricsTest, MemoryUsedIsTotalMinusAvailable) {
  auto m = ParseMemInfo(
      "MemTotal:       1000 kB\nMemFree:         100 kB\n"
      "MemAvailable:    250 kB\nBuffers: 1 kB\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->total_bytes, 1000u * 1024);
  EXPECT_EQ(m->used_bytes, 750u * 1024);
  EXPECT_FALSE(ParseMemInfo("MemTotal: 1000 kB\n").ok());
  EXPECT_FALSE(ParseMemInfo("MemTotal: 10 kB\nMemAvailable: 20 kB\n").ok());
}

TEST(CpuMetricsTest, MonitorReadsThisMachine) {
  CpuMonitor monitor(10);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CpuReading r = monitor.Read();
  EXPECT_GT(r.memory_total_bytes, 0.0);
  EXPECT_GT(r.memory_used_bytes, 0.0);
  EXPECT_LE(r.memory_used_bytes, r.memory_total_bytes);
  EXPECT_GE(r.utilization, 0.0);
  EXPECT_LE(r.utilization, 1.0);
}

// /proc as the test scripts it: each read of /proc/stat returns the next line of `stats`.
struct FakeProc {
  std::vector<std::string> stats;
  std::string meminfo = "MemTotal: 1000 kB\nMemAvailable: 400 kB\n";
  int stat_reads = 0;
  std::string Read(const char* path) {
    if (std::string(path) == "/proc/meminfo") return meminfo;
    const size_t i = std::min<size_t>(stat_reads++, stats.size() - 1);
    return stats[i];
  }
};

TEST(CpuMetricsTest, ScrapesWithinHalfTheIntervalReuseTheLastReading) {
  FakeProc proc;
  proc.stats = {"cpu  100 0 100 800 0 0 0 0\n", "cpu  150 0 150 900 0 0 0 0\n",
                "cpu  150 0 150 1000 0 0 0 0\n"};
  const auto t0 = CpuMonitor::Clock::time_point() + std::chrono::hours(1);
  CpuMonitor monitor(
      2000, [&proc](const char* path) { return proc.Read(path); }, t0);
  EXPECT_EQ(monitor.period(), std::chrono::milliseconds(1000));  // Triton polls every interval/2
  EXPECT_EQ(proc.stat_reads, 1);
  CpuReading r = monitor.Read(t0 + std::chrono::milliseconds(999));
  EXPECT_EQ(proc.stat_reads, 1);  // not read again within the period
  EXPECT_DOUBLE_EQ(r.utilization, 0.0);
  EXPECT_DOUBLE_EQ(r.memory_total_bytes, 1000.0 * 1024);
  EXPECT_DOUBLE_EQ(r.memory_used_bytes, 600.0 * 1024);

  r = monitor.Read(t0 + std::chrono::milliseconds(1000));  // busy 100 of 200 since the first
  EXPECT_EQ(proc.stat_reads, 2);
  EXPECT_DOUBLE_EQ(r.utilization, 0.5);
  proc.meminfo = "MemTotal: 1000 kB\nMemAvailable: 900 kB\n";
  r = monitor.Read(t0 + std::chrono::milliseconds(1500));  // same period: the values stay
  EXPECT_EQ(proc.stat_reads, 2);
  EXPECT_DOUBLE_EQ(r.utilization, 0.5);
  EXPECT_DOUBLE_EQ(r.memory_used_bytes, 600.0 * 1024);

  r = monitor.Read(t0 + std::chrono::seconds(60));  // idle 100 of 100 since the second
  EXPECT_EQ(proc.stat_reads, 3);
  EXPECT_DOUBLE_EQ(r.utilization, 0.0);
  EXPECT_DOUBLE_EQ(r.memory_used_bytes, 100.0 * 1024);
}

TEST(CpuMetricsTest, UnreadableProcGivesZeroMemoryAndKeepsTheLastUtilization) {
  FakeProc proc;
  proc.stats = {"cpu  100 0 100 800 0 0 0 0\n", "cpu  200 0 100 800 0 0 0 0\n", ""};
  const auto t0 = CpuMonitor::Clock::time_point() + std::chrono::hours(1);
  CpuMonitor monitor(
      1, [&proc](const char* path) { return proc.Read(path); }, t0);
  EXPECT_EQ(monitor.period(), std::chrono::milliseconds(1));  // never below 1 ms
  EXPECT_DOUBLE_EQ(monitor.Read(t0 + std::chrono::milliseconds(1)).utilization, 1.0);
  proc.meminfo = "garbage\n";
  CpuReading r = monitor.Read(t0 + std::chrono::milliseconds(2));
  EXPECT_DOUBLE_EQ(r.utilization, 1.0);
  EXPECT_DOUBLE_EQ(r.memory_total_bytes, 0.0);
  EXPECT_DOUBLE_EQ(r.memory_used_bytes, 0.0);
}

}  // namespace
}  // namespace nereid
