#include "core/server/admission.h"

#include <thread>

namespace nereid {

Admission::Ticket& Admission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Ticket dropped(std::move(*this));
    owner_ = std::move(other.owner_);
  }
  return *this;
}

Admission::Ticket::~Ticket() {
  if (owner_ != nullptr) owner_->word_.fetch_sub(1, std::memory_order_acq_rel);
}

std::optional<Admission::Ticket> Admission::Enter() {
  if (word_.fetch_add(1, std::memory_order_acq_rel) & kClosed) {
    word_.fetch_sub(1, std::memory_order_acq_rel);
    return std::nullopt;
  }
  return Ticket(shared_from_this());
}

void Admission::Close() { word_.fetch_or(kClosed, std::memory_order_acq_rel); }

bool Admission::WaitDrained(std::chrono::steady_clock::time_point deadline) const {
  // Shutdown only: a short poll keeps the request path free of any lock or notification.
  while (inflight() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace nereid
