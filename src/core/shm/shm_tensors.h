// The shared memory parameters of an inference request (REFERENCE-2.md §11.2), applied by the
// server before scheduling: inputs that name a region become views into the mapping (no copy; the
// request holds the region until it is freed), and outputs that name one are written there once
// the model has produced them (the response then carries only their metadata).
//
// Parameters, on an input or a requested output:
//   shared_memory_region     string (required to use shared memory)
//   shared_memory_offset     integer, default 0, relative to the registered region
//   shared_memory_byte_size  integer, required with a region
// HTTP gives them as unsigned JSON integers, gRPC as int64_param; a negative int64 is read as the
// unsigned value it encodes, as Triton does (the bounds checks then refuse it).
//
// Stateless functions; thread-safe as far as the manager is.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/request/inference_request.h"
#include "core/shm/shared_memory_manager.h"
#include "nereid/status.h"

namespace nereid {

// Where each output asked into shared memory goes; from ResolveShmTensors to WriteShmOutputs.
struct ShmOutputTargets {
  std::vector<std::pair<std::string, std::shared_ptr<ShmSlice>>> outputs;  // by output name
  bool empty() const { return outputs.empty(); }
};

// Points every shm input of `request` at its range of the mapping (removing the shm parameters,
// which no backend sees) and pins every output range. Errors are Triton's texts.
StatusOr<ShmOutputTargets> ResolveShmTensors(const SharedMemoryManager& manager,
                                             InferenceRequest* request);

// Copies each output named in `targets` into its range and marks it in_shared_memory (its data
// is dropped). An output larger than its range is INTERNAL with Triton's text.
Status WriteShmOutputs(const ShmOutputTargets& targets, InferenceResponse* response);

}  // namespace nereid
