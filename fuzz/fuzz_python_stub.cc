// The Python backend's untrusted input: what a stub process (running user code) sends back
// (backends/python/stub_protocol.h). Input: a 12-byte frame header, then the JSON part; the
// payload size is the header's, capped. Parsing must reject anything malformed without crashing,
// and every tensor of a message that parses lies inside the payload.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "python/stub_protocol.h"

namespace {

void CheckInside(const nereid::backends::python::StubResponse& r, uint64_t payload_size) {
  for (const auto& t : r.outputs) {
    if (t.offset > payload_size || t.size > payload_size - t.offset) std::abort();
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
      std::string_view(bytes + kFrameHeaderSize, size - kFrameHeaderSize), payload_size);
  if (!message.ok()) return 0;
  for (const auto& r : message->responses) CheckInside(r, payload_size);
  CheckInside(message->response, payload_size);
  return 0;
}
