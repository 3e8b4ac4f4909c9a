// The framing and messages between libnereid_python.so and its stub processes
// (resources/nereid_python_stub.py). Pure: no I/O, unit-tested and fuzzed (the stub runs user
// code, so what it sends is untrusted).
//
// A frame is a 12-byte little-endian header (u32 JSON size, u64 payload size), a JSON object and
// the payload: tensor bytes that the JSON's tensor descriptors address by offset and size.
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

namespace nereid::backends::python {

inline constexpr size_t kFrameHeaderSize = 12;
inline constexpr uint32_t kMaxFrameJsonSize = 64u << 20;

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
};

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
// EncodeBlsResult(`tag`)), "config" (`config`: auto_complete_config's result), "is_cancelled" (is
// request `request` cancelled? `request` is its id; answered with EncodeCancelled(`tag`)),
// "model_ready" (`model_name`, `model_version`), "load_model" (`model_name`, `config`, `files` in
// the payload), "unload_model" (`model_name`, `unload_dependents`), answered with
// EncodeControlAnswer(`tag`), and "metric" (pb_utils.MetricFamily / Metric: parsed by
// metric_message.h).
struct StubMessage {
  std::string op;
  std::string message;
  std::string config;  // "config": the completed model configuration (auto_complete_config)
  bool exception = false;
  int level = 0;
  int64_t request = 0;
  uint32_t flags = 0;
  int64_t tag = 0;  // "is_cancelled", "bls": echoed in the answer (the stub matches answers by it)
  std::vector<StubResponse> responses;
  StubResponse response;  // "send"
  // "bls": an inference model.py asks for (InferenceRequest.exec()), inputs in the payload.
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
  bool decoupled = false;  // exec(decoupled=True): answered by a stream of bls_result frames
  // "load_model": the files (relative path, bytes in the payload); "unload_model".
  std::vector<std::pair<std::string, TensorDesc>> files;
  bool unload_dependents = false;
};

// Parses and checks one message: every tensor lies inside a payload of `payload_size` bytes, has
// a known datatype, non-negative dimensions and (fixed-size types) exactly the bytes its shape
// needs.
StatusOr<StubMessage> ParseStubMessage(std::string_view json, uint64_t payload_size);

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

// The JSON part of the answer to a "bls" message with `tag`: the error, or the outputs (their
// bytes follow in the payload, in this order).
std::string EncodeBlsResult(int64_t tag, const Status& error,
                            std::span<const backend::InferTensor> outputs);
// One response of a decoupled BLS call (exec(decoupled=True)) with `tag`; `final` on the last.
std::string EncodeBlsStreamResult(int64_t tag, const Status& error,
                                  std::span<const backend::InferTensor> outputs, bool final);

// The answer to "model_ready", "load_model" or "unload_model" with `tag`: the error, or `ready`.
std::string EncodeControlAnswer(int64_t tag, const Status& error, bool ready);

// The answer to an "is_cancelled" message with `tag` (no payload).
std::string EncodeCancelled(int64_t tag, bool cancelled);

// The JSON part of an execute frame; the payload is the inputs' bytes, concatenated in order.
// The requests get the instance's ids `first_request`, `first_request + 1`, ...: the stub names
// them in "send" and "is_cancelled", also after the execution returned (a decoupled model's
// sender threads).
std::string EncodeExecute(std::string_view instance_name, std::string_view model_name,
                          std::span<const RequestHeader> requests, int64_t first_request);

}  // namespace nereid::backends::python
