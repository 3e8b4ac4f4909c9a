// CancelToken: "I no longer want the answer", shared between whoever learns of the cancellation (a
// frontend: a gRPC call or stream the client cancelled, a closed HTTP connection; a plugin
// cancelling an InferCall it made, backend API v6) and whoever can act on it (the schedulers, the
// response senders of decoupled models).
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
// Ownership: std::shared_ptr; the request and whoever may cancel it each hold a reference, so
// either may outlive the other.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <thread>

namespace nereid {

class CancelToken {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // A frontend that runs a request on the very thread that would notice the client's close (an
  // HTTP request run inline on its connection's I/O thread) attaches the connection's socket for
  // that time; Probe() on that thread then also looks at it. Detach before the thread goes back
  // to its connection (which may close the socket).
  void AttachPeer(int fd) {
    peer_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    peer_fd_.store(fd, std::memory_order_release);
  }
  void DetachPeer() { peer_fd_.store(-1, std::memory_order_release); }

  // cancelled(), for a backend asking whether to go on (is_cancelled()): on the thread that
  // attached a socket, while attached, also one non-blocking recv(MSG_PEEK) on it: end of stream
  // or a reset means the client is gone, which cancels the token. Nothing else happens on other
  // threads (their frontend notices the close itself).
  bool Probe() const {
    if (cancelled()) return true;
    const int fd = peer_fd_.load(std::memory_order_acquire);
    if (fd < 0 || peer_thread_.load(std::memory_order_relaxed) != std::this_thread::get_id()) {
      return false;
    }
    char byte;
    const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
      cancelled_.store(true, std::memory_order_release);
    }
    return cancelled();
  }

 private:
  mutable std::atomic<bool> cancelled_{false};
  std::atomic<int> peer_fd_{-1};
  std::atomic<std::thread::id> peer_thread_{};
};

}  // namespace nereid
