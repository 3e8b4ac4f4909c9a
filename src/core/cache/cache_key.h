// The response cache key of a request: model name, resolved version, every input's name,
// datatype, shape and bytes (inputs sorted by name) and the requested output names, serialized
// unambiguously (every field length-prefixed). Stricter than Triton's hash (REFERENCE-2 §8.2):
// two different requests never share an entry, identical ones still do. `hash` only picks the
// slot; a hit is confirmed by comparing `full`.
#pragma once

#include <cstdint>
#include <string>

#include "core/request/inference_request.h"

namespace nereid {

struct CacheKey {
  std::string full;
  uint64_t hash = 0;
};

CacheKey MakeCacheKey(const std::string& model_name, int64_t version,
                      const InferenceRequest& request);

}  // namespace nereid
