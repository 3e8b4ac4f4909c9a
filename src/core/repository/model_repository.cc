#include "core/repository/model_repository.h"

#include <algorithm>
#include <thread>

#include "common/logging.h"

namespace nereid {

const char* ModelStateName(ModelState state) {
  switch (state) {
    case ModelState::kReady: return "READY";
    case ModelState::kUnavailable: return "UNAVAILABLE";
    case ModelState::kLoading: return "LOADING";
    case ModelState::kUnloading: return "UNLOADING";
    case ModelState::kUnknown: break;
  }
  return "UNKNOWN";
}

StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::Create(const Options& options) {
  if (options.roots.empty()) return InvalidArgument("--model-repository must be specified");
  for (const auto& root : options.roots) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) {
      return InvalidArgument("failed to stat repository '" + root.string() +
                             "': not a readable directory");
    }
  }
  std::unique_ptr<ModelRepository> repo(new ModelRepository(options));
  repo->serving_.store(std::make_shared<const ServingTable>());
  return repo;
}

ModelRepository::~ModelRepository() { UnloadAll(); }

std::map<std::string, std::filesystem::path> ModelRepository::Scan(std::vector<Status>* errors) {
  std::map<std::string, std::vector<std::filesystem::path>> found;
  for (const auto& root : options_.roots) {
    std::error_code ec;
    // increment(ec) rather than range-for: a directory changing under the scan must not throw.
    for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code ec2;
      if (!it->is_directory(ec2)) continue;
      found[it->path().filename().string()].push_back(it->path());
    }
    if (ec) errors->push_back(Internal("cannot list '" + root.string() + "': " + ec.message()));
  }
  std::map<std::string, std::filesystem::path> unique;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, dirs] : found) {
    ModelEntry& entry = models_[name];
    entry.dir = dirs.front();
    if (dirs.size() > 1) {
      entry.failure = "model appears in two or more repositories";
      errors->push_back(Unavailable("model '" + name + "': " + entry.failure));
      continue;
    }
    unique[name] = dirs.front();
  }
  return unique;
}

std::vector<Status> ModelRepository::LoadAll() {
  std::vector<Status> errors;
  const auto todo = Scan(&errors);
  std::vector<std::pair<std::string, std::filesystem::path>> items(todo.begin(), todo.end());
  std::atomic<size_t> next{0};
  std::mutex errors_mu;
  auto worker = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      Status s = LoadModel(items[i].first, items[i].second);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(errors_mu);
        errors.push_back(std::move(s));
      }
    }
  };
  const size_t n = std::min<size_t>(std::max(1, options_.load_thread_count), items.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return errors;
}

Status ModelRepository::LoadModel(const std::string& name, const std::filesystem::path& dir) {
  LOG_INFO("loading model '{}' from {}", name, dir.string());
  // The first version's load time (nv_model_load_duration_secs) includes resolving the config.
  uint64_t started = NowNs();
  auto resolved = ResolveModel(name, dir, *options_.registry, options_.resolve);
  if (!resolved.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    models_[name].failure = resolved.status().ToString();
    LOG_ERROR("failed to load model '{}': {}", name, resolved.status().message());
    return resolved.status();
  }
  Status first_error;
  for (int64_t v : resolved->versions) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      models_[name].versions[v].status = {v, ModelState::kLoading, ""};
    }
    ModelVersion::Options mo{v, dir, resolved->backend, resolved->config, resolved->config_json};
    mo.latency_observers = &options_.latency_observers;
    mo.load_started_ns = started;
    started = 0;  // later versions count from their own start
    auto loaded = ModelVersion::Load(mo);
    std::lock_guard<std::mutex> lock(mu_);
    VersionSlot& slot = models_[name].versions[v];
    if (loaded.ok()) {
      slot.model = std::move(loaded).value();
      slot.status = {v, ModelState::kReady, ""};
      LOG_INFO("successfully loaded '{}' version {}", name, v);
    } else {
      slot.status = {v, ModelState::kUnavailable, loaded.status().ToString()};
      LOG_ERROR("failed to load '{}' version {}: {}", name, v, loaded.status().message());
      if (first_error.ok()) first_error = loaded.status();
    }
    PublishLocked();
  }
  return first_error;
}

void ModelRepository::PublishLocked() {
  auto table = std::make_shared<ServingTable>();
  for (const auto& [name, entry] : models_) {
    for (const auto& [v, slot] : entry.versions) {
      if (slot.status.state == ModelState::kReady && slot.model) (*table)[name][v] = slot.model;
    }
  }
  serving_.store(std::move(table));
}

StatusOr<std::shared_ptr<ModelVersion>> ModelRepository::Get(const std::string& name,
                                                             int64_t version) const {
  const auto table = serving_.load();
  auto it = table->find(name);
  if (it == table->end() || it->second.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (models_.count(name) == 0) {
      return NotFound("Request for unknown model: '" + name + "' is not found");
    }
    if (version < 0) {
      return Unavailable("Request for unknown model: '" + name + "' has no available versions");
    }
  }
  if (version < 0) return it->second.rbegin()->second;
  if (it != table->end()) {
    auto v = it->second.find(version);
    if (v != it->second.end()) return v->second;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto m = models_.find(name);
  if (m != models_.end() && m->second.versions.count(version) != 0) {
    return Unavailable("Request for unknown model: '" + name + "' version " +
                       std::to_string(version) + " is not at ready state");
  }
  return NotFound("Request for unknown model: '" + name + "' version " + std::to_string(version) +
                  " is not found");
}

StatusOr<bool> ModelRepository::IsReady(const std::string& name, int64_t version) const {
  auto model = Get(name, version);
  if (model.ok()) return true;
  if (model.status().code() == StatusCode::kUnavailable) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (models_.count(name) != 0) return false;  // known model, unknown version
  return model.status();
}

std::vector<int64_t> ModelRepository::ReadyVersions(const std::string& name) const {
  std::vector<int64_t> out;
  const auto table = serving_.load();
  auto it = table->find(name);
  if (it != table->end()) {
    for (const auto& [v, m] : it->second) out.push_back(v);
  }
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<ModelVersion>>> ModelRepository::ReadyModels()
    const {
  std::vector<std::pair<std::string, std::shared_ptr<ModelVersion>>> out;
  const auto table = serving_.load();
  for (const auto& [name, versions] : *table) {
    for (const auto& [v, model] : versions) out.emplace_back(name, model);
  }
  return out;
}

std::vector<ModelStatus> ModelRepository::Index() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelStatus> out;
  for (const auto& [name, entry] : models_) {
    ModelStatus ms{name, {}};
    if (!entry.failure.empty()) ms.versions.push_back({-1, ModelState::kUnavailable, entry.failure});
    for (const auto& [v, slot] : entry.versions) ms.versions.push_back(slot.status);
    out.push_back(std::move(ms));
  }
  return out;
}

bool ModelRepository::AllReady() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, entry] : models_) {
    if (!entry.failure.empty()) return false;
    for (const auto& [v, slot] : entry.versions) {
      const bool unloaded =
          slot.status.state == ModelState::kUnavailable && slot.status.reason == "unloaded";
      if (slot.status.state != ModelState::kReady && !unloaded) return false;
    }
  }
  return true;
}

void ModelRepository::UnloadAll() {
  std::vector<std::shared_ptr<ModelVersion>> dropping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, entry] : models_) {
      for (auto& [v, slot] : entry.versions) {
        if (slot.model) dropping.push_back(std::move(slot.model));
        if (slot.status.state == ModelState::kReady) {
          slot.status = {v, ModelState::kUnavailable, "unloaded"};
        }
      }
    }
    PublishLocked();
  }
  dropping.clear();  // outside the lock: destroying a version joins its executors
}

}  // namespace nereid
