#include "core/model/instance_readiness.h"

namespace nereid {

std::optional<std::string> VersionUnavailableReason(
    const InstanceHealth& health, std::span<backend::ModelInstance* const> instances) {
  if (std::optional<std::string> why = health.UnavailableReason()) return why;
  for (backend::ModelInstance* instance : instances) {
    if (Status s = instance->CheckReady(); !s.ok()) return std::string(s.message());
  }
  return std::nullopt;
}

}  // namespace nereid
