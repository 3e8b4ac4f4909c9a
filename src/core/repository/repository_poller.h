// POLL mode (seed 002, REFERENCE.md §5.1): re-scans the repositories every
// --repository-poll-secs (or at once on Trigger, i.e. SIGHUP) and applies what changed: added
// and removed models, added, removed and changed version directories, edits to config.pbtxt,
// label files and any other file of a model.
//
// Stability rule (beyond Triton): a model directory is acted on only when two consecutive scans
// saw it identical (every file's path, size, modification time and content hash; see
// DirFingerprint) and different from what was last applied. A model being copied in is thus never
// loaded half-written as long as the writer keeps writing at least once per poll interval. A
// load that fails is retried only when the files change again. Removal is acted on once the
// directory has been absent from two consecutive scans.
//
// When only version directories changed, the versions whose files are unchanged keep serving
// untouched; any other change reloads every version (the old ones serve until the new are READY).
//
// Thread-safety: Trigger/Stop from any thread; scans serialize on scan_mu_. Loads of different
// models found in one scan run in parallel on up to load_thread_count threads.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "core/repository/dir_fingerprint.h"
#include "core/repository/model_repository.h"

namespace nereid {

class RepositoryPoller {
 public:
  struct Options {
    int interval_secs = 15;  // 0: no thread; scans happen only on Trigger/ScanOnce
    int load_thread_count = 4;
    // Called on the polling thread after a scan that loaded something (optional).
    std::function<void()> after_loads;
  };

  // `repository` must outlive the poller.
  RepositoryPoller(ModelRepository* repository, const Options& options);
  ~RepositoryPoller();  // Stop()

  // Records what is on disk now as both seen and applied (call right before the start-up load).
  void Prime() EXCLUDES(scan_mu_);
  // Starts the polling thread (also serves Trigger when interval_secs is 0).
  void Start();
  // Asks the thread for an immediate scan; returns at once.
  void Trigger() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);
  // One scan on the calling thread.
  void ScanOnce() EXCLUDES(scan_mu_);

 private:
  struct Observed {
    std::vector<std::filesystem::path> dirs;
    DirFingerprint fingerprint;
    bool operator==(const Observed& other) const = default;
  };
  struct Task {
    std::string name;
    std::filesystem::path dir;
    std::set<int64_t> reusable;
  };

  std::map<std::string, Observed> Observe() const;
  void Loop() EXCLUDES(mu_);
  // Within a scan: the loads it found, in parallel.
  void RunTasks(const std::vector<Task>& tasks) REQUIRES(scan_mu_);

  ModelRepository* repository_;
  Options options_;
  Mutex scan_mu_;
  std::map<std::string, Observed> seen_ GUARDED_BY(scan_mu_);     // the previous scan
  std::map<std::string, Observed> applied_ GUARDED_BY(scan_mu_);  // what was last acted on
  Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool triggered_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace nereid
