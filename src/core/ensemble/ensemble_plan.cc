#include "core/ensemble/ensemble_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "model_config.pb.h"

namespace nereid {

size_t EnsemblePlan::Intern(const std::string& name) {
  auto it = tensor_index_.find(name);
  if (it != tensor_index_.end()) return it->second;
  const size_t t = tensor_names_.size();
  tensor_names_.push_back(name);
  tensor_index_.emplace(name, t);
  consumers_.emplace_back();
  producers_.push_back(-1);
  return t;
}

int64_t EnsemblePlan::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? -1 : static_cast<int64_t>(it->second);
}

StatusOr<EnsemblePlan> EnsemblePlan::Build(const inference::ModelConfig& config) {
  EnsemblePlan plan;
  plan.name_ = config.name();
  plan.max_inflight_requests_ = config.ensemble_scheduling().max_inflight_requests();
  for (const auto& input : config.input()) plan.Intern(input.name());
  const auto& steps = config.ensemble_scheduling().step();
  for (int i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    EnsembleStepPlan step;
    step.model_name = s.model_name();
    step.model_version = s.model_version();
    const std::map<std::string, std::string> in(s.input_map().begin(), s.input_map().end());
    const std::map<std::string, std::string> out(s.output_map().begin(), s.output_map().end());
    std::set<size_t> distinct;
    for (const auto& [model_input, tensor] : in) {
      const size_t t = plan.Intern(tensor);
      step.inputs.emplace_back(model_input, t);
      if (distinct.insert(t).second) plan.consumers_[t].push_back(static_cast<size_t>(i));
    }
    step.distinct_inputs = distinct.size();
    for (const auto& [model_output, tensor] : out) {
      const size_t t = plan.Intern(tensor);
      if (plan.producers_[t] != -1) {
        return InvalidArgument("ensemble tensor '" + tensor +
                               "' can appear in an output map only once for ensemble '" +
                               config.name() + "' step " + std::to_string(i));
      }
      plan.producers_[t] = i;
      step.outputs.emplace_back(model_output, t);
    }
    plan.steps_.push_back(std::move(step));
  }
  for (const auto& output : config.output()) {
    const int64_t t = plan.FindTensor(output.name());
    if (t < 0) {
      return InvalidArgument("ensemble output '" + output.name() + "' for ensemble " +
                             config.name() + "' is not used");
    }
    plan.outputs_.push_back(static_cast<size_t>(t));
  }
  return plan;
}

std::vector<bool> EnsemblePlan::NeededSteps(const std::vector<size_t>& wanted) const {
  std::vector<bool> needed(steps_.size(), false);
  std::vector<bool> seen(tensor_names_.size(), false);
  std::vector<size_t> todo(wanted.begin(), wanted.end());
  while (!todo.empty()) {
    const size_t t = todo.back();
    todo.pop_back();
    if (seen[t]) continue;
    seen[t] = true;
    const int64_t p = producers_[t];
    if (p < 0 || needed[p]) continue;
    needed[p] = true;
    for (const auto& [name, in] : steps_[p].inputs) todo.push_back(in);
  }
  return needed;
}

}  // namespace nereid
