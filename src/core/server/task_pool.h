// TaskPool: up to a fixed number of threads running submitted tasks in FIFO order. Used for the
// load API, whose calls block until a model is loaded and must not run on a frontend's I/O
// threads. Threads start on demand (a task queued while no thread is idle starts one, up to the
// limit) and then stay, so a server that never loads through the API has none.
// Thread-safety: Submit from any thread; the destructor runs what is queued, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"

namespace nereid {

class TaskPool {
 public:
  TaskPool(int max_threads, std::string thread_name);
  ~TaskPool();

  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void Submit(std::function<void()> task) EXCLUDES(mu_);

  // Threads started so far.
  size_t ThreadCount() const EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);

  const size_t max_threads_;
  const std::string thread_name_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
  size_t idle_ GUARDED_BY(mu_) = 0;  // threads waiting for a task
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
};

}  // namespace nereid
