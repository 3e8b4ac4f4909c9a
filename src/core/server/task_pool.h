// TaskPool: a fixed number of threads running submitted tasks in FIFO order. Used for the load
// API, whose calls block until a model is loaded and must not run on a frontend's I/O threads.
// Thread-safety: Submit from any thread; the destructor runs what is queued, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nereid {

class TaskPool {
 public:
  explicit TaskPool(int threads);
  ~TaskPool();

  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void Submit(std::function<void()> task);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace nereid
