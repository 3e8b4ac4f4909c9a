// Builds the "local" cache from its --cache-config settings (the Redis cache has its own library
// and factory, redis_cache.h, so nothing else sees hiredis).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/cache/response_cache.h"
#include "nereid/status.h"

namespace nereid {

// settings: {"size": "<bytes>"}. A missing, non-numeric, zero or negative size gives Triton's
// "Failed to initialize LocalCache: config didn't contain a valid 'size' field."
StatusOr<std::unique_ptr<ResponseCache>> MakeLocalCache(
    const std::map<std::string, std::string>& settings);

}  // namespace nereid
