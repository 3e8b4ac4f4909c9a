// The identity backend plugin: output i of the configuration is a copy of input i (by position),
// with the same datatype and shape. Used for framework-overhead benchmarks, so Execute touches no
// JSON and allocates nothing itself: one lookup and one memcpy per requested output.
//
// Thread-safety: every object here is immutable after construction (instances share one const
// plan), so all of them may be called concurrently.
//
// Parameters: `execute_delay_ms` (default 0) sleeps that long in every Execute, to emulate a slow
// model in scheduler tests.
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/config_reader.h"
#include "nereid/backend_api.h"

namespace nereid::backends::identity {
namespace {

// Built once at load; immutable and shared by the instances.
struct Plan {
  struct Pair {
    std::string input;
    std::string output;
    DataType data_type = DataType::kInvalid;
  };
  std::vector<Pair> pairs;
  std::chrono::milliseconds delay{0};
};

class IdentityInstance final : public backend::ModelInstance {
 public:
  explicit IdentityInstance(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}

  Status Execute(const backend::ExecuteArgs& args) override {
    if (args.outputs == nullptr) return InvalidArgument("identity: no output allocator");
    try {
      if (plan_->delay.count() > 0) std::this_thread::sleep_for(plan_->delay);
      size_t written = 0;
      for (const Plan::Pair& pair : plan_->pairs) {
        if (!args.outputs->IsRequested(pair.output)) continue;
        NEREID_RETURN_IF_ERROR(Copy(pair, args));
        ++written;
      }
      if (written == 0) {  // nobody asked: produce every output
        for (const Plan::Pair& pair : plan_->pairs) NEREID_RETURN_IF_ERROR(Copy(pair, args));
      }
      return Status::Ok();
    } catch (const std::exception& e) {
      return Internal(std::string("identity execute failure: ") + e.what());
    } catch (...) {
      return Internal("identity execute failure: unknown exception");
    }
  }

 private:
  static Status Copy(const Plan::Pair& pair, const backend::ExecuteArgs& args) {
    const backend::TensorRef* in = nullptr;
    for (const backend::TensorRef& t : args.inputs) {
      if (t.name == pair.input) {
        in = &t;
        break;
      }
    }
    if (in == nullptr) {
      return InvalidArgument("identity execute failure: input '" + pair.input +
                             "' is required for output '" + pair.output + "'");
    }
    NEREID_ASSIGN_OR_RETURN(
        std::span<char> dst,
        args.outputs->Allocate(pair.output, pair.data_type, in->shape, in->data.size()));
    if (dst.size() < in->data.size()) {
      return Internal("identity execute failure: short buffer for output '" + pair.output + "'");
    }
    if (!in->data.empty()) std::memcpy(dst.data(), in->data.data(), in->data.size());
    return Status::Ok();
  }

  const std::shared_ptr<const Plan> plan_;
};

class IdentityModel final : public backend::Model {
 public:
  explicit IdentityModel(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}

  StatusOr<std::unique_ptr<backend::ModelInstance>> CreateInstance(
      const backend::InstanceOptions&) override {
    try {
      return std::unique_ptr<backend::ModelInstance>(std::make_unique<IdentityInstance>(plan_));
    } catch (const std::exception& e) {
      return Internal(std::string("identity: ") + e.what());
    }
  }

 private:
  const std::shared_ptr<const Plan> plan_;
};

StatusOr<std::shared_ptr<const Plan>> MakePlan(const std::string& model_name,
                                               const ModelConfig& config) {
  const std::string prefix = "unable to load model '" + model_name + "', ";
  if (config.inputs.size() < config.outputs.size()) {
    return InvalidArgument(prefix + "the identity backend needs at least as many inputs as " +
                           "outputs (output i copies input i); configuration has " +
                           std::to_string(config.inputs.size()) + " inputs and " +
                           std::to_string(config.outputs.size()) + " outputs");
  }
  auto plan = std::make_shared<Plan>();
  for (size_t i = 0; i < config.outputs.size(); ++i) {
    const IoConfig& in = config.inputs[i];
    const IoConfig& out = config.outputs[i];
    if (in.data_type != out.data_type) {
      return InvalidArgument(prefix + "identity output '" + out.name + "' (" +
                             std::string(DataTypeConfigName(out.data_type)) +
                             ") must have the datatype of input '" + in.name + "' (" +
                             std::string(DataTypeConfigName(in.data_type)) + ")");
    }
    plan->pairs.push_back({in.name, out.name, out.data_type});
  }
  StatusOr<int64_t> delay = IntParameter(config, "execute_delay_ms", 0, 0, 3'600'000);
  if (!delay.ok()) return InvalidArgument(prefix + delay.status().message());
  plan->delay = std::chrono::milliseconds(*delay);
  return std::shared_ptr<const Plan>(std::move(plan));
}

class IdentityBackend final : public backend::Backend {
 public:
  backend::BackendInfo Info() const override { return {"identity", {}, "", false}; }

  StatusOr<std::string> AutoCompleteConfig(const backend::AutoCompleteOptions&) override {
    return Unsupported("the identity backend does not auto-complete configurations");
  }

  StatusOr<std::unique_ptr<backend::Model>> LoadModel(
      const backend::ModelLoadOptions& options) override {
    try {
      NEREID_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(options.config_json));
      NEREID_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan,
                              MakePlan(options.model_name, config));
      return std::unique_ptr<backend::Model>(std::make_unique<IdentityModel>(std::move(plan)));
    } catch (const std::exception& e) {
      return Internal("failed to load model '" + options.model_name + "': " + e.what());
    }
  }
};

}  // namespace
}  // namespace nereid::backends::identity

NEREID_BACKEND_EXPORT uint32_t NereidBackendApiVersion() {
  return nereid::backend::kBackendApiVersion;
}

NEREID_BACKEND_EXPORT nereid::backend::Backend* NereidBackendCreate(
    const nereid::backend::BackendOptions*, std::string* error) {
  try {
    return new nereid::backends::identity::IdentityBackend();
  } catch (const std::exception& e) {
    if (error != nullptr) *error = std::string("identity backend: ") + e.what();
  }
  return nullptr;
}
