// TaskPool: a fixed number of threads running submitted tasks in FIFO order. Used for the load
// API, whose calls block until a model is loaded and must not run on a frontend's I/O threads.
// Thread-safety: Submit from any thread; the destructor runs what is queued, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"

namespace nereid {

class TaskPool {
 public:
  explicit TaskPool(int threads);
  ~TaskPool();

  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void Submit(std::function<void()> task) EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace nereid
