// The request nereid_perf sends: input tensors built from the model metadata (zero, random or
// file data) and their HTTP encodings (JSON, or binary tensor data). Every request of a run
// carries the same bytes, as perf_analyzer's default does.
#ifndef NEREID_BENCH_PERF_PERF_REQUEST_H_
#define NEREID_BENCH_PERF_PERF_REQUEST_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nereid/status.h"
#include "perf_json.h"
#include "perf_options.h"

namespace nereid::perf {

struct InputTensor {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  std::string raw;                   // little-endian elements; BYTES: 4-byte length + bytes each
  std::vector<std::string> strings;  // BYTES elements (for JSON)
};

// Byte size of one element of `datatype`, 0 for BYTES or an unknown type.
size_t ElementSize(std::string_view datatype);

// Builds the inputs: shapes from `md` with -1 dims taken from `shapes` (or 1 when not given),
// values zero, random or from `file` (options.input_data names a file when `file` is set).
StatusOr<std::vector<InputTensor>> MakeInputs(const ModelMetadata& md, const PerfOptions& options,
                                              const std::map<std::string, FileInput>* file);

// The inference request body. JSON: every input as "data". Binary: a JSON header with
// binary_data_size per input and binary_data_output for all outputs, then the raw bytes;
// `*header_length` is the JSON header's length (Inference-Header-Content-Length), 0 for JSON.
StatusOr<std::string> HttpInferBody(const std::vector<InputTensor>& inputs, bool binary,
                                    size_t* header_length);

// The full HTTP/1.1 POST (request line, headers, body) of one inference.
std::string HttpInferRequest(const std::string& host, const std::string& path,
                             const std::string& body, size_t header_length);

// "v2/models/<m>" or "v2/models/<m>/versions/<v>".
std::string ModelPath(const std::string& model, const std::string& version);

}  // namespace nereid::perf

#endif  // NEREID_BENCH_PERF_PERF_REQUEST_H_
