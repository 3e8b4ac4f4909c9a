// The health of a model version's instances as their backend reports it (backend API v5,
// InstanceOptions::report_health): the python backend reports an instance unhealthy while its
// stub process is being restarted and healthy again once the new stub initialized. The version
// is UNAVAILABLE (readiness, repository index) only while none of its instances is healthy
// (docs/adr/0015-instance-health.md); every move from healthy to unhealthy counts one restart
// (metric nereid_model_instance_restarts).
//
// Thread-safety: thread-safe; backends report from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/thread_annotations.h"

namespace nereid {

class InstanceHealth {
 public:
  InstanceHealth() = default;
  InstanceHealth(const InstanceHealth&) = delete;
  InstanceHealth& operator=(const InstanceHealth&) = delete;

  // Registers an instance (healthy); returns its index for Report.
  size_t Add(std::string name) EXCLUDES(mu_);
  // The instance's state now; `reason` tells why it cannot serve (ignored when healthy). An
  // unknown index is ignored.
  void Report(size_t index, bool healthy, std::string_view reason) EXCLUDES(mu_);

  // Why the version cannot serve: the reason of the first unhealthy instance when no instance
  // is healthy; nullopt while one is (or when there are no instances: a model the core serves).
  std::optional<std::string> UnavailableReason() const EXCLUDES(mu_);

  struct Counts {
    uint64_t restarts = 0;  // moves from healthy to unhealthy since load
    size_t instances = 0;
    size_t healthy = 0;
  };
  Counts counts() const EXCLUDES(mu_);

 private:
  struct Instance {
    std::string name;
    bool healthy = true;
    std::string reason;
  };
  mutable Mutex mu_;
  std::vector<Instance> instances_ GUARDED_BY(mu_);
  uint64_t restarts_ GUARDED_BY(mu_) = 0;
};

}  // namespace nereid
