#include "core/config/model_config_defaults.h"

#include <algorithm>

namespace nereid::config {
namespace {

using inference::ModelInstanceGroup;

Status NormalizeInstanceGroups(inference::ModelConfig* config, const NormalizeOptions& opts) {
  const int cpu_count = std::max(1, opts.default_cpu_instance_count);
  if (config->instance_group().empty()) {
    ModelInstanceGroup* group = config->add_instance_group();
    group->set_name(config->name());
    group->set_kind(ModelInstanceGroup::KIND_CPU);
    group->set_count(cpu_count);
  }
  int index = 0;
  for (ModelInstanceGroup& group : *config->mutable_instance_group()) {
    if (group.name().empty()) group.set_name(config->name() + "_" + std::to_string(index));
    ++index;
    if (group.kind() == ModelInstanceGroup::KIND_AUTO) {
      group.set_kind(opts.gpus_available ? ModelInstanceGroup::KIND_GPU
                                         : ModelInstanceGroup::KIND_CPU);
    }
    if (group.kind() == ModelInstanceGroup::KIND_GPU && !opts.gpus_available) {
      return InvalidArgument("instance group " + group.name() + " of model " + config->name() +
                             " has kind KIND_GPU but no GPUs are available");
    }
    if (group.count() < 0) {
      return InvalidArgument("instance group " + group.name() + " of model " + config->name() +
                             " has invalid 'count' " + std::to_string(group.count()) +
                             ": must be >= 1, or 0 for the backend's default");
    }
    if (group.count() == 0) {
      group.set_count(group.kind() == ModelInstanceGroup::KIND_CPU ? cpu_count : 1);
    }
  }
  return Status::Ok();
}

void NormalizeScheduling(inference::ModelConfig* config) {
  const int32_t max_batch = config->max_batch_size();
  if (config->has_dynamic_batching()) {
    auto* db = config->mutable_dynamic_batching();
    if (db->preferred_batch_size().empty() && max_batch > 0)
      db->add_preferred_batch_size(max_batch);
  }
  if (config->has_sequence_batching()) {
    auto* sb = config->mutable_sequence_batching();
    if (sb->max_sequence_idle_microseconds() == 0) {
      sb->set_max_sequence_idle_microseconds(kDefaultMaxSequenceIdleMicroseconds);
    }
    if (sb->has_oldest() && sb->oldest().preferred_batch_size().empty() && max_batch > 0) {
      sb->mutable_oldest()->add_preferred_batch_size(max_batch);
    }
  }
}

}  // namespace

Status NormalizeModelConfig(inference::ModelConfig* config, const NormalizeOptions& opts) {
  if (config->name().empty()) config->set_name(opts.model_dir_name);
  if (!config->has_version_policy()) {
    config->mutable_version_policy()->mutable_latest()->set_num_versions(1);
  }
  if (config->default_model_filename().empty()) {
    config->set_default_model_filename(opts.default_model_filename);
  }
  NormalizeScheduling(config);
  if (config->has_ensemble_scheduling()) return Status::Ok();

  auto* optimization = config->mutable_optimization();
  if (!optimization->has_input_pinned_memory()) {
    optimization->mutable_input_pinned_memory()->set_enable(true);
  }
  if (!optimization->has_output_pinned_memory()) {
    optimization->mutable_output_pinned_memory()->set_enable(true);
  }
  return NormalizeInstanceGroups(config, opts);
}

}  // namespace nereid::config
