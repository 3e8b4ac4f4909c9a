#include "perf_stats.h"

#include <gtest/gtest.h>

#include "perf_load.h"

namespace nereid::perf {
namespace {

TEST(PerfStats, PercentileIsNearestRank) {
  std::vector<uint64_t> v;
  for (uint64_t i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  EXPECT_EQ(Percentile(v, 50), 50u);
  EXPECT_EQ(Percentile(v, 90), 90u);
  EXPECT_EQ(Percentile(v, 99), 99u);
  EXPECT_EQ(Percentile(v, 100), 100u);
  std::vector<uint64_t> three = {30, 10, 20};
  EXPECT_EQ(Percentile(three, 50), 20u);
  EXPECT_EQ(Percentile(three, 99), 30u);
  EXPECT_EQ(Percentile(three, 1), 10u);
  std::vector<uint64_t> empty;
  EXPECT_EQ(Percentile(empty, 50), 0u);
}

TEST(PerfStats, DiffIsFieldByFieldAndNeverNegative) {
  ServerStats a, b;
  a.inference_count = 10;
  a.success = {10, 10000};
  a.queue = {10, 2000};
  a.compute_infer = {10, 5000};
  b.inference_count = 25;
  b.execution_count = 7;
  b.success = {25, 40000};
  b.queue = {25, 5000};
  b.compute_infer = {25, 20000};
  ServerStats d = DiffStats(b, a);
  EXPECT_EQ(d.inference_count, 15u);
  EXPECT_EQ(d.execution_count, 7u);
  EXPECT_EQ(d.success.count, 15u);
  EXPECT_EQ(d.success.ns, 30000u);
  EXPECT_DOUBLE_EQ(PhaseAvgUs(d.queue), 0.2);
  EXPECT_DOUBLE_EQ(PhaseAvgUs(d.compute_infer), 1.0);
  EXPECT_DOUBLE_EQ(PhaseAvgUs(d.compute_input), 0);  // no count: 0, not a division by zero
  ServerStats reset = DiffStats(a, b);               // counters went down (a reload)
  EXPECT_EQ(reset.success.count, 0u);
  EXPECT_EQ(reset.queue.ns, 0u);
}

WindowResult Window(double seconds, uint64_t ok, uint64_t latency_ns) {
  WindowResult w;
  w.seconds = seconds;
  w.ok = ok;
  w.latencies_ns.assign(ok, latency_ns);
  return w;
}

TEST(PerfStats, StabilityNeedsThreeWindowsWithinPercentage) {
  std::vector<WindowResult> w = {Window(1, 1000, 100000), Window(1, 1050, 100000)};
  EXPECT_FALSE(IsStable(w, 10));  // two windows only
  w.push_back(Window(1, 980, 104000));
  EXPECT_TRUE(IsStable(w, 10));
  EXPECT_FALSE(IsStable(w, 2));
  w.push_back(Window(1, 1500, 100000));  // throughput jumps: the last three are not stable
  EXPECT_FALSE(IsStable(w, 10));
  std::vector<WindowResult> slow = {Window(1, 1000, 100000), Window(1, 1000, 100000),
                                    Window(1, 1000, 200000)};
  EXPECT_FALSE(IsStable(slow, 10));  // latency moved
  std::vector<WindowResult> idle = {Window(1, 0, 0), Window(1, 0, 0), Window(1, 0, 0)};
  EXPECT_FALSE(IsStable(idle, 10));  // nothing completed is not a measurement
}

TEST(PerfStats, MergeLastSumsTheLastWindows) {
  std::vector<WindowResult> w = {Window(1, 5, 1000), Window(0.5, 2, 2000), Window(0.5, 3, 3000)};
  w[1].errors = 1;
  w[2].server.success = {3, 300};
  w[1].server.success = {2, 200};
  w[0].server.success = {99, 9900};
  WindowResult m = MergeLast(w, 2);
  EXPECT_DOUBLE_EQ(m.seconds, 1.0);
  EXPECT_EQ(m.ok, 5u);
  EXPECT_EQ(m.errors, 1u);
  EXPECT_EQ(m.latencies_ns.size(), 5u);
  EXPECT_EQ(m.server.success.count, 5u);
  EXPECT_DOUBLE_EQ(m.Throughput(), 5.0);
  EXPECT_DOUBLE_EQ(m.AvgLatencyUs(), (2 * 2.0 + 3 * 3.0) / 5);
  EXPECT_EQ(MergeLast(w, 10).ok, 10u);  // fewer windows than asked: all of them
}

TEST(PerfPacer, StartTimesFollowTheRate) {
  Pacer off(0, 1000);
  EXPECT_FALSE(off.paced());
  Pacer p(1000, 5'000'000);  // 1000/s: one every millisecond
  EXPECT_TRUE(p.paced());
  EXPECT_EQ(p.Due(), 5'000'000u);
  p.Sent();
  EXPECT_EQ(p.Due(), 6'000'000u);
  for (int i = 0; i < 9; ++i) p.Sent();
  EXPECT_EQ(p.Due(), 15'000'000u);  // no drift: the n-th start is start + n periods
}

}  // namespace
}  // namespace nereid::perf
