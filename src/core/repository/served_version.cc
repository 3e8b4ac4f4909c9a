#include "core/repository/served_version.h"

namespace nereid {
namespace {

struct Holder {
  std::shared_ptr<ModelVersion> model;
  std::shared_ptr<TempModelDir> dir;
  std::shared_ptr<std::atomic<bool>> released;
  std::shared_ptr<Reaper> reaper;

  ~Holder() {
    released->store(true, std::memory_order_release);
    // The model first, then its directory.
    reaper->Dispose({std::move(model), std::move(dir)});
  }
};

}  // namespace

Reaper::Reaper() : thread_([this] { Loop(); }) {}

Reaper::~Reaper() { Shutdown(); }

void Reaper::Dispose(std::vector<std::shared_ptr<const void>>&& items) {
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(items));
      cv_.notify_one();
      return;
    }
  }
  for (auto& item : items) item.reset();
}

void Reaper::Shutdown() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void Reaper::Loop() {
  UniqueLock lock(mu_);
  for (;;) {
    lock.Wait(cv_, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    auto items = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    for (auto& item : items) item.reset();
    items.clear();
    lock.Lock();
  }
}

ServedHandle MakeServed(std::shared_ptr<ModelVersion> model, std::shared_ptr<TempModelDir> dir,
                        std::shared_ptr<Reaper> reaper) {
  auto released = std::make_shared<std::atomic<bool>>(false);
  auto holder = std::make_shared<Holder>();
  ModelVersion* raw = model.get();
  holder->model = std::move(model);
  holder->dir = std::move(dir);
  holder->released = released;
  holder->reaper = std::move(reaper);
  return {std::shared_ptr<ModelVersion>(holder, raw), released};
}

}  // namespace nereid
