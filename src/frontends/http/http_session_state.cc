#include "frontends/http/http_session_state.h"

#include <string>

namespace nereid {

const char* SessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kOpen:
      return "OPEN";
    case SessionState::kReadClosed:
      return "READ_CLOSED";
    case SessionState::kLingering:
      return "LINGERING";
    case SessionState::kClosed:
      return "CLOSED";
  }
  return "INVALID";
}

bool IsLegalTransition(SessionState from, SessionState to) {
  using S = SessionState;
  switch (from) {
    case S::kOpen:
      return to == S::kReadClosed || to == S::kClosed;
    case S::kReadClosed:
      return to == S::kLingering || to == S::kClosed;
    case S::kLingering:
      return to == S::kClosed;
    case S::kClosed:
      return false;
  }
  return false;
}

Status SessionLifecycle::MoveTo(SessionState to) {
  if (!IsLegalTransition(state_, to)) {
    return Internal(std::string("illegal HTTP session transition ") + SessionStateName(state_) +
                    " -> " + SessionStateName(to));
  }
  state_ = to;
  return Status::Ok();
}

}  // namespace nereid
