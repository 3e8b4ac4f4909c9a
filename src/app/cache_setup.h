// Creates the response cache --cache-config names: "local" (core/cache/local_cache.h) or
// "redis" (core/cache/redis_cache.h). Any other name is refused: Nereid's caches are built in,
// there is no cache library directory to load another from.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/cache/response_cache.h"
#include "nereid/status.h"

namespace nereid {

StatusOr<std::shared_ptr<ResponseCache>> MakeResponseCache(
    const std::string& name, const std::map<std::string, std::string>& settings);

}  // namespace nereid
