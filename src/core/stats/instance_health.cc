#include "core/stats/instance_health.h"

#include <algorithm>

namespace nereid {

size_t InstanceHealth::Add(std::string name) {
  MutexLock lock(mu_);
  instances_.push_back({std::move(name), true, ""});
  return instances_.size() - 1;
}

void InstanceHealth::Report(size_t index, bool healthy, std::string_view reason) {
  MutexLock lock(mu_);
  if (index >= instances_.size()) return;
  Instance& i = instances_[index];
  if (i.healthy && !healthy) ++restarts_;
  i.healthy = healthy;
  i.reason = healthy ? "" : std::string(reason);
}

std::optional<std::string> InstanceHealth::UnavailableReason() const {
  MutexLock lock(mu_);
  if (instances_.empty()) return std::nullopt;
  if (std::any_of(instances_.begin(), instances_.end(),
                  [](const Instance& i) { return i.healthy; })) {
    return std::nullopt;
  }
  return instances_.front().reason;
}

InstanceHealth::Counts InstanceHealth::counts() const {
  MutexLock lock(mu_);
  Counts c;
  c.restarts = restarts_;
  c.instances = instances_.size();
  c.healthy = static_cast<size_t>(std::count_if(instances_.begin(), instances_.end(),
                                                [](const Instance& i) { return i.healthy; }));
  return c;
}

}  // namespace nereid
