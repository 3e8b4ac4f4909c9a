#include "perf_report.h"

#include <cmath>
#include <cstdio>

namespace nereid::perf {
namespace {

std::string Fmt(const char* format, double a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, a);
  return buf;
}

std::string U(double us) { return std::to_string(static_cast<uint64_t>(std::llround(us))); }

}  // namespace

LevelResult Summarize(int concurrency, double rate, bool stable, WindowResult merged) {
  LevelResult r;
  r.concurrency = concurrency;
  r.rate = rate;
  r.stable = stable;
  r.p50_us = Percentile(merged.latencies_ns, 50) / 1000;
  r.p90_us = Percentile(merged.latencies_ns, 90) / 1000;
  r.p95_us = Percentile(merged.latencies_ns, 95) / 1000;
  r.p99_us = Percentile(merged.latencies_ns, 99) / 1000;
  r.merged = std::move(merged);
  return r;
}

std::string SettingsText(const PerfOptions& o) {
  std::string s = "*** Measurement Settings ***\n  Batch size: 1\n";
  s += "  Service Kind: KServe v2 over ";
  if (o.protocol == Protocol::kHttp) {
    s += o.binary ? "HTTP (binary tensor data)\n" : "HTTP (JSON tensor data)\n";
  } else {
    s += o.streaming ? "gRPC (ModelStreamInfer)\n" : "gRPC (ModelInfer)\n";
  }
  s += "  Using \"time_windows\" mode for stabilization\n";
  if (o.rate_start > 0) {
    s += "  Paced requests, at most " + std::to_string(o.max_outstanding) + " outstanding\n";
  }
  s += "  Measurement window: " + std::to_string(o.measurement_interval_ms) + " msec\n";
  s += o.protocol == Protocol::kGrpc && !o.streaming ? "  Using asynchronous calls for inference\n"
                                                     : "  Using synchronous calls for inference\n";
  s += "  Stabilizing using average latency and throughput\n\n";
  return s;
}

std::string LevelText(const LevelResult& r, const PerfOptions& o) {
  const WindowResult& w = r.merged;
  const ServerStats& sv = w.server;
  std::string s = r.rate > 0
                      ? "Request Rate: " + Fmt("%g", r.rate) + " inference requests per seconds\n"
                      : "Request concurrency: " + std::to_string(r.concurrency) + "\n";
  if (!r.stable)
    s += "  Failed to obtain stable measurement within " + std::to_string(o.max_trials) +
         " measurement windows\n";
  s += "  Client: \n";
  s += "    Request count: " + std::to_string(w.ok) + "\n";
  s += "    Throughput: " + Fmt("%.2f", w.Throughput()) + " infer/sec\n";
  s += "    p50 latency: " + std::to_string(r.p50_us) + " usec\n";
  s += "    p90 latency: " + std::to_string(r.p90_us) + " usec\n";
  s += "    p95 latency: " + std::to_string(r.p95_us) + " usec\n";
  s += "    p99 latency: " + std::to_string(r.p99_us) + " usec\n";
  s += std::string("    Avg ") + (o.protocol == Protocol::kHttp ? "HTTP" : "gRPC") +
       " time: " + U(w.AvgLatencyUs()) + " usec\n";
  s += "    Errors: " + std::to_string(w.errors) + "\n";
  double request = PhaseAvgUs(sv.success);
  double queue = PhaseAvgUs(sv.queue), in = PhaseAvgUs(sv.compute_input),
         infer = PhaseAvgUs(sv.compute_infer), out = PhaseAvgUs(sv.compute_output);
  double overhead = std::max(0.0, request - queue - in - infer - out);
  s += "  Server: \n";
  s += "    Inference count: " + std::to_string(sv.inference_count) + "\n";
  s += "    Execution count: " + std::to_string(sv.execution_count) + "\n";
  s += "    Successful request count: " + std::to_string(sv.success.count) + "\n";
  s += "    Avg request latency: " + U(request) + " usec (overhead " + U(overhead) +
       " usec + queue " + U(queue) + " usec + compute input " + U(in) + " usec + compute infer " +
       U(infer) + " usec + compute output " + U(out) + " usec)\n\n";
  return s;
}

std::string SummaryText(const std::vector<LevelResult>& levels) {
  std::string s = "Inferences/Second vs. Client Average Batch Latency\n";
  for (const LevelResult& r : levels) {
    s += (r.rate > 0 ? "Request Rate: " + Fmt("%g", r.rate)
                     : "Concurrency: " + std::to_string(r.concurrency)) +
         ", throughput: " + Fmt("%.2f", r.merged.Throughput()) + " infer/sec, latency " +
         U(r.merged.AvgLatencyUs()) + " usec\n";
  }
  return s;
}

std::string CsvText(const std::vector<LevelResult>& levels) {
  const bool rate = !levels.empty() && levels[0].rate > 0;
  std::string s = std::string(rate ? "Request Rate" : "Concurrency") +
                  ",Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
                  "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
                  "p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,Errors\n";
  for (const LevelResult& r : levels) {
    const ServerStats& sv = r.merged.server;
    double queue = PhaseAvgUs(sv.queue), in = PhaseAvgUs(sv.compute_input),
           infer = PhaseAvgUs(sv.compute_infer), out = PhaseAvgUs(sv.compute_output);
    // Client send/recv are not split out (the request bytes are prebuilt): 0, and the network
    // column is the client's average minus the server's phases, as perf_analyzer derives it.
    double network = std::max(0.0, r.merged.AvgLatencyUs() - queue - in - infer - out);
    s += (rate ? Fmt("%g", r.rate) : std::to_string(r.concurrency)) + "," +
         Fmt("%.2f", r.merged.Throughput()) + ",0," + U(network) + "," + U(queue) + "," + U(in) +
         "," + U(infer) + "," + U(out) + ",0," + std::to_string(r.p50_us) + "," +
         std::to_string(r.p90_us) + "," + std::to_string(r.p95_us) + "," +
         std::to_string(r.p99_us) + "," + U(r.merged.AvgLatencyUs()) + "," +
         std::to_string(r.merged.errors) + "\n";
  }
  return s;
}

}  // namespace nereid::perf
