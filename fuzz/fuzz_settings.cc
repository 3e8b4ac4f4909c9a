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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  nereid::MetricsConfig metrics;
  std::vector<std::string> warnings;
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    (void)nereid::ApplyMetricsConfig(std::string(input.substr(start, end - start)), &metrics,
                                     &warnings);
    start = end + 1;
  }

  std::vector<std::string> words;
  start = 0;
  while (start <= input.size() && words.size() < 256) {
    size_t end = input.find('\0', start);
    if (end == std::string_view::npos) end = input.size();
    words.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }
  std::vector<const char*> argv = {"nereid"};
  for (const std::string& w : words) argv.push_back(w.c_str());
  (void)nereid::ParseCommandLine(static_cast<int>(argv.size()), argv.data(), "/backends");
  return 0;
}
