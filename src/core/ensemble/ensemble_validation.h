// The ensemble checks that need the composing models' effective configurations (REFERENCE-2 §7.1,
// "checks once the composing models are loaded"), with Triton's texts (core ensemble_utils.cc):
// maximum batch sizes, that every mapping names an existing tensor of the composing model, that
// every required input of a step is mapped, and that each ensemble tensor has one data type and
// compatible shapes wherever it is produced or consumed.
#pragma once

#include <vector>

#include "nereid/status.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

// `steps[i]` is the configuration of step i's composing model (in step order). Pure.
// Ends with ValidateDecoupledFlow.
Status ValidateEnsembleComposing(const inference::ModelConfig& ensemble,
                                 const std::vector<const inference::ModelConfig*>& steps);

// Triton's decoupled data-flow rule (REFERENCE-2 §7.3): a step whose inputs descend from different
// decoupled steps (or some from a decoupled step and some not), or ensemble outputs that do, is
// refused with `in ensemble <e>, step of model '<m>' receives inputs originated from different
// decoupled models` (<m> is the ensemble's own name for its outputs). Pure.
Status ValidateDecoupledFlow(const inference::ModelConfig& ensemble,
                             const std::vector<const inference::ModelConfig*>& steps);

}  // namespace nereid
