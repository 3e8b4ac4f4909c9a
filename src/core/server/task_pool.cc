#include "core/server/task_pool.h"

#include <algorithm>
#include <utility>

#include "common/thread_name.h"

namespace nereid {

TaskPool::TaskPool(int max_threads, std::string thread_name)
    : max_threads_(static_cast<size_t>(std::max(1, max_threads))),
      thread_name_(std::move(thread_name)) {}

TaskPool::~TaskPool() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

void TaskPool::Submit(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    queue_.push_back(std::move(task));
    // Every queued task beyond the idle threads wants a thread of its own, up to the limit.
    if (queue_.size() > idle_ && threads_.size() < max_threads_) {
      try {
        threads_.push_back(StartNamedThread(thread_name_, [this] { Loop(); }));
      } catch (...) {
        if (threads_.empty()) queue_.pop_back();  // nothing would ever run it
        throw;
      }
    }
  }
  cv_.notify_one();
}

size_t TaskPool::ThreadCount() const {
  MutexLock lock(mu_);
  return threads_.size();
}

void TaskPool::Loop() {
  UniqueLock lock(mu_);
  for (;;) {
    ++idle_;
    lock.Wait(cv_, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;
    auto task = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    task();
    task = nullptr;
    lock.Lock();
  }
}

}  // namespace nereid
