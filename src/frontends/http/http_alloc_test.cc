// Heap allocations per steady-state HTTP inference request, counted (issue 21): this binary
// replaces malloc/calloc/realloc/free (forwarding to glibc's __libc_* entry points, so every
// allocation of the process is seen: operator new, Boost, RapidJSON, the backend) and drives
// real requests through the real server (StartTritonHttpServer with the identity backend on
// 127.0.0.1, default two I/O threads, so inline execution) from a client that allocates nothing.
// The budget below is what the code needs today: a change that adds an allocation per request
// fails here. Lower the budget when you remove some.
//
// NEREID_ALLOC_TRACE=1 prints a backtrace of each allocation of one request (the breakdown to
// work from: `... | c++filt`).
#include <execinfo.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/counting_malloc.h"
#include "core/config/test_temp_dir.h"
#include "core/server/inference_server.h"
#include "frontends/http/handlers.h"
#include "frontends/http/http_test_client.h"

namespace {

using nereid::counting_malloc::allocation_counters;

// Tracing: one request's allocation sites, captured without allocating.
constexpr int kTraceDepth = 14;
constexpr int kMaxTraced = 256;
struct Trace {
  int depth = 0;
  size_t size = 0;
  std::array<void*, kTraceDepth> frames;
};
std::atomic<bool> g_tracing{false};
std::atomic<int> g_traced{0};
Trace g_traces[kMaxTraced];
thread_local bool t_in_hook = false;

// counting_malloc.h's hook: records the allocation's call stack while tracing.
void TraceAllocation(size_t size) {
  if (!g_tracing.load(std::memory_order_relaxed) || t_in_hook) return;
  const int i = g_traced.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxTraced) return;
  t_in_hook = true;
  g_traces[i].size = size;
  g_traces[i].depth = backtrace(g_traces[i].frames.data(), kTraceDepth);
  t_in_hook = false;
}

}  // namespace

namespace nereid {
namespace {

// Allocations per request on a kept-alive connection, identity model, JSON in and out, measured
// 2026-11-26 (release build; bench/README.md says where they come from). The fewest over the run
// is the path where the model runs inline on the I/O thread and the reply is written from there:
// exact, it moves only when the code does. The median also covers requests whose reply is posted
// between threads (which of the two a request takes depends on scheduling; medians of 36-37 and
// maxima of 39-40 were seen on a loaded machine before the httpcpu branch, 23 median and 22 fewest
// after it, whose cross-thread replies take 2 more than inline ones), hence its slack. The reqobj
// branch (one completion object per request, the JSON reply buffer reused, inputs described
// inline) took it to 14 fewest, 15 median.
constexpr uint64_t kBudgetFewest = 14;
constexpr uint64_t kBudgetMedian = 20;

constexpr char kConfig[] = R"(name: "identity_fp32" backend: "identity" max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]
instance_group [{ count: 1 kind: KIND_CPU }])";

// bench/http_bench.py's identity request.
constexpr char kBody[] =
    R"({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": [0.0, 1.0, )"
    R"(2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]}]})";

// One kept-alive connection; Roundtrip allocates nothing.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = testing_http::ConnectLoopback(port, &connected_);
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~RawClient() { close(fd_); }
  bool connected() const { return connected_; }

  // Sends `request`, reads one whole response; returns its status (0 on a failure).
  int Roundtrip(const std::string& request) { return Send(request) ? Receive() : 0; }

  bool Send(const std::string& request) {
    return send(fd_, request.data(), request.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(request.size());
  }

  // Reads one whole response; returns its status (0 on a failure).
  int Receive() {
    size_t have = 0;
    size_t head_end = 0;
    size_t total = 0;
    for (;;) {
      const ssize_t n = recv(fd_, buf_.data() + have, buf_.size() - have, 0);
      if (n <= 0) return 0;
      have += static_cast<size_t>(n);
      if (head_end == 0) {
        const char* end = static_cast<const char*>(memmem(buf_.data(), have, "\r\n\r\n", 4));
        if (end == nullptr) continue;
        head_end = static_cast<size_t>(end - buf_.data()) + 4;
        const char* cl = static_cast<const char*>(
            memmem(buf_.data(), head_end, "\r\nContent-Length: ", 18));  // Nereid's spelling
        if (cl == nullptr) return 0;
        total = head_end + strtoul(cl + 18, nullptr, 10);
      }
      if (have >= total) break;
    }
    if (have != total || have < 12) return 0;  // nothing pipelined: exactly one response
    last_body_ = std::string_view(buf_.data() + head_end, total - head_end);
    return atoi(buf_.data() + 9);  // "HTTP/1.1 200"
  }
  std::string_view last_body() const { return last_body_; }  // valid until the next call

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::array<char, 65536> buf_{};
  std::string_view last_body_;
};

struct Counts {
  uint64_t allocs, bytes, frees;
};
Counts Now() {
  return {allocation_counters.allocs.load(), allocation_counters.bytes.load(),
          allocation_counters.frees.load()};
}

// With NEREID_ALLOC_TRACE=1, prints a backtrace of every allocation `run` makes.
template <typename Run>
void TraceAllocations(Run run) {
  const char* trace = std::getenv("NEREID_ALLOC_TRACE");
  if (trace == nullptr || *trace != '1') return;
  void* warm[2];
  backtrace(warm, 2);  // loads the unwinder before tracing
  g_traced = 0;
  g_tracing = true;
  run();
  g_tracing = false;
  const int n = std::min(g_traced.load(), kMaxTraced);
  for (int i = 0; i < n; ++i) {
    std::fprintf(stderr, "--- allocation %d: %zu bytes\n", i + 1, g_traces[i].size);
    backtrace_symbols_fd(g_traces[i].frames.data() + 2, g_traces[i].depth - 2, 2);
  }
}

// A server with the one model `name` (identity backend) in `dir`, its HTTP frontend on an
// ephemeral port with two I/O threads (the default on this 2-core machine, ADR 0009).
struct Served {
  std::unique_ptr<InferenceServer> server;
  std::unique_ptr<HttpServer> http;
};
void Serve(config::testing::TempDir& dir, const std::string& name, const char* config,
           Served* out) {
  dir.WriteFile(name + "/config.pbtxt", config);
  dir.MakeDir(name + "/1");
  ServerOptions options;
  options.model_repositories = {dir.path().string()};
  options.backend_directory = NEREID_TEST_BACKEND_DIR;
  options.model_control_mode = ModelControlMode::kExplicit;
  options.startup_models = {name};
  auto server = InferenceServer::Create(options);
  ASSERT_TRUE(server.ok()) << server.status().message();
  out->server = std::move(*server);
  HttpServerOptions http_options;
  http_options.address = "127.0.0.1";
  http_options.port = 0;
  http_options.thread_count = 2;
  auto http = StartTritonHttpServer(http_options, out->server.get());
  ASSERT_TRUE(http.ok()) << http.status().message();
  out->http = std::move(*http);
}

TEST(HttpAllocTest, SteadyStateInferRequestStaysWithinItsAllocationBudget) {
  if (!counting_malloc::kCountingAllocations)
    GTEST_SKIP() << "sanitizers replace malloc themselves";
  allocation_counters.on_allocation = &TraceAllocation;
  config::testing::TempDir dir;
  Served served;
  ASSERT_NO_FATAL_FAILURE(Serve(dir, "identity_fp32", kConfig, &served));
  auto& http = served.http;

  RawClient client(http->port());
  ASSERT_TRUE(client.connected());
  const std::string request = std::string("POST /v2/models/identity_fp32/infer HTTP/1.1\r\n") +
                              "Host: localhost\r\nContent-Type: application/json\r\n" +
                              "Content-Length: " + std::to_string(strlen(kBody)) + "\r\n\r\n" +
                              kBody;
  for (int i = 0; i < 200; ++i) ASSERT_EQ(client.Roundtrip(request), 200) << i;  // warm up
  EXPECT_NE(client.last_body().find(R"("name":"OUTPUT0")"), std::string::npos)
      << client.last_body();

  // Per request, the median of many (a rare allocation elsewhere, e.g. a timer or a pool
  // growing, does not move it); the sum for the breakdown. Which I/O thread runs which part of a
  // request is up to the scheduler, and a reply that crosses threads takes blocks from another
  // thread's cache (up to 6 more allocations): on a busy machine a whole batch can miss the
  // inline path. So up to 5 batches are measured and the best one is judged; a real regression
  // raises every batch.
  struct Batch {
    uint64_t fewest, median, bytes_median;
    double mean, frees_mean;
  };
  auto measure = [&client, &request]() -> Batch {
    constexpr int kRequests = 401;
    std::vector<uint64_t> per_request(kRequests);
    std::vector<uint64_t> bytes(kRequests);
    const Counts start = Now();
    for (int i = 0; i < kRequests; ++i) {
      const Counts before = Now();
      EXPECT_EQ(client.Roundtrip(request), 200);
      const Counts after = Now();
      per_request[i] = after.allocs - before.allocs;
      bytes[i] = after.bytes - before.bytes;
    }
    const Counts end = Now();
    std::sort(per_request.begin(), per_request.end());
    std::sort(bytes.begin(), bytes.end());
    return {per_request.front(), per_request[kRequests / 2], bytes[kRequests / 2],
            static_cast<double>(end.allocs - start.allocs) / kRequests,
            static_cast<double>(end.frees - start.frees) / kRequests};
  };
  Batch best{UINT64_MAX, UINT64_MAX, 0, 0, 0};
  for (int attempt = 0; attempt < 5; ++attempt) {
    const Batch b = measure();
    std::printf(
        "allocations per request: median %llu (fewest %llu), mean %.2f; bytes median %llu; "
        "frees mean %.2f; budget: fewest %llu, median %llu\n",
        static_cast<unsigned long long>(b.median), static_cast<unsigned long long>(b.fewest),
        b.mean, static_cast<unsigned long long>(b.bytes_median), b.frees_mean,
        static_cast<unsigned long long>(kBudgetFewest),
        static_cast<unsigned long long>(kBudgetMedian));
    best.fewest = std::min(best.fewest, b.fewest);
    best.median = std::min(best.median, b.median);
    if (best.fewest <= kBudgetFewest && best.median <= kBudgetMedian) break;
  }

  TraceAllocations([&] { EXPECT_EQ(client.Roundtrip(request), 200); });

  EXPECT_LE(best.fewest, kBudgetFewest)
      << "a request allocates more than it did; NEREID_ALLOC_TRACE=1 shows where";
  EXPECT_LE(best.median, kBudgetMedian)
      << "a request allocates more than it did; NEREID_ALLOC_TRACE=1 shows where";
  http->Stop(std::chrono::milliseconds(1000));
}

// Allocations per request of a batch the dynamic batcher forms (issue 21 goal 3): four kept-alive
// connections each send one binary-tensor request (as bench/batch_bench.py does), the batcher
// runs them as one batch of four (max_batch_size 4 reached; the queue delay is far longer than a
// round) on its executor thread and the replies cross back to the I/O threads. Measured
// 2026-11-26 (branch batcher): 45 before, 37 median after (the split's list of output names, the
// encoder's list of binary outputs, a shared owner and a second owner slot per binary reply, the
// header list grown twice, the shape key's sort list, the queue rebuilt per batch). The budget
// is what the code needs today plus one; lower it when you remove some.
constexpr uint64_t kBatchedBudget = 38;
constexpr int kBatch = 4;

constexpr char kBatchedConfig[] = R"(name: "identity_batched" backend: "identity" max_batch_size: 4
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }]
instance_group [{ count: 1 kind: KIND_CPU }]
dynamic_batching { max_queue_delay_microseconds: 10000000 })";

constexpr char kBinaryHeader[] =
    R"({"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,16],)"
    R"("parameters":{"binary_data_size":64}}],)"
    R"("outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]})";

TEST(HttpAllocTest, BatchedInferRequestStaysWithinItsAllocationBudget) {
  if (!counting_malloc::kCountingAllocations)
    GTEST_SKIP() << "sanitizers replace malloc themselves";
  allocation_counters.on_allocation = &TraceAllocation;
  config::testing::TempDir dir;
  Served served;
  ASSERT_NO_FATAL_FAILURE(Serve(dir, "identity_batched", kBatchedConfig, &served));
  auto& http = served.http;

  std::string data(64, '\0');
  for (int i = 0; i < 16; ++i) {
    const float v = static_cast<float>(i) + 0.5f;
    std::memcpy(data.data() + 4 * i, &v, 4);
  }
  const std::string header = kBinaryHeader;
  const std::string request =
      std::string("POST /v2/models/identity_batched/infer HTTP/1.1\r\n") +
      "Host: localhost\r\nContent-Type: application/octet-stream\r\n" +
      "Inference-Header-Content-Length: " + std::to_string(header.size()) + "\r\n" +
      "Content-Length: " + std::to_string(header.size() + data.size()) + "\r\n\r\n" + header + data;
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kBatch; ++i) {
    clients.push_back(std::make_unique<RawClient>(http->port()));
    ASSERT_TRUE(clients.back()->connected());
  }
  auto round = [&clients, &request] {
    for (auto& c : clients) EXPECT_TRUE(c->Send(request));
    for (auto& c : clients) EXPECT_EQ(c->Receive(), 200);
  };
  for (int i = 0; i < 100; ++i) round();  // warm up
  // The reply's binary part is the request's tensor: the batch was split back right.
  const std::string_view body = clients.front()->last_body();
  ASSERT_GE(body.size(), data.size());
  EXPECT_EQ(body.substr(body.size() - data.size()), data);

  std::vector<uint64_t> per_request;
  constexpr int kRounds = 101;
  for (int i = 0; i < kRounds; ++i) {
    const Counts before = Now();
    round();
    per_request.push_back((Now().allocs - before.allocs) / kBatch);
  }
  std::sort(per_request.begin(), per_request.end());
  const uint64_t median = per_request[kRounds / 2];
  std::printf("allocations per batched request: median %llu (fewest %llu); budget %llu\n",
              static_cast<unsigned long long>(median),
              static_cast<unsigned long long>(per_request.front()),
              static_cast<unsigned long long>(kBatchedBudget));
  TraceAllocations(round);
  EXPECT_LE(median, kBatchedBudget)
      << "a batched request allocates more than it did; NEREID_ALLOC_TRACE=1 shows where";
  http->Stop(std::chrono::milliseconds(1000));
}

}  // namespace
}  // namespace nereid
