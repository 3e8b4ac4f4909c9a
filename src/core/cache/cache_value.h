// The binary format of a response cache value (docs/response_cache.md, "Value format"). The same
// bytes are kept by the local cache and stored in Redis; read back from Redis they are untrusted,
// so DecodeCacheValue checks every length against the buffer (fuzz/cache_value_fuzz.cc).
//
//   u8  version (1)
//   u64 key length, key bytes              the full CacheKey the response answers
//   u32 output count
//   per output:
//     u32 name length, name bytes
//     u8  datatype (nereid::DataType, never kInvalid)
//     u32 dimension count, that many i64 dimensions
//     u64 data length, data bytes
//
// Integers are little-endian. Nothing may follow the last output.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/request/inference_request.h"
#include "nereid/status.h"

namespace nereid {

inline constexpr unsigned char kCacheValueVersion = 1;

struct CacheValue {
  std::string key;
  std::vector<InferOutput> outputs;
};

// `data_of(i)` gives output i's bytes (the response's own, or the shared memory it was written
// to).
std::string EncodeCacheValue(const std::string& key, const std::vector<InferOutput>& outputs,
                             const std::vector<std::span<const char>>& data);

// INVALID_ARG with what is wrong for anything that is not a well-formed value.
StatusOr<CacheValue> DecodeCacheValue(std::span<const char> bytes);

}  // namespace nereid
