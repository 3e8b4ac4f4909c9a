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

// RFC 9112 §6.3: a request whose Transfer-Encoding ends in "chunked" and that also carries
// Content-Length is read as chunked, its Content-Length ignored. `head` is a request's header
// block through the blank line that ends it. Returns `head` without its Content-Length fields
// when that rule applies, nullopt otherwise (no Transfer-Encoding, no Content-Length, or a
// Transfer-Encoding whose last coding is not chunked, which the parser refuses itself).
std::optional<std::string> DropContentLengthWhenChunked(std::string_view head);

// Where the header block at the start of `data` ends (the offset just past its blank line), or
// nullopt when it is not complete yet. Empty lines before the request line are skipped, as the
// parser does.
std::optional<size_t> HeaderBlockEnd(std::string_view data);

}  // namespace nereid
