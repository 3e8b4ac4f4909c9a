#include "perf_options.h"

#include <charconv>
#include <functional>

namespace nereid::perf {
namespace {

StatusOr<int64_t> ParseInt(std::string_view flag, std::string_view text) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return InvalidArgument("invalid value for " + std::string(flag) + ": '" + std::string(text) +
                           "' is not an integer");
  }
  return v;
}

StatusOr<int> ParsePositive(std::string_view flag, std::string_view text) {
  NEREID_ASSIGN_OR_RETURN(int64_t v, ParseInt(flag, text));
  if (v < 1 || v > 1000000) {
    return InvalidArgument("invalid value for " + std::string(flag) + ": " + std::string(text) +
                           " (must be 1 to 1000000)");
  }
  return static_cast<int>(v);
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

Status ParseRange(std::string_view text, PerfOptions& o) {
  auto parts = Split(text, ':');
  if (parts.size() > 3) {
    return InvalidArgument("invalid --concurrency-range '" + std::string(text) +
                           "': expected start[:end[:step]]");
  }
  NEREID_ASSIGN_OR_RETURN(o.concurrency_start, ParsePositive("--concurrency-range", parts[0]));
  o.concurrency_end = o.concurrency_start;
  o.concurrency_step = 1;
  if (parts.size() > 1) {
    NEREID_ASSIGN_OR_RETURN(o.concurrency_end, ParsePositive("--concurrency-range", parts[1]));
  }
  if (parts.size() > 2) {
    NEREID_ASSIGN_OR_RETURN(o.concurrency_step, ParsePositive("--concurrency-range", parts[2]));
  }
  if (o.concurrency_end < o.concurrency_start) {
    return InvalidArgument("invalid --concurrency-range '" + std::string(text) +
                           "': end is below start");
  }
  return Status::Ok();
}

Status ParseRateRange(std::string_view text, PerfOptions& o) {
  auto parts = Split(text, ':');
  double v[3] = {0, 0, 1};
  if (parts.size() > 3) {
    return InvalidArgument("invalid --request-rate-range '" + std::string(text) +
                           "': expected start[:end[:step]]");
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    auto [p, ec] = std::from_chars(parts[i].data(), parts[i].data() + parts[i].size(), v[i]);
    if (ec != std::errc() || p != parts[i].data() + parts[i].size() || !(v[i] > 0) || v[i] > 1e7) {
      return InvalidArgument("invalid --request-rate-range '" + std::string(text) +
                             "': each value must be a number above 0 (at most 1e7)");
    }
  }
  o.rate_start = v[0];
  o.rate_end = parts.size() > 1 ? v[1] : v[0];
  o.rate_step = v[2];
  if (o.rate_end < o.rate_start) {
    return InvalidArgument("invalid --request-rate-range '" + std::string(text) +
                           "': end is below start");
  }
  return Status::Ok();
}

Status ParseShape(std::string_view text, PerfOptions& o) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return InvalidArgument("invalid --shape '" + std::string(text) + "': expected NAME:d1,d2,...");
  }
  std::vector<int64_t> dims;
  for (std::string_view d : Split(text.substr(colon + 1), ',')) {
    NEREID_ASSIGN_OR_RETURN(int64_t v, ParseInt("--shape", d));
    if (v < 0) return InvalidArgument("invalid --shape '" + std::string(text) + "': negative dim");
    dims.push_back(v);
  }
  o.shapes[std::string(text.substr(0, colon))] = std::move(dims);
  return Status::Ok();
}

Status ParseUrl(std::string_view text, PerfOptions& o) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    o.host = std::string(text);
    return Status::Ok();
  }
  o.host = std::string(text.substr(0, colon));
  NEREID_ASSIGN_OR_RETURN(int64_t port, ParseInt("-u", text.substr(colon + 1)));
  if (port < 1 || port > 65535 || o.host.empty()) {
    return InvalidArgument("invalid -u '" + std::string(text) + "': expected host:port");
  }
  o.port = static_cast<int>(port);
  return Status::Ok();
}

using Setter = std::function<Status(std::string_view, PerfOptions&)>;

// Setters of the common kinds of flag: a positive integer, a text, a switch.
template <int PerfOptions::*Field>
Setter Positive(std::string_view flag) {
  return [flag](std::string_view v, PerfOptions& o) -> Status {
    NEREID_ASSIGN_OR_RETURN(o.*Field, ParsePositive(flag, v));
    return Status::Ok();
  };
}

template <std::string PerfOptions::*Field>
Setter Text() {
  return [](std::string_view v, PerfOptions& o) {
    o.*Field = std::string(v);
    return Status::Ok();
  };
}

template <bool PerfOptions::*Field>
Setter Switch() {
  return [](std::string_view, PerfOptions& o) {
    o.*Field = true;
    return Status::Ok();
  };
}

struct Flag {
  std::vector<std::string_view> names;
  bool takes_value;
  Setter set;
};

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {{"-m", "--model-name"}, true, Text<&PerfOptions::model>()},
      {{"-x", "--model-version"}, true, Text<&PerfOptions::version>()},
      {{"-u", "--url"}, true, ParseUrl},
      {{"-i", "--protocol"},
       true,
       [](std::string_view v, PerfOptions& o) {
         if (v == "http" || v == "HTTP") {
           o.protocol = Protocol::kHttp;
         } else if (v == "grpc" || v == "gRPC" || v == "GRPC") {
           o.protocol = Protocol::kGrpc;
         } else {
           return InvalidArgument("invalid -i '" + std::string(v) + "': expected http or grpc");
         }
         return Status::Ok();
       }},
      {{"--concurrency-range"}, true, ParseRange},
      {{"--request-rate-range"}, true, ParseRateRange},
      {{"--max-outstanding"}, true, Positive<&PerfOptions::max_outstanding>("--max-outstanding")},
      {{"--input-data"}, true, Text<&PerfOptions::input_data>()},
      {{"--shape"}, true, ParseShape},
      {{"--binary"}, false, Switch<&PerfOptions::binary>()},
      {{"--input-tensor-format"},
       true,
       [](std::string_view v, PerfOptions& o) {
         if (v != "binary" && v != "json") {
           return InvalidArgument("invalid --input-tensor-format '" + std::string(v) +
                                  "': expected binary or json");
         }
         o.binary = v == "binary";
         return Status::Ok();
       }},
      {{"--streaming"}, false, Switch<&PerfOptions::streaming>()},
      {{"-p", "--measurement-interval"},
       true,
       Positive<&PerfOptions::measurement_interval_ms>("-p")},
      {{"-s", "--stability-percentage"},
       true,
       [](std::string_view v, PerfOptions& o) -> Status {
         NEREID_ASSIGN_OR_RETURN(int64_t p, ParseInt("-s", v));
         if (p < 1 || p > 100) return InvalidArgument("invalid -s: must be 1 to 100");
         o.stability_percentage = static_cast<double>(p);
         return Status::Ok();
       }},
      {{"-r", "--max-trials"}, true, Positive<&PerfOptions::max_trials>("-r")},
      {{"--client-threads"}, true, Positive<&PerfOptions::client_threads>("--client-threads")},
      {{"--grpc-channels"}, true, Positive<&PerfOptions::grpc_channels>("--grpc-channels")},
      {{"--string-length"}, true, Positive<&PerfOptions::string_length>("--string-length")},
      {{"-f"}, true, Text<&PerfOptions::csv_file>()},
      {{"-h", "--help"}, false, Switch<&PerfOptions::help>()},
  };
  return flags;
}

const Flag* FindFlag(std::string_view name) {
  for (const Flag& f : Flags()) {
    for (std::string_view n : f.names) {
      if (n == name) return &f;
    }
  }
  return nullptr;
}

}  // namespace

StatusOr<PerfOptions> ParsePerfOptions(const std::vector<std::string>& args) {
  PerfOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view name = arg;
    std::string_view value;
    bool inline_value = false;
    if (arg.starts_with("--")) {
      size_t eq = arg.find('=');
      if (eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_value = true;
      }
    }
    const Flag* flag = FindFlag(name);
    if (flag == nullptr) return InvalidArgument("unknown option '" + std::string(arg) + "'");
    if (flag->takes_value && !inline_value) {
      if (i + 1 >= args.size()) {
        return InvalidArgument("option '" + std::string(name) + "' needs a value");
      }
      value = args[++i];
    } else if (!flag->takes_value && inline_value) {
      return InvalidArgument("option '" + std::string(name) + "' takes no value");
    }
    NEREID_RETURN_IF_ERROR(flag->set(value, o));
  }
  if (o.help) return o;
  if (o.model.empty()) return InvalidArgument("-m (model name) is required");
  if (o.streaming && o.protocol != Protocol::kGrpc) {
    return InvalidArgument("--streaming needs -i grpc");
  }
  if (o.rate_start > 0 && o.streaming) {
    return InvalidArgument("--request-rate-range needs unary requests (not --streaming)");
  }
  if (o.binary && o.protocol != Protocol::kHttp) {
    return InvalidArgument("--binary applies to -i http (gRPC always sends raw bytes)");
  }
  if (o.port == 0) o.port = o.protocol == Protocol::kHttp ? 8000 : 8001;
  return o;
}

std::string PerfUsage() {
  return R"(Usage: nereid_perf -m MODEL [options]
A perf_analyzer-like load generator for KServe v2 servers (Nereid, Triton).
  -m, --model-name NAME        model to drive (required)
  -x, --model-version V        version (default: the server's choice)
  -u, --url HOST:PORT          server (default localhost:8000 for HTTP, localhost:8001 for gRPC)
  -i, --protocol http|grpc     protocol (default http)
  --concurrency-range S[:E[:T]] concurrency sweep from S to E in steps of T (default 1)
  --input-data zero|random|FILE input values; FILE is perf_analyzer's JSON ({"data":[{...}]})
  --shape NAME:d1,d2           shape of an input with variable dims (repeatable)
  --request-rate-range S[:E[:T]] paced requests/s per level instead of closed loops
  --max-outstanding N          rate mode: connections / calls the paced requests use (256)
  --binary                     HTTP binary tensor data for inputs and outputs (default JSON)
  --input-tensor-format binary|json   same as --binary / the default
  --streaming                  gRPC ModelStreamInfer instead of unary ModelInfer
  -p, --measurement-interval MS window length (default 5000)
  -s, --stability-percentage P windows are stable when within P% of their mean (default 10)
  -r, --max-trials N           windows tried before reporting unstable figures (default 10)
  --client-threads N           HTTP event loops / gRPC completion-queue threads (default 1)
  --grpc-channels N            gRPC channels shared by the workers (default 1)
  --string-length N            BYTES element length for zero/random data (default 16)
  -f FILE                      write perf_analyzer's CSV to FILE
)";
}

}  // namespace nereid::perf
