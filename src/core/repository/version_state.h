// The lifecycle of one model version in the repository, and the one function that moves it.
//
//            +--------------------------- reload ----------------------------+
//            v                                                               |
//   kNone -> kLoading -> kReady -> kUnloading (requests drain) -> kUnloaded -+
//               |  ^        |  \__ reload swaps the model, stays kReady
//               |  |        +-- (a ready slot always holds its model)
//               |  +--------------- retry --------------+
//               +-> kFailed (the load failed) ----------+-> kUnloaded (deselected)
//               +-> kUnloaded (an unload cancelled the load)
//
// kUnloading can also go back to kLoading: a load started while the old instance still drains.
// Triton reports kFailed and kUnloaded both as UNAVAILABLE (with the failure, or "unloaded").
//
// Thread-safety: pure functions; a VersionLifecycle is guarded by its owner's lock.
#pragma once

#include <string>

#include "nereid/status.h"

namespace nereid {

enum class VersionState : unsigned char { kNone, kLoading, kReady, kFailed, kUnloading, kUnloaded };

const char* VersionStateName(VersionState state);  // "NONE", "LOADING", ... for messages

// Whether a version may move from `from` to `to` (the diagram above; self-moves of kLoading,
// kReady and kUnloaded are allowed: a second load, a reload, a repeated deselection).
bool IsLegalTransition(VersionState from, VersionState to);

// A version's state and, for kFailed, why.
class VersionLifecycle {
 public:
  VersionState state() const { return state_; }
  const std::string& reason() const { return reason_; }  // kFailed: the load error; else ""

  // Moves to `to` (with `reason` for kFailed). An illegal move changes nothing and returns
  // Internal naming both states; callers log it (it is a repository bug, never client input).
  Status MoveTo(VersionState to, std::string reason = "");

 private:
  VersionState state_ = VersionState::kNone;
  std::string reason_;
};

}  // namespace nereid
