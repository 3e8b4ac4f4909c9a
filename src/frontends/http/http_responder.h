// Internal to nereid_http_server: the HttpResponder given to handlers, which posts a reply to its
// session's loop (or finishes it there when already on it). Replies completed inside a
// CompletionBatch are handed to each I/O loop in one post per batch.
#pragma once

#include <cstdint>
#include <memory>

#include "frontends/http/http_session.h"
#include "frontends/http/http_types.h"

namespace nereid {
namespace http_detail {

std::shared_ptr<HttpResponder> NewResponder(std::shared_ptr<Gate> gate,
                                            std::weak_ptr<Session> session, uint64_t seq);

}  // namespace http_detail
}  // namespace nereid
