// The core's view of a client's cancellation: the CancelToken (include/nereid/cancel_token.h,
// shared with plugins since backend API v6) and the text a cancelled request is answered with.
#pragma once

#include <string_view>

#include "nereid/cancel_token.h"

namespace nereid {

// The message a cancelled request is answered with (Triton's).
inline constexpr std::string_view kRequestCancelledMessage = "Request was cancelled";

}  // namespace nereid
