#include "app/cache_setup.h"

#include "core/cache/cache_factory.h"
#include "core/cache/redis_cache.h"

namespace nereid {

StatusOr<std::shared_ptr<ResponseCache>> MakeResponseCache(
    const std::string& name, const std::map<std::string, std::string>& settings) {
  if (name == "local") {
    NEREID_ASSIGN_OR_RETURN(std::unique_ptr<ResponseCache> cache, MakeLocalCache(settings));
    return std::shared_ptr<ResponseCache>(std::move(cache));
  }
  if (name == "redis") {
    NEREID_ASSIGN_OR_RETURN(std::unique_ptr<ResponseCache> cache, MakeRedisCache(settings));
    return std::shared_ptr<ResponseCache>(std::move(cache));
  }
  return InvalidArgument("unknown cache '" + name +
                         "': this build has the 'local' and 'redis' caches");
}

}  // namespace nereid
