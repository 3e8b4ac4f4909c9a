// The binary frames of a BLS call (InferenceRequest.exec()) between a stub and the server, so that
// a call costs no JSON on either side (stub_protocol.h has the framing). Little-endian:
//
//   bls (stub -> server): u8 kind (kBinaryBls), u8 decoupled, u8 apart (1: answer the outputs
//     on the socket, never in the pool: a call of a thread other than the execution's, which
//     may keep them past the next execution), 1 zero byte, u32 request flags,
//     i64 tag, i64 model version, u64 timeout (µs), u64 correlation id, i64 parent request (the
//     id of the execution's request whose trace the call was given, -1: none), u32 model name size,
//     u32 request id size, u32 string correlation id size, u32 parameters (JSON) size,
//     u16 requested output count, u16 input count; the model name, the request id, the string
//     correlation id, the parameters; per requested output u16 size + name; per input a placed
//     tensor (stub_protocol.h: in the frame's payload, or where the stub found it in the
//     shared-memory pool).
//   bls_next (stub -> server): u8 kind (kBinaryBlsNext), 7 zero bytes, i64 tag, i64 stream (the
//     tag of its "bls").
//   answer (server -> stub, to both): u8 kind (kBinaryBlsAnswer), u8 final, u8 has error, u8
//     error code, u32 output count, u32 error message size, i64 tag, u64 shm offset, u64 shm
//     size, u64 pool size (the payload's pool block; pool size 0: the payload follows on the
//     socket), the message; per output u16 name size, u8 DataType, u8 dimension count, u64 size,
//     the name, i64 dimensions. The outputs' bytes follow each other from offset 0.
//
// Pure: unit-tested and fuzzed (fuzz_python_stub), since the stub runs user code.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "nereid/backend_api.h"
#include "nereid/status.h"
#include "python/stub_protocol.h"

namespace nereid::backends::python {

// Where an answer holds its pool block (StubProcess::WriteBinary fills it in).
inline constexpr size_t kBlsAnswerShmSlot = 20;

// A "bls" or "bls_next" frame (first byte kBinaryBls or kBinaryBlsNext): every input lies inside
// the payload (`payload_size`) or the pool (`pool_size`, 0: none), as its place says.
StatusOr<StubMessage> ParseBlsFrame(std::string_view bytes, uint64_t payload_size,
                                    uint64_t pool_size);

// The trace a "bls" frame's call continues (backend API v9 InferCall::parent_trace): the trace of
// its parent request when that is one of `requests`, the execution's requests, whose ids are
// `first_request`, `first_request + 1`, ... Empty for any other id (none, stale, made up) and for
// a request that is not traced.
std::shared_ptr<const void> BlsParentTrace(int64_t parent_request, int64_t first_request,
                                           std::span<const backend::RequestInfo> requests);

// The answer to a "bls" or "bls_next" with `tag` into `out` (replacing its content, keeping its
// capacity): `error`, or the outputs, whose bytes the caller sends as the payload in this order.
// `final`: the last answer of the call. An output too large for its size fields makes it an error
// answer (INVALID_ARG). True when the answer carries the outputs (their bytes are its payload).
bool EncodeBlsAnswer(int64_t tag, const Status& error,
                     std::span<const backend::InferTensor> outputs, bool final, std::string* out);

}  // namespace nereid::backends::python
