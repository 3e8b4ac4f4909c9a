// nereid_perf: drives a KServe v2 server (Nereid, Triton) the way perf_analyzer does and prints
// its report. Only the model's metadata and the statistics extension are used. bench/README.md.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "perf_grpc.h"
#include "perf_http.h"
#include "perf_json.h"
#include "perf_options.h"
#include "perf_report.h"
#include "perf_request.h"

namespace nereid::perf {
namespace {

// Metadata and statistics over the protocol under test.
class Server {
 public:
  explicit Server(const PerfOptions& o) : o_(o) {
    if (o.protocol == Protocol::kGrpc) {
      grpc_ = std::make_unique<GrpcClient>(o.host + ":" + std::to_string(o.port), o.grpc_channels);
    }
  }
  StatusOr<ModelMetadata> Metadata() {
    if (grpc_) return grpc_->Metadata(o_.model, o_.version);
    NEREID_ASSIGN_OR_RETURN(HttpReply r,
                            HttpGet(o_.host, o_.port, ModelPath(o_.model, o_.version)));
    if (r.status != 200) {
      return Unavailable("model metadata: HTTP " + std::to_string(r.status) + ": " + r.body);
    }
    return ParseMetadataJson(r.body);
  }
  StatusOr<ServerStats> Stats() {
    if (grpc_) return grpc_->Stats(o_.model, o_.version);
    NEREID_ASSIGN_OR_RETURN(HttpReply r,
                            HttpGet(o_.host, o_.port, ModelPath(o_.model, o_.version) + "/stats"));
    if (r.status != 200) {
      return Unavailable("statistics: HTTP " + std::to_string(r.status) + ": " + r.body);
    }
    return ParseStatsJson(r.body);
  }
  const GrpcClient* grpc() const { return grpc_.get(); }

 private:
  const PerfOptions& o_;
  std::unique_ptr<GrpcClient> grpc_;
};

StatusOr<std::unique_ptr<LoadDriver>> MakeDriver(const PerfOptions& o, Server& server) {
  NEREID_ASSIGN_OR_RETURN(ModelMetadata md, server.Metadata());
  std::map<std::string, FileInput> file;
  bool from_file = o.input_data != "zero" && o.input_data != "random";
  if (from_file) {
    std::ifstream in(o.input_data);
    if (!in) return InvalidArgument("cannot read --input-data file '" + o.input_data + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    NEREID_ASSIGN_OR_RETURN(file, ParseInputDataJson(ss.str()));
  }
  NEREID_ASSIGN_OR_RETURN(auto inputs, MakeInputs(md, o, from_file ? &file : nullptr));
  if (o.protocol == Protocol::kGrpc) {
    return std::unique_ptr<LoadDriver>(
        new GrpcDriver(server.grpc(), o.model, o.version, inputs, o.streaming, o.client_threads));
  }
  size_t header_length = 0;
  NEREID_ASSIGN_OR_RETURN(std::string body, HttpInferBody(inputs, o.binary, &header_length));
  return std::unique_ptr<LoadDriver>(new HttpDriver(
      o.host, o.port, HttpInferRequest(o.host, ModelPath(o.model, o.version), body, header_length),
      o.client_threads));
}

struct Totals {
  uint64_t ok = 0, errors = 0;
};

// Runs one level (a closed loop of `concurrency`, or `rate` requests/s when above 0) until three
// windows are stable or max_trials windows passed.
StatusOr<LevelResult> MeasureLevel(int concurrency, double rate, const PerfOptions& o,
                                   LoadDriver& driver, Server& server, Totals& totals) {
  Recorder recorder;
  std::vector<uint64_t> lat;
  uint64_t errors = 0;
  std::vector<WindowResult> windows;
  driver.Start(concurrency, rate, &recorder);
  Status status;
  bool stable = false;
  for (int trial = 0; trial < o.max_trials && !stable; ++trial) {
    auto before = server.Stats();
    if (!before.ok()) {
      status = before.status();
      break;
    }
    recorder.Take(&lat, &errors);  // completed between windows: counted, not measured
    totals.ok += lat.size();
    totals.errors += errors;
    uint64_t start = NowNs();
    std::this_thread::sleep_for(std::chrono::milliseconds(o.measurement_interval_ms));
    // Snapshot, then take the client's records: both edges of the window trail their snapshot
    // by the same statistics round trip, so the server's diff and the client's count line up.
    auto after = server.Stats();
    WindowResult w;
    recorder.Take(&w.latencies_ns, &w.errors);
    w.seconds = static_cast<double>(NowNs() - start) / 1e9;
    w.ok = w.latencies_ns.size();
    totals.ok += w.ok;
    totals.errors += w.errors;
    if (!after.ok()) {
      status = after.status();
      break;
    }
    w.server = DiffStats(*after, *before);
    windows.push_back(std::move(w));
    stable = IsStable(windows, o.stability_percentage);
  }
  driver.Stop();
  recorder.Take(&lat, &errors);
  totals.ok += lat.size();
  totals.errors += errors;
  NEREID_RETURN_IF_ERROR(status);
  return Summarize(concurrency, rate, stable, MergeLast(windows, 3));
}

int Run(const std::vector<std::string>& args) {
  auto parsed = ParsePerfOptions(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "error: %s\n%s", parsed.status().message().c_str(), PerfUsage().c_str());
    return 1;
  }
  const PerfOptions& o = *parsed;
  if (o.help) {
    std::printf("%s", PerfUsage().c_str());
    return 0;
  }
  Server server(o);
  auto driver = MakeDriver(o, server);
  if (!driver.ok()) {
    std::fprintf(stderr, "error: %s\n", driver.status().message().c_str());
    return 1;
  }
  auto start_stats = server.Stats();
  if (!start_stats.ok()) {
    std::fprintf(stderr, "error: %s\n", start_stats.status().message().c_str());
    return 1;
  }
  std::printf("%s", SettingsText(o).c_str());
  std::fflush(stdout);
  std::vector<LevelResult> levels;
  Totals totals;
  std::vector<std::pair<int, double>> plan;  // (concurrency, rate) per level
  if (o.rate_start > 0) {
    for (double r = o.rate_start; r <= o.rate_end * (1 + 1e-9); r += o.rate_step) {
      plan.emplace_back(o.max_outstanding, r);
    }
  } else {
    for (int c = o.concurrency_start; c <= o.concurrency_end; c += o.concurrency_step) {
      plan.emplace_back(c, 0.0);
    }
  }
  for (auto [c, rate] : plan) {
    auto level = MeasureLevel(c, rate, o, **driver, server, totals);
    if (!level.ok()) {
      std::fprintf(stderr, "error: %s\n", level.status().message().c_str());
      return 1;
    }
    std::printf("%s", LevelText(*level, o).c_str());
    std::fflush(stdout);
    levels.push_back(std::move(*level));
  }
  std::printf("%s", SummaryText(levels).c_str());
  auto end_stats = server.Stats();
  if (end_stats.ok()) {
    ServerStats run = DiffStats(*end_stats, *start_stats);
    std::printf(
        "Run totals: client %llu successful, %llu errors; server %llu successful, "
        "%llu failed\n",
        static_cast<unsigned long long>(totals.ok), static_cast<unsigned long long>(totals.errors),
        static_cast<unsigned long long>(run.success.count),
        static_cast<unsigned long long>(run.fail.count));
  }
  if (!o.csv_file.empty()) {
    std::ofstream csv(o.csv_file);
    csv << CsvText(levels);
    if (!csv) {
      std::fprintf(stderr, "error: cannot write %s\n", o.csv_file.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace nereid::perf

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return nereid::perf::Run(args);
}
