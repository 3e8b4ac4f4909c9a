#include "core/scheduler/executor_threads.h"

namespace nereid {

void ExecutorThreads::Start(size_t count, const std::function<void(size_t)>& loop) {
  threads_.reserve(threads_.size() + count);
  for (size_t i = 0; i < count; ++i) {
    threads_.emplace_back([loop, i] { loop(i); });
  }
}

void ExecutorThreads::Join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

bool ExecutorThreads::Contains(std::thread::id id) const {
  for (const auto& t : threads_) {
    if (t.get_id() == id) return true;
  }
  return false;
}

}  // namespace nereid
