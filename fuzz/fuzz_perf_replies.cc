// bench/nereid_perf's readers of what a server (any KServe v2 server it is pointed at) answers:
// the first byte picks the reader, the rest is its input. HTTP response framing
// (`ParseResponseHead`: a complete head's total must cover the head and never exceed what a
// Content-Length can say), model metadata, statistics, and perf_analyzer's input-data file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "perf_http.h"
#include "perf_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      nereid::perf::ResponseHead h = nereid::perf::ParseResponseHead(in);
      if (h.state == nereid::perf::ResponseHead::kComplete &&
          (h.head > in.size() || h.total < h.head || h.total > in.size())) {
        std::abort();
      }
      if (h.state != nereid::perf::ResponseHead::kBad && h.head > 0 &&
          (h.status < 0 || h.status > 999)) {
        std::abort();
      }
      break;
    }
    case 1: {
      auto md = nereid::perf::ParseMetadataJson(in);
      if (md.ok() && md->inputs.empty()) std::abort();
      break;
    }
    case 2:
      (void)nereid::perf::ParseStatsJson(in);
      break;
    default: {
      auto d = nereid::perf::ParseInputDataJson(in);
      if (d.ok()) {
        for (const auto& [name, v] : *d) {
          if (!v.numbers.empty() && !v.strings.empty()) std::abort();
        }
      }
    }
  }
  return 0;
}
