// The ensemble rules a configuration can be checked against on its own (REFERENCE-2 §7.1 "static
// checks"), in Triton's order and words (core model_config_utils.cc): platform and backend,
// forbidden sections, the steps' fields, then the data flow from the ensemble inputs through the
// steps to the ensemble outputs. Checks that need the composing models' configurations are
// src/core/ensemble/ensemble_validation.cc's.
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/config/model_config_validate.h"
#include "core/config/validate_internal.h"

namespace nereid::config::internal {
namespace {

// One ensemble tensor of the data-flow graph: produced by at most one step (`produced`), ready
// once the ensemble inputs reach it.
struct FlowTensor {
  bool produced = false;
  bool ready = false;
  std::vector<std::string> prev;  // tensors the producing step reads
  std::vector<std::string> next;  // tensors of the steps that read this one
};

using FlowGraph = std::map<std::string, FlowTensor>;

Status BuildFlowGraph(const inference::ModelConfig& config, FlowGraph* graph) {
  const std::string& e = config.name();
  int index = 0;
  for (const auto& step : config.ensemble_scheduling().step()) {
    const std::string n = std::to_string(index);
    if (step.model_name().empty()) {
      return InvalidArgument("must specify 'model_name' in step " + n + " of ensemble '" + e + "'");
    }
    if (step.input_map().empty()) {
      return InvalidArgument("must specify 'input_map' in step " + n + " of ensemble '" + e + "'");
    }
    if (step.output_map().empty()) {
      return InvalidArgument("must specify 'output_map' in step " + n + " of ensemble '" + e + "'");
    }
    std::vector<std::string> outputs;
    // Sorted, so the tensor an error names does not depend on protobuf map order.
    const std::map<std::string, std::string> output_map(step.output_map().begin(),
                                                        step.output_map().end());
    for (const auto& [model_output, tensor] : output_map) {
      FlowTensor& t = (*graph)[tensor];
      if (t.produced) {
        return InvalidArgument("ensemble tensor '" + tensor +
                               "' can appear in an output map only once for ensemble '" + e +
                               "' step " + std::to_string(index));
      }
      t.produced = true;
      outputs.push_back(tensor);
    }
    const std::map<std::string, std::string> input_map(step.input_map().begin(),
                                                       step.input_map().end());
    for (const auto& [model_input, tensor] : input_map) {
      (*graph)[tensor];
      for (const std::string& out : outputs) {
        (*graph)[out].prev.push_back(tensor);
        (*graph)[tensor].next.push_back(out);
      }
    }
    ++index;
  }
  return Status::Ok();
}

// The first tensor behind `output` that keeps it from being written: one nothing produces, or
// (in a cycle) the first one that never became ready.
std::string MissingDependency(const FlowGraph& graph, const std::string& output) {
  std::set<std::string> seen;
  std::deque<std::string> todo{output};
  std::string first_unready;
  while (!todo.empty()) {
    const std::string name = todo.front();
    todo.pop_front();
    if (!seen.insert(name).second) continue;
    const FlowTensor& t = graph.at(name);
    if (t.ready) continue;
    if (name != output && first_unready.empty()) first_unready = name;
    if (!t.produced) return name;
    for (const std::string& p : t.prev) todo.push_back(p);
  }
  return first_unready;
}

Status ValidateFlow(const inference::ModelConfig& config) {
  const std::string& e = config.name();
  FlowGraph graph;
  NEREID_RETURN_IF_ERROR(BuildFlowGraph(config, &graph));
  std::deque<std::string> ready;
  for (const auto& input : config.input()) {
    auto it = graph.find(input.name());
    if (it == graph.end()) {
      // The stray quote is Triton's.
      return InvalidArgument("ensemble input '" + input.name() + "' for ensemble " + e +
                             "' is not used");
    }
    it->second.ready = true;
    ready.push_back(input.name());
  }
  while (!ready.empty()) {
    const std::string name = ready.front();
    ready.pop_front();
    for (const std::string& next : graph.at(name).next) {
      FlowTensor& n = graph.at(next);
      if (n.ready) continue;
      bool all = true;
      for (const std::string& p : n.prev) all = all && graph.at(p).ready;
      if (all) {
        n.ready = true;
        ready.push_back(next);
      }
    }
  }
  std::set<std::string> outputs;
  for (const auto& output : config.output()) {
    auto it = graph.find(output.name());
    if (it == graph.end()) {
      return InvalidArgument("ensemble output '" + output.name() + "' for ensemble " + e +
                             "' is not used");
    }
    if (!it->second.ready) {
      std::string message =
          "output '" + output.name() + "' for ensemble '" + e + "' is not written";
      const std::string missing = MissingDependency(graph, output.name());
      if (!missing.empty() && missing != output.name()) {
        message += ": at least one of its depending tensors, '" + missing + "', is not connected";
      }
      return InvalidArgument(message);
    }
    outputs.insert(output.name());
  }
  for (const auto& [name, tensor] : graph) {
    if (outputs.count(name) != 0) continue;
    if (!tensor.ready || tensor.next.empty()) {
      return InvalidArgument("ensemble tensor '" + name + "' is unused in ensemble '" + e + "'");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateEnsemble(const inference::ModelConfig& config) {
  const bool is_ensemble = config.platform() == kEnsemblePlatform;
  const std::string& e = config.name();
  if (is_ensemble && !config.backend().empty()) {
    return InvalidArgument("Ensemble model '" + e +
                           "' must have platform type 'ensemble' and empty backend type");
  }
  if (!config.has_ensemble_scheduling()) {
    if (!is_ensemble) return Status::Ok();
    return InvalidArgument("ensemble scheduling must be set for ensemble " + e +
                           " whose platform is ensemble");
  }
  if (!is_ensemble) {
    return InvalidArgument("ensemble scheduling cannot be set for model '" + e +
                           "' whose platform is not ensemble");
  }
  if (!config.instance_group().empty()) {
    return InvalidArgument("instance group should not be specified for ensemble '" + e + "'");
  }
  if (config.has_optimization()) {
    return InvalidArgument("optimization should not be specified for ensemble '" + e + "'");
  }
  if (!config.model_warmup().empty()) {
    return InvalidArgument("model_warmup can not be specified for ensemble '" + e + "'");
  }
  if (config.ensemble_scheduling().step().empty()) {
    return InvalidArgument("must specify 'step' for ensemble '" + e + "'");
  }
  return ValidateFlow(config);
}

}  // namespace nereid::config::internal
