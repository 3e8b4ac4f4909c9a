#include "core/trace/trace.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/trace/trace_json.h"

namespace nereid::trace {
namespace {

std::atomic<uint64_t> next_trace_id{1};

// Unwritten records of an unlimited, unrotated setting go to the main file in pieces this big, so
// a long run does not keep every trace in memory until shutdown (Triton does).
constexpr size_t kMainFileChunk = 1u << 20;

Status CheckWritable(const std::string& path) {
  struct stat st;
  const bool existed = ::stat(path.c_str(), &st) == 0;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    return InvalidArgument("failed to open trace file '" + path + "': " + std::strerror(errno));
  }
  std::fclose(f);
  if (!existed) ::unlink(path.c_str());  // created at the first write, as Triton does
  return Status::Ok();
}

}  // namespace

// The runtime state of one setting: sampling counters and the traces collected but not written.
class TraceSetting final : public std::enable_shared_from_this<TraceSetting> {
 public:
  TraceSetting(const TraceConfig& config, std::shared_ptr<TraceWriter> writer)
      : config_(config),
        valid_(InvalidReason(config).empty()),
        writer_(std::move(writer)),
        count_(config.count) {}

  ~TraceSetting() {
    MutexLock lock(mu_);
    if (!stream_.empty()) PostLocked(config_.log_frequency != 0);
  }

  const TraceConfig& config() const { return config_; }
  int32_t count() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return count_;
  }

  std::shared_ptr<Trace> Sample() EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      if (!valid_ || count_ == 0) {
        return nullptr;
      }
      if (++sample_ % config_.rate != 0) return nullptr;
      if (count_ > 0) --count_;
      ++created_;
    }
    const uint64_t id = next_trace_id.fetch_add(1, std::memory_order_relaxed);
    return std::shared_ptr<Trace>(new Trace(shared_from_this(), nullptr, id, 0, config_.level));
  }

  // Triton's WriteTrace: one finished trace (with its children's records).
  void Collect(const std::string& records) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (!stream_.empty() && !records.empty()) stream_ += ',';  // a trace may have no records
    stream_ += records;
    ++sample_in_stream_;
    ++collected_;
    if ((count_ == 0 && collected_ == created_) ||
        (config_.log_frequency != 0 && sample_in_stream_ >= config_.log_frequency)) {
      PostLocked(true);
    } else if (config_.log_frequency == 0 && stream_.size() >= kMainFileChunk) {
      PostLocked(false);
    }
  }

  std::shared_ptr<TraceWriter> writer() const { return writer_; }

 private:
  void PostLocked(bool indexed) REQUIRES(mu_) {
    sample_in_stream_ = 0;
    if (stream_.empty()) return;
    writer_->Post({config_.file, std::move(stream_), indexed});
    stream_.clear();
  }

  const TraceConfig config_;
  const bool valid_;  // not OFF, a rate, a file
  const std::shared_ptr<TraceWriter> writer_;
  mutable Mutex mu_;
  int32_t count_ GUARDED_BY(mu_);
  uint64_t sample_ GUARDED_BY(mu_) = 0;
  uint64_t created_ GUARDED_BY(mu_) = 0;
  uint64_t collected_ GUARDED_BY(mu_) = 0;
  uint64_t sample_in_stream_ GUARDED_BY(mu_) = 0;
  std::string stream_ GUARDED_BY(mu_);
};

Trace::Trace(std::shared_ptr<TraceSetting> setting, std::shared_ptr<Trace> root, uint64_t id,
             uint64_t parent_id, uint32_t level)
    : setting_(std::move(setting)),
      root_(std::move(root)),
      id_(id),
      parent_id_(parent_id),
      level_(level) {}

Trace::~Trace() {
  if (root_ != nullptr) return;  // a child's records are in its root already
  std::string records;
  {
    MutexLock lock(mu_);
    records.swap(records_);
  }
  setting_->Collect(records);
}

void Trace::Append(const std::string& record) {
  Trace* root = root_ != nullptr ? root_.get() : this;
  MutexLock lock(root->mu_);
  if (!root->records_.empty()) root->records_ += ',';
  root->records_ += record;
}

void Trace::Start(std::string_view model_name, int64_t model_version, std::string_view request_id,
                  uint64_t ns) {
  // Triton writes the header with the REQUEST_START timestamp, i.e. at TIMESTAMPS level only.
  if (!timestamps()) return;
  Append(StartRecord(id_, model_name, model_version, request_id, parent_id_));
  Capture("REQUEST_START", ns);
}

void Trace::Capture(std::string_view name, uint64_t ns) {
  if (timestamps()) Append(TimestampRecord(id_, name, ns));
}

void Trace::Tensor(std::string_view activity, std::string_view name, DataType type,
                   std::span<const int64_t> shape, std::span<const char> data) {
  if (tensors()) Append(TensorRecord(id_, activity, name, type, shape, data));
}

std::shared_ptr<Trace> Trace::SpawnChild() {
  std::shared_ptr<Trace> root = root_ != nullptr ? root_ : shared_from_this();
  const uint64_t id = next_trace_id.fetch_add(1, std::memory_order_relaxed);
  return std::shared_ptr<Trace>(new Trace(setting_, std::move(root), id, id_, level_));
}

// A setting as it was asked for: the keys it sets itself (the others fall back) and the live
// setting built from them.
struct TraceManager::Entry {
  std::optional<uint32_t> level;
  std::optional<uint32_t> rate;
  std::optional<int32_t> count;
  std::optional<uint32_t> log_frequency;
  std::shared_ptr<TraceSetting> setting;

  bool none() const { return !level && !rate && !count && !log_frequency; }
  TraceConfig Resolve(const TraceConfig& fallback) const {
    TraceConfig c = fallback;
    if (level) c.level = *level;
    if (rate) c.rate = *rate;
    if (count) c.count = *count;
    if (log_frequency) c.log_frequency = *log_frequency;
    return c;
  }
};

TraceManager::TraceManager(const TraceConfig& global)
    : writer_(std::make_shared<TraceWriter>()), defaults_(global) {}

StatusOr<std::shared_ptr<TraceManager>> TraceManager::Create(const TraceConfig& global) {
  if (global.mode != "triton") {
    return InvalidArgument("trace mode '" + global.mode +
                           "' is not supported by this build of Nereid (no OpenTelemetry "
                           "library); use --trace-config mode=triton");
  }
  if (!global.file.empty()) NEREID_RETURN_IF_ERROR(CheckWritable(global.file));
  std::shared_ptr<TraceManager> m(new TraceManager(global));
  MutexLock lock(m->mu_);
  m->global_ = std::make_shared<Entry>();
  m->global_->setting = std::make_shared<TraceSetting>(global, m->writer_);
  m->RefreshEnabled();
  return m;
}

TraceManager::~TraceManager() { Shutdown(); }

Status TraceManager::Update(const std::string& model, const TraceSettingsUpdate& update) {
  MutexLock lock(mu_);
  return UpdateLocked(model, update);
}

namespace {

template <typename T>
void ApplyChange(const Change<T>& change, std::optional<T>* field) {
  if (change) *field = *change;  // an empty inner value clears the key
}

}  // namespace

Status TraceManager::UpdateLocked(const std::string& model, const TraceSettingsUpdate& update) {
  const bool global = model.empty();
  auto found = models_.find(model);
  Entry next;
  if (global) {
    next = *global_;
  } else if (found != models_.end()) {
    next = *found->second;
  }
  ApplyChange(update.level, &next.level);
  ApplyChange(update.rate, &next.rate);
  ApplyChange(update.count, &next.count);
  ApplyChange(update.log_frequency, &next.log_frequency);
  const TraceConfig fallback = global ? defaults_ : global_->setting->config();
  const TraceConfig config = next.Resolve(fallback);
  if (config.level != kLevelOff) {
    const std::string reason = InvalidReason(config);
    if (!reason.empty()) {
      return InvalidArgument("Attempting to set invalid trace setting :" + reason);
    }
  }
  if (!global && next.none()) {
    if (found != models_.end()) models_.erase(found);
    RefreshEnabled();
    return Status::Ok();
  }
  next.setting = std::make_shared<TraceSetting>(config, writer_);
  if (!global) {
    models_[model] = std::make_shared<Entry>(std::move(next));
    RefreshEnabled();
    return Status::Ok();
  }
  global_ = std::make_shared<Entry>(std::move(next));
  // Models that fall back on the global setting for some key follow it.
  for (auto& [name, entry] : models_) {
    auto followed = std::make_shared<Entry>(*entry);
    followed->setting = std::make_shared<TraceSetting>(entry->Resolve(config), writer_);
    entry = std::move(followed);
  }
  RefreshEnabled();
  return Status::Ok();
}

void TraceManager::RefreshEnabled() {
  bool on = global_->setting->config().level != kLevelOff;
  for (const auto& [name, entry] : models_) on |= entry->setting->config().level != kLevelOff;
  enabled_.store(on, std::memory_order_relaxed);
}

TraceConfig TraceManager::Get(const std::string& model) const {
  std::shared_ptr<TraceSetting> setting;
  {
    MutexLock lock(mu_);
    auto it = models_.find(model);
    setting = it != models_.end() ? it->second->setting : global_->setting;
  }
  TraceConfig config = setting->config();
  config.count = setting->count();
  return config;
}

std::shared_ptr<Trace> TraceManager::Sample(const std::string& model) {
  std::shared_ptr<TraceSetting> setting;
  {
    MutexLock lock(mu_);
    auto it = models_.find(model);
    setting = it != models_.end() ? it->second->setting : global_->setting;
  }
  return setting->Sample();
}

void TraceManager::Flush() { writer_->Flush(); }

void TraceManager::Shutdown() {
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    // Replacing the settings lets each one write what it collected (traces still in flight keep
    // theirs alive and write them when they end, if the writer still runs). What is left is OFF.
    global_ = std::make_shared<Entry>();
    global_->setting = std::make_shared<TraceSetting>(TraceConfig{}, writer_);
    models_.clear();
    enabled_.store(false, std::memory_order_relaxed);
  }
  writer_->Stop();
}

}  // namespace nereid::trace
