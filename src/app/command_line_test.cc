#include "app/command_line.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace nereid {
namespace {

StatusOr<AppOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "nereid");
  return ParseCommandLine(static_cast<int>(args.size()), args.data(), "/b");
}

// The CPUs this thread may run on.
int AffinityCpus() {
  cpu_set_t all;
  EXPECT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  return CPU_COUNT(&all);
}

// Runs `fn` with this thread pinned to the first CPU of its affinity mask (as `taskset -c 0`
// does), then restores the mask.
template <typename Fn>
void OnOneCpu(Fn fn) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t single;
  CPU_ZERO(&single);
  CPU_SET(first, &single);
  ASSERT_EQ(sched_setaffinity(0, sizeof(single), &single), 0);
  fn();
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
}

TEST(CommandLineTest, GrpcInferThreadCountIsOneOnOneCpuUnlessGiven) {
  EXPECT_EQ(DefaultGrpcInferThreadCount(), std::clamp(AffinityCpus(), 1, 2));
  auto d = Parse({"--model-repository=/m"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->grpc.server.infer_thread_count, DefaultGrpcInferThreadCount());
  // Pinned to one CPU: one completion-queue thread, unless the flag says otherwise.
  int pinned = 0;
  StatusOr<AppOptions> pinned_parse = InvalidArgument("not parsed");
  StatusOr<AppOptions> pinned_given = InvalidArgument("not parsed");
  OnOneCpu([&] {
    pinned = DefaultGrpcInferThreadCount();
    pinned_parse = Parse({"--model-repository=/m"});
    pinned_given = Parse({"--model-repository=/m", "--grpc-infer-thread-count=2"});
  });
  EXPECT_EQ(pinned, 1);
  ASSERT_TRUE(pinned_parse.ok());
  EXPECT_EQ(pinned_parse->grpc.server.infer_thread_count, 1);
  ASSERT_TRUE(pinned_given.ok());
  EXPECT_EQ(pinned_given->grpc.server.infer_thread_count, 2);  // an explicit count is used as given
}

TEST(CommandLineTest, HttpThreadCountFollowsTheCpusUnlessGiven) {
  EXPECT_EQ(DefaultHttpThreadCount(), std::clamp(AffinityCpus(), 2, 8));
  auto d = Parse({"--model-repository=/m"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->http.thread_count, DefaultHttpThreadCount());
  // Pinned to one CPU (taskset -c 0): still 2, so inline execution keeps a free thread (one
  // thread could run no model inline: 9-22% more CPU per request, ADR 0009 addendum 2).
  int pinned = 0;
  OnOneCpu([&] { pinned = DefaultHttpThreadCount(); });
  EXPECT_EQ(pinned, 2);
  auto given = Parse({"--model-repository=/m", "--http-thread-count=8"});
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->http.thread_count, 8);  // an explicit count is used as given
  auto one = Parse({"--model-repository=/m", "--http-thread-count=1"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->http.thread_count, 1);
}

TEST(CommandLineTest, Defaults) {
  auto o = Parse({"--model-repository=/m"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->server.model_repositories, std::vector<std::string>{"/m"});
  EXPECT_EQ(o->http.port, 8000);
  EXPECT_EQ(o->http.thread_count, DefaultHttpThreadCount());
  EXPECT_EQ(o->http.max_input_size, 64 * 1024 * 1024);
  EXPECT_EQ(o->server.server_id, "triton");
  EXPECT_TRUE(o->server.strict_readiness);
  EXPECT_TRUE(o->server.exit_on_error);
  EXPECT_EQ(o->server.exit_timeout_secs, 30);
  EXPECT_EQ(o->server.backend_directory, "/b");
  EXPECT_FALSE(o->server.disable_auto_complete);
}

TEST(CommandLineTest, HttpConnectionDefences) {
  auto d = Parse({"--model-repository=/m"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->http.idle_timeout_secs, 120);
  EXPECT_EQ(d->http.header_timeout_secs, 30);
  EXPECT_EQ(d->http.read_timeout_secs, 60);
  EXPECT_EQ(d->http.max_connections, -1);  // derived from the open-file limit in main
  auto o =
      Parse({"--model-repository=/m", "--http-idle-timeout-secs=5", "--http-header-timeout-secs=0",
             "--http-read-timeout-secs=7", "--http-max-connections=100"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->http.idle_timeout_secs, 5);
  EXPECT_EQ(o->http.header_timeout_secs, 0);
  EXPECT_EQ(o->http.read_timeout_secs, 7);
  EXPECT_EQ(o->http.max_connections, 100);
  EXPECT_FALSE(Parse({"--model-repository=/m", "--http-idle-timeout-secs=-1"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--http-max-connections=-5"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--http-read-timeout-secs=abc"}).ok());
}

TEST(CommandLineTest, RepeatedRepositoriesAndValues) {
  auto o = Parse({"--model-repository=/a", "--model-store", "/b", "--http-port=0",
                  "--strict-readiness=false", "--backend-config=onnxruntime,x=1",
                  "--backend-config=default-max-batch-size=8", "--log-verbose=1",
                  "--http-address=ipv6:[::1]"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->server.model_repositories.size(), 2u);
  EXPECT_EQ(o->http.port, 0);
  EXPECT_FALSE(o->server.strict_readiness);
  ASSERT_EQ(o->server.backend_config.size(), 2u);
  EXPECT_EQ(o->server.backend_config[0].first, "onnxruntime");
  EXPECT_EQ(o->server.backend_config[1].second.first, "default-max-batch-size");
  EXPECT_EQ(o->log.verbose_level, 1);
  EXPECT_EQ(o->http.address, "::1");
}

// Issue 14 item 6: configuration numbers are the whole text or an error, never a prefix.
TEST(CommandLineTest, NumbersAreParsedStrictly) {
  for (const char* bad : {"--backend-config=default-max-batch-size=12abc",
                          "--backend-config=onnxruntime,default-max-batch-size=-1",
                          "--backend-config=default-max-batch-size= 4"}) {
    auto o = Parse({"--model-repository=/m", bad});
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_EQ(
        o.status().message().rfind(
            "--backend-config default-max-batch-size must be a non-negative integer, got '", 0),
        0u)
        << o.status().message();
  }
  // An empty value is Triton's format error, before any number is read.
  EXPECT_EQ(Parse({"--model-repository=/m", "--backend-config=default-max-batch-size="})
                .status()
                .message(),
            "Bad option: \"--backend-config\". --backend-config option format is '<backend "
            "name>,<setting>=<value>'. Got default-max-batch-size=");
  for (const char* bad : {"--http-port=12abc", "--exit-timeout-secs=5x", "--log-verbose=1.5",
                          "--http-max-input-size=64k", "--model-load-thread-count=2 "}) {
    EXPECT_FALSE(Parse({"--model-repository=/m", bad}).ok()) << bad;
  }
  auto ok = Parse({"--model-repository=/m", "--backend-config=default-max-batch-size=0"});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->server.backend_config[0].second.second, "0");
}

TEST(CommandLineTest, StrictModelConfigDisablesAutoComplete) {
  EXPECT_TRUE(
      Parse({"--model-repository=/m", "--strict-model-config=true"})->server.disable_auto_complete);
  EXPECT_TRUE(Parse({"--model-repository=/m", "--disable-auto-complete-config"})
                  ->server.disable_auto_complete);
}

TEST(CommandLineTest, Errors) {
  EXPECT_EQ(Parse({}).status().message(), "--model-repository must be specified");
  EXPECT_FALSE(Parse({"--model-repository=/m", "--no-such-flag=1"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--http-port=abc"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--http-port=70000"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--http-max-input-size=0"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "positional"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--load-model=x"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--model-control-mode=sometimes"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--backend-config=novalue"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--log-format=xml"}).ok());
  auto e = Parse({"--model-repository=/m", "--bogus"});
  EXPECT_EQ(e.status().message().find('\n'), std::string::npos);
}

TEST(CommandLineTest, ModelControlModes) {
  auto none = Parse({"--model-repository=/m"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->server.model_control_mode, ModelControlMode::kNone);
  EXPECT_EQ(none->server.repository_poll_secs, 0);  // forced off outside poll mode

  auto poll = Parse({"--model-repository=/m", "--model-control-mode=POLL"});
  ASSERT_TRUE(poll.ok());
  EXPECT_EQ(poll->server.model_control_mode, ModelControlMode::kPoll);
  EXPECT_EQ(poll->server.repository_poll_secs, 15);
  auto poll0 =
      Parse({"--model-repository=/m", "--model-control-mode=poll", "--repository-poll-secs=0"});
  ASSERT_TRUE(poll0.ok());
  EXPECT_EQ(poll0->server.repository_poll_secs, 0);

  auto expl = Parse({"--model-repository=/m", "--model-control-mode=explicit", "--load-model=a",
                     "--load-model", "b", "--model-load-thread-count=2"});
  ASSERT_TRUE(expl.ok()) << expl.status().message();
  EXPECT_EQ(expl->server.model_control_mode, ModelControlMode::kExplicit);
  EXPECT_EQ(expl->server.startup_models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(expl->server.model_load_thread_count, 2);
  EXPECT_TRUE(
      Parse({"--model-repository=/m", "--model-control-mode=explicit", "--load-model=*"}).ok());
}

TEST(CommandLineTest, ModelControlErrors) {
  EXPECT_EQ(Parse({"--model-repository=/m", "--model-control-mode=explicit", "--load-model=*",
                   "--load-model=a"})
                .status()
                .message(),
            "Wildcard model name '*' must be the ONLY startup model if specified at all.");
  EXPECT_EQ(Parse({"--model-repository=/m", "--model-control-mode=poll", "--load-model=a"})
                .status()
                .message(),
            "Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as "
            "well.");
  EXPECT_FALSE(
      Parse({"--model-repository=/m", "--model-control-mode=poll", "--repository-poll-secs=-1"})
          .ok());
  // Triton reads 0 as 1 (std::max(1u, count)); a negative count is refused.
  auto zero = Parse({"--model-repository=/m", "--model-load-thread-count=0"});
  ASSERT_TRUE(zero.ok()) << zero.status().message();
  EXPECT_EQ(zero->server.model_load_thread_count, 1);
  EXPECT_FALSE(Parse({"--model-repository=/m", "--model-load-thread-count=-1"}).ok());
}

TEST(CommandLineTest, CompatibilityFlagsAreReported) {
  auto o = Parse({"--model-repository=/m", "--grpc-infer-allocation-pool-size=8",
                  "--allow-gpu-metrics=false", "--allow-metrics=false"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->ignored_flags.size(), 2u);  // --allow-metrics has an effect now
}

TEST(CommandLineTest, GrpcMaxResponsePoolSize) {
  auto unset = Parse({"--model-repository=/m"});
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(unset->grpc.server.max_response_pool_size, INT32_MAX);  // Triton's default
  auto set = Parse({"--model-repository=/m", "--grpc-max-response-pool-size=3"});
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->grpc.server.max_response_pool_size, 3);
  EXPECT_TRUE(set->ignored_flags.empty());  // it has an effect
  auto zero = Parse({"--model-repository=/m", "--grpc-max-response-pool-size=0"});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("--grpc-max-response-pool-size must be greater than 0."),
            std::string::npos);
}

TEST(CommandLineTest, AllowClientShm) {
  auto off = Parse({"--model-repository=/m"});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->server.allow_client_shm);  // Triton's default since #8721
  auto on = Parse({"--model-repository=/m", "--allow-client-shm=true"});
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_TRUE(on->server.allow_client_shm);
  EXPECT_TRUE(on->ignored_flags.empty());  // it has an effect
  auto last = Parse({"--model-repository=/m", "--allow-client-shm=1", "--allow-client-shm=off"});
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->server.allow_client_shm);
  EXPECT_FALSE(Parse({"--model-repository=/m", "--allow-client-shm=maybe"}).ok());
}

TEST(CommandLineTest, MetricsFlags) {
  auto d = Parse({"--model-repository=/m", "--http-address=127.0.0.1"});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->metrics.allow);
  EXPECT_TRUE(d->metrics.server.allow_cpu);
  EXPECT_EQ(d->metrics.server.port, 8002);
  EXPECT_EQ(d->metrics.server.address, "127.0.0.1");  // defaults to --http-address
  EXPECT_EQ(d->metrics.server.interval_ms, 2000);
  EXPECT_TRUE(d->metrics.server.config.counter_latencies);
  auto o = Parse({"--model-repository=/m", "--metrics-port=9102", "--metrics-address=::1",
                  "--allow-cpu-metrics=false", "--metrics-interval-ms=50",
                  "--metrics-config=summary_latencies=true",
                  "--metrics-config=summary_quantiles=0.5:0.01", "--metrics-config=foo=1"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->metrics.server.port, 9102);
  EXPECT_EQ(o->metrics.server.address, "::1");
  EXPECT_FALSE(o->metrics.server.allow_cpu);
  EXPECT_EQ(o->metrics.server.interval_ms, 50);
  EXPECT_TRUE(o->metrics.server.config.summary_latencies);
  EXPECT_EQ(o->metrics.server.config.quantiles.size(), 1u);
  EXPECT_EQ(o->metrics.warnings.size(), 1u);  // foo
  auto twice = Parse({"--model-repository=/m", "--metrics-port=0", "--metrics-port=9103"});
  ASSERT_TRUE(twice.ok()) << twice.status().message();
  EXPECT_EQ(twice->metrics.server.port, 9103);  // the last one wins, as in Triton
  auto off = Parse({"--model-repository=/m", "--allow-metrics=false"});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->metrics.allow);
  EXPECT_FALSE(off->metrics.server.allow_cpu);  // forced off with the metrics
}

TEST(CommandLineTest, StatusPageIsOnUnlessTurnedOff) {
  auto on = Parse({"--model-repository=/m"});
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_TRUE(on->http.status_page);
  auto off = Parse({"--model-repository=/m", "--allow-status-page=false"});
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_FALSE(off->http.status_page);
  EXPECT_FALSE(Parse({"--model-repository=/m", "--allow-status-page=maybe"}).ok());
}

TEST(CommandLineTest, MetricsFlagErrors) {
  auto bad = Parse({"--model-repository=/m", "--metrics-config=summary_latencies"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "Bad option: \"--metrics-config\". --metrics-config option format is "
            "<setting>=<value>. Got summary_latencies");
  EXPECT_FALSE(Parse({"--model-repository=/m", "--metrics-interval-ms=0"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--metrics-port=70000"}).ok());
  auto same = Parse({"--model-repository=/m", "--metrics-port=8000"});
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.status().message(),
            "The server cannot listen to HTTP requests and metrics requests at the same address "
            "and port 0.0.0.0:8000");
  EXPECT_FALSE(Parse({"--model-repository=/m", "--metrics-port=8001"}).ok());
  // Disabled services do not collide.
  EXPECT_TRUE(Parse({"--model-repository=/m", "--metrics-port=8000", "--allow-http=false"}).ok());
  EXPECT_TRUE(
      Parse({"--model-repository=/m", "--metrics-port=8000", "--allow-metrics=false"}).ok());
}

TEST(CommandLineTest, GrpcFlags) {
  auto d = Parse({"--model-repository=/m"});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->grpc.allow);
  EXPECT_EQ(d->grpc.server.port, 8001);
  EXPECT_EQ(d->grpc.server.address, "0.0.0.0");
  EXPECT_EQ(d->grpc.server.infer_thread_count, 2);
  auto o = Parse({"--model-repository=/m", "--allow-grpc=true", "--grpc-port=9001",
                  "--grpc-address=ipv6:[::1]", "--grpc-infer-thread-count=4",
                  "--grpc-use-ssl-mutual=true", "--grpc-infer-response-compression-level=HIGH",
                  "--grpc-keepalive-time=1000", "--grpc-max-connection-age=5000",
                  "--reuse-grpc-port=true"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->grpc.server.port, 9001);
  EXPECT_EQ(o->grpc.server.address, "ipv6:[::1]");
  EXPECT_EQ(o->grpc.server.infer_thread_count, 4);
  EXPECT_TRUE(o->grpc.server.ssl.use_ssl);
  EXPECT_TRUE(o->grpc.server.ssl.use_mutual_auth);
  EXPECT_EQ(o->grpc.server.response_compression, GrpcCompression::kHigh);
  EXPECT_EQ(o->grpc.server.keepalive.keepalive_time_ms, 1000);
  EXPECT_EQ(o->grpc.server.keepalive.max_connection_age_ms, 5000);
  EXPECT_TRUE(o->grpc.server.reuse_port);
  EXPECT_TRUE(o->ignored_flags.empty());
  EXPECT_FALSE(
      Parse({"--model-repository=/m", "--grpc-infer-response-compression-level=max"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--grpc-infer-thread-count=0"}).ok());
  EXPECT_FALSE(Parse({"--model-repository=/m", "--http-port=9000", "--grpc-port=9000"}).ok());
  EXPECT_TRUE(
      Parse({"--model-repository=/m", "--http-port=9000", "--grpc-port=9000", "--allow-grpc=false"})
          .ok());
}

TEST(CommandLineTest, RepeatableFlagsKeepEveryOccurrence) {
  auto o = Parse({"--model-repository=/a",
                  "--model-repository=/b",
                  "--model-repository=/a",
                  "--model-control-mode=explicit",
                  "--load-model=x",
                  "--load-model=y",
                  "--load-model=x",
                  "--backend-config=onnxruntime,a=1",
                  "--backend-config=python,b=2",
                  "--http-restricted-api=health:k=v",
                  "--http-restricted-api=metadata,inference:k2=v2",
                  "--grpc-restricted-protocol=model-repository:admin=secret",
                  "--grpc-restricted-protocol=statistics:s=t",
                  "--cache-config=local,size=10",
                  "--cache-config=local,x=y",
                  "--trace-config=rate=5",
                  "--trace-config=level=OFF",
                  "--host-policy=a,numa-node=0",
                  "--host-policy=b,numa-node=1",
                  "--metrics-config=summary_latencies=true",
                  "--metrics-config=histogram_latencies=true"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  // Duplicates collapse, as in Triton's sets.
  EXPECT_EQ(o->server.model_repositories, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(o->server.startup_models, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(o->server.backend_config.size(), 2u);
  EXPECT_EQ(o->http.restricted.Get(RestrictedCategory::kHealth)->key, "k");
  EXPECT_EQ(o->http.restricted.Get(RestrictedCategory::kInference)->value, "v2");
  EXPECT_FALSE(o->http.restricted.IsRestricted(RestrictedCategory::kModelRepository));
  EXPECT_EQ(o->grpc.server.restricted.Get(RestrictedCategory::kModelRepository)->key,
            "triton-grpc-protocol-admin");
  EXPECT_EQ(o->grpc.server.restricted.Get(RestrictedCategory::kStatistics)->value, "t");
  EXPECT_TRUE(o->metrics.server.config.summary_latencies);
  EXPECT_TRUE(o->metrics.server.config.histogram_latencies);
  EXPECT_EQ(o->ignored_flags.size(), 2u);  // host-policy, twice
  EXPECT_EQ(o->server.trace.rate, 5u);     // --trace-config: every occurrence applies
  EXPECT_EQ(o->server.trace.level, trace::kLevelOff);
  EXPECT_EQ(o->cache_name, "local");  // --cache-config: merged per name
  EXPECT_EQ(o->cache_settings, (std::map<std::string, std::string>{{"size", "10"}, {"x", "y"}}));
}

TEST(CommandLineTest, TraceConfigIsTheStartingTraceSetting) {
  auto o = Parse({"--model-repository=/m", "--trace-file=/old", "--trace-rate=7",
                  "--trace-config=level=timestamps", "--trace-config=level=TENSORS",
                  "--trace-config=count=3", "--trace-config=triton,file=/t.json",
                  "--trace-config=triton,log-frequency=4", "--trace-config=mode=TRITON"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  const trace::TraceConfig& t = o->server.trace;
  EXPECT_EQ(t.level, trace::kLevelTimestamps | trace::kLevelTensors);
  EXPECT_EQ(t.rate, 7u);  // the deprecated flag, not overridden
  EXPECT_EQ(t.count, 3);
  EXPECT_EQ(t.file, "/t.json");  // --trace-config overrides --trace-file
  EXPECT_EQ(t.log_frequency, 4u);
  EXPECT_EQ(t.mode, "triton");
  ASSERT_EQ(o->trace_warnings.size(), 2u);
  EXPECT_EQ(o->trace_warnings[0],
            "Warning: '--trace-file' has been deprecated and will be removed in future releases. "
            "Please use '--trace-config triton,file=<filepath>' instead.");
  EXPECT_TRUE(o->ignored_flags.empty());
  auto off =
      Parse({"--model-repository=/m", "--trace-level=TIMESTAMPS", "--trace-config=level=off"});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->server.trace.level, trace::kLevelOff);  // --trace-config replaces --trace-level
  EXPECT_EQ(Parse({"--model-repository=/m", "--trace-config=count=-2"}).status().message(),
            "Bad option: \"--trace-config count\". Unable to parse 'trace_count'. Expecting value "
            ">= -1, got:-2");
}

TEST(CommandLineTest, SingleValuedFlagsKeepTheLastOccurrence) {
  auto o = Parse({"--model-repository=/m", "--model-load-thread-count=2",
                  "--model-load-thread-count=6", "--http-port=1", "--http-port=2",
                  "--model-control-mode=poll", "--model-control-mode=none", "--id=a", "--id=b"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->server.model_load_thread_count, 6);
  EXPECT_EQ(o->http.port, 2);
  EXPECT_EQ(o->server.model_control_mode, ModelControlMode::kNone);
  EXPECT_EQ(o->server.server_id, "b");
}

TEST(CommandLineTest, TritonValidationMessages) {
  auto message = [](std::vector<const char*> args) {
    args.insert(args.begin(), "--model-repository=/m");
    auto r = Parse(args);
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  EXPECT_EQ(message({"--http-restricted-api=health:a=1", "--http-restricted-api=health:b=2"}),
            "Bad option: \"--http-restricted-api\". restricted api 'health' can not be "
            "specified in multiple config groups");
  EXPECT_EQ(message({"--http-restricted-api=X:a=1"}),
            "Bad option: \"--http-restricted-api\". unknown restricted api 'X'");
  EXPECT_EQ(message({"--grpc-restricted-protocol=X:a=1"}),
            "Bad option: \"--grpc-restricted-protocol\". unknown restricted protocol 'X'");
  EXPECT_EQ(message({"--grpc-restricted-protocol=health"}),
            "Bad option: \"--grpc-restricted-protocol\". --grpc-restricted-protocol option "
            "format is '<config name>:<setting>=<value>'. Got health");
  EXPECT_EQ(message({"--cache-config=local,size=1", "--cache-config=redis,host=h"}),
            "found multiple cache configurations, but only a single cache is currently "
            "supported");
  EXPECT_EQ(message({"--response-cache-byte-size=10", "--cache-config=local,size=1"}),
            "Error: Incompatible flags --response-cache-byte-size and --cache-config both "
            "provided. Please provide one or the other.");
  EXPECT_EQ(message({"--http-max-input-size=0"}),
            "Bad option: \"--http-max-input-size\". Error: --http-max-input-size must be "
            "greater than 0.");
  EXPECT_EQ(message({"--http-max-input-size=-4"}),
            "Bad option: \"--http-max-input-size\". Error: --http-max-input-size must be "
            "greater than 0.");
  EXPECT_EQ(message({"--model-control-mode=sometimes"}),
            "Bad option: \"--model-control-mode\". invalid argument for --model-control-mode");
  EXPECT_EQ(message({"--log-format=iso8601"}),
            "Bad option: \"--log-format\". invalid argument for --log-format");
  EXPECT_EQ(message({"--backend-config=,a=1"}),
            "Bad option: \"--backend-config\". No backend specified. --backend-config option "
            "format is <backend name>,<setting>=<value> or <setting>=<value>. Got ,a=1");
  EXPECT_EQ(message({"--grpc-port=8000"}),
            "The server cannot listen to HTTP requests and GRPC requests at the same address "
            "and port 0.0.0.0:8000");
  // Different addresses do not collide.
  EXPECT_EQ(message({"--grpc-port=8000", "--grpc-address=127.0.0.1"}), "ok");
}

TEST(CommandLineTest, BooleansAndVerbosityAsTritonReadsThem) {
  auto o = Parse({"--model-repository=/m", "--strict-readiness=OFF", "--exit-on-error=0",
                  "--allow-grpc=False", "--log-info=on", "--log-warning=1", "--log-error=TRUE",
                  "--reuse-http-port=true", "--log-verbose=true"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_FALSE(o->server.strict_readiness);
  EXPECT_FALSE(o->server.exit_on_error);
  EXPECT_FALSE(o->grpc.allow);
  EXPECT_TRUE(o->log.info && o->log.warning && o->log.error);
  EXPECT_TRUE(o->http.reuse_port);
  EXPECT_EQ(o->log.verbose_level, 1);
  auto f = Parse({"--model-repository=/m", "--log-verbose=FALSE", "--strict-model-config=on"});
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->log.verbose_level, 0);
  EXPECT_TRUE(f->server.disable_auto_complete);
  EXPECT_EQ(Parse({"--model-repository=/m", "--allow-http=yes"}).status().message(),
            "Bad option: \"--allow-http\". invalid value for bool option: yes");
  EXPECT_EQ(Parse({"--model-repository=/m", "--log-verbose=loud"}).status().message(),
            "Bad option: \"--log-verbose\". Invalid option value. Got loud");
}

TEST(CommandLineTest, Help) {
  auto o = Parse({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help_requested);
  EXPECT_NE(o->help_text.find("--model-repository"), std::string::npos);
}

}  // namespace
}  // namespace nereid
