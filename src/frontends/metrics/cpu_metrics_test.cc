// /proc parsing and the utilisation formula (Triton's Metrics::CpuUtilization).
#include "frontends/metrics/cpu_metrics.h"

#include <gtest/gtest.h>

#include <thread>

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
  CpuMonitor monitor;
  monitor.Start(10);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CpuReading r = monitor.Read();
  monitor.Stop();
  EXPECT_GT(r.memory_total_bytes, 0.0);
  EXPECT_GT(r.memory_used_bytes, 0.0);
  EXPECT_LE(r.memory_used_bytes, r.memory_total_bytes);
  EXPECT_GE(r.utilization, 0.0);
  EXPECT_LE(r.utilization, 1.0);
}

}  // namespace
}  // namespace nereid
