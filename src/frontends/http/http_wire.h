// Wire-format helpers of the HTTP server that need no networking library: the status line and
// header block of a response, reason phrases, and Triton's address forms. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "frontends/http/http_types.h"

namespace nereid {

// "OK", "Not Found", ... ("Unknown" for codes without one).
std::string_view ReasonPhrase(int status);

// Replaces `out` with "HTTP/1.1 <status> <reason>\r\n<headers>Content-Length: N\r\n
// [Connection: close|keep-alive\r\n]\r\n". Content-Length, Connection and Transfer-Encoding
// fields of `response` are ignored (the server owns them), as is any field containing CR or LF.
// `request_version` is 10 or 11: an HTTP/1.0 client that keeps the connection is told so.
// A response with a body stream (HttpResponse::stream) gets "Transfer-Encoding: chunked" instead
// of Content-Length (neither for an HTTP/1.0 request: that body ends with the connection, which
// the caller closes).
void WriteResponseHead(const HttpResponse& response, bool close, unsigned request_version,
                       std::string* out);

// Triton's "ipv6:[::1]" and the bracketed "[::1]" become "::1"; other addresses are unchanged.
std::string HostFromAddress(std::string_view address);

// The error for a request body over --http-max-input-size, in Triton's words: "Request JSON size
// of N bytes exceeds the maximum allowed value of M bytes. Use --http-max-input-size to increase
// the limit." `inference_header_length` is the Inference-Header-Content-Length value (nullptr when
// absent): "0" names a raw binary request, another value a request with binary tensor data.
// `size` is the body size when Content-Length gave it (nullopt: "more than M").
std::string BodyTooLargeText(const std::string* inference_header_length,
                             std::optional<uint64_t> size, uint64_t limit);

// Triton's text for a chunked body of more than `max_chunks` non-empty chunks.
std::string TooManyChunksText(uint64_t max_chunks);

// RFC 9112 §6.3 support for a parser that refuses a request carrying both Transfer-Encoding and
// Content-Length (Beast's): such a request is to be read as chunked when its Transfer-Encoding
// ends in "chunked", its Content-Length ignored. The parser sees the header in pieces, so the
// server feeds it only what these functions allow.
//
// `pending` is what the parser has not consumed of the current request's header (and what
// follows it); `at_start` is true when the parser has consumed none of it, so that its first
// line is the request line (empty lines before it are skipped, as the parser does).

// Where the header block in `pending` ends (just past its blank line); nullopt when incomplete.
std::optional<size_t> HeaderBlockEnd(std::string_view pending, bool at_start);

// How many bytes of an incomplete header the parser may see now: the whole lines before the
// first Content-Length or Transfer-Encoding field, so that both fields are still unparsed when
// the block is complete; all of `pending` when no such field has arrived yet.
size_t FramingSafePrefix(std::string_view pending, bool at_start);

// `head` (a complete header block as HeaderBlockEnd delimits it) without its Content-Length
// fields when it also has a Transfer-Encoding whose last coding is chunked; nullopt otherwise
// (nothing to do, or a non-chunked Transfer-Encoding, which the parser refuses itself).
std::optional<std::string> DropContentLengthWhenChunked(std::string_view head, bool at_start);

// Appends `piece` to `out` as one chunk of a chunked body: "<hex size>\r\n<piece>\r\n". An empty
// piece appends nothing (a zero-size chunk would end the body).
void AppendChunk(std::string_view piece, std::string* out);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace nereid
