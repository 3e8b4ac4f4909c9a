#include "core/ensemble/ensemble_validation.h"

#include <algorithm>
#include <map>
#include <string>

#include "model_config.pb.h"

namespace nereid {
namespace {

// What one model says about an ensemble tensor.
struct TensorFacts {
  inference::DataType data_type = inference::TYPE_INVALID;
  std::vector<int64_t> dims;  // as configured, without the batch dimension
  bool batching = false;
  std::string model;  // who said it
};

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

bool DimsMatch(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != -1 && b[i] != -1) return false;
  }
  return true;
}

std::vector<int64_t> FullDims(const TensorFacts& f) {
  std::vector<int64_t> full;
  if (f.batching) full.push_back(-1);
  full.insert(full.end(), f.dims.begin(), f.dims.end());
  return full;
}

// Shapes match with -1 as a wildcard, either as configured or in full (batch dimension included).
bool ShapesCompatible(const TensorFacts& a, const TensorFacts& b) {
  return DimsMatch(a.dims, b.dims) || DimsMatch(FullDims(a), FullDims(b));
}

template <typename Io>
TensorFacts FactsOf(const Io& io, const inference::ModelConfig& model) {
  return TensorFacts{io.data_type(), std::vector<int64_t>(io.dims().begin(), io.dims().end()),
                     model.max_batch_size() > 0, model.name()};
}

// The tensor of `list` called `name`, or nullptr.
template <typename List>
const typename List::value_type* FindByName(const List& list, const std::string& name) {
  for (const auto& item : list) {
    if (item.name() == name) return &item;
  }
  return nullptr;
}

Status Record(const std::string& ensemble, const std::string& tensor, const TensorFacts& facts,
              std::map<std::string, TensorFacts>* known) {
  auto [it, inserted] = known->emplace(tensor, facts);
  if (inserted) return Status::Ok();
  const TensorFacts& prior = it->second;
  if (prior.data_type != facts.data_type) {
    return InvalidArgument(
        "in ensemble " + ensemble + ", ensemble tensor " + tensor +
        ": inconsistent data type: " + inference::DataType_Name(prior.data_type) +
        " is inferred from model " + prior.model + " while " +
        inference::DataType_Name(facts.data_type) + " is inferred from model " + facts.model);
  }
  if (!ShapesCompatible(prior, facts)) {
    return InvalidArgument("in ensemble " + ensemble + ", ensemble tensor " + tensor +
                           ": inconsistent shape: " + DimsText(FullDims(prior)) +
                           " is inferred from model " + prior.model + " while " +
                           DimsText(FullDims(facts)) + " is inferred from model " + facts.model);
  }
  return Status::Ok();
}

}  // namespace

Status ValidateEnsembleComposing(const inference::ModelConfig& ensemble,
                                 const std::vector<const inference::ModelConfig*>& steps) {
  const std::string& e = ensemble.name();
  std::map<std::string, TensorFacts> known;
  for (const auto& in : ensemble.input()) {
    NEREID_RETURN_IF_ERROR(Record(e, in.name(), FactsOf(in, ensemble), &known));
  }
  for (const auto& out : ensemble.output()) {
    NEREID_RETURN_IF_ERROR(Record(e, out.name(), FactsOf(out, ensemble), &known));
  }
  const auto& step_configs = ensemble.ensemble_scheduling().step();
  for (int i = 0; i < step_configs.size() && i < static_cast<int>(steps.size()); ++i) {
    const auto& step = step_configs[i];
    const inference::ModelConfig& model = *steps[i];
    const std::string& m = step.model_name();
    if (ensemble.max_batch_size() > 0 && model.max_batch_size() > 0 &&
        model.max_batch_size() < ensemble.max_batch_size()) {
      return InvalidArgument(
          "ensemble " + e + " allows maximum batch size " +
          std::to_string(ensemble.max_batch_size()) + ", but it contains model " + m +
          " which only allows maximum batch size to be " + std::to_string(model.max_batch_size()));
    }
    const std::map<std::string, std::string> input_map(step.input_map().begin(),
                                                       step.input_map().end());
    const std::map<std::string, std::string> output_map(step.output_map().begin(),
                                                        step.output_map().end());
    for (const auto& [model_input, tensor] : input_map) {
      const auto* found = FindByName(model.input(), model_input);
      if (found == nullptr) {
        return InvalidArgument("in ensemble " + e + ", ensemble tensor " + tensor +
                               " is mapping to non-existing input " + model_input + " in model " +
                               m);
      }
      TensorFacts facts = FactsOf(*found, model);
      facts.model = m;
      NEREID_RETURN_IF_ERROR(Record(e, tensor, facts, &known));
    }
    for (const auto& in : model.input()) {
      if (!in.optional() && input_map.count(in.name()) == 0) {
        return InvalidArgument("in ensemble " + e + ", input " + in.name() + " in model " + m +
                               " is not mapped to any ensemble tensors");
      }
    }
    for (const auto& [model_output, tensor] : output_map) {
      const auto* found = FindByName(model.output(), model_output);
      if (found == nullptr) {
        return InvalidArgument("in ensemble " + e + ", ensemble tensor " + tensor +
                               " is mapped from non-existing output " + model_output +
                               " in model " + m);
      }
      TensorFacts facts = FactsOf(*found, model);
      facts.model = m;
      NEREID_RETURN_IF_ERROR(Record(e, tensor, facts, &known));
    }
  }
  return ValidateDecoupledFlow(ensemble, steps);
}

Status ValidateDecoupledFlow(const inference::ModelConfig& ensemble,
                             const std::vector<const inference::ModelConfig*>& steps) {
  // Triton's rule (core ensemble_utils.cc): every tensor carries the label of the decoupled step
  // it descends from (0: none); a step's inputs, and the ensemble's outputs, must share one.
  const std::string& e = ensemble.name();
  std::map<std::string, size_t> label;
  for (const auto& in : ensemble.input()) label[in.name()] = 0;
  const auto& step_configs = ensemble.ensemble_scheduling().step();
  const size_t count = std::min(static_cast<size_t>(step_configs.size()), steps.size());
  std::vector<bool> done(count, false);
  size_t next_label = 0;
  auto same = [&](const std::vector<std::string>& tensors, const std::string& model,
                  size_t* common) -> Status {
    for (size_t k = 0; k < tensors.size(); ++k) {
      const size_t l = label.at(tensors[k]);
      if (k == 0) *common = l;
      if (l != *common) {
        return InvalidArgument("in ensemble " + e + ", step of model '" + model +
                               "' receives inputs originated from different decoupled models");
      }
    }
    return Status::Ok();
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < count; ++i) {
      if (done[i]) continue;
      std::vector<std::string> inputs;
      bool ready = true;
      for (const auto& [model_input, tensor] : step_configs[static_cast<int>(i)].input_map()) {
        ready = ready && label.count(tensor) > 0;
        inputs.push_back(tensor);
      }
      if (!ready) continue;
      size_t in_label = 0;
      NEREID_RETURN_IF_ERROR(
          same(inputs, step_configs[static_cast<int>(i)].model_name(), &in_label));
      const size_t out_label =
          steps[i]->model_transaction_policy().decoupled() ? ++next_label : in_label;
      for (const auto& [model_output, tensor] : step_configs[static_cast<int>(i)].output_map()) {
        label.emplace(tensor, out_label);
      }
      done[i] = true;
      progress = true;
    }
  }
  std::vector<std::string> outputs;
  for (const auto& out : ensemble.output()) {
    if (label.count(out.name()) == 0) return Status::Ok();  // unreachable: reported elsewhere
    outputs.push_back(out.name());
  }
  size_t common = 0;
  return same(outputs, e, &common);
}

}  // namespace nereid
