#include "core/repository/served_version.h"

#include <chrono>

#include "common/logging.h"
#include "common/thread_name.h"

namespace nereid {
namespace {

struct Holder {
  std::shared_ptr<ModelVersion> model;
  std::shared_ptr<TempModelDir> dir;
  std::function<void()> on_released;
  Reaper* reaper = nullptr;

  ~Holder() {
    if (on_released) on_released();
    reaper->Dispose(std::move(model), std::move(dir));  // the model first, then its directory
  }
};

}  // namespace

Reaper::Reaper() = default;

Reaper::~Reaper() { Shutdown(); }

void Reaper::Adopt() {
  MutexLock lock(mu_);
  ++live_;
}

void Reaper::Dispose(std::shared_ptr<const void> first, std::shared_ptr<const void> then) {
  MutexLock lock(mu_);
  queue_.emplace_back(std::move(first), std::move(then));
  if (!thread_.joinable() && !stopping_) {
    // The first disposal starts the thread: a server that never unloads has none until shutdown.
    thread_ = StartNamedThread("reaper", [this] { Loop(); });
  }
  if (live_ > 0) --live_;
  cv_.notify_one();
  if (live_ == 0) idle_cv_.notify_all();
}

bool Reaper::thread_started() const {
  MutexLock lock(mu_);
  return thread_.joinable();
}

size_t Reaper::live() const {
  MutexLock lock(mu_);
  return live_;
}

void Reaper::Shutdown() {
  std::thread thread;
  {
    UniqueLock lock(mu_);
    if (stopping_) return;  // shut down already
    while (!lock.WaitFor(idle_cv_, std::chrono::seconds(5),
                         [&]() REQUIRES(mu_) { return live_ == 0; })) {
      LOG_WARNING("waiting for {} model version(s) still in use before they can be destroyed",
                  live_);
    }
    stopping_ = true;
    thread.swap(thread_);
  }
  cv_.notify_one();
  if (thread.joinable()) thread.join();
}

void Reaper::Loop() {
  UniqueLock lock(mu_);
  for (;;) {
    lock.Wait(cv_, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing held any more and drained
    auto [first, then] = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    first.reset();
    then.reset();
    lock.Lock();
  }
}

std::shared_ptr<ModelVersion> MakeServed(std::shared_ptr<ModelVersion> model,
                                         std::shared_ptr<TempModelDir> dir, Reaper* reaper,
                                         std::function<void()> on_released) {
  auto holder = std::make_shared<Holder>();
  ModelVersion* raw = model.get();
  holder->model = std::move(model);
  holder->dir = std::move(dir);
  holder->on_released = std::move(on_released);
  holder->reaper = reaper;
  reaper->Adopt();
  return std::shared_ptr<ModelVersion>(holder, raw);
}

}  // namespace nereid
