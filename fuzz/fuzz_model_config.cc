// config.pbtxt: protobuf text parsing, then the validation every loaded configuration goes
// through. The same bytes are also tried as the JSON form the load API's `config` override uses.
// A valid ensemble is also compiled into its plan and checked against composing configurations
// (itself for every step: any config is a possible composing model).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/config/model_config_io.h"
#include "core/config/model_config_json.h"
#include "core/config/model_config_validate.h"
#include "core/ensemble/ensemble_plan.h"
#include "core/ensemble/ensemble_validation.h"
#include "model_config.pb.h"

namespace {

void CheckEnsemble(const inference::ModelConfig& config) {
  if (!config.has_ensemble_scheduling()) return;
  auto plan = nereid::EnsemblePlan::Build(config);
  if (plan.ok()) {
    for (size_t t = 0; t < plan->tensor_count(); ++t) (void)plan->NeededSteps({t});
  }
  std::vector<const inference::ModelConfig*> steps(config.ensemble_scheduling().step_size(),
                                                   &config);
  (void)nereid::ValidateEnsembleComposing(config, steps);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nereid::config::ValidateOptions opts;
  opts.model_dir_name = "model";
  auto parsed = nereid::config::ParseModelConfigText(text, "/repo/model/config.pbtxt");
  if (parsed.ok() && nereid::config::ValidateModelConfig(*parsed, opts).ok()) {
    CheckEnsemble(*parsed);
  }
  auto from_json = nereid::config::ModelConfigFromJson(text);
  if (from_json.ok()) {
    opts.name_may_differ = true;
    if (nereid::config::ValidateModelConfig(*from_json, opts).ok()) CheckEnsemble(*from_json);
  }
  return 0;
}
