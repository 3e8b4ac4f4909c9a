#include "core/request/request_limits.h"

#include <string>

namespace nereid {
namespace {

Status Exceeds(size_t limit, const char* what) {
  return InvalidArgument("inference request exceeds the limit of " + std::to_string(limit) + " " +
                         what);
}

}  // namespace

Status TooManyRequestParameters() { return Exceeds(kMaxRequestParameters, "parameters"); }
Status TooManyInputParameters() { return Exceeds(kMaxTensorParameters, "parameters per input"); }
Status TooManyOutputParameters() {
  return Exceeds(kMaxTensorParameters, "parameters per requested output");
}
Status TooManyInputs() { return Exceeds(kMaxRequestInputs, "inputs"); }
Status TooManyOutputs() { return Exceeds(kMaxRequestOutputs, "requested outputs"); }

}  // namespace nereid
