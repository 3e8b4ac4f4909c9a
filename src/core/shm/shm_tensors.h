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
#include <string_view>
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
// which no backend sees), pins every output range and sets RequestedOutput::shared_memory to it.
// Errors are Triton's texts.
StatusOr<ShmOutputTargets> ResolveShmTensors(const SharedMemoryManager& manager,
                                             InferenceRequest* request);

// Copies each output named in `targets` that is not in_shared_memory yet into its range and marks
// it so (its data is dropped). An output larger than its range is OutputRegionTooSmall. Outputs
// of a request executed alone were allocated in their range directly (instance_runner.cc) and
// need no copy; this serves those split out of a dynamic batch.
Status WriteShmOutputs(const ShmOutputTargets& targets, InferenceResponse* response);

// INTERNAL with Triton's text: "shared memory size specified with the request for output '<name>'
// (<have> bytes) should be at least <need> bytes to hold the results".
Status OutputRegionTooSmall(std::string_view name, size_t have, size_t need);

}  // namespace nereid
