#include "core/scheduler/default_scheduler.h"

#include "core/model/instance_runner.h"

namespace nereid {

DefaultScheduler::DefaultScheduler(const ModelInfo* model,
                                   std::vector<std::unique_ptr<backend::ModelInstance>>&& instances)
    : model_(model), instances_(std::move(instances)) {
  threads_.reserve(instances_.size());
  for (auto& instance : instances_) {
    threads_.emplace_back([this, inst = instance.get()] { ExecutorLoop(inst); });
  }
}

DefaultScheduler::~DefaultScheduler() { Stop(); }

void DefaultScheduler::Enqueue(SchedulerJob&& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(job));
      job.done = nullptr;
    }
  }
  if (job.done) {
    job.done(Unavailable("model '" + model_->name + "' is unloading"));
    return;
  }
  cv_.notify_one();
}

void DefaultScheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  instances_.clear();
}

bool DefaultScheduler::IsExecutorThread() const {
  const auto self = std::this_thread::get_id();
  for (const auto& t : threads_) {
    if (t.get_id() == self) return true;
  }
  return false;
}

void DefaultScheduler::ExecutorLoop(backend::ModelInstance* instance) {
  for (;;) {
    SchedulerJob job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    auto result = RunOnInstance(*instance, *model_, std::move(job.request), job.batch_size);
    job.done(std::move(result));
  }
}

}  // namespace nereid
