#include "core/repository/version_state.h"

namespace nereid {

const char* VersionStateName(VersionState state) {
  switch (state) {
    case VersionState::kNone:
      return "NONE";
    case VersionState::kLoading:
      return "LOADING";
    case VersionState::kReady:
      return "READY";
    case VersionState::kFailed:
      return "FAILED";
    case VersionState::kUnloading:
      return "UNLOADING";
    case VersionState::kUnloaded:
      return "UNLOADED";
  }
  return "INVALID";
}

bool IsLegalTransition(VersionState from, VersionState to) {
  using S = VersionState;
  switch (from) {
    case S::kNone:
      return to == S::kLoading;
    case S::kLoading:
      return to == S::kLoading || to == S::kReady || to == S::kFailed || to == S::kUnloaded;
    case S::kReady:
      return to == S::kReady || to == S::kUnloading;
    case S::kFailed:
      return to == S::kLoading || to == S::kUnloaded;
    case S::kUnloading:
      return to == S::kUnloaded || to == S::kLoading;
    case S::kUnloaded:
      return to == S::kLoading || to == S::kUnloaded;
  }
  return false;
}

Status VersionLifecycle::MoveTo(VersionState to, std::string reason) {
  if (!IsLegalTransition(state_, to)) {
    return Internal(std::string("illegal model version transition ") + VersionStateName(state_) +
                    " -> " + VersionStateName(to));
  }
  state_ = to;
  reason_ = to == VersionState::kFailed ? std::move(reason) : std::string();
  return Status::Ok();
}

}  // namespace nereid
