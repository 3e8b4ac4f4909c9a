#include "app/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>

#include "app/config_flags.h"
#include "common/parse_number.h"
#include "common/usable_cpus.h"

namespace nereid {
namespace {

// Triton flags accepted so that existing command lines keep working, whose feature this build
// does not provide (yet, or ever on CPU). Each use is reported at start-up.
constexpr const char* kCompatFlags[] = {"--grpc-infer-allocation-pool-size",
                                        "--grpc-max-response-pool-size",
                                        "--grpc-header-forward-pattern",
                                        "--http-header-forward-pattern",
                                        "--allow-gpu-metrics",
                                        "--trace-config",
                                        "--trace-file",
                                        "--trace-level",
                                        "--trace-rate",
                                        "--trace-count",
                                        "--trace-log-frequency",
                                        "--model-load-retry-count",
                                        "--model-namespacing",
                                        "--repoagent-directory",
                                        "--cache-directory",
                                        "--cache-config",
                                        "--response-cache-byte-size",
                                        "--rate-limit",
                                        "--rate-limit-resource",
                                        "--pinned-memory-pool-byte-size",
                                        "--cuda-memory-pool-byte-size",
                                        "--cuda-virtual-address-size",
                                        "--buffer-manager-thread-count",
                                        "--host-policy",
                                        "--model-load-gpu-limit",
                                        "--min-supported-compute-capability",
                                        "--enable-peer-access",
                                        "--allow-client-shm",
                                        "--allow-sagemaker",
                                        "--sagemaker-port",
                                        "--sagemaker-safe-port-range",
                                        "--sagemaker-thread-count",
                                        "--allow-vertex-ai",
                                        "--vertex-ai-port",
                                        "--vertex-ai-thread-count",
                                        "--vertex-ai-default-model"};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Triton's format checks, then Nereid's own check of the one setting it reads itself.
Status ParseBackendConfig(const std::string& text, ServerOptions* server) {
  auto setting = ParseBackendConfigOption(text);
  if (!setting.ok()) return BadOption("backend-config", setting.status());
  const auto& [key, value] = setting->second;
  if (key == "default-max-batch-size") {
    auto number = ParseInteger<int>(value);
    if (!number || *number < 0) {
      return InvalidArgument(
          "--backend-config default-max-batch-size must be a non-negative integer, got '" + value +
          "'");
    }
  }
  server->backend_config.push_back(std::move(*setting));
  return Status::Ok();
}

// Keeps the first occurrence of each value: Triton keeps these flags in a std::set.
std::vector<std::string> Unique(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

// The flags of kCompatFlags this build acts on (their values checked by CheckCompatFlags).
bool IsActedOn(std::string_view flag) {
  return flag == "--allow-client-shm" || flag == "--cache-config" ||
         flag == "--response-cache-byte-size" || flag == "--cache-directory" ||
         flag == "--grpc-max-response-pool-size" || flag.rfind("--trace-", 0) == 0;
}

const char* CompatHelp(std::string_view flag) {
  if (flag == "--cache-config") {
    return "<cache name>,<setting>=<value>: the response cache ('local' or 'redis'; repeatable, "
           "merged per name)";
  }
  if (flag == "--response-cache-byte-size") return "Deprecated: use --cache-config=local,size=N";
  if (flag == "--cache-directory") return "Accepted for Triton compatibility (caches are built in)";
  if (flag == "--grpc-max-response-pool-size") {
    return "Responses of one ModelStreamInfer stream buffered before the model's sender waits "
           "(default unbounded)";
  }
  if (flag == "--trace-config") {
    return "[<mode>,]<setting>=<value>: the trace extension (level, rate, count, mode=triton, "
           "triton,file=..., triton,log-frequency=...; repeatable)";
  }
  if (flag.rfind("--trace-", 0) == 0) return "Deprecated: use --trace-config";
  return "Whether clients may register shared memory regions (default false)";
}

struct RawFlags {
  std::vector<std::string> backend_config;
  std::vector<std::string> load_model;
  std::string control_mode = "none";
  std::string log_format = "default";
  std::string grpc_compression = "none";
  bool disable_auto_complete = false;
  bool strict_model_config = false;
  // Triton's boolean flags, converted in Finish as Triton's ParseOption<bool> reads them.
  struct BoolFlag {
    std::string name;
    std::string text;
    bool* target;
  };
  std::vector<std::unique_ptr<BoolFlag>> bools;  // stable addresses: CLI11 keeps &text
  std::string log_verbose;
  std::map<std::string, std::vector<std::string>> compat;  // every occurrence, in order
  std::vector<std::string> http_restricted_api;
  std::vector<std::string> grpc_restricted_protocol;
  std::vector<std::string> metrics_config;
  std::string metrics_address;
};

// --cache-config and --response-cache-byte-size, already checked by CheckCompatFlags (one cache
// name, not both flags).
Status FinishCache(RawFlags& raw, AppOptions& o) {
  for (const auto& v : raw.compat["--cache-config"]) {
    auto setting = ParseCacheConfigOption(v);
    if (!setting.ok()) return BadOption("cache-config", setting.status());
    o.cache_name = setting->first;
    o.cache_settings[setting->second.first] = setting->second.second;
  }
  for (const auto& v : raw.compat["--response-cache-byte-size"]) {
    NEREID_ASSIGN_OR_RETURN(int64_t size, ParseTritonInteger(v, INT64_MIN, INT64_MAX));
    o.cache_name = "local";
    o.cache_settings["size"] = std::to_string(size);
    o.cache_warnings.push_back(
        "'--response-cache-byte-size' has been deprecated! It means the 'local' cache with the "
        "given byte size; the equivalent is '--cache-config=local,size=" +
        std::to_string(size) + "'");
  }
  for (const auto& v : raw.compat["--cache-directory"]) o.cache_directory = v;
  return Status::Ok();
}

void AddBool(CLI::App& app, RawFlags& raw, const char* name, bool* target, const char* help) {
  auto& flag = raw.bools.emplace_back(
      std::make_unique<RawFlags::BoolFlag>(RawFlags::BoolFlag{name, "", target}));
  app.add_option(name, flag->text, std::string(help) + " (true/false, on/off, 1/0)");
}

// Triton's repeatable flags keep every occurrence; the others keep the last one (getopt).
constexpr auto kAll = CLI::MultiOptionPolicy::TakeAll;

void AddMetricsFlags(CLI::App& app, MetricsCliOptions& m, RawFlags& raw) {
  AddBool(app, raw, "--allow-metrics", &m.allow, "Serve Prometheus metrics");
  AddBool(app, raw, "--allow-cpu-metrics", &m.server.allow_cpu,
          "Report CPU utilization and memory");
  app.add_option("--metrics-port", m.server.port, "Metrics port")->check(CLI::Range(0, 65535));
  app.add_option("--metrics-address", raw.metrics_address,
                 "Metrics bind address (default: --http-address)");
  app.add_option("--metrics-interval-ms", m.server.interval_ms, "CPU metrics poll interval (ms)")
      ->check(CLI::PositiveNumber);
  app.add_option("--metrics-config", raw.metrics_config,
                 "<setting>=<value>: counter_latencies, histogram_latencies, summary_latencies, "
                 "summary_quantiles (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(kAll);
}

// --metrics-config, the address default, and port collisions with HTTP and gRPC.
Status FinishMetrics(AppOptions& o, const RawFlags& raw) {
  MetricsCliOptions& m = o.metrics;
  for (const std::string& setting : raw.metrics_config) {
    NEREID_RETURN_IF_ERROR(
        BadOption("metrics-config", ApplyMetricsConfig(setting, &m.server.config, &m.warnings)));
  }
  m.server.address = raw.metrics_address.empty() ? o.http.address : raw.metrics_address;
  if (m.server.address.rfind("ipv6:", 0) == 0) m.server.address = m.server.address.substr(5);
  if (!m.allow) {
    m.server.allow_cpu = false;  // Triton forces the per-interval metrics off too
    return Status::Ok();
  }
  return Status::Ok();
}

// Triton's CheckPortCollision over the enabled services, by address as given and port. Nereid
// lets port 0 (an ephemeral port, chosen by the kernel) repeat.
Status CheckPortCollision(const AppOptions& o, const RawFlags& raw,
                          const std::string& http_address) {
  struct Service {
    const char* name;
    std::string address;
    int port;
  };
  std::vector<Service> services;
  if (o.http.allow) services.push_back({"HTTP", http_address, o.http.port});
  if (o.grpc.allow) services.push_back({"GRPC", o.grpc.server.address, o.grpc.server.port});
  if (o.metrics.allow) {
    services.push_back({"metrics", raw.metrics_address.empty() ? http_address : raw.metrics_address,
                        o.metrics.server.port});
  }
  for (size_t i = 0; i < services.size(); ++i) {
    for (size_t j = i + 1; j < services.size(); ++j) {
      const Service& a = services[i];
      const Service& b = services[j];
      if (a.address != b.address || a.port != b.port || a.port == 0) continue;
      return InvalidArgument(std::string("The server cannot listen to ") + a.name +
                             " requests and " + b.name + " requests at the same address and port " +
                             a.address + ":" + std::to_string(a.port));
    }
  }
  return Status::Ok();
}

void AddGrpcFlags(CLI::App& app, GrpcOptions& g, RawFlags& raw) {
  GrpcServerOptions& s = g.server;
  GrpcKeepaliveOptions& k = s.keepalive;
  AddBool(app, raw, "--allow-grpc", &g.allow, "Serve gRPC");
  app.add_option("--grpc-port", s.port, "gRPC port")->check(CLI::Range(0, 65535));
  app.add_option("--grpc-address", s.address, "gRPC bind address (ipv6:[::1] for IPv6)");
  app.add_option("--grpc-infer-thread-count", s.infer_thread_count, "gRPC completion-queue threads")
      ->check(CLI::PositiveNumber);
  AddBool(app, raw, "--reuse-grpc-port", &s.reuse_port, "SO_REUSEPORT on the gRPC socket");
  AddBool(app, raw, "--grpc-use-ssl", &s.ssl.use_ssl, "Serve gRPC over TLS");
  AddBool(app, raw, "--grpc-use-ssl-mutual", &s.ssl.use_mutual_auth,
          "Serve gRPC over mutual TLS (implies --grpc-use-ssl)");
  app.add_option("--grpc-server-cert", s.ssl.server_cert, "PEM server certificate file");
  app.add_option("--grpc-server-key", s.ssl.server_key, "PEM server key file");
  app.add_option("--grpc-root-cert", s.ssl.root_cert, "PEM root certificate file");
  app.add_option("--grpc-infer-response-compression-level", raw.grpc_compression,
                 "none, low, medium or high");
  app.add_option("--grpc-keepalive-time", k.keepalive_time_ms, "Keepalive ping period (ms)");
  app.add_option("--grpc-keepalive-timeout", k.keepalive_timeout_ms,
                 "Keepalive ping acknowledgement timeout (ms)");
  AddBool(app, raw, "--grpc-keepalive-permit-without-calls", &k.keepalive_permit_without_calls,
          "Allow keepalive pings without calls in flight");
  app.add_option("--grpc-http2-max-pings-without-data", k.http2_max_pings_without_data,
                 "Pings allowed without data");
  app.add_option("--grpc-http2-min-recv-ping-interval-without-data",
                 k.http2_min_recv_ping_interval_without_data_ms,
                 "Shortest accepted interval between client pings without data (ms)");
  app.add_option("--grpc-http2-max-ping-strikes", k.http2_max_ping_strikes,
                 "Bad pings tolerated before closing the connection");
  app.add_option("--grpc-max-connection-age", k.max_connection_age_ms,
                 "Longest connection lifetime (ms)");
  app.add_option("--grpc-max-connection-age-grace", k.max_connection_age_grace_ms,
                 "Grace period after the connection age (ms)");
}

// --grpc-infer-response-compression-level, mutual TLS implying TLS, HTTP/gRPC port collisions.
Status FinishGrpc(const RawFlags& raw, GrpcOptions& g) {
  const std::string level = Lower(raw.grpc_compression);
  if (level == "none") {
    g.server.response_compression = GrpcCompression::kNone;
  } else if (level == "low") {
    g.server.response_compression = GrpcCompression::kLow;
  } else if (level == "medium") {
    g.server.response_compression = GrpcCompression::kMedium;
  } else if (level == "high") {
    g.server.response_compression = GrpcCompression::kHigh;
  } else {
    return BadOption("grpc-infer-response-compression-level",
                     InvalidArgument("invalid argument for "
                                     "--grpc_infer_response_compression_level"));
  }
  if (g.server.ssl.use_mutual_auth) g.server.ssl.use_ssl = true;
  for (const auto& arg : raw.grpc_restricted_protocol) {
    NEREID_RETURN_IF_ERROR(
        BadOption("grpc-restricted-protocol",
                  ParseRestrictedFeatureOption(arg, "grpc-restricted-protocol",
                                               kRestrictedProtocolHeaderPrefix, "protocol",
                                               &g.server.restricted)));
  }
  return Status::Ok();
}

void AddFlags(CLI::App& app, AppOptions& o, RawFlags& raw) {
  ServerOptions& s = o.server;
  // Repeatable options take one value per occurrence; a bare word after one is a positional
  // argument, which Triton rejects.
  app.add_option("--model-repository,--model-store", s.model_repositories,
                 "Path to a model repository (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(kAll);
  app.add_option("--id", s.server_id, "Server identifier reported in server metadata");
  AddBool(app, raw, "--strict-readiness", &s.strict_readiness,
          "Ready only when every model version is ready");
  AddBool(app, raw, "--exit-on-error", &s.exit_on_error, "Exit when initialization fails");
  app.add_option("--exit-timeout-secs", s.exit_timeout_secs,
                 "Seconds to wait for in-flight inferences at shutdown");
  app.add_option("--max-sequence-backlog-size", s.max_sequence_backlog_size,
                 "Requests each sequence-batching model may hold queued, in its slots and its "
                 "backlog, before refusing more (0: unbounded)");
  app.add_option("--model-load-thread-count", s.model_load_thread_count,
                 "Models loaded in parallel (0 is 1, as in Triton)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--disable-auto-complete-config", raw.disable_auto_complete,
               "Do not let backends complete model configurations");
  AddBool(app, raw, "--strict-model-config", &raw.strict_model_config,
          "DEPRECATED: true is --disable-auto-complete-config");
  app.add_option("--model-config-name", s.model_config_name,
                 "Use <model>/configs/<name>.pbtxt when present");
  app.add_option("--backend-directory", s.backend_directory, "Folder of backend plugins");
  app.add_option("--backend-config", raw.backend_config, "<backend>,<setting>=<value> (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(kAll);
  app.add_option("--model-control-mode", raw.control_mode, "none, poll or explicit");
  app.add_option("--load-model", raw.load_model,
                 "Model to load at start (explicit mode, repeatable; '*' alone loads all)")
      ->allow_extra_args(false)
      ->multi_option_policy(kAll);
  app.add_option("--repository-poll-secs", s.repository_poll_secs,
                 "Seconds between repository scans in poll mode (0: no polling thread)")
      ->check(CLI::NonNegativeNumber);
  AddBool(app, raw, "--allow-http", &o.http.allow, "Serve HTTP/REST");
  app.add_option("--http-port", o.http.port, "HTTP port")->check(CLI::Range(0, 65535));
  app.add_option("--http-address", o.http.address, "HTTP bind address");
  app.add_option("--http-thread-count", o.http.thread_count, "HTTP I/O threads")
      ->check(CLI::PositiveNumber);
  app.add_option("--http-max-input-size", o.http.max_input_size,
                 "Largest HTTP request body, also after decompression");
  AddBool(app, raw, "--reuse-http-port", &o.http.reuse_port, "SO_REUSEPORT on the HTTP socket");
  AddBool(app, raw, "--allow-status-page", &o.http.status_page,
          "Serve the HTML status page at GET / on the HTTP port (Nereid's own; default true)");
  app.add_option("--http-idle-timeout-secs", o.http.idle_timeout_secs,
                 "Close a kept-alive HTTP connection idle this long (0: never; default 120)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--http-header-timeout-secs", o.http.header_timeout_secs,
                 "A request header must arrive within this time of its first byte, else 408 "
                 "(0: no limit; default 30)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--http-read-timeout-secs", o.http.read_timeout_secs,
                 "Longest pause while receiving a request body, else 408 (0: no limit; "
                 "default 60)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--http-max-connections", o.http.max_connections,
                 "Open HTTP connections served at once; at the limit the longest-idle one is "
                 "closed, or the new client gets 503 (0: no limit; default: 3/4 of the "
                 "open-file limit, at most 16384)")
      ->check(CLI::NonNegativeNumber);
  AddGrpcFlags(app, o.grpc, raw);
  AddMetricsFlags(app, o.metrics, raw);
  app.add_option("--log-verbose", raw.log_verbose, "Verbose logging level (or true/false)");
  AddBool(app, raw, "--log-info", &o.log.info, "Log info messages");
  AddBool(app, raw, "--log-warning", &o.log.warning, "Log warning messages");
  AddBool(app, raw, "--log-error", &o.log.error, "Log error messages");
  app.add_option("--log-format", raw.log_format, "default or ISO8601");
  app.add_option("--log-file", o.log.file, "Log to this file instead of stderr");
  app.add_option("--http-restricted-api", raw.http_restricted_api,
                 "<api>[,<api>...]:<header>=<value>: only requests carrying the header may use "
                 "these APIs (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(kAll);
  app.add_option("--grpc-restricted-protocol", raw.grpc_restricted_protocol,
                 "<protocol>[,<protocol>...]:<key>=<value>: only calls carrying the metadata "
                 "triton-grpc-protocol-<key> may use these protocols (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(kAll);
  for (const char* flag : kCompatFlags) {
    const bool acted_on = IsActedOn(flag);
    app.add_option(flag, raw.compat[flag],
                   acted_on ? CompatHelp(flag) : "Accepted for Triton compatibility; no effect yet")
        ->allow_extra_args(false)
        ->multi_option_policy(kAll);
  }
}

// --model-control-mode, --load-model, --repository-poll-secs.
Status FinishModelControl(const RawFlags& raw, ServerOptions& s) {
  const std::string mode = Lower(raw.control_mode);
  if (mode != "none" && mode != "poll" && mode != "explicit") {
    return BadOption("model-control-mode",
                     InvalidArgument("invalid argument for --model-control-mode"));
  }
  s.model_control_mode = mode == "poll"       ? ModelControlMode::kPoll
                         : mode == "explicit" ? ModelControlMode::kExplicit
                                              : ModelControlMode::kNone;
  if (s.model_control_mode != ModelControlMode::kPoll) s.repository_poll_secs = 0;
  s.startup_models = Unique(raw.load_model);
  if (!s.startup_models.empty() && s.model_control_mode != ModelControlMode::kExplicit) {
    return InvalidArgument(
        "Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well.");
  }
  for (const auto& name : s.startup_models) {
    if (name == "*" && s.startup_models.size() > 1) {
      return InvalidArgument(
          "Wildcard model name '*' must be the ONLY startup model if specified at all.");
    }
  }
  return Status::Ok();
}

// The boolean flags and --log-verbose, read as Triton reads them.
Status FinishBooleans(const CLI::App& app, const RawFlags& raw, AppOptions& o) {
  for (const auto& flag : raw.bools) {
    if (app.count(flag->name) == 0) continue;
    auto value = ParseTritonBool(flag->text);
    if (!value.ok()) return BadOption(flag->name.substr(2), value.status());
    *flag->target = *value;
  }
  if (app.count("--log-verbose") > 0) {
    // Triton's ParseIntBoolOption: true is 1, false is 0, else a level (here a whole number).
    const std::string v = Lower(raw.log_verbose);
    auto level = v == "true"    ? std::optional<int>(1)
                 : v == "false" ? std::optional<int>(0)
                                : ParseInteger<int>(raw.log_verbose);
    if (!level || *level < 0) {
      return BadOption("log-verbose",
                       InvalidArgument("Invalid option value. Got " + raw.log_verbose));
    }
    o.log.verbose_level = *level;
  }
  return Status::Ok();
}

Status Finish(const CLI::App& app, AppOptions& o, RawFlags& raw) {
  ServerOptions& s = o.server;
  NEREID_RETURN_IF_ERROR(FinishBooleans(app, raw, o));
  s.model_load_thread_count = std::max(1, s.model_load_thread_count);
  s.model_repositories = Unique(s.model_repositories);
  for (const auto& bc : raw.backend_config) NEREID_RETURN_IF_ERROR(ParseBackendConfig(bc, &s));
  s.disable_auto_complete = raw.disable_auto_complete || raw.strict_model_config;
  if (app.count("--http-thread-count") == 0) o.http.thread_count = DefaultHttpThreadCount();
  if (app.count("--grpc-infer-thread-count") == 0) {
    o.grpc.server.infer_thread_count = DefaultGrpcInferThreadCount();
  }
  if (o.http.max_input_size <= 0) {
    return BadOption("http-max-input-size",
                     InvalidArgument("Error: --http-max-input-size must be greater than 0."));
  }
  for (const auto& arg : raw.http_restricted_api) {
    NEREID_RETURN_IF_ERROR(BadOption(
        "http-restricted-api",
        ParseRestrictedFeatureOption(arg, "http-restricted-api", "", "api", &o.http.restricted)));
  }
  NEREID_RETURN_IF_ERROR(FinishModelControl(raw, s));
  if (raw.log_format == "ISO8601") {
    o.log.format = logging::Format::kIso8601;
  } else if (raw.log_format != "default") {
    return BadOption("log-format", InvalidArgument("invalid argument for --log-format"));
  }
  NEREID_RETURN_IF_ERROR(FinishGrpc(raw, o.grpc));
  NEREID_RETURN_IF_ERROR(FinishMetrics(o, raw));
  NEREID_RETURN_IF_ERROR(CheckCompatFlags(raw.compat));
  NEREID_RETURN_IF_ERROR(CheckPortCollision(o, raw, o.http.address));
  if (o.http.address.rfind("ipv6:", 0) == 0) {
    std::string a = o.http.address.substr(5);
    if (a.size() >= 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
    o.http.address = a;
  }
  // Checked after every per-option error, as Triton checks it after parsing.
  if (s.model_repositories.empty()) return InvalidArgument("--model-repository must be specified");
  // The one flag of the compatibility list this build acts on (its value checked above).
  for (const auto& value : raw.compat["--allow-client-shm"]) {
    StatusOr<bool> allow = ParseTritonBool(value);
    s.allow_client_shm = allow.ok() && *allow;
  }
  for (const auto& value : raw.compat["--grpc-max-response-pool-size"]) {
    NEREID_ASSIGN_OR_RETURN(int64_t size, ParseTritonInteger(value, 1, INT32_MAX));
    o.grpc.server.max_response_pool_size = static_cast<int>(size);
  }
  NEREID_RETURN_IF_ERROR(FinishCache(raw, o));
  NEREID_ASSIGN_OR_RETURN(s.trace, TraceConfigFromFlags(raw.compat, &o.trace_warnings));
  for (const char* flag : kCompatFlags) {
    if (IsActedOn(flag)) continue;
    for (const auto& value : raw.compat[flag]) {
      o.ignored_flags.push_back(std::string(flag) + "=" + value);
    }
  }
  return Status::Ok();
}

}  // namespace

int DefaultHttpThreadCount() { return std::clamp(UsableCpus(), 2, HttpOptions{}.thread_count); }

int DefaultGrpcInferThreadCount() {
  return std::clamp(UsableCpus(), 1, GrpcServerOptions{}.infer_thread_count);
}

StatusOr<AppOptions> ParseCommandLine(int argc, const char* const* argv,
                                      const std::string& default_backend_directory) {
  AppOptions o;
  o.server.backend_directory = default_backend_directory;
  RawFlags raw;
  CLI::App app{"Nereid: a Triton-compatible inference server for CPUs", "nereid"};
  app.allow_windows_style_options(false);
  // Repeating a single-valued flag keeps the last value, as Triton's getopt loop does; the
  // repeatable flags say kAll.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  AddFlags(app, o, raw);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    o.help_requested = true;
    o.help_text = app.help();
    return o;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return InvalidArgument(msg);
  }
  NEREID_RETURN_IF_ERROR(Finish(app, o, raw));
  return o;
}

}  // namespace nereid
