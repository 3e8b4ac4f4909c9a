#include "core/repository/config_resolver.h"

#include "common/logging.h"
#include "core/config/model_config_defaults.h"
#include "core/config/model_config_io.h"
#include "core/config/model_config_json.h"
#include "core/config/model_config_validate.h"
#include "core/config/version_policy.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

StatusOr<const BackendRegistry::Entry*> FindBackend(const std::string& name,
                                                    const std::filesystem::path& dir,
                                                    const std::vector<int64_t>& versions,
                                                    const BackendRegistry& registry,
                                                    inference::ModelConfig* config) {
  const BackendRegistry::Entry* entry = nullptr;
  if (!config->backend().empty()) {
    entry = registry.FindByName(config->backend());
    if (entry == nullptr) {
      return InvalidArgument("model '" + name + "': unknown backend '" + config->backend() + "'");
    }
  } else if (!config->platform().empty()) {
    entry = registry.FindByPlatform(config->platform());
    if (entry == nullptr) {
      return InvalidArgument("model '" + name + "': unknown platform '" + config->platform() + "'");
    }
  } else {
    std::vector<std::filesystem::path> dirs;
    for (int64_t v : versions) dirs.push_back(dir / std::to_string(v));
    entry = registry.DetectFromFiles(dirs);
    if (entry == nullptr) {
      return InvalidArgument("model '" + name +
                             "': the configuration must name a platform or a backend");
    }
  }
  if (config->backend().empty()) config->set_backend(entry->info.name);
  if (config->platform().empty() && !entry->info.platforms.empty() &&
      config->backend() == entry->info.name) {
    config->set_platform(entry->info.platforms.front());
  }
  return entry;
}

Status AutoComplete(const std::string& name, const std::filesystem::path& dir, int64_t version,
                    const BackendRegistry::Entry& entry, int default_max_batch_size,
                    inference::ModelConfig* config) {
  backend::AutoCompleteOptions ac;
  ac.model_name = name;
  const std::string file = config->default_model_filename().empty()
                               ? entry.info.default_model_filename
                               : config->default_model_filename();
  ac.model_path = (dir / std::to_string(version) / file).string();
  ac.config_json = config::ModelConfigToJson(*config);
  ac.default_max_batch_size = default_max_batch_size;
  auto completed = entry.backend->AutoCompleteConfig(ac);
  if (!completed.ok()) return completed.status();
  auto parsed = config::ModelConfigFromJson(*completed);
  if (!parsed.ok()) {
    return Internal("model '" + name + "': backend '" + entry.info.name +
                    "' returned an invalid configuration: " + parsed.status().message());
  }
  *config = std::move(parsed).value();
  return Status::Ok();
}

}  // namespace

StatusOr<ResolvedModel> ResolveModel(const std::string& name, const std::filesystem::path& dir,
                                     const BackendRegistry& registry, const ResolveOptions& options,
                                     const inference::ModelConfig* override_config) {
  inference::ModelConfig config;
  if (override_config != nullptr) {
    config = *override_config;
    config.set_name(name);
  } else {
    auto read = config::ReadModelConfig(dir, options.model_config_name);
    if (!read.ok()) return read.status();
    const bool has_file = read->has_value();
    if (!has_file && !options.auto_complete) {
      return InvalidArgument("model '" + name +
                             "': no config.pbtxt, and auto-complete is disabled");
    }
    if (has_file) config = std::move(**read);
  }
  if (config.name().empty()) config.set_name(name);

  const std::vector<int64_t> available = config::ListVersionDirectories(
      dir, [&](const std::string& msg) { LOG_WARNING("model '{}': {}", name, msg); });

  // An ensemble is served by the core (src/core/ensemble/), not by a backend.
  const bool ensemble = config.platform() == config::kEnsemblePlatform && config.backend().empty();
  const BackendRegistry::Entry* entry = nullptr;
  if (!ensemble) {
    NEREID_ASSIGN_OR_RETURN(entry, FindBackend(name, dir, available, registry, &config));
  }
  if (entry != nullptr && options.auto_complete && entry->info.supports_auto_complete &&
      !available.empty()) {
    NEREID_RETURN_IF_ERROR(
        AutoComplete(name, dir, available.back(), *entry, options.default_max_batch_size, &config));
  }
  config::NormalizeOptions norm;
  norm.model_dir_name = name;
  if (entry != nullptr) {
    norm.default_model_filename = entry->info.default_model_filename;
    norm.default_cpu_instance_count = entry->info.default_cpu_instance_count;
  }
  NEREID_RETURN_IF_ERROR(config::NormalizeModelConfig(&config, norm));
  config::ValidateOptions val;
  val.model_dir_name = name;
  NEREID_RETURN_IF_ERROR(config::ValidateModelConfig(config, val));

  std::vector<int64_t> missing;
  auto versions = config::SelectVersions(config.version_policy(), available, name, &missing);
  for (int64_t v : missing) {
    LOG_ERROR("model '{}': version {} is listed by the version policy but has no directory", name,
              v);
  }
  if (!versions.ok()) return versions.status();

  ResolvedModel out;
  out.backend = entry;
  out.versions = std::move(versions).value();
  out.config_json = std::make_shared<const std::string>(config::ModelConfigToJson(config));
  out.config = std::make_shared<const inference::ModelConfig>(std::move(config));
  return out;
}

}  // namespace nereid
