// The repository's part of serving ensembles (REFERENCE-2 §7.1, §7.4): before an ensemble's
// versions are created, the composing models it names are loaded if nothing loaded them yet (they
// then count as implicitly loaded, for unload_dependents), checked against the ensemble, and the
// ensemble's scheduler is given a lookup into the serving table so each step runs on the version
// serving at that moment.
//
// Ensembles that contain each other are found through the chain of ensembles this thread is
// loading (a composing ensemble is loaded recursively on the same thread) before any load mutex
// is taken, so a self reference or a cycle is an error, never a deadlock.
#include <algorithm>
#include <set>

#include "common/logging.h"
#include "core/config/model_config_io.h"
#include "core/config/model_config_json.h"
#include "core/config/model_config_validate.h"
#include "core/ensemble/ensemble_plan.h"
#include "core/ensemble/ensemble_scheduler.h"
#include "core/ensemble/ensemble_validation.h"
#include "core/repository/model_repository.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

// The ensembles this thread is loading, outermost first.
thread_local std::vector<std::string> loading_ensembles;

struct ChainEntry {
  explicit ChainEntry(const std::string& name) { loading_ensembles.push_back(name); }
  ~ChainEntry() { loading_ensembles.pop_back(); }
};

}  // namespace

void ModelRepository::RevalidateDependents(const std::string& name) {
  std::vector<std::string> dependents;
  {
    MutexLock lock(mu_);
    for (const auto& [ensemble, entry] : models_) {
      if (std::find(entry.composing.begin(), entry.composing.end(), name) ==
          entry.composing.end()) {
        continue;
      }
      if (std::find(loading_ensembles.begin(), loading_ensembles.end(), ensemble) !=
          loading_ensembles.end()) {
        continue;  // it is loading name itself, and checks it when that returns
      }
      bool serving = false;
      for (const auto& [v, slot] : entry.versions) serving = serving || slot.model != nullptr;
      if (serving) dependents.push_back(ensemble);
    }
  }
  for (const std::string& ensemble : dependents) {
    LOG_INFO("model '{}' changed: checking ensemble '{}' again", name, ensemble);
    const bool implicit = [&] {
      MutexLock lock(mu_);
      return models_[ensemble].implicit;
    }();
    Status s = Load(ensemble, {});
    std::vector<std::shared_ptr<ModelVersion>> dropping;
    {
      MutexLock lock(mu_);
      ModelEntry& entry = models_[ensemble];
      entry.implicit = implicit;  // a re-check is not a load by name
      if (!s.ok()) {
        UnloadLocked(ensemble, entry, &dropping);
        entry.failure = s.ToString();
        PublishLocked();
      }
    }
    if (!s.ok()) LOG_ERROR("ensemble '{}' no longer fits '{}': {}", ensemble, name, s.message());
    dropping.clear();  // outside the lock: the reaper destroys what no request holds
  }
}

bool ModelRepository::IsEnsembleDir(const std::filesystem::path& dir) const {
  auto config = config::ReadModelConfig(dir, options_.resolve.model_config_name);
  return config.ok() && config->has_value() && (*config)->platform() == config::kEnsemblePlatform;
}

Status ModelRepository::ComposingError(const std::string& ensemble, const std::string& model,
                                       int64_t version) {
  MutexLock lock(mu_);
  auto it = models_.find(model);
  if (it == models_.end()) {
    return InvalidArgument("ensemble " + ensemble +
                           " contains models that are not available or ambiguous: " + model);
  }
  const ModelEntry& entry = it->second;
  std::string failure = entry.failure;
  bool any_ready = false;
  for (const auto& [v, slot] : entry.versions) {
    any_ready = any_ready || slot.model != nullptr;
    if (failure.empty() && slot.life.state() == VersionState::kFailed &&
        (version < 0 || v == version)) {
      failure = slot.life.reason();
    }
  }
  if (!failure.empty()) {
    return InvalidArgument("ensemble '" + ensemble + "' depends on '" + model +
                           "' which is not valid. Model '" + model +
                           "' failed with error: " + failure);
  }
  if (version >= 0 && any_ready) {
    return InvalidArgument("ensemble '" + ensemble + "' depends on '" + model +
                           "' whose required version " + std::to_string(version) +
                           " is not loaded.");
  }
  return InvalidArgument("ensemble '" + ensemble + "' depends on '" + model +
                         "' which has no loaded version.");
}

StatusOr<std::function<StatusOr<std::unique_ptr<Scheduler>>(const ModelInfo&, ModelStats*)>>
ModelRepository::PrepareEnsemble(const std::string& name, ResolvedModel* resolved) {
  const std::shared_ptr<const inference::ModelConfig> keep = resolved->config;  // may be replaced
  const inference::ModelConfig& config = *keep;
  std::vector<std::string> composing;
  for (const auto& step : config.ensemble_scheduling().step()) {
    if (std::find(composing.begin(), composing.end(), step.model_name()) == composing.end()) {
      composing.push_back(step.model_name());
    }
  }
  // Circular dependencies first: loading the same ensemble again on this thread would deadlock.
  for (const std::string& m : composing) {
    std::vector<std::string> chain = loading_ensembles;
    if (chain.empty() || chain.back() != name) chain.push_back(name);
    auto at = std::find(chain.begin(), chain.end(), m);
    if (at == chain.end()) continue;
    std::string text;
    for (auto i = at; i != chain.end(); ++i) text += *i + " -> ";
    return InvalidArgument("circular dependency between ensembles: " + text + m);
  }
  // Unknown composing models, all named at once.
  const auto dirs = ListModelDirs();
  std::vector<std::string> unknown;
  std::vector<std::string> to_load;
  std::vector<std::string> in_progress;  // being loaded by another thread: waited for
  {
    MutexLock lock(mu_);
    for (const std::string& m : composing) {
      auto d = dirs.find(m);
      const bool known = models_.count(m) != 0 && !models_.at(m).forgotten;
      if (d == dirs.end() || d->second.size() > 1) {
        if (!known) unknown.push_back(m);
        continue;
      }
      // Loaded when nothing serves it and no failure says why (a failed model's error is
      // reported below instead of loading it again).
      bool serving_or_failed = false;
      if (known) {
        const ModelEntry& entry = models_.at(m);
        serving_or_failed = !entry.failure.empty();
        bool loading = false;
        for (const auto& [v, slot] : entry.versions) {
          serving_or_failed = serving_or_failed || slot.model != nullptr ||
                              slot.life.state() == VersionState::kFailed;
          loading = loading || slot.life.state() == VersionState::kLoading;
        }
        if (loading && !serving_or_failed) {
          in_progress.push_back(m);
          continue;
        }
      }
      if (!serving_or_failed) to_load.push_back(m);
    }
  }
  if (!unknown.empty()) {
    std::string list;
    for (const std::string& m : unknown) list += (list.empty() ? "" : ", ") + m;
    return InvalidArgument("ensemble " + name +
                           " contains models that are not available or ambiguous: " + list);
  }
  for (const std::string& m : in_progress) {
    const std::shared_ptr<Mutex> load_mu = LoadMutex(m);
    MutexLock wait(*load_mu);  // held by the load in progress until it commits
  }
  {
    ChainEntry chain(name);
    for (const std::string& m : to_load) {
      LOG_INFO("loading model '{}' for ensemble '{}'", m, name);
      Status s = Load(m, {});
      MutexLock lock(mu_);
      models_[m].implicit = true;
      if (!s.ok()) LOG_ERROR("ensemble '{}': composing model '{}': {}", name, m, s.message());
    }
  }
  // Every step's model, as serving now, checked against the ensemble.
  std::vector<std::shared_ptr<ModelVersion>> held;
  std::vector<const inference::ModelConfig*> step_configs;
  for (const auto& step : config.ensemble_scheduling().step()) {
    auto model = Get(step.model_name(), step.model_version());
    if (!model.ok()) return ComposingError(name, step.model_name(), step.model_version());
    step_configs.push_back((*model)->config().get());
    held.push_back(std::move(model).value());
  }
  NEREID_RETURN_IF_ERROR(ValidateEnsembleComposing(config, step_configs));
  NEREID_ASSIGN_OR_RETURN(EnsemblePlan plan, EnsemblePlan::Build(config));
  // A decoupled step makes the ensemble decoupled (REFERENCE-2 §7.1): its configuration says so,
  // and the frontends then treat it as they treat any decoupled model.
  bool decoupled = false;
  for (const inference::ModelConfig* step : step_configs) {
    decoupled = decoupled || step->model_transaction_policy().decoupled();
  }
  if (decoupled && !config.model_transaction_policy().decoupled()) {
    if (config.response_cache().enable()) {
      return InvalidArgument("Response Cache does not currently support model " + name +
                             " with 'decoupled' transaction policy. Please disable the response "
                             "cache.");
    }
    auto marked = std::make_shared<inference::ModelConfig>(config);
    marked->mutable_model_transaction_policy()->set_decoupled(true);
    resolved->config_json = std::make_shared<const std::string>(config::ModelConfigToJson(*marked));
    resolved->config = std::move(marked);
  }
  {
    MutexLock lock(mu_);
    models_[name].composing = composing;
  }
  auto shared_plan = std::make_shared<const EnsemblePlan>(std::move(plan));
  std::function<StatusOr<std::unique_ptr<Scheduler>>(const ModelInfo&, ModelStats*)> make =
      [this, shared_plan](const ModelInfo& info,
                          ModelStats* stats) -> StatusOr<std::unique_ptr<Scheduler>> {
    ModelLookup lookup = [this](const std::string& model, int64_t version) {
      return Get(model, version);
    };
    return std::unique_ptr<Scheduler>(
        std::make_unique<EnsembleScheduler>(&info, stats, *shared_plan, std::move(lookup)));
  };
  return make;
}

}  // namespace nereid
