// The shared memory extension's untrusted input: an HTTP register body (`DecodeShmRegisterRequest`)
// and the ranges a client names. The decoded key goes through the key rules only (never
// shm_open: the fuzzer must not map whatever /dev/shm holds); the decoded offset and byte_size,
// and the same two numbers read from the input's first 16 bytes, are bounds-checked against a real
// one-page region registered at start, and every slice handed out is touched at both ends (a
// check that let a range past the mapping through faults here). Inputs and outputs of a request
// naming the region with those numbers go through `ResolveShmTensors` and `WriteShmOutputs`.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "core/shm/shared_memory_manager.h"
#include "core/shm/shm_tensors.h"
#include "frontends/http/shm_codec.h"

namespace {

nereid::SharedMemoryManager* Manager() {
  static nereid::SharedMemoryManager* manager = [] {
    const std::string key = "/nereid_fuzz_shm_" + std::to_string(getpid());
    const int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) std::abort();
    close(fd);
    auto* m = new nereid::SharedMemoryManager({.allow_client_shm = true});
    if (!m->RegisterSystem("r", key, 0, 4096).ok()) std::abort();
    shm_unlink(key.c_str());  // the mapping stays; nothing is left behind in /dev/shm
    return m;
  }();
  return manager;
}

void Touch(const std::shared_ptr<nereid::ShmSlice>& slice) {
  std::span<char> d = slice->data();
  if (d.empty()) return;
  volatile char first = d.front();
  volatile char last = d.back();
  d.front() = first;
  d.back() = last;
}

void CheckRange(uint64_t offset, uint64_t byte_size) {
  auto slice = Manager()->Acquire("r", offset, byte_size);
  if (slice.ok()) Touch(*slice);

  nereid::InferenceRequest request;
  nereid::InferInput in;
  in.name = "IN";
  in.parameters.Set("shared_memory_region", std::string("r"));
  in.parameters.Set("shared_memory_offset", static_cast<int64_t>(offset));
  in.parameters.Set("shared_memory_byte_size", byte_size);
  request.inputs.push_back(std::move(in));
  nereid::RequestedOutput out;
  out.name = "OUT";
  out.parameters = request.inputs[0].parameters;
  request.outputs.push_back(std::move(out));
  auto targets = nereid::ResolveShmTensors(*Manager(), &request);
  if (!targets.ok()) return;
  nereid::InferenceResponse response;
  response.outputs.push_back({"OUT", nereid::DataType::kUint8, {8}, std::string(8, 'x')});
  (void)nereid::WriteShmOutputs(*targets, &response);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  if (size >= 16) {
    uint64_t offset = 0;
    uint64_t byte_size = 0;
    std::memcpy(&offset, data, 8);
    std::memcpy(&byte_size, data + 8, 8);
    CheckRange(offset, byte_size);
  }
  auto request = nereid::DecodeShmRegisterRequest(body);
  if (!request.ok()) return 0;
  (void)nereid::SharedMemoryManager::ValidateKey("r", request->key);
  CheckRange(request->offset, request->byte_size);
  return 0;
}
