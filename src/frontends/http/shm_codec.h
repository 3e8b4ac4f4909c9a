// The JSON bodies of Triton's shared memory extension over HTTP (REFERENCE-2.md §11.1), without
// I/O so they can be unit-tested and fuzzed:
//   register (system)  {"key": str, "offset": uint = 0, "byte_size": uint}
//   status (system)    [{"name", "key", "offset", "byte_size"}, ...]
//   status (CUDA)      [{"name", "device_id", "byte_size"}, ...]  (always [] on a CPU build)
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/shm/shared_memory_manager.h"
#include "nereid/status.h"

namespace nereid {

struct ShmRegisterRequest {
  std::string key;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// Triton's texts: a body that is not JSON is INVALID_ARG "failed to parse the request JSON
// buffer: ...", a missing key or byte_size INVALID_ARG "Shared memory register request has no
// '<field>' field", a member of the wrong JSON type "attempt to access JSON ..." (INVALID_ARG;
// Triton's INTERNAL, ADR 0002 item 6).
StatusOr<ShmRegisterRequest> DecodeShmRegisterRequest(std::string_view body);

std::string EncodeSystemShmStatus(const std::vector<ShmRegionStatus>& regions);
std::string EncodeCudaShmStatus(const std::vector<ShmRegionStatus>& regions);

}  // namespace nereid
