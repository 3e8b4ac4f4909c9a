#include "core/trace/trace_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/logging.h"
#include "common/thread_name.h"

namespace nereid::trace {

struct TraceWriter::File {
  std::FILE* main = nullptr;  // open once written; closed with "]" at Stop
  uint64_t next_index = 0;
};

TraceWriter::TraceWriter(size_t max_pending_bytes) : max_pending_bytes_(max_pending_bytes) {}

TraceWriter::~TraceWriter() { Stop(); }

bool TraceWriter::Post(Job&& job) {
  uint64_t to_log = 0;
  {
    MutexLock lock(mu_);
    if (!stopping_ && pending_bytes_ + job.records.size() <= max_pending_bytes_) {
      if (!thread_.joinable()) {
        // Started by the first job: a server that never writes a trace has no writer thread.
        thread_ = StartNamedThread("trace-writer", [this] { Loop(); });
      }
      pending_bytes_ += job.records.size();
      queue_.push_back(std::move(job));
      ++posted_;
      cv_.notify_all();
      return true;
    }
    ++dropped_;
    to_log = drop_log_.Allow(LogThrottle::Clock::now());
  }
  if (to_log > 0) {
    LOG_WARNING("trace writer queue is full: dropped {} batch(es) of traces for '{}'", to_log,
                job.path);
  }
  return false;
}

void TraceWriter::Flush() {
  UniqueLock lock(mu_);
  const uint64_t target = posted_;
  while (written_ < target) lock.Wait(cv_);
}

uint64_t TraceWriter::dropped_jobs() const {
  MutexLock lock(mu_);
  return dropped_;
}

bool TraceWriter::thread_started() const {
  MutexLock lock(mu_);
  return thread_.joinable();
}

void TraceWriter::Loop() {
  for (;;) {
    Job job;
    {
      UniqueLock lock(mu_);
      while (queue_.empty() && !stopping_) lock.Wait(cv_);
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      pending_bytes_ -= job.records.size();
    }
    Write(job);
    MutexLock lock(mu_);
    ++written_;
    cv_.notify_all();
  }
}

void TraceWriter::Write(const Job& job) {
  std::unique_ptr<File>& file = files_[job.path];
  if (!file) file = std::make_unique<File>();
  if (job.indexed) {
    // Written under a temporary name and renamed: a reader never sees half a file.
    const std::string name = job.path + "." + std::to_string(file->next_index++);
    const std::string partial = name + ".partial";
    std::FILE* f = std::fopen(partial.c_str(), "w");
    if (f == nullptr) {
      LOG_ERROR("failed creating trace file: {}: {}", name, std::strerror(errno));
      return;
    }
    std::fputc('[', f);
    std::fwrite(job.records.data(), 1, job.records.size(), f);
    std::fputc(']', f);
    if (std::fclose(f) != 0 || std::rename(partial.c_str(), name.c_str()) != 0) {
      LOG_ERROR("failed creating trace file: {}: {}", name, std::strerror(errno));
    }
    return;
  }
  if (file->main == nullptr) {
    file->main = std::fopen(job.path.c_str(), "w");
    if (file->main == nullptr) {
      LOG_ERROR("failed creating trace file: {}: {}", job.path, std::strerror(errno));
      return;
    }
    std::fputc('[', file->main);
  } else {
    std::fputc(',', file->main);
  }
  std::fwrite(job.records.data(), 1, job.records.size(), file->main);
  std::fflush(file->main);
}

void TraceWriter::Stop() {
  std::thread thread;
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    thread.swap(thread_);
  }
  cv_.notify_all();
  if (thread.joinable()) thread.join();
  for (auto& [path, file] : files_) {
    if (file->main == nullptr) continue;
    std::fputc(']', file->main);
    std::fclose(file->main);
    file->main = nullptr;
  }
}

}  // namespace nereid::trace
