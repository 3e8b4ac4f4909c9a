#include "core/repository/load_error_log.h"

#include <utility>

namespace nereid {

void LoadErrorLog::Record(std::string model, std::string reason,
                          std::chrono::system_clock::time_point time) {
  if (capacity_ == 0) return;
  MutexLock lock(mu_);
  if (errors_.size() == capacity_) errors_.pop_front();
  errors_.push_back({std::move(model), time, std::move(reason)});
}

std::vector<LoadError> LoadErrorLog::Recent() const {
  MutexLock lock(mu_);
  return {errors_.begin(), errors_.end()};
}

}  // namespace nereid
