// The Python backend's untrusted input: what a stub process (running user code) sends back
// (backends/python/stub_protocol.h, bls_frames.h). Input: a 12-byte frame header, then the header
// part (JSON, or a binary result, send, BLS call or BLS "next" when its first byte says so); the
// payload size is the frame header's, capped, and the pool's is fixed. Parsing must reject
// anything malformed without crashing, and every tensor of a message that parses lies inside the
// payload (a binary result's or send's tensors back to back), a tensor in the pool inside the
// pool.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "python/bls_frames.h"
#include "python/stub_protocol.h"

namespace {

constexpr uint64_t kPoolSize = 1 << 20;

void CheckInside(const nereid::backends::python::StubResponse& r, uint64_t payload_size) {
  for (const auto& t : r.outputs) {
    const uint64_t limit = t.in_pool ? kPoolSize : payload_size;
    if (t.offset > limit || t.size > limit - t.offset) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nereid::backends::python;
  if (size < kFrameHeaderSize) return 0;
  const char* bytes = reinterpret_cast<const char*>(data);
  auto sizes = DecodeFrameHeader(std::span<const char, kFrameHeaderSize>(bytes, kFrameHeaderSize));
  if (!sizes.ok()) return 0;
  const uint64_t payload_size = sizes->payload_size % (1ull << 40);
  auto message = ParseStubMessage(
      std::string_view(bytes + kFrameHeaderSize, size - kFrameHeaderSize), payload_size, kPoolSize);
  if (!message.ok()) return 0;
  for (const auto& t : message->inputs) {
    const uint64_t limit = t.in_pool ? kPoolSize : payload_size;
    if (t.offset > limit || t.size > limit - t.offset) std::abort();
  }
  if (message->op == "bls") {  // the answer's encoder takes any names and shapes
    std::vector<nereid::backend::InferTensor> outputs;
    for (const auto& t : message->inputs) outputs.push_back({t.name, t.data_type, t.shape, {}});
    std::string answer;
    const bool carries =
        EncodeBlsAnswer(message->tag, nereid::Status::Ok(), outputs, true, &answer);
    if (answer.size() < kBlsAnswerShmSlot + 24 || carries != (answer[2] == 0)) std::abort();
  }
  for (const auto& r : message->responses) CheckInside(r, payload_size);
  CheckInside(message->response, payload_size);
  if (size > kFrameHeaderSize &&
      (bytes[kFrameHeaderSize] == kBinaryResult || bytes[kFrameHeaderSize] == kBinarySend)) {
    uint64_t next = 0;  // the stub writes them back to back, as the parser lays them out
    auto check_order = [&next](const StubResponse& r) {
      for (const auto& t : r.outputs) {
        if (t.in_pool) continue;
        if (t.offset != next) std::abort();
        next += t.size;
      }
    };
    for (const auto& r : message->responses) check_order(r);
    check_order(message->response);
  }
  return 0;
}
