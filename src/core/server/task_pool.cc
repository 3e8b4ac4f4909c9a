#include "core/server/task_pool.h"

#include <algorithm>

namespace nereid {

TaskPool::TaskPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Loop(); });
}

TaskPool::~TaskPool() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void TaskPool::Submit(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void TaskPool::Loop() {
  UniqueLock lock(mu_);
  for (;;) {
    lock.Wait(cv_, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
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
