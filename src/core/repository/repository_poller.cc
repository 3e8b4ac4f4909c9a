#include "core/repository/repository_poller.h"

#include <atomic>
#include <chrono>

#include "common/logging.h"
#include "common/thread_name.h"
#include "core/config/version_policy.h"

namespace nereid {

RepositoryPoller::RepositoryPoller(ModelRepository* repository, const Options& options)
    : repository_(repository), options_(options) {}

RepositoryPoller::~RepositoryPoller() { Stop(); }

std::map<std::string, RepositoryPoller::Observed> RepositoryPoller::Observe() const {
  std::map<std::string, Observed> out;
  for (auto& [name, dirs] : repository_->ListModelDirs()) {
    Observed o;
    o.dirs = dirs;
    if (dirs.size() == 1) o.fingerprint = FingerprintModelDir(dirs.front());
    out.emplace(name, std::move(o));
  }
  return out;
}

void RepositoryPoller::Prime() {
  MutexLock lock(scan_mu_);
  seen_ = Observe();
  applied_ = seen_;
}

void RepositoryPoller::Start() {
  thread_ = StartNamedThread("repo-poller", [this] { Loop(); });
}

void RepositoryPoller::Trigger() {
  {
    MutexLock lock(mu_);
    triggered_ = true;
  }
  cv_.notify_all();
}

void RepositoryPoller::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RepositoryPoller::Loop() {
  UniqueLock lock(mu_);
  for (;;) {
    auto ready = [&]() REQUIRES(mu_) { return stopping_ || triggered_; };
    if (options_.interval_secs > 0) {
      lock.WaitFor(cv_, std::chrono::seconds(options_.interval_secs), ready);
    } else {
      lock.Wait(cv_, ready);
    }
    if (stopping_) return;
    if (triggered_) LOG_INFO("rescanning the model repository (SIGHUP)");
    triggered_ = false;
    lock.Unlock();
    ScanOnce();
    lock.Lock();
  }
}

void RepositoryPoller::ScanOnce() {
  MutexLock lock(scan_mu_);
  const auto started = std::chrono::steady_clock::now();
  std::map<std::string, Observed> current = Observe();
  LOG_VERBOSE(1, "repository scan: {} model(s) fingerprinted in {} ms", current.size(),
              std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - started)
                  .count());
  std::set<std::string> names;
  for (const auto* m : {&current, &seen_, &applied_}) {
    for (const auto& [name, o] : *m) names.insert(name);
  }
  std::vector<Task> tasks;
  for (const std::string& name : names) {
    auto cur = current.find(name);
    auto prev = seen_.find(name);
    const bool now = cur != current.end();
    const bool before = prev != seen_.end();
    if (now != before || (now && !(cur->second == prev->second))) {
      LOG_VERBOSE(1, "model '{}' changed since the last scan; waiting for it to settle", name);
      continue;
    }
    auto app = applied_.find(name);
    if (!now) {
      if (app != applied_.end()) {
        repository_->Forget(name);
        applied_.erase(app);
      }
      continue;
    }
    if (app != applied_.end() && app->second == cur->second) continue;
    if (cur->second.dirs.size() > 1) {
      LOG_ERROR("failed to poll model '{}': not unique across all model repositories", name);
      repository_->MarkDuplicate(name);
      applied_[name] = cur->second;
      continue;
    }
    Task task{name, cur->second.dirs.front(), {}};
    if (app != applied_.end() && app->second.dirs == cur->second.dirs &&
        app->second.fingerprint.model_files == cur->second.fingerprint.model_files) {
      for (const auto& [v, hash] : cur->second.fingerprint.versions) {
        auto old = app->second.fingerprint.versions.find(v);
        if (old == app->second.fingerprint.versions.end() || old->second != hash) continue;
        // Only the directory that names the version (not "01" beside "1") makes it reusable.
        if (auto version = config::ParseVersion(v)) task.reusable.insert(*version);
      }
    }
    applied_[name] = cur->second;
    tasks.push_back(std::move(task));
  }
  seen_ = std::move(current);
  RunTasks(tasks);
}

void RepositoryPoller::RunTasks(const std::vector<Task>& tasks) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < tasks.size(); i = next++) {
      const Task& t = tasks[i];
      LOG_INFO("model '{}' changed on disk; (re)loading", t.name);
      Status s = repository_->ReloadFromDirectory(t.name, t.dir, t.reusable);
      if (!s.ok()) LOG_ERROR("{}", s.message());
    }
  };
  const size_t n = std::min<size_t>(std::max(1, options_.load_thread_count), tasks.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i) {
    threads.push_back(StartNamedThread("model-load", [&worker] { worker(); }));
  }
  worker();
  for (auto& t : threads) t.join();
  if (!tasks.empty() && options_.after_loads) options_.after_loads();
}

}  // namespace nereid
