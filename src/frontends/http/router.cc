#include "frontends/http/router.h"

#include <array>

#include "common/error_text.h"
#include "common/logging.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace {

constexpr size_t kMaxSegments = 16;

// Splits "/a/b/c" into {"a","b","c"} and "/" alone into no segment. Returns false when the path
// does not start with '/' or has more than kMaxSegments segments. Empty segments ("//", trailing
// "/") are kept so they fail to match any pattern.
bool SplitPath(std::string_view path, std::array<std::string_view, kMaxSegments>* parts,
               size_t* count) {
  if (path.empty() || path[0] != '/') return false;
  if (path.size() == 1) {
    *count = 0;
    return true;
  }
  size_t n = 0;
  size_t pos = 1;
  while (true) {
    const size_t slash = path.find('/', pos);
    if (n == kMaxSegments) return false;
    (*parts)[n++] = path.substr(pos, slash == std::string_view::npos ? slash : slash - pos);
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  *count = n;
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseVersion(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) return false;
  }
  *out = v;
  return true;
}

}  // namespace

bool UrlDecode(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = HexValue(in[i + 1]);
    const int lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

Status HttpRouter::Add(unsigned methods, std::string_view pattern, RouteHandler handler) {
  // Expand the optional group into the pattern without it and the pattern with it.
  const size_t open = pattern.find('[');
  if (open != std::string_view::npos) {
    const size_t close = pattern.find(']', open);
    if (close == std::string_view::npos) return InvalidArgument("unbalanced '[' in route pattern");
    const std::string without =
        std::string(pattern.substr(0, open)) + std::string(pattern.substr(close + 1));
    const std::string with = std::string(pattern.substr(0, open)) +
                             std::string(pattern.substr(open + 1, close - open - 1)) +
                             std::string(pattern.substr(close + 1));
    NEREID_RETURN_IF_ERROR(Add(methods, without, handler));
    return Add(methods, with, std::move(handler));
  }
  std::array<std::string_view, kMaxSegments> parts;
  size_t n = 0;
  if (!SplitPath(pattern, &parts, &n)) {
    return InvalidArgument("bad route pattern '" + std::string(pattern) + "'");
  }
  Route route{methods, {}, std::move(handler)};
  for (size_t i = 0; i < n; ++i) {
    const std::string_view p = parts[i];
    if (p.empty()) return InvalidArgument("empty segment in route pattern");
    if (p == "{model}") {
      route.segments.push_back({SegmentKind::kModel, {}});
    } else if (p == "{region}") {
      route.segments.push_back({SegmentKind::kRegion, {}});
    } else if (p == "{version}") {
      route.segments.push_back({SegmentKind::kVersion, {}});
    } else if (p.front() == '{') {
      return InvalidArgument("unknown capture '" + std::string(p) + "' in route pattern");
    } else {
      route.segments.push_back({SegmentKind::kLiteral, std::string(p)});
    }
  }
  routes_.push_back(std::move(route));
  return Status::Ok();
}

int HttpRouter::MatchRoute(const Route& route, std::span<const std::string_view> parts,
                           RouteParams* params, std::string* error) {
  if (route.segments.size() != parts.size()) return 0;
  // Literals first so a non-matching path costs no decoding.
  for (size_t i = 0; i < parts.size(); ++i) {
    const Segment& s = route.segments[i];
    if (parts[i].empty()) return 0;
    if (s.kind == SegmentKind::kLiteral && s.literal != parts[i]) return 0;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const Segment& s = route.segments[i];
    switch (s.kind) {
      case SegmentKind::kLiteral:
        break;
      case SegmentKind::kModel:
      case SegmentKind::kRegion: {
        std::string* out = s.kind == SegmentKind::kModel ? &params->model : &params->region;
        if (!UrlDecode(parts[i], out)) {
          *error = "malformed percent-encoding in '" + ClientText(parts[i]) + "'";
          return -1;
        }
        break;
      }
      case SegmentKind::kVersion:
        if (!ParseVersion(parts[i], &params->version)) {
          *error = "failed to get model version from specified version string '" +
                   ClientText(parts[i]) + "': version must be a non-negative integer";
          return -1;
        }
        break;
    }
  }
  return 1;
}

HttpRouter::Match HttpRouter::Find(HttpMethod method, std::string_view path) const {
  Match match;
  std::array<std::string_view, kMaxSegments> parts;
  size_t n = 0;
  if (!SplitPath(path, &parts, &n)) return match;
  const std::span<const std::string_view> view(parts.data(), n);
  const unsigned bit = 1u << static_cast<unsigned>(method);
  bool wrong_method = false;
  for (const Route& route : routes_) {
    const bool method_ok = (route.methods & bit) != 0;
    if (!method_ok && wrong_method) continue;
    RouteParams params;
    std::string error;
    const int r = MatchRoute(route, view, &params, &error);
    if (r == 0) continue;
    if (!method_ok) {
      wrong_method = true;
      continue;
    }
    if (r < 0) {
      match.kind = MatchKind::kBadRequest;
      match.error = std::move(error);
      return match;
    }
    match.kind = MatchKind::kFound;
    match.handler = &route.handler;
    match.params = std::move(params);
    return match;
  }
  match.kind = wrong_method ? MatchKind::kMethodNotAllowed : MatchKind::kNotFound;
  return match;
}

void HttpRouter::Dispatch(HttpRequest& request, std::shared_ptr<HttpResponder> responder) const {
  LOG_VERBOSE(1, "HTTP request: {} {}", HttpMethodName(request.method), request.Path());
  Match m = Find(request.method, request.Path());
  switch (m.kind) {
    case MatchKind::kFound:
      (*m.handler)(request, m.params, std::move(responder));
      return;
    case MatchKind::kNotFound:
      responder->Send(ErrorResponse(404, "Not Found"));
      return;
    case MatchKind::kMethodNotAllowed:
      responder->Send(ErrorResponse(405, "Method Not Allowed"));
      return;
    case MatchKind::kBadRequest:
      responder->Send(ErrorResponse(400, m.error));
      return;
  }
}

}  // namespace nereid
