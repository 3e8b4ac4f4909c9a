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
#include <string>
#include <string_view>
#include <vector>

#include "core/config/test_temp_dir.h"
#include "core/server/inference_server.h"
#include "frontends/http/handlers.h"
#include "frontends/http/http_test_client.h"

// The tsan preset undefines __SANITIZE_THREAD__ (CMakeLists.txt) and defines NEREID_TSAN instead.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(NEREID_TSAN)
#define NEREID_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define NEREID_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef NEREID_COUNT_ALLOCATIONS
#define NEREID_COUNT_ALLOCATIONS 1
#endif

namespace {

std::atomic<uint64_t> g_allocs{0};  // malloc + calloc + realloc(nullptr or growing)
std::atomic<uint64_t> g_bytes{0};
std::atomic<uint64_t> g_frees{0};

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

[[maybe_unused]] void Record(size_t size) {  // unused under sanitizers
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(size, std::memory_order_relaxed);
  if (!g_tracing.load(std::memory_order_relaxed) || t_in_hook) return;
  const int i = g_traced.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxTraced) return;
  t_in_hook = true;
  g_traces[i].size = size;
  g_traces[i].depth = backtrace(g_traces[i].frames.data(), kTraceDepth);
  t_in_hook = false;
}

}  // namespace

#if NEREID_COUNT_ALLOCATIONS
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);

void* malloc(size_t size) {
  Record(size);
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  Record(n * size);
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  Record(size);
  return __libc_realloc(p, size);
}
void free(void* p) {
  if (p != nullptr) g_frees.fetch_add(1, std::memory_order_relaxed);
  __libc_free(p);
}
}
#endif

namespace nereid {
namespace {

// Allocations per request on a kept-alive connection, identity model, JSON in and out, measured
// 2026-11-26 (release build; bench/README.md says where they come from). The fewest over the run
// is the path where the model runs inline on the I/O thread and the reply is written from there:
// exact, it moves only when the code does. The median also covers requests whose reply is posted
// between threads (which of the two a request takes depends on scheduling; medians of 36-37 and
// maxima of 39-40 were seen on a loaded machine), hence its slack.
constexpr uint64_t kBudgetFewest = 34;
constexpr uint64_t kBudgetMedian = 40;

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
  int Roundtrip(const std::string& request) {
    if (send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      return 0;
    }
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
            memmem(buf_.data(), head_end, "Content-Length: ", 16));  // Nereid's spelling
        if (cl == nullptr) return 0;
        total = head_end + strtoul(cl + 16, nullptr, 10);
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
Counts Now() { return {g_allocs.load(), g_bytes.load(), g_frees.load()}; }

TEST(HttpAllocTest, SteadyStateInferRequestStaysWithinItsAllocationBudget) {
  if (!NEREID_COUNT_ALLOCATIONS) GTEST_SKIP() << "sanitizers replace malloc themselves";
  config::testing::TempDir dir;
  dir.WriteFile("identity_fp32/config.pbtxt", kConfig);
  dir.MakeDir("identity_fp32/1");
  ServerOptions options;
  options.model_repositories = {dir.path().string()};
  options.backend_directory = NEREID_TEST_BACKEND_DIR;
  options.model_control_mode = ModelControlMode::kExplicit;
  options.startup_models = {"identity_fp32"};
  auto server = InferenceServer::Create(options);
  ASSERT_TRUE(server.ok()) << server.status().message();
  HttpServerOptions http_options;
  http_options.address = "127.0.0.1";
  http_options.port = 0;
  http_options.thread_count = 2;  // the default on this 2-core machine (ADR 0009)
  auto http = StartTritonHttpServer(http_options, server->get());
  ASSERT_TRUE(http.ok()) << http.status().message();

  RawClient client((*http)->port());
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

  if (const char* trace = std::getenv("NEREID_ALLOC_TRACE"); trace != nullptr && *trace == '1') {
    void* warm[2];
    backtrace(warm, 2);  // loads the unwinder before tracing
    g_traced = 0;
    g_tracing = true;
    ASSERT_EQ(client.Roundtrip(request), 200);
    g_tracing = false;
    const int n = std::min(g_traced.load(), kMaxTraced);
    for (int i = 0; i < n; ++i) {
      std::fprintf(stderr, "--- allocation %d: %zu bytes\n", i + 1, g_traces[i].size);
      backtrace_symbols_fd(g_traces[i].frames.data() + 2, g_traces[i].depth - 2, 2);
    }
  }

  EXPECT_LE(best.fewest, kBudgetFewest)
      << "a request allocates more than it did; NEREID_ALLOC_TRACE=1 shows where";
  EXPECT_LE(best.median, kBudgetMedian)
      << "a request allocates more than it did; NEREID_ALLOC_TRACE=1 shows where";
  (*http)->Stop(std::chrono::milliseconds(1000));
}

}  // namespace
}  // namespace nereid
