#include "core/ensemble/ensemble_validation.h"

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
  return Status::Ok();
}

}  // namespace nereid
