#pragma once

#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace nereid {

// The executor threads of a scheduler: one per model instance, started together and joined
// together. The scheduler owns the state its loops wait on and must tell them to return before
// Join(); this class only owns the threads.
class ExecutorThreads {
 public:
  ExecutorThreads() = default;
  ExecutorThreads(const ExecutorThreads&) = delete;
  ExecutorThreads& operator=(const ExecutorThreads&) = delete;
  ~ExecutorThreads() { Join(); }

  // Starts `count` threads; thread i runs loop(i).
  void Start(size_t count, const std::function<void(size_t)>& loop);

  // Joins and forgets every thread. A second call does nothing.
  void Join();

  bool empty() const { return threads_.empty(); }

  // True when `id` is one of these threads (a scheduler must not be stopped from its own thread).
  bool Contains(std::thread::id id) const;

 private:
  std::vector<std::thread> threads_;
};

}  // namespace nereid
