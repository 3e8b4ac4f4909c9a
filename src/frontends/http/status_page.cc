#include "frontends/http/status_page.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace nereid {
namespace {

// The page's whole style: no external asset, no script.
constexpr std::string_view kStyle =
    "body{font-family:system-ui,sans-serif;margin:1em;color:#222;background:#fff}"
    "h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.15em;margin:1.2em 0 .4em}"
    "table{border-collapse:collapse;width:100%}"
    "th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}"
    "th{background:#eef}.READY{color:#060;font-weight:bold}"
    ".UNAVAILABLE{color:#a00;font-weight:bold}.LOADING,.UNLOADING{color:#a60;font-weight:bold}"
    ".reason{font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere;"
    "min-width:12em;max-width:28em}"
    "td.charts svg{display:block;margin-bottom:.3em}"
    "td.time,td.state{white-space:nowrap}"
    "svg text{font:10px sans-serif}.meta{color:#555}";

std::string Printf(const char* format, double value) {
  std::array<char, 64> buf;
  const int n = std::snprintf(buf.data(), buf.size(), format, value);
  return std::string(buf.data(), static_cast<size_t>(std::max(0, n)));
}

std::string FormatUs(double us) {
  if (us >= 1e6) return Printf("%.2f s", us / 1e6);
  if (us >= 1e3) return Printf("%.2f ms", us / 1e3);
  return Printf("%.1f \xC2\xB5s", us);  // µs
}

void AppendVersionRow(const StatusPageModel& model, const StatusPageVersion& v, std::string* out) {
  const std::string state = v.state.empty() ? "NOT LOADED" : v.state;
  *out += "<tr class=\"version\"><td class=\"model\">" + HtmlEscape(model.name) + "</td><td>" +
          (v.version < 0 ? std::string("&#8212;") : std::to_string(v.version)) +
          "</td><td class=\"state " + HtmlEscape(v.state) + "\">" + HtmlEscape(state) +
          "</td><td class=\"reason\">" + HtmlEscape(v.reason) + "</td>";
  if (!v.has_stats) {
    *out += "<td colspan=\"6\"></td></tr>\n";
    return;
  }
  *out += "<td class=\"instances\">" + std::to_string(v.instances) + "</td><td class=\"queue\">" +
          std::to_string(v.queue_depth) + "</td><td class=\"success\">" +
          std::to_string(v.success) + "</td><td class=\"fail\">" + std::to_string(v.fail) +
          "</td><td class=\"inferences\">" + std::to_string(v.inference_count) + " / " +
          std::to_string(v.execution_count) + "</td><td class=\"charts\">" +
          BatchHistogramSvg(v.batch_histogram) +
          QueuePercentilesSvg(v.queued_requests, v.queue_p50_us, v.queue_p90_us, v.queue_p99_us) +
          "</td></tr>\n";
}

void AppendModels(const StatusPageData& data, std::string* out) {
  *out += "<h2>Models</h2>\n";
  if (data.models.empty()) {
    *out += "<p id=\"no-models\">No model in the repository.</p>\n";
    return;
  }
  *out +=
      "<table id=\"models\"><thead><tr><th>Model</th><th>Version</th><th>State</th>"
      "<th>Reason</th><th>Instances</th><th>Queued</th><th>Success</th><th>Failure</th>"
      "<th>Infer / exec</th><th>Batch sizes / queue time</th></tr></thead>"
      "<tbody>\n";
  for (const StatusPageModel& model : data.models) {
    if (model.versions.empty()) {
      AppendVersionRow(model, StatusPageVersion{}, out);
      continue;
    }
    for (const StatusPageVersion& v : model.versions) AppendVersionRow(model, v, out);
  }
  *out += "</tbody></table>\n";
}

void AppendLoadErrors(const StatusPageData& data, std::string* out) {
  *out += "<h2>Recent load errors</h2>\n";
  if (data.load_errors.empty()) {
    *out += "<p id=\"no-load-errors\">None.</p>\n";
    return;
  }
  *out +=
      "<table id=\"load-errors\"><thead><tr><th>Time (UTC)</th><th>Model</th><th>Reason</th>"
      "</tr></thead><tbody>\n";
  for (auto it = data.load_errors.rbegin(); it != data.load_errors.rend(); ++it) {
    *out += "<tr class=\"load-error\"><td class=\"time\">" + FormatUtc(it->time) +
            "</td><td class=\"model\">" + HtmlEscape(it->model) + "</td><td class=\"reason\">" +
            HtmlEscape(it->reason) + "</td></tr>\n";
  }
  *out += "</tbody></table>\n";
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatUptime(std::chrono::seconds uptime) {
  int64_t s = std::max<int64_t>(0, uptime.count());
  const int64_t days = s / 86400, hours = s / 3600 % 24, minutes = s / 60 % 60;
  s %= 60;
  std::string out;
  if (days > 0) out += std::to_string(days) + "d ";
  if (days > 0 || hours > 0) out += std::to_string(hours) + "h ";
  if (days > 0 || hours > 0 || minutes > 0) out += std::to_string(minutes) + "m ";
  return out + std::to_string(s) + "s";
}

std::string FormatUtc(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 32> buf;
  const size_t n = std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf.data(), n);
}

std::string BatchHistogramSvg(const std::vector<std::pair<uint64_t, uint64_t>>& histogram) {
  constexpr int kHeight = 60, kBarArea = 44, kBar = 14, kGap = 4;
  if (histogram.empty()) {
    return "<svg class=\"batch-histogram\" width=\"120\" height=\"" + std::to_string(kHeight) +
           "\" role=\"img\"><title>no executions</title><text x=\"4\" y=\"34\">no executions"
           "</text></svg>";
  }
  uint64_t max_count = 1;
  for (const auto& [size, count] : histogram) max_count = std::max(max_count, count);
  const int width = static_cast<int>(histogram.size()) * (kBar + kGap) + kGap;
  std::string out = "<svg class=\"batch-histogram\" width=\"" + std::to_string(width) +
                    "\" height=\"" + std::to_string(kHeight) + "\" role=\"img\">";
  out += "<title>executions per batch size</title>";
  int x = kGap;
  for (const auto& [size, count] : histogram) {
    const int h = std::max(1, static_cast<int>(count * kBarArea / max_count));
    const int y = kBarArea - h + 2;
    out += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" +
           std::to_string(kBar) + "\" height=\"" + std::to_string(h) +
           "\" fill=\"#47a\"><title>batch " + std::to_string(size) + ": " + std::to_string(count) +
           " executions</title></rect>";
    out += "<text x=\"" + std::to_string(x + kBar / 2) + "\" y=\"" + std::to_string(kHeight - 2) +
           "\" text-anchor=\"middle\">" + std::to_string(size) + "</text>";
    x += kBar + kGap;
  }
  return out + "</svg>";
}

std::string QueuePercentilesSvg(uint64_t requests, double p50_us, double p90_us, double p99_us) {
  constexpr int kWidth = 170, kRow = 16, kLabel = 26, kBarArea = 80;
  if (requests == 0) {
    return "<svg class=\"queue-percentiles\" width=\"120\" height=\"52\" role=\"img\"><title>no "
           "requests</title><text x=\"4\" y=\"30\">no requests</text></svg>";
  }
  const std::array<std::pair<const char*, double>, 3> rows = {
      {{"p50", p50_us}, {"p90", p90_us}, {"p99", p99_us}}};
  const double max_us = std::max({p50_us, p90_us, p99_us, 1.0});
  std::string out = "<svg class=\"queue-percentiles\" width=\"" + std::to_string(kWidth) +
                    "\" height=\"" + std::to_string(kRow * 3 + 4) + "\" role=\"img\">";
  out += "<title>queue time percentiles of " + std::to_string(requests) + " requests</title>";
  int y = 2;
  for (const auto& [label, us] : rows) {
    const int w = std::max(1, static_cast<int>(us / max_us * kBarArea));
    out += "<text x=\"0\" y=\"" + std::to_string(y + 11) + "\">" + label + "</text>";
    out += "<rect x=\"" + std::to_string(kLabel) + "\" y=\"" + std::to_string(y) + "\" width=\"" +
           std::to_string(w) + "\" height=\"12\" fill=\"#a74\"/>";
    out += "<text x=\"" + std::to_string(kLabel + w + 4) + "\" y=\"" + std::to_string(y + 11) +
           "\">" + FormatUs(us) + "</text>";
    y += kRow;
  }
  return out + "</svg>";
}

std::string RenderStatusPage(const StatusPageData& data) {
  std::string out;
  out.reserve(4096 + data.models.size() * 2048);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(data.refresh_secs) + "\">";
  out += "<title>" + HtmlEscape(data.server_id) + " status</title><style>";
  out += kStyle;
  out += "</style></head><body>\n";
  out += "<h1>" + HtmlEscape(data.server_id) + " status</h1>\n";
  out += "<p class=\"meta\">version <span id=\"server-version\">" +
         HtmlEscape(data.server_version) + "</span> &#183; up <span id=\"uptime\">" +
         FormatUptime(data.uptime) + "</span> &#183; at <span id=\"now\">" + FormatUtc(data.now) +
         "</span> &#183; refreshes every " + std::to_string(data.refresh_secs) + " s</p>\n";
  AppendModels(data, &out);
  AppendLoadErrors(data, &out);
  out += "</body></html>\n";
  return out;
}

}  // namespace nereid
