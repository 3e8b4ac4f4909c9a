// The lifecycle of one HTTP connection (http_session.h's Session), and the one function that
// moves it:
//
//   kOpen --(no more requests: EOF, Connection: close, an error reply, a read error)--> kReadClosed
//   kReadClosed --(the last reply written and the sending side shut)--> kLingering
//   kOpen / kReadClosed / kLingering --(socket closed)--> kClosed
//
// kReadClosed still writes the replies owed; kLingering discards what the client still sends
// for a moment so that a reset does not destroy the last reply; kClosed is final. Whether a
// receive or a write is outstanding (the session's `reading_`/`writing_`) is not a lifecycle
// state: both happen in kOpen, and a write in kReadClosed. Neither is the server's request to
// drain (a flag that makes the session stop reading at the next chance).
//
// Thread-safety: a plain value; the session moves it on its strand only.
#pragma once

#include "nereid/status.h"

namespace nereid {

enum class SessionState : unsigned char { kOpen, kReadClosed, kLingering, kClosed };

const char* SessionStateName(SessionState state);  // "OPEN", "READ_CLOSED", ...

bool IsLegalTransition(SessionState from, SessionState to);

class SessionLifecycle {
 public:
  SessionState state() const { return state_; }
  // Moves to `to`. An illegal move changes nothing and returns Internal
  // "illegal HTTP session transition FROM -> TO" (a server bug, never client input).
  Status MoveTo(SessionState to);

 private:
  SessionState state_ = SessionState::kOpen;
};

}  // namespace nereid
