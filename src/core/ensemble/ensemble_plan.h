// EnsemblePlan: an ensemble's ensemble_scheduling compiled once at load into indexes, so a
// request's data flow (ensemble_run.h) never walks the protobuf: every ensemble tensor is a
// number, every step knows which tensors it reads and writes, every tensor which steps read it.
// The configuration is validated first (config/validate_ensemble.cc): each tensor has at most one
// producer and every output is reachable.
//
// Thread-safety: immutable after Build.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nereid/status.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

struct EnsembleStepPlan {
  std::string model_name;
  int64_t model_version = -1;  // -1: the latest ready version
  // (composing model input, ensemble tensor), sorted by input name.
  std::vector<std::pair<std::string, size_t>> inputs;
  // (composing model output, ensemble tensor), sorted by output name.
  std::vector<std::pair<std::string, size_t>> outputs;
  size_t distinct_inputs = 0;  // distinct ensemble tensors among `inputs`
};

class EnsemblePlan {
 public:
  static StatusOr<EnsemblePlan> Build(const inference::ModelConfig& config);

  const std::string& name() const { return name_; }
  // ensemble_scheduling.max_inflight_requests (0: unlimited).
  uint32_t max_inflight_requests() const { return max_inflight_requests_; }
  const std::vector<EnsembleStepPlan>& steps() const { return steps_; }
  size_t tensor_count() const { return tensor_names_.size(); }
  const std::string& tensor_name(size_t t) const { return tensor_names_[t]; }
  // The tensor's index, or -1 when no step reads or writes it.
  int64_t FindTensor(std::string_view name) const;
  // Steps that read tensor `t` (each once).
  const std::vector<size_t>& consumers(size_t t) const { return consumers_[t]; }
  // The step that writes tensor `t`, or -1 for an ensemble input.
  int64_t producer(size_t t) const { return producers_[t]; }
  // The ensemble's outputs in configuration order, as tensor indexes.
  const std::vector<size_t>& outputs() const { return outputs_; }
  // Which steps are needed to produce `wanted` tensors (pruning, REFERENCE-2 §7.2).
  std::vector<bool> NeededSteps(const std::vector<size_t>& wanted) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  size_t Intern(const std::string& name);

  std::string name_;
  uint32_t max_inflight_requests_ = 0;
  std::vector<EnsembleStepPlan> steps_;
  std::vector<std::string> tensor_names_;
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> tensor_index_;
  std::vector<std::vector<size_t>> consumers_;
  std::vector<int64_t> producers_;
  std::vector<size_t> outputs_;
};

}  // namespace nereid
