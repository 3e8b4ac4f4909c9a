// CancelToken: a client's "I no longer want the answer" signal, shared between whoever learns of
// the cancellation (a frontend: a gRPC call or stream the client cancelled) and whoever can act on
// it (the schedulers, and later backends of decoupled models).
//
// Contract:
//   - Cancel() may be called from any thread, any number of times; it never blocks and runs no
//     callback, so it is safe under any lock.
//   - cancelled() is one atomic load (acquire), cheap enough for every hot-path check.
//   - Cancellation is advisory: a request already executing is not interrupted; a request still
//     queued is dropped by its scheduler and answered once with kCancelled "Request was
//     cancelled" (Triton's wording), counted as a failure with reason CANCELED.
//   - One token may be shared by several requests (a gRPC stream gives all its requests one
//     token: cancelling the stream cancels every request not yet answered).
//
// Ownership: std::shared_ptr; the request and the frontend call each hold a reference, so either
// may outlive the other.
#pragma once

#include <atomic>
#include <memory>
#include <string_view>

namespace nereid {

class CancelToken {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> cancelled_{false};
};

// The message a cancelled request is answered with (Triton's).
inline constexpr std::string_view kRequestCancelledMessage = "Request was cancelled";

}  // namespace nereid
