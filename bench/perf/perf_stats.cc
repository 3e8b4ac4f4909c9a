#include "perf_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace nereid::perf {
namespace {

uint64_t Sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

PhaseStat SubPhase(const PhaseStat& a, const PhaseStat& b) {
  return {Sub(a.count, b.count), Sub(a.ns, b.ns)};
}

void AddPhase(PhaseStat& into, const PhaseStat& p) {
  into.count += p.count;
  into.ns += p.ns;
}

bool Within(double v, double mean, double percentage) {
  return std::fabs(v - mean) <= mean * percentage / 100.0;
}

}  // namespace

ServerStats DiffStats(const ServerStats& later, const ServerStats& earlier) {
  ServerStats d;
  d.inference_count = Sub(later.inference_count, earlier.inference_count);
  d.execution_count = Sub(later.execution_count, earlier.execution_count);
  d.success = SubPhase(later.success, earlier.success);
  d.fail = SubPhase(later.fail, earlier.fail);
  d.queue = SubPhase(later.queue, earlier.queue);
  d.compute_input = SubPhase(later.compute_input, earlier.compute_input);
  d.compute_infer = SubPhase(later.compute_infer, earlier.compute_infer);
  d.compute_output = SubPhase(later.compute_output, earlier.compute_output);
  return d;
}

double PhaseAvgUs(const PhaseStat& p) {
  return p.count == 0 ? 0 : static_cast<double>(p.ns) / static_cast<double>(p.count) / 1000.0;
}

uint64_t Percentile(std::vector<uint64_t>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size());
  return values[rank - 1];
}

double WindowResult::AvgLatencyUs() const {
  if (latencies_ns.empty()) return 0;
  long double sum = std::accumulate(latencies_ns.begin(), latencies_ns.end(), 0.0L);
  return static_cast<double>(sum / latencies_ns.size() / 1000.0L);
}

bool IsStable(const std::vector<WindowResult>& windows, double percentage) {
  if (windows.size() < 3) return false;
  double tput = 0, lat = 0;
  for (size_t i = windows.size() - 3; i < windows.size(); ++i) {
    tput += windows[i].Throughput() / 3;
    lat += windows[i].AvgLatencyUs() / 3;
  }
  if (tput <= 0) return false;
  for (size_t i = windows.size() - 3; i < windows.size(); ++i) {
    if (!Within(windows[i].Throughput(), tput, percentage) ||
        !Within(windows[i].AvgLatencyUs(), lat, percentage)) {
      return false;
    }
  }
  return true;
}

WindowResult MergeLast(const std::vector<WindowResult>& windows, size_t n) {
  WindowResult m;
  size_t first = windows.size() > n ? windows.size() - n : 0;
  for (size_t i = first; i < windows.size(); ++i) {
    const WindowResult& w = windows[i];
    m.seconds += w.seconds;
    m.ok += w.ok;
    m.errors += w.errors;
    m.latencies_ns.insert(m.latencies_ns.end(), w.latencies_ns.begin(), w.latencies_ns.end());
    m.server.inference_count += w.server.inference_count;
    m.server.execution_count += w.server.execution_count;
    AddPhase(m.server.success, w.server.success);
    AddPhase(m.server.fail, w.server.fail);
    AddPhase(m.server.queue, w.server.queue);
    AddPhase(m.server.compute_input, w.server.compute_input);
    AddPhase(m.server.compute_infer, w.server.compute_infer);
    AddPhase(m.server.compute_output, w.server.compute_output);
  }
  return m;
}

}  // namespace nereid::perf
