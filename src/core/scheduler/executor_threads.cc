#include "core/scheduler/executor_threads.h"

#include "common/thread_name.h"

namespace nereid {

void ExecutorThreads::Start(size_t count, const std::function<void(size_t)>& loop) {
  MutexLock lock(mu_);
  threads_.reserve(threads_.size() + count);
  for (size_t i = 0; i < count; ++i) {
    threads_.push_back(StartNamedThread("executor", [loop, i] { loop(i); }));
    ids_.push_back(threads_.back().get_id());
  }
}

void ExecutorThreads::Join() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
  MutexLock lock(mu_);
  ids_.clear();
}

bool ExecutorThreads::empty() const {
  MutexLock lock(mu_);
  return ids_.empty();
}

bool ExecutorThreads::Contains(std::thread::id id) const {
  MutexLock lock(mu_);
  for (const auto& t : ids_) {
    if (t == id) return true;
  }
  return false;
}

}  // namespace nereid
