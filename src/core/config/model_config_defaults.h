// Triton's defaults for a model configuration (core:src/model_config_utils.cc
// NormalizeModelConfig + NormalizeInstanceGroup), applied after the backend's auto-complete and
// before validation. Thread-safe pure function.
#pragma once

#include <cstdint>
#include <string>

#include "model_config.pb.h"
#include "nereid/status.h"

namespace nereid::config {

// Triton's SEQUENCE_IDLE_DEFAULT_MICROSECONDS.
inline constexpr uint64_t kDefaultMaxSequenceIdleMicroseconds = 1000000;

struct NormalizeOptions {
  std::string model_dir_name;          // the model's directory name: the default `name`
  std::string default_model_filename;  // from the backend; empty leaves the field empty
  int default_cpu_instance_count = 1;  // from the backend; values < 1 mean 1
  bool gpus_available = false;
};

// Fills, in place:
//   name                       <- opts.model_dir_name when empty;
//   version_policy             <- latest { num_versions: 1 } when unset;
//   default_model_filename     <- opts.default_model_filename when empty;
//   dynamic_batching.preferred_batch_size, sequence_batching.oldest.preferred_batch_size
//                              <- [max_batch_size] when empty and max_batch_size > 0;
//   sequence_batching.max_sequence_idle_microseconds <- 1 s when 0;
//   optimization.{input,output}_pinned_memory.enable <- true when unset (not for ensembles);
//   instance_group (not for ensembles, which may not have one): when empty, one group
//     { name: "<model>", kind: KIND_CPU, count: default_cpu_instance_count }; then in each group
//     an empty name becomes "<model>_<index>", KIND_AUTO becomes KIND_CPU (KIND_GPU when
//     gpus_available), and count 0 becomes default_cpu_instance_count for KIND_CPU, 1 otherwise.
// Errors (InvalidArgument): a negative instance count; a KIND_GPU group without GPUs.
Status NormalizeModelConfig(inference::ModelConfig* config, const NormalizeOptions& opts);

}  // namespace nereid::config
