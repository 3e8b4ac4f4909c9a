// Admission: which inferences the server has taken and not yet finished, and whether it still
// takes new ones, in one atomic word, so "is the server stopping?" and "count this request" are
// a single step (a request can never slip in after Stop has started counting).
//
// Ownership: shared. Every admitted request holds a Ticket that keeps the Admission alive and
// releases its place when destroyed, so a request that completes after the server is gone
// touches nothing of it (this used to be a use-after-free at shutdown).
//
// Thread-safety: every method from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

namespace nereid {

class Admission : public std::enable_shared_from_this<Admission> {
 public:
  // Released (place given back) when destroyed; move-only.
  class Ticket {
   public:
    explicit Ticket(std::shared_ptr<Admission> owner) : owner_(std::move(owner)) {}
    Ticket(Ticket&&) noexcept = default;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();

   private:
    std::shared_ptr<Admission> owner_;
  };

  static std::shared_ptr<Admission> Create() { return std::shared_ptr<Admission>(new Admission); }

  // A ticket, or nullopt once Close() has been called.
  std::optional<Ticket> Enter();
  // No new tickets from now on; the ones out stay valid.
  void Close();
  bool closed() const { return (word_.load(std::memory_order_acquire) & kClosed) != 0; }
  int64_t inflight() const { return word_.load(std::memory_order_acquire) & ~kClosed; }
  // Waits until no ticket is out, or `deadline` passes; true when none is out.
  bool WaitDrained(std::chrono::steady_clock::time_point deadline) const;

 private:
  Admission() = default;
  static constexpr int64_t kClosed = int64_t{1} << 62;
  std::atomic<int64_t> word_{0};  // tickets out, plus kClosed once closed
};

}  // namespace nereid
