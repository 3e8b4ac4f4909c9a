#include "frontends/http/http_wire.h"

namespace nereid {
namespace {

bool SafeHeaderText(std::string_view s) {
  return s.find_first_of("\r\n") == std::string_view::npos;
}

}  // namespace

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

void WriteResponseHead(const HttpResponse& response, bool close, unsigned request_version,
                       std::string* out) {
  std::string& h = *out;
  h.clear();
  h.append("HTTP/1.1 ").append(std::to_string(response.status)).append(" ");
  h.append(ReasonPhrase(response.status)).append("\r\n");
  for (const auto& [name, value] : response.headers) {
    if (!SafeHeaderText(name) || !SafeHeaderText(value) ||
        EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Connection") ||
        EqualsIgnoreCase(name, "Transfer-Encoding")) {
      continue;
    }
    h.append(name).append(": ").append(value).append("\r\n");
  }
  h.append("Content-Length: ").append(std::to_string(response.body.size())).append("\r\n");
  if (close) {
    h.append("Connection: close\r\n");
  } else if (request_version < 11) {
    h.append("Connection: keep-alive\r\n");
  }
  h.append("\r\n");
}

std::string HostFromAddress(std::string_view address) {
  if (address.rfind("ipv6:", 0) == 0) address.remove_prefix(5);
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  return std::string(address);
}

}  // namespace nereid
