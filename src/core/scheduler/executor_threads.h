#pragma once

#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"

namespace nereid {

// The executor threads of a scheduler: one per model instance, started together and joined
// together. The scheduler owns the state its loops wait on and must tell them to return before
// Join(); this class only owns the threads. Start may come after construction (the default
// scheduler starts its executors with the first queued job), so Contains may run beside Start.
// Thread-safety: every method from any thread; Join must not run on one of these threads.
class ExecutorThreads {
 public:
  ExecutorThreads() = default;
  ExecutorThreads(const ExecutorThreads&) = delete;
  ExecutorThreads& operator=(const ExecutorThreads&) = delete;
  ~ExecutorThreads() { Join(); }

  // Starts `count` threads named "executor"; thread i runs loop(i).
  void Start(size_t count, const std::function<void(size_t)>& loop) EXCLUDES(mu_);

  // Joins and forgets every thread. A second call does nothing.
  void Join() EXCLUDES(mu_);

  bool empty() const EXCLUDES(mu_);

  // True when `id` is one of these threads (a scheduler must not be stopped from its own thread).
  bool Contains(std::thread::id id) const EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  // Their ids, kept until they are joined: a thread still counts as one of these while Join
  // waits for it.
  std::vector<std::thread::id> ids_ GUARDED_BY(mu_);
};

}  // namespace nereid
