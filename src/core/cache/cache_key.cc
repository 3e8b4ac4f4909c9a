#include "core/cache/cache_key.h"

#include <algorithm>
#include <functional>
#include <string_view>

namespace nereid {
namespace {

void PutU64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 8);
}

void PutBytes(std::string* out, std::string_view s) {
  PutU64(out, s.size());
  out->append(s);
}

}  // namespace

CacheKey MakeCacheKey(const std::string& model_name, int64_t version,
                      const InferenceRequest& request) {
  CacheKey key;
  size_t bytes = model_name.size() + 64;
  std::vector<const InferInput*> inputs;
  inputs.reserve(request.inputs.size());
  for (const InferInput& in : request.inputs) {
    inputs.push_back(&in);
    bytes += in.name.size() + in.data.size() + 8 * in.shape.size() + 32;
  }
  std::sort(inputs.begin(), inputs.end(),
            [](const InferInput* a, const InferInput* b) { return a->name < b->name; });
  key.full.reserve(bytes);
  PutBytes(&key.full, model_name);
  PutU64(&key.full, static_cast<uint64_t>(version));
  PutU64(&key.full, inputs.size());
  for (const InferInput* in : inputs) {
    PutBytes(&key.full, in->name);
    PutU64(&key.full, static_cast<uint64_t>(in->data_type));
    PutU64(&key.full, in->shape.size());
    for (int64_t d : in->shape) PutU64(&key.full, static_cast<uint64_t>(d));
    PutBytes(&key.full, std::string_view(in->data.data(), in->data.size()));
  }
  PutU64(&key.full, request.outputs.size());
  for (const RequestedOutput& out : request.outputs) PutBytes(&key.full, out.name);
  key.hash = std::hash<std::string_view>{}(key.full);
  return key;
}

}  // namespace nereid
