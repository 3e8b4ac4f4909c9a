// Status -> HTTP status code and Triton's error body `{"error":"<message>"}`
// (REFERENCE.md §1.3). Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "frontends/http/http_types.h"
#include "nereid/status.h"

namespace nereid {

// INTERNAL 500, NOT_FOUND 404, UNAVAILABLE 503, UNSUPPORTED 501, PERMISSION_DENIED 403, every
// other error 400, OK 200.
int HttpStatusFromStatus(const Status& status);

// `{"error":"<message>"}` with the message JSON-escaped.
std::string ErrorJson(std::string_view message);

// A JSON error response with `code` and `message`.
HttpResponse ErrorResponse(int code, std::string_view message);

// A JSON error response for a non-OK status.
HttpResponse ErrorResponse(const Status& status);

}  // namespace nereid
