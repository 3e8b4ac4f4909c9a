// RedisCache: Triton's "redis" response cache, through Debian's hiredis (the only translation
// unit that includes hiredis headers is redis_cache.cc). Several Nereid processes pointed at one
// Redis share their entries. Values are cache_value.h's bytes, stored with SET under the
// decimal text of the key's 64-bit hash (with EX <ttl_seconds> when set); the full key inside
// each value tells collisions apart.
//
// Settings (REFERENCE-2 §8.4): host, port (required), user (default "default"; environment
// TRITONCACHE_REDIS_USERNAME), password (TRITONCACHE_REDIS_PASSWORD), db, connect_timeout and
// socket_timeout (ms, 0: wait forever), pool_size (connections, default 1), wait_timeout
// (accepted), tls_enabled/cert/key/cacert/cacert_dir/sni (refused: Debian's hiredis 0.14 has no
// TLS), ttl_seconds (Nereid's: entries expire; default none).
//
// Start-up: the server must answer PING, else creation fails (Triton refuses to start).
// Run time: a connection error makes the lookup a miss and the insert a no-op; one warning per
// outage; the connection is re-opened (at most once a second per connection) until Redis is back.
//
// Thread-safety: as ResponseCache; each pooled connection has its own mutex.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/cache/response_cache.h"
#include "nereid/status.h"

namespace nereid {

StatusOr<std::unique_ptr<ResponseCache>> MakeRedisCache(
    const std::map<std::string, std::string>& settings);

}  // namespace nereid
