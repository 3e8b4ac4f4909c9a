// TraceWriter: the one thread that writes trace files, so no request ever waits on file I/O.
//
// Jobs go through a bounded queue (by bytes): when it is full the job's traces are dropped, a
// counter says how many jobs were lost and a warning is logged (throttled), and the request that
// posted it carries on. Files follow Triton's triton mode: the main file `<file>` is a JSON array
// opened (truncated) at its first write and closed with "]" by Stop(); an indexed job writes a
// whole array into `<file>.<n>` (n from 0 per file; renamed into place once complete).
//
// The thread starts with the first job posted (none for a server that never traces).
// Thread-safety: Post and Flush from any thread; Stop once, after which Post drops.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/log_throttle.h"
#include "common/thread_annotations.h"

namespace nereid::trace {

class TraceWriter {
 public:
  struct Job {
    std::string path;
    std::string records;  // comma-separated JSON objects, no brackets
    bool indexed = false;
  };

  explicit TraceWriter(size_t max_pending_bytes = 64u << 20);
  ~TraceWriter();  // Stop()
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Queues a job; false (and the job dropped) when the queue is full or the writer stopped.
  bool Post(Job&& job) EXCLUDES(mu_);
  // Waits until every job posted before the call is on disk.
  void Flush() EXCLUDES(mu_);
  // Writes what is queued, closes the main files' arrays and joins the thread.
  void Stop() EXCLUDES(mu_);
  uint64_t dropped_jobs() const EXCLUDES(mu_);
  bool thread_started() const EXCLUDES(mu_);

 private:
  struct File;
  void Loop();
  void Write(const Job& job);

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_ GUARDED_BY(mu_);
  size_t pending_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t posted_ GUARDED_BY(mu_) = 0;
  uint64_t written_ GUARDED_BY(mu_) = 0;
  uint64_t dropped_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  LogThrottle drop_log_ GUARDED_BY(mu_){std::chrono::seconds(10)};
  const size_t max_pending_bytes_;
  // Touched by the writer thread only (and by Stop after the join).
  std::map<std::string, std::unique_ptr<File>> files_;
  std::thread thread_ GUARDED_BY(mu_);  // started by the first Post
};

}  // namespace nereid::trace
