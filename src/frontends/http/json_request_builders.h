// The pieces of an inference request the JSON parser collects, and the checks that turn them into
// InferInput / RequestedOutput once their JSON object is complete (the keys of an object may come
// in any order, so nothing is validated before its end). Internal to the HTTP frontend.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/request/inference_request.h"
#include "core/request/name_set.h"
#include "frontends/http/json_request_parser.h"
#include "frontends/http/json_tensor_data.h"

namespace nereid {

using JsonScalar = std::variant<bool, int64_t, uint64_t, double, std::string>;

struct InputBuilder {
  InferInput input;
  bool has_name = false;
  bool has_shape = false;
  bool has_datatype = false;
  bool has_data = false;
  std::string datatype_name;
  std::shared_ptr<std::string> buffer;         // tensor bytes converted from `data`
  std::optional<JsonTensorAppender> appender;  // writes into `buffer` once the datatype is known
  std::vector<JsonScalar> pending;             // `data` values seen before `datatype`
};

struct OutputBuilder {
  RequestedOutput output;
  bool has_name = false;
};

// Validates a complete input object and appends it to out->request->inputs (JSON data kept alive
// by the request; binary inputs listed in out->binary_inputs). `names` holds the names of the
// inputs appended so far (a repeated name is refused).
Status FinishInput(InputBuilder& b, NameSet* names, ParsedInferHeader* out);

// Validates a complete output object and appends it to out->request->outputs; `names` as above.
Status FinishOutput(OutputBuilder& b, NameSet* names, ParsedInferHeader* out);

// Request-level checks once the root object is complete; consumes binary_data_output.
Status FinishRequest(bool saw_inputs, ParsedInferHeader* out);

}  // namespace nereid
