#include "python/unload_signal.h"

#include <utility>

namespace nereid::backends::python {

int UnloadSignal::Add(std::function<void()> wake) {
  MutexLock lock(mu_);
  const int id = next_id_++;
  if (unloading()) wake();
  wakes_.emplace(id, std::move(wake));
  return id;
}

void UnloadSignal::Remove(int id) {
  MutexLock lock(mu_);
  wakes_.erase(id);
}

void UnloadSignal::Notify() {
  MutexLock lock(mu_);
  unloading_.store(true, std::memory_order_release);
  for (const auto& [id, wake] : wakes_) wake();
}

}  // namespace nereid::backends::python
