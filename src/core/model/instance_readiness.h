// Whether a loaded model version can serve: its instances' health as the backend reports it
// (InstanceHealth, ADR 0015) and, when that allows, each instance's own readiness check
// (backend API v6 ModelInstance::CheckReady: the python backend's `is_ready()`).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "core/stats/instance_health.h"
#include "nereid/backend_api.h"

namespace nereid {

// Why the version cannot serve, or nullopt: the health's reason while no instance is healthy,
// else the message of the first instance whose CheckReady fails (one failing instance makes the
// version unavailable; the others are not asked then).
std::optional<std::string> VersionUnavailableReason(
    const InstanceHealth& health, std::span<backend::ModelInstance* const> instances);

}  // namespace nereid
