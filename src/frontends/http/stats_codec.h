// JSON body of the statistics extension (seed 004): $stats_model_response, shaped and ordered as
// Triton writes it. Stateless; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/server/inference_server.h"

namespace nereid {

// {"model_stats":[{"name","version","last_inference","inference_count","execution_count",
//   "inference_stats":{...},"response_stats":{...},"batch_stats":[...],"memory_usage":[...]}]}
std::string EncodeModelStatistics(const std::vector<ModelVersionStatistics>& stats);

}  // namespace nereid
