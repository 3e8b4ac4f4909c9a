#include "core/cache/redis_cache.h"

#include <hiredis/hiredis.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <vector>

#include "common/logging.h"
#include "common/thread_annotations.h"
#include "core/stats/model_stats.h"  // NowNs

namespace nereid {
namespace {

struct RedisSettings {
  std::string host;
  int port = 0;
  std::string user = "default";
  std::string password;
  int64_t db = 0;
  int64_t connect_timeout_ms = 0;
  int64_t socket_timeout_ms = 0;
  int64_t pool_size = 1;
  int64_t ttl_seconds = 0;
};

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;
struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

timeval Millis(int64_t ms) {
  return timeval{ms / 1000, static_cast<suseconds_t>(ms % 1000) * 1000};
}

StatusOr<int64_t> NonNegative(const std::map<std::string, std::string>& s, const std::string& key,
                              int64_t fallback) {
  auto it = s.find(key);
  if (it == s.end()) return fallback;
  int64_t v = 0;
  const std::string& t = it->second;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < 0) {
    return InvalidArgument("Failed to initialize RedisCache: '" + key +
                           "' must be a non-negative integer, got '" + t + "'");
  }
  return v;
}

StatusOr<RedisSettings> ReadSettings(const std::map<std::string, std::string>& s) {
  RedisSettings r;
  auto host = s.find("host");
  auto port = s.find("port");
  if (host == s.end() || port == s.end()) {
    return InvalidArgument(
        "Failed to initialize RedisCache, didn't specify address. Must at a minimum specify "
        "'host' and 'port' in the configuration - e.g. tritonserver --cache-config "
        "redis,host=redis --cache-config redis,port=6379 --model-repository=/models ...");
  }
  r.host = host->second;
  NEREID_ASSIGN_OR_RETURN(int64_t p, NonNegative(s, "port", 0));
  if (p == 0 || p > 65535) {
    return InvalidArgument("Failed to initialize RedisCache: 'port' must be in 1..65535, got '" +
                           port->second + "'");
  }
  r.port = static_cast<int>(p);
  if (const char* u = std::getenv("TRITONCACHE_REDIS_USERNAME")) r.user = u;
  if (const char* pw = std::getenv("TRITONCACHE_REDIS_PASSWORD")) r.password = pw;
  if (auto it = s.find("user"); it != s.end()) r.user = it->second;
  if (auto it = s.find("password"); it != s.end()) r.password = it->second;
  NEREID_ASSIGN_OR_RETURN(r.db, NonNegative(s, "db", 0));
  NEREID_ASSIGN_OR_RETURN(r.connect_timeout_ms, NonNegative(s, "connect_timeout", 0));
  NEREID_ASSIGN_OR_RETURN(r.socket_timeout_ms, NonNegative(s, "socket_timeout", 0));
  NEREID_ASSIGN_OR_RETURN(r.pool_size, NonNegative(s, "pool_size", 1));
  NEREID_ASSIGN_OR_RETURN(int64_t wait, NonNegative(s, "wait_timeout", 1000));
  (void)wait;  // a request waits for its pooled connection's mutex instead
  NEREID_ASSIGN_OR_RETURN(r.ttl_seconds, NonNegative(s, "ttl_seconds", 0));
  if (r.pool_size == 0) r.pool_size = 1;
  if (r.pool_size > 256) {
    return InvalidArgument("Failed to initialize RedisCache: 'pool_size' must be at most 256");
  }
  auto tls = s.find("tls_enabled");
  if (tls != s.end() && tls->second == "true") {
    return InvalidArgument(
        "Failed to initialize RedisCache: tls_enabled is not supported by this build (Debian's "
        "hiredis 0.14 has no TLS); reach Redis over a TLS tunnel instead");
  }
  for (const auto& [key, value] : s) {
    static const char* kKnown[] = {
        "host",           "port",       "user",         "password",    "db",   "connect_timeout",
        "socket_timeout", "pool_size",  "wait_timeout", "tls_enabled", "cert", "key",
        "cacert",         "cacert_dir", "sni",          "ttl_seconds"};
    bool known = false;
    for (const char* k : kKnown) known = known || key == k;
    if (!known) {
      return InvalidArgument("Failed to initialize RedisCache: unknown setting '" + key + "'");
    }
  }
  return r;
}

// One command on `c`; nullptr (with c->err set) when the connection failed.
Reply Command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return Reply(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data())));
}

// Connects, authenticates, selects the database and pings.
StatusOr<Context> Connect(const RedisSettings& s) {
  const std::string where = "(" + s.host + ":" + std::to_string(s.port) + ")";
  Context c(s.connect_timeout_ms > 0
                ? redisConnectWithTimeout(s.host.c_str(), s.port, Millis(s.connect_timeout_ms))
                : redisConnect(s.host.c_str(), s.port));
  if (c == nullptr) return Unavailable("failed to connect to Redis " + where + ": out of memory");
  if (c->err) return Unavailable("failed to connect to Redis " + where + ": " + c->errstr);
  if (s.socket_timeout_ms > 0) redisSetTimeout(c.get(), Millis(s.socket_timeout_ms));
  auto check = [&](const std::vector<std::string>& args) -> Status {
    Reply r = Command(c.get(), args);
    if (r == nullptr) return Unavailable("failed to connect to Redis " + where + ": " + c->errstr);
    if (r->type == REDIS_REPLY_ERROR) {
      return Unavailable("Redis " + where + " refused " + args[0] + ": " +
                         std::string(r->str, r->len));
    }
    return Status::Ok();
  };
  if (!s.password.empty()) NEREID_RETURN_IF_ERROR(check({"AUTH", s.user, s.password}));
  if (s.db != 0) NEREID_RETURN_IF_ERROR(check({"SELECT", std::to_string(s.db)}));
  NEREID_RETURN_IF_ERROR(check({"PING"}));
  return c;
}

class RedisCache : public ResponseCache {
 public:
  RedisCache(RedisSettings settings, std::vector<Context> conns)
      : settings_(std::move(settings)), pool_(conns.size()) {
    for (size_t i = 0; i < conns.size(); ++i) {
      MutexLock lock(pool_[i].mu);
      pool_[i].context = std::move(conns[i]);
    }
  }

  std::optional<std::string> Lookup(uint64_t hash) override {
    const uint64_t start = NowNs();
    std::optional<std::string> out;
    Reply r = Run({"GET", std::to_string(hash)});
    if (r != nullptr && r->type == REDIS_REPLY_STRING) {
      out.emplace(r->str, r->len);
    } else if (r != nullptr && r->type == REDIS_REPLY_ERROR) {
      LOG_WARNING("Failed to retrieve key: {}: {}", hash, std::string(r->str, r->len));
    }
    counters_.RecordLookup(out.has_value(), NowNs() - start);
    return out;
  }

  bool Insert(uint64_t hash, std::string value, bool replace) override {
    const uint64_t start = NowNs();
    std::vector<std::string> args{"SET", std::to_string(hash), std::move(value)};
    if (settings_.ttl_seconds > 0) {
      args.push_back("EX");
      args.push_back(std::to_string(settings_.ttl_seconds));
    }
    if (!replace) args.push_back("NX");  // another process may have inserted it meanwhile
    Reply r = Run(args);
    if (r != nullptr && r->type == REDIS_REPLY_ERROR) {
      LOG_WARNING("Failed to insert key [{}] into response cache: {}", hash,
                  std::string(r->str, r->len));
    }
    counters_.RecordInsertion(NowNs() - start);
    return !(r != nullptr && r->type == REDIS_REPLY_NIL);  // NX refused: already there
  }

  CacheStats Stats() const override { return counters_.Load(); }
  std::string_view name() const override { return "redis"; }

 private:
  struct Pooled {
    Mutex mu;
    Context context GUARDED_BY(mu);               // nullptr while Redis is unreachable
    uint64_t last_attempt_ns GUARDED_BY(mu) = 0;  // last reconnection attempt
  };
  static constexpr uint64_t kRetryNs = 1'000'000'000;

  // Runs one command on a pooled connection; nullptr when Redis cannot be reached.
  Reply Run(const std::vector<std::string>& args) {
    Pooled& p = pool_[next_.fetch_add(1, std::memory_order_relaxed) % pool_.size()];
    MutexLock lock(p.mu);
    if (p.context == nullptr) {
      const uint64_t now = NowNs();
      if (now - p.last_attempt_ns < kRetryNs) return nullptr;
      p.last_attempt_ns = now;
      StatusOr<Context> c = Connect(settings_);
      if (!c.ok()) return nullptr;
      p.context = std::move(c).value();
      if (down_.exchange(false)) LOG_INFO("Redis response cache reachable again");
    }
    Reply r = Command(p.context.get(), args);
    if (r == nullptr) {
      if (!down_.exchange(true)) {
        LOG_WARNING(
            "Redis response cache unreachable ({}): requests are answered as cache misses "
            "until it is back",
            p.context->errstr);
      }
      p.context.reset();
      p.last_attempt_ns = NowNs();
    }
    return r;
  }

  const RedisSettings settings_;
  std::vector<Pooled> pool_;
  std::atomic<uint64_t> next_{0};
  std::atomic<bool> down_{false};
  CacheCounters counters_;
};

}  // namespace

StatusOr<std::unique_ptr<ResponseCache>> MakeRedisCache(
    const std::map<std::string, std::string>& settings) {
  NEREID_ASSIGN_OR_RETURN(RedisSettings s, ReadSettings(settings));
  std::vector<Context> conns;
  for (int64_t i = 0; i < s.pool_size; ++i) {
    StatusOr<Context> c = Connect(s);
    if (!c.ok()) {
      return Status(c.status().code(), "Failed to initialize RedisCache: " + c.status().message());
    }
    conns.push_back(std::move(c).value());
  }
  return std::unique_ptr<ResponseCache>(
      std::make_unique<RedisCache>(std::move(s), std::move(conns)));
}

}  // namespace nereid
