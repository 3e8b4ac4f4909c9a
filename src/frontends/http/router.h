// HttpRouter: maps (method, path) to a handler with a hand-written segment matcher (no regex on
// the hot path). Patterns are literal segments plus captures:
//   {model}    one non-empty segment, URL-decoded (%XX)
//   {region}   same, for shared-memory region names
//   {version}  a non-negative decimal integer (anything else answers 400)
// and at most one optional group in square brackets, e.g.
//   "/v2/models/{model}[/versions/{version}]/infer"
// The pattern "/" matches the root path alone.
// Routes are tried in the order they were added; the first whose pattern and method match wins.
// A path that matches only with another method answers 405 {"error":"Method Not Allowed"}; a
// path that matches nothing answers 404 {"error":"Not Found"}.
//
// Thread-safety: Add() during set-up only; Find()/Dispatch() are const and may run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/http/http_types.h"
#include "nereid/status.h"

namespace nereid {

// Bit set of accepted methods.
enum HttpMethodMask : unsigned {
  kHttpGet = 1u << static_cast<unsigned>(HttpMethod::kGet),
  kHttpPost = 1u << static_cast<unsigned>(HttpMethod::kPost),
  kHttpPut = 1u << static_cast<unsigned>(HttpMethod::kPut),
  kHttpDelete = 1u << static_cast<unsigned>(HttpMethod::kDelete),
};

struct RouteParams {
  std::string model;     // decoded {model}; empty when the pattern has none
  int64_t version = -1;  // {version}; -1 when absent
  std::string region;    // decoded {region}
};

using RouteHandler = std::function<void(HttpRequest& request, const RouteParams& params,
                                        std::shared_ptr<HttpResponder> responder)>;

class HttpRouter {
 public:
  enum class MatchKind { kFound, kNotFound, kMethodNotAllowed, kBadRequest };
  struct Match {
    MatchKind kind = MatchKind::kNotFound;
    const RouteHandler* handler = nullptr;  // set when kFound; owned by the router
    RouteParams params;
    std::string error;  // set when kBadRequest
  };

  // Registers `handler` for the methods in `methods` (HttpMethodMask bits) on `pattern`.
  // Returns InvalidArgument for a malformed pattern.
  Status Add(unsigned methods, std::string_view pattern, RouteHandler handler);

  Match Find(HttpMethod method, std::string_view path) const;

  // Find(), then calls the handler or answers 404 / 405 / 400 itself. Logs the request at verbose
  // level 1.
  void Dispatch(HttpRequest& request, std::shared_ptr<HttpResponder> responder) const;

 private:
  enum class SegmentKind { kLiteral, kModel, kRegion, kVersion };
  struct Segment {
    SegmentKind kind;
    std::string literal;
  };
  struct Route {
    unsigned methods;
    std::vector<Segment> segments;
    RouteHandler handler;
  };

  // 1: matched; 0: no match; -1: matched but a capture is invalid (`error` set).
  static int MatchRoute(const Route& route, std::span<const std::string_view> parts,
                        RouteParams* params, std::string* error);

  std::vector<Route> routes_;
};

// Decodes %XX escapes ('+' stays '+', as in a path). Returns false on a malformed escape.
bool UrlDecode(std::string_view in, std::string* out);

}  // namespace nereid
