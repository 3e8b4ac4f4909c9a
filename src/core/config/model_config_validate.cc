#include "core/config/model_config_validate.h"

#include "core/config/validate_internal.h"

namespace nereid::config {
namespace {

using inference::ModelInstanceGroup;
using internal::ModelError;

Status ValidateIdentity(const inference::ModelConfig& config, const ValidateOptions& opts) {
  if (config.name().empty()) {
    return InvalidArgument("model configuration must specify 'name'");
  }
  if (!opts.name_may_differ && !opts.model_dir_name.empty() &&
      config.name() != opts.model_dir_name) {
    return InvalidArgument("unexpected directory name '" + opts.model_dir_name + "' for model '" +
                           config.name() + "', directory name must equal model name");
  }
  if (config.platform().empty() && config.backend().empty()) {
    return ModelError(config, "must specify 'platform' or 'backend'");
  }
  if (config.max_batch_size() < 0) {
    return ModelError(config, "'max_batch_size' must be non-negative, got " +
                                  std::to_string(config.max_batch_size()));
  }
  return Status::Ok();
}

Status ValidateVersionPolicy(const inference::ModelConfig& config) {
  if (!config.has_version_policy()) return ModelError(config, "must specify 'version_policy'");
  const auto& policy = config.version_policy();
  switch (policy.policy_choice_case()) {
    case inference::ModelVersionPolicy::kLatest:
      if (policy.latest().num_versions() < 1) {
        return ModelError(config, "'version_policy.latest.num_versions' must be >= 1, got " +
                                      std::to_string(policy.latest().num_versions()));
      }
      return Status::Ok();
    case inference::ModelVersionPolicy::kSpecific:
      if (policy.specific().versions().empty()) {
        return ModelError(config,
                          "'version_policy.specific.versions' must list at least one "
                          "version");
      }
      for (int64_t v : policy.specific().versions()) {
        if (v < 0) {
          return ModelError(
              config, "'version_policy.specific.versions' must be >= 0, got " + std::to_string(v));
        }
      }
      return Status::Ok();
    case inference::ModelVersionPolicy::kAll:
      return Status::Ok();
    case inference::ModelVersionPolicy::POLICY_CHOICE_NOT_SET:
      break;
  }
  return ModelError(config, "'version_policy' must be one of 'latest', 'all' or 'specific'");
}

// Runs after NormalizeModelConfig, so kinds are resolved and counts filled in.
Status ValidateInstanceGroups(const inference::ModelConfig& config) {
  if (config.platform() == kEnsemblePlatform) return Status::Ok();  // ValidateEnsemble's job
  if (config.instance_group().empty()) {
    return ModelError(config, "must specify one or more 'instance_group's");
  }
  int64_t instances = 0;
  for (const auto& group : config.instance_group()) {
    const std::string what = "instance group " + group.name() + " of model " + config.name();
    switch (group.kind()) {
      case ModelInstanceGroup::KIND_CPU:
      case ModelInstanceGroup::KIND_MODEL:
        if (!group.gpus().empty()) {
          return InvalidArgument(what + " has kind " + ModelInstanceGroup::Kind_Name(group.kind()) +
                                 " but specifies one or more GPUs");
        }
        break;
      case ModelInstanceGroup::KIND_GPU:
        break;
      default:
        return InvalidArgument(what + " has unexpected kind " +
                               (ModelInstanceGroup::Kind_IsValid(group.kind())
                                    ? ModelInstanceGroup::Kind_Name(group.kind())
                                    : std::to_string(group.kind())));
    }
    if (group.count() < 1) {
      return InvalidArgument(what + " has invalid 'count' " + std::to_string(group.count()) +
                             ": must be >= 1");
    }
    instances += group.count();
  }
  if (instances > kMaxInstancesPerModel) {
    return ModelError(config, "'instance_group' asks for " + std::to_string(instances) +
                                  " instances; at most " + std::to_string(kMaxInstancesPerModel) +
                                  " are allowed per model");
  }
  return Status::Ok();
}

Status ValidateWarmupInput(const inference::ModelConfig& config, const std::string& what,
                           const std::string& name, const inference::ModelWarmup::Input& in) {
  const std::string input = what + " input '" + name + "'";
  if (name.empty()) return ModelError(config, what + ": input names must not be empty");
  if (in.data_type() == inference::TYPE_INVALID || !inference::DataType_IsValid(in.data_type())) {
    return ModelError(config, input + ": must specify a valid 'data_type'");
  }
  for (int64_t d : in.dims()) {
    if (d < 0) {
      return ModelError(config, input + ": 'dims' must be integers >= 0, got " +
                                    internal::DimsToString(
                                        {in.dims().data(), static_cast<size_t>(in.dims_size())}));
    }
  }
  using Input = inference::ModelWarmup::Input;
  if (in.input_data_type_case() == Input::INPUT_DATA_TYPE_NOT_SET) {
    return ModelError(config, input +
                                  ": must specify one of 'zero_data', 'random_data' or "
                                  "'input_data_file'");
  }
  if (in.has_input_data_file() && !internal::IsContainedRelativePath(in.input_data_file())) {
    return ModelError(config, input +
                                  ": 'input_data_file' must be a relative path inside the "
                                  "model's warmup directory, got '" +
                                  in.input_data_file() + "'");
  }
  return Status::Ok();
}

Status ValidateWarmup(const inference::ModelConfig& config) {
  for (int i = 0; i < config.model_warmup_size(); ++i) {
    const auto& warmup = config.model_warmup(i);
    if (warmup.name().empty()) {
      return ModelError(config, "model_warmup " + std::to_string(i) + ": must specify 'name'");
    }
    const std::string what = "model_warmup '" + warmup.name() + "'";
    if (config.max_batch_size() > 0 &&
        warmup.batch_size() > static_cast<uint32_t>(config.max_batch_size())) {
      return ModelError(config, what + ": 'batch_size' " + std::to_string(warmup.batch_size()) +
                                    " must be <= max_batch_size " +
                                    std::to_string(config.max_batch_size()));
    }
    if (warmup.inputs().empty()) return ModelError(config, what + ": must specify 'inputs'");
    for (const auto& [name, input] : warmup.inputs()) {
      NEREID_RETURN_IF_ERROR(ValidateWarmupInput(config, what, name, input));
    }
  }
  return Status::Ok();
}

Status ValidateMisc(const inference::ModelConfig& config) {
  if (config.model_transaction_policy().decoupled() && config.response_cache().enable()) {
    return ModelError(config,
                      "'response_cache' is not supported with a 'decoupled' transaction "
                      "policy; disable the response cache");
  }
  for (const auto& control : config.model_metrics().metric_control()) {
    if (control.metric_identifier().family().empty()) {
      return ModelError(config, "model_metrics: 'metric_identifier.family' must not be empty");
    }
    if (control.histogram_options().buckets().empty()) {
      return ModelError(config, "model_metrics: metric control '" +
                                    control.metric_identifier().family() +
                                    "' must specify 'histogram_options.buckets'");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateModelConfig(const inference::ModelConfig& config, const ValidateOptions& opts) {
  NEREID_RETURN_IF_ERROR(ValidateIdentity(config, opts));
  NEREID_RETURN_IF_ERROR(ValidateVersionPolicy(config));
  NEREID_RETURN_IF_ERROR(internal::ValidateTensors(config));
  NEREID_RETURN_IF_ERROR(internal::ValidateScheduling(config));
  NEREID_RETURN_IF_ERROR(ValidateInstanceGroups(config));
  NEREID_RETURN_IF_ERROR(ValidateWarmup(config));
  return ValidateMisc(config);
}

}  // namespace nereid::config
