#include "frontends/http/http_wire.h"

#include <cstdio>

namespace nereid {
namespace {

bool SafeHeaderText(std::string_view s) {
  return s.find_first_of("\r\n") == std::string_view::npos;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The last comma-separated coding of a Transfer-Encoding value ("gzip, chunked" -> "chunked").
std::string_view LastCoding(std::string_view value) {
  const size_t comma = value.rfind(',');
  return TrimOws(comma == std::string_view::npos ? value : value.substr(comma + 1));
}

// Skips the empty lines a parser ignores before a request line.
size_t SkipEmptyLines(std::string_view pending, bool at_start) {
  size_t start = 0;
  while (at_start && pending.substr(start, 2) == "\r\n") start += 2;
  return start;
}

// The field name of a header line ("" when it has no colon).
std::string_view FieldName(std::string_view line) {
  const size_t colon = line.find(':');
  return colon == std::string_view::npos ? std::string_view() : line.substr(0, colon);
}

bool IsFramingField(std::string_view name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding");
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
  if (response.stream != nullptr) {
    // HTTP/1.0 has no chunked coding: the body then ends when the connection closes.
    if (request_version >= 11) h.append("Transfer-Encoding: chunked\r\n");
  } else {
    h.append("Content-Length: ").append(std::to_string(response.body.size())).append("\r\n");
  }
  if (close) {
    h.append("Connection: close\r\n");
  } else if (request_version < 11) {
    h.append("Connection: keep-alive\r\n");
  }
  h.append("\r\n");
}

std::string BodyTooLargeText(const std::string* inference_header_length,
                             std::optional<uint64_t> size, uint64_t limit) {
  std::string what = "Request JSON size";
  if (inference_header_length != nullptr) {
    what = TrimOws(*inference_header_length) == "0" ? "Raw request size" : "Request size";
  }
  const std::string amount =
      size ? std::to_string(*size) + " bytes" : "more than " + std::to_string(limit) + " bytes";
  return what + " of " + amount + " exceeds the maximum allowed value of " + std::to_string(limit) +
         " bytes. Use --http-max-input-size to increase the limit.";
}

std::string TooManyChunksText(uint64_t max_chunks) {
  return "Chunked request body exceeds maximum of " + std::to_string(max_chunks) +
         " non-empty chunks. Send fewer or larger HTTP chunks.";
}

std::optional<size_t> HeaderBlockEnd(std::string_view pending, bool at_start) {
  const size_t start = SkipEmptyLines(pending, at_start);
  if (!at_start && pending.substr(0, 2) == "\r\n") return 2;  // only the blank line is left
  const size_t end = pending.find("\r\n\r\n", start);
  if (end == std::string_view::npos) return std::nullopt;
  return end + 4;
}

size_t FramingSafePrefix(std::string_view pending, bool at_start) {
  size_t pos = SkipEmptyLines(pending, at_start);
  bool request_line = at_start;
  while (true) {
    const size_t eol = pending.find("\r\n", pos);
    if (eol == std::string_view::npos) return pending.size();  // a partial line is not parsed
    if (!request_line && IsFramingField(FieldName(pending.substr(pos, eol - pos)))) return pos;
    request_line = false;
    pos = eol + 2;
  }
}

std::optional<std::string> DropContentLengthWhenChunked(std::string_view head, bool at_start) {
  // Every request passes here once: one scan without allocating, a copy only for the rare
  // request that has both fields.
  const size_t start = SkipEmptyLines(head, at_start);
  auto for_each_line = [&](auto&& fn) {
    bool first = at_start;
    for (size_t pos = start; pos < head.size();) {
      size_t eol = head.find("\r\n", pos);
      if (eol == std::string_view::npos) eol = head.size();
      fn(head.substr(pos, eol - pos), first);
      first = false;
      pos = eol + 2;
    }
  };
  bool chunked = false;
  bool content_length = false;
  for_each_line([&](std::string_view line, bool request_line) {
    const std::string_view name = request_line ? std::string_view() : FieldName(line);
    if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      chunked = EqualsIgnoreCase(LastCoding(line.substr(name.size() + 1)), "chunked");
    } else if (EqualsIgnoreCase(name, "Content-Length")) {
      content_length = true;
    }
  });
  if (!chunked || !content_length) return std::nullopt;
  std::string out(head.substr(0, start));
  out.reserve(head.size());
  for_each_line([&](std::string_view line, bool request_line) {
    if (request_line || !EqualsIgnoreCase(FieldName(line), "Content-Length")) {
      out.append(line).append("\r\n");  // the last line is the empty one ending the header
    }
  });
  return out;
}

std::string HostFromAddress(std::string_view address) {
  if (address.rfind("ipv6:", 0) == 0) address.remove_prefix(5);
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  return std::string(address);
}

void AppendChunk(std::string_view piece, std::string* out) {
  if (piece.empty()) return;
  char size[20];
  const int n = std::snprintf(size, sizeof(size), "%zx\r\n", piece.size());
  out->append(size, static_cast<size_t>(n));
  out->append(piece);
  out->append("\r\n");
}

}  // namespace nereid
