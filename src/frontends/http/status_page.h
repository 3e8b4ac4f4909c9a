// The built-in status page (beyond Triton; docs/adr/0013-status-page.md): one self-contained
// HTML document (inline CSS and SVG, no script, no external asset) showing the server, every
// model version with its state, instances, queue depth, request counts, a batch-size histogram
// and queue-time percentiles, and the recent load failures. It reloads itself with a meta
// refresh.
//
// RenderStatusPage is a pure function of StatusPageData (status_page_data.h fills it from the
// facade), so tests need no server. Every text that comes from outside the binary (model names,
// reasons, server id) is HTML-escaped.
//
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nereid {

struct StatusPageVersion {
  int64_t version = -1;  // -1: a model-level state (no version)
  std::string state;     // READY, UNAVAILABLE, LOADING, UNLOADING; empty: never loaded
  std::string reason;
  bool has_stats = false;  // a READY version: the fields below are set
  int64_t instances = 0;   // instance_group counts summed
  int64_t queue_depth = 0;
  uint64_t success = 0;
  uint64_t fail = 0;
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  std::vector<std::pair<uint64_t, uint64_t>> batch_histogram;  // (batch size, executions)
  uint64_t queued_requests = 0;                                // requests behind the percentiles
  double queue_p50_us = 0, queue_p90_us = 0, queue_p99_us = 0;
};

struct StatusPageModel {
  std::string name;
  std::vector<StatusPageVersion> versions;
};

struct StatusPageLoadError {
  std::string model;
  std::chrono::system_clock::time_point time;
  std::string reason;
};

struct StatusPageData {
  std::string server_id;
  std::string server_version;
  std::chrono::seconds uptime{0};
  std::chrono::system_clock::time_point now;
  int refresh_secs = 5;
  std::vector<StatusPageModel> models;
  std::vector<StatusPageLoadError> load_errors;  // oldest first; shown newest first
};

// &, <, >, " and ' as character references; everything else (UTF-8 included) as is.
std::string HtmlEscape(std::string_view text);

// "3d 4h 5m 6s", leading zero units left out ("0s" for zero).
std::string FormatUptime(std::chrono::seconds uptime);

// UTC, "2026-11-26T01:02:03Z".
std::string FormatUtc(std::chrono::system_clock::time_point time);

// Bars of executions per batch size; an SVG saying "no executions" when `histogram` is empty.
std::string BatchHistogramSvg(const std::vector<std::pair<uint64_t, uint64_t>>& histogram);

// Three horizontal bars: queue-time p50, p90 and p99 in microseconds of `requests` requests; an
// SVG saying "no requests" when `requests` is 0.
std::string QueuePercentilesSvg(uint64_t requests, double p50_us, double p90_us, double p99_us);

std::string RenderStatusPage(const StatusPageData& data);

}  // namespace nereid
