// Operator settings: the input's lines are `--metrics-config` options, applied in order, and its
// NUL-separated words are a whole command line (every flag's parser and cross-checks, including
// --backend-config, --metrics-config, the gRPC and HTTP limits and the model control flags).
// Trace and logging settings have no parser in this build yet (issue 13).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/command_line.h"
#include "frontends/metrics/metrics_config.h"

namespace {

// The pieces of `input` between `separator`s (at most `limit`).
std::vector<std::string> Split(std::string_view input, char separator, size_t limit) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= input.size() && out.size() < limit;) {
    size_t end = input.find(separator, start);
    if (end == std::string_view::npos) end = input.size();
    out.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  nereid::MetricsConfig metrics;
  std::vector<std::string> warnings;
  for (const std::string& line : Split(input, '\n', SIZE_MAX)) {
    (void)nereid::ApplyMetricsConfig(line, &metrics, &warnings);
  }

  const std::vector<std::string> words = Split(input, '\0', 256);
  std::vector<const char*> argv = {"nereid"};
  for (const std::string& w : words) argv.push_back(w.c_str());
  (void)nereid::ParseCommandLine(static_cast<int>(argv.size()), argv.data(), "/backends");
  return 0;
}
