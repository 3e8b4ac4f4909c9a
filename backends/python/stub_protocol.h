// The framing and messages between libnereid_python.so and its stub processes
// (resources/nereid_python_stub.py). Pure: no I/O, unit-tested and fuzzed (the stub runs user
// code, so what it sends is untrusted).
//
// A frame is a 12-byte little-endian header (u32 header size, u64 payload size), a header and
// the payload: tensor bytes that the header's tensor descriptors address by offset and size.
// The header is a JSON object, except for the frames of every request (execute, result and a
// decoupled send), whose header is binary (first byte kBinaryExecute, kBinaryResult or
// kBinarySend, never '{'), laid out little-endian as follows (docs/python_backend.md):
//
//   execute (server -> stub): u8 kind, 7 zero bytes, u64 shm offset, u64 shm size, u64 pool
//     size (the payload's block in the pool; pool size 0: the payload follows on the socket),
//     i64 first request id, u32 request count, then per request:
//       u32 flags, u64 correlation id, u32 string correlation id size, u32 request id size,
//       u32 parameters (JSON) size, u16 requested output count, u16 input count, the string
//       correlation id, the request id, the parameters; per requested output u16 size + name;
//       per input u16 name size, u8 DataType, u8 dimension count, u64 offset, u64 size, the
//       name, i64 dimensions.
//   result (stub -> server): u8 kind, 3 zero bytes, u32 response count, then responses.
//   send (stub -> server): u8 kind, 3 zero bytes, u32 flags, i64 request id, one response.
//   response: u8 has error, u8 error code, u16 output count, u32 error message size, the
//     message; per output a placed tensor (below). The payload's outputs follow each other from
//     offset 0 (across the responses of a result).
//   placed tensor: u16 name size, u8 DataType, u8 dimension count, u8 place (0: the payload, 1:
//     the shared-memory pool, where the stub found the array), u64 offset (the payload's or the
//     pool's), u64 size, the name, i64 dimensions.
// A BLS call, its answers and a BLS stream's "next" are binary too (kBinaryBls, kBinaryBlsAnswer,
// kBinaryBlsNext; bls_frames.h lays them out).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "nereid/backend_api.h"
#include "nereid/status.h"
#include "python/binary_codec.h"

namespace nereid::backends::python {

inline constexpr size_t kFrameHeaderSize = 12;
inline constexpr uint32_t kMaxFrameJsonSize = 64u << 20;

// The first byte of a binary header.
inline constexpr char kBinaryExecute = 0x01;
inline constexpr char kBinaryResult = 0x02;
inline constexpr char kBinarySend = 0x03;
inline constexpr char kBinaryBls = 0x04;        // stub -> server (bls_frames.h)
inline constexpr char kBinaryBlsAnswer = 0x05;  // server -> stub
inline constexpr char kBinaryBlsNext = 0x06;    // stub -> server
// Where an execute header holds its pool block (StubProcess::Write fills it in): u64 offset,
// size and pool size.
inline constexpr size_t kExecuteShmSlot = 8;

struct FrameSizes {
  uint32_t json_size = 0;
  uint64_t payload_size = 0;
};

std::array<char, kFrameHeaderSize> EncodeFrameHeader(FrameSizes sizes);
// Refuses a JSON part over kMaxFrameJsonSize.
StatusOr<FrameSizes> DecodeFrameHeader(std::span<const char, kFrameHeaderSize> bytes);

// A tensor in a frame's payload.
struct TensorDesc {
  std::string name;
  DataType data_type = DataType::kInvalid;
  std::vector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t size = 0;
  // A BLS input or an output the stub left where it is in the shared-memory pool (a view of a
  // block the server wrote): `offset` is the pool's, not the payload's.
  bool in_pool = false;
};

// One placed tensor of a binary header (the layout above), inside the payload
// (`payload_size`) or the pool (`pool_size`, 0: none) as its place says.
StatusOr<TensorDesc> ParsePlacedTensor(BinaryReader* in, uint64_t payload_size, uint64_t pool_size);

// A tensor's dimensions are not negative, it lies inside `size` bytes (its payload, or the pool)
// and (fixed-size types) has exactly the bytes its shape needs. Errors are INTERNAL ("malformed
// message from the Python stub: ...").
Status CheckTensorDesc(const TensorDesc& t, uint64_t size);
// INTERNAL "malformed message from the Python stub: <what>".
Status MalformedStubMessage(const std::string& what);

// An error a response carries (pb_utils.TritonError: message and code 0..7).
struct StubError {
  std::string message;
  int code = 1;  // TritonError.INTERNAL
};

struct StubResponse {
  bool has_error = false;
  StubError error;
  std::vector<TensorDesc> outputs;
};

// What the stub sent. `op` is one of: "ok" (initialize / finalize done), "error" (`message`;
// `exception` when user code raised), "log" (`level`, `message`), "result" (`responses`, one per
// request), "send" (a decoupled response for request id `request` with `flags`, outputs or an
// error), "done" (a decoupled execute returned), "bls" (see below; answered with
// EncodeBlsAnswer(`tag`)), "config" (`config`: auto_complete_config's result), "is_cancelled" (is
// request `request` cancelled? `request` is its id; answered with EncodeCancelled(`tag`)),
// "model_ready" (`model_name`, `model_version`), "load_model" (`model_name`, `config`, `files` in
// the payload), "unload_model" (`model_name`, `unload_dependents`), answered with
// EncodeControlAnswer(`tag`), "bls_next" (the next response of the decoupled BLS stream
// `request`, the tag of its "bls"; answered with EncodeBlsAnswer(`tag`)), "bls_cancel"
// (cancel stream `request`; `flags` 1: dropped, discard the rest; answered with
// EncodeCancelled(`tag`) when `tag` is set), "metric" (pb_utils.MetricFamily / Metric: parsed
// by metric_message.h) and "release" (request.set_release_flags: request id `request` of the
// current execution has release flags `flags`; sent before execute's "result" or "done").
struct StubMessage {
  std::string op;
  std::string message;
  std::string config;  // "config": the completed model configuration (auto_complete_config)
  bool exception = false;
  // "ok" answering "init": model.py defines is_ready() (asked by "is_ready", answered by "ready"
  // with `message` empty when ready, else the reason).
  bool has_is_ready = false;
  int level = 0;
  int64_t request = 0;
  uint32_t flags = 0;
  int64_t tag = 0;  // "is_cancelled", "bls": echoed in the answer (the stub matches answers by it)
  std::vector<StubResponse> responses;
  StubResponse response;  // "send"
  // "bls": an inference model.py asks for (InferenceRequest.exec()), inputs in the payload
  // or the pool (TensorDesc::in_pool).
  std::string model_name;
  int64_t model_version = -1;
  std::string request_id;
  std::vector<std::string> requested_outputs;
  std::vector<TensorDesc> inputs;
  uint64_t timeout_us = 0;  // InferenceRequest(timeout=...), microseconds
  // "bls" (also): `flags` above are the request's flags (sequence start 1, end 2).
  uint64_t correlation_id = 0;
  std::string correlation_id_str;  // a string correlation id
  std::vector<std::pair<std::string, std::variant<bool, int64_t, std::string>>> parameters;
  bool decoupled = false;  // exec(decoupled=True): answered by a stream of answers
  // The answer's outputs go on the socket, never in the pool (bls_frames.h: a call of a thread
  // other than the execution's).
  bool apart = false;
  // InferenceRequest(trace=request.trace()): the id of the request whose trace the call continues
  // (Triton traces the call as that request's child); -1: none. Not checked by the parser.
  int64_t parent_request = -1;
  // "load_model": the files (relative path, bytes in the payload); "unload_model".
  std::vector<std::pair<std::string, TensorDesc>> files;
  bool unload_dependents = false;
};

// Parses and checks one message (a JSON header, or a binary "result", "send", "bls" or
// "bls_next"): every tensor lies inside a payload of `payload_size` bytes (a BLS input in the
// pool: inside the pool's `pool_size`), has a known datatype, non-negative dimensions and
// (fixed-size types) exactly the bytes its shape needs.
StatusOr<StubMessage> ParseStubMessage(std::string_view header, uint64_t payload_size,
                                       uint64_t pool_size = 0);

// The Triton error code of pb_utils.TritonError `code` (unknown codes become INTERNAL).
StatusCode StubErrorCode(int code);

// One request of an execute message.
struct RequestHeader {
  std::string id;
  uint64_t correlation_id = 0;
  std::string correlation_id_str;  // a string sequence id (correlation_id() returns it)
  uint32_t flags = 0;
  std::string parameters_json = "{}";
  std::vector<std::string> requested_outputs;
  std::vector<backend::TensorRef> inputs;  // their bytes follow in the payload, in this order
};

// The Triton error code (pb_utils.TritonError) of `code`.
int TritonErrorCodeOf(StatusCode code);

// The answer to "model_ready", "load_model" or "unload_model" with `tag`: the error, or `ready`.
std::string EncodeControlAnswer(int64_t tag, const Status& error, bool ready);

// The answer to an "is_cancelled" message with `tag` (no payload).
std::string EncodeCancelled(int64_t tag, bool cancelled);

// The binary header of an execute frame into `out` (replacing its content, keeping its
// capacity); the payload is the inputs' bytes, concatenated in order. The requests get the
// instance's ids `first_request`, `first_request + 1`, ...: the stub names them in "send" and
// "is_cancelled", also after the execution returned (a decoupled model's sender threads).
// Names and strings longer than their size fields are an error (INVALID_ARG).
Status EncodeExecute(std::span<const RequestHeader> requests, int64_t first_request,
                     std::string* out);

}  // namespace nereid::backends::python
