// Command line of bench/nereid_perf: perf_analyzer's flags for the subset it implements.
#ifndef NEREID_BENCH_PERF_PERF_OPTIONS_H_
#define NEREID_BENCH_PERF_PERF_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nereid/status.h"

namespace nereid::perf {

enum class Protocol { kHttp, kGrpc };

struct PerfOptions {
  std::string model;
  std::string version;  // empty: the server's choice (every version's statistics summed)
  Protocol protocol = Protocol::kHttp;
  std::string host = "localhost";
  int port = 0;  // 0: 8000 for HTTP, 8001 for gRPC (perf_analyzer's defaults)
  int concurrency_start = 1;
  int concurrency_end = 1;
  int concurrency_step = 1;
  // --request-rate-range: requests/s per level instead of a closed loop (empty: closed loop).
  double rate_start = 0, rate_end = 0, rate_step = 0;
  int max_outstanding = 256;        // rate mode: connections / calls the paced requests use
  std::string input_data = "zero";  // zero | random | <json file>
  std::map<std::string, std::vector<int64_t>> shapes;  // --shape NAME:d1,d2
  bool binary = false;                                 // HTTP: binary tensor data in and out
  bool streaming = false;                              // gRPC: ModelStreamInfer
  int measurement_interval_ms = 5000;
  double stability_percentage = 10;
  int max_trials = 10;
  int client_threads = 1;  // HTTP: event loops sharing the connections
  int grpc_channels = 1;   // gRPC: channels the workers share round-robin
  int string_length = 16;  // BYTES elements for zero/random data
  std::string csv_file;    // -f
  bool help = false;
};

// Parses argv[1..] (without the program name). Accepts "--flag value", "--flag=value" and the
// short forms perf_analyzer has (-m -x -u -i -p -s -r -f -h).
StatusOr<PerfOptions> ParsePerfOptions(const std::vector<std::string>& args);

// The help text printed for -h / --help.
std::string PerfUsage();

}  // namespace nereid::perf

#endif  // NEREID_BENCH_PERF_PERF_OPTIONS_H_
