// The JSON that nereid_perf reads: model metadata and statistics from the server (so the tool
// works against any KServe v2 server with Triton's statistics extension) and perf_analyzer's
// --input-data file.
#ifndef NEREID_BENCH_PERF_PERF_JSON_H_
#define NEREID_BENCH_PERF_PERF_JSON_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nereid/status.h"
#include "perf_stats.h"

namespace nereid::perf {

struct TensorSpec {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;  // -1 for a variable dim
};

struct ModelMetadata {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
};

// GET v2/models/<m>[/versions/<v>] body.
StatusOr<ModelMetadata> ParseMetadataJson(std::string_view body);

// GET v2/models/<m>[/versions/<v>]/stats body; every model_stats entry is summed.
StatusOr<ServerStats> ParseStatsJson(std::string_view body);

// One input's values from a perf_analyzer data file.
struct FileInput {
  bool has_shape = false;
  std::vector<int64_t> shape;
  std::vector<double> numbers;       // numeric and BOOL inputs
  std::vector<std::string> strings;  // BYTES inputs
};

// perf_analyzer's input-data JSON: {"data": [{"NAME": [..] | {"content": [..], "shape": [..]},
// ...}, ...]}. Only the first entry of "data" is used (every request carries the same values).
StatusOr<std::map<std::string, FileInput>> ParseInputDataJson(std::string_view body);

}  // namespace nereid::perf

#endif  // NEREID_BENCH_PERF_PERF_JSON_H_
