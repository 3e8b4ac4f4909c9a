#include "frontends/http/status_mapping.h"

#include "frontends/http/json_writer.h"

namespace nereid {

int HttpStatusFromStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInternal:
      return 500;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kUnsupported:
      return 501;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kUnknown:
    case StatusCode::kInvalidArgument:
    case StatusCode::kAlreadyExists:
    case StatusCode::kCancelled:
      return 400;
  }
  return 400;
}

std::string ErrorJson(std::string_view message) {
  std::string out;
  out.reserve(message.size() + 16);
  StringOutputStream stream(&out);
  JsonWriter w(stream);
  w.StartObject();
  WriteJsonKey(w, "error");
  WriteJsonString(w, message);
  w.EndObject();
  return out;
}

HttpResponse ErrorResponse(int code, std::string_view message) {
  return HttpResponse::Json(code, ErrorJson(message));
}

HttpResponse ErrorResponse(const Status& status) {
  return ErrorResponse(HttpStatusFromStatus(status), status.message());
}

}  // namespace nereid
