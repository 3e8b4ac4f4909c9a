// Runs a batch of requests of a decoupled model (model_transaction_policy { decoupled: true }) as
// one backend execution under the dynamic or the sequence batcher: one DecoupledSender per
// request, in batch order (backend_api.h ExecuteArgs::senders), so each request's responses flow
// to its own callback. A single request runs as the default scheduler runs it; several are
// gathered along the batch dimension as batch_runner.h does. A plugin that uses no sender answers
// through the allocator: the outputs are split per request and become each one's FINAL response.
//
// Thread-safety: stateless; callers guarantee one Execute at a time per instance.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/model/decoupled_sender.h"
#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/stats/model_stats.h"
#include "nereid/backend_api.h"

namespace nereid {

// `requests`, `batch_sizes` (each >= 1) and `dones` are parallel; each `dones[i]` is called exactly
// once, with request i's FINAL response or the error that ends it, maybe after this returns and on
// another thread. Returns what the execution returned (a failure also ends every request that has
// not sent FINAL with it). `times` (required) receives when the execution's phases ran. Rows
// whose `fillers` entry is true (sequence batcher padding) record no response statistics.
// With `taken_back` (a caller that can take requests back: iterative sequences), it gets one entry
// per request: the requests the backend rescheduled (backend API v7), with their callbacks and
// response progress, else nullopt; without, a rescheduled request ends with RescheduleRefused().
// `progress` (one per request, or empty) continues the responses of requests rescheduled before.
Status RunDecoupledBatchOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::vector<std::unique_ptr<InferenceRequest>> requests,
    const std::vector<int64_t>& batch_sizes, std::vector<InferCallback> dones, ModelStats* stats,
    ExecutionTimes* times, const std::vector<bool>& fillers = {},
    std::vector<std::optional<DecoupledSender::TakenBack>>* taken_back = nullptr,
    std::span<const ResponseProgress> progress = {});

}  // namespace nereid
