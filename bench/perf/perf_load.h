// What every load driver (HTTP event loop, gRPC workers) shares: the clock, the record of
// completed requests the measurement windows take, and the closed-loop driver interface.
#ifndef NEREID_BENCH_PERF_PERF_LOAD_H_
#define NEREID_BENCH_PERF_PERF_LOAD_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "common/thread_annotations.h"

namespace nereid::perf {

uint64_t NowNs();  // steady clock

// Completed requests, appended by the drivers' threads and taken by the measuring thread.
class Recorder {
 public:
  void Success(uint64_t latency_ns) {
    MutexLock lock(mu_);
    latencies_.push_back(latency_ns);
  }
  void Error() { errors_.fetch_add(1, std::memory_order_relaxed); }

  // The latencies recorded since the last call, and the errors.
  void Take(std::vector<uint64_t>* latencies, uint64_t* errors) {
    {
      MutexLock lock(mu_);
      latencies->swap(latencies_);
      latencies_.clear();
    }
    *errors = errors_.exchange(0);
  }

 private:
  Mutex mu_;
  std::vector<uint64_t> latencies_ GUARDED_BY(mu_);
  std::atomic<uint64_t> errors_{0};
};

// Start times of paced requests: `rate` per second from `start_ns` (rate 0: no pacing).
class Pacer {
 public:
  Pacer(double rate, uint64_t start_ns)
      : period_ns_(rate > 0 ? 1e9 / rate : 0), start_ns_(start_ns) {}
  bool paced() const { return period_ns_ > 0; }
  // The start time of the next request not yet sent.
  uint64_t Due() const {
    return start_ns_ + static_cast<uint64_t>(static_cast<double>(sent_) * period_ns_);
  }
  void Sent() { ++sent_; }

 private:
  double period_ns_;
  uint64_t start_ns_;
  uint64_t sent_ = 0;
};

// A closed loop of `concurrency` outstanding requests: each slot sends its next request when the
// previous one completed. Stop() sends no new request, waits for those in flight and returns.
class LoadDriver {
 public:
  virtual ~LoadDriver() = default;
  // `rate` > 0: requests start at that pace (split across the driver's loops), using at most
  // `concurrency` outstanding ones; a request due while all are busy starts when one is free.
  virtual void Start(int concurrency, double rate, Recorder* recorder) = 0;
  virtual void Stop() = 0;
};

}  // namespace nereid::perf

#endif  // NEREID_BENCH_PERF_PERF_LOAD_H_
