// Wire-format helpers of the HTTP server that need no networking library: the status line and
// header block of a response, reason phrases, and Triton's address forms. Pure functions.
#pragma once

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

}  // namespace nereid
