// The tensors the sequence batcher adds to and takes from each execution: control inputs (START,
// END, READY, CORRID), implicit state inputs (the sequence's stored state, or its initial state
// on a START request), and the state outputs it keeps for the next request.
//
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/scheduler/sequence/sequence_options.h"

namespace nereid {

struct CorrelationId {
  bool is_string = false;
  uint64_t number = 0;
  std::string text;

  std::string Key() const;       // distinct for 5 and "5"
  std::string ToString() const;  // for messages
};

// One sequence's implicit state: per StateSpec, its shape (without batch) and bytes.
struct StoredState {
  bool valid = false;
  std::vector<Shape> shapes;
  std::vector<std::string> data;
};

// The model as executions see it: the configured inputs plus the control and state inputs, the
// configured outputs plus the state outputs.
ModelInfo SequenceExecInfo(const ModelInfo& model, const SequenceOptions& options);

// Adds the control inputs (row values: start, end, ready, corrid) and the state inputs to
// `request` (one batch row). `state` is the sequence's stored state, or null for the initial
// state (a START request).
void AddSequenceInputs(const SequenceOptions& options, bool start, bool end, bool ready,
                       const CorrelationId& corrid, const StoredState* state,
                       InferenceRequest* request);

// A request standing for an empty Direct slot: the same inputs as `like` (one row), all zeros,
// READY/START/END false, CORRID 0.
std::unique_ptr<InferenceRequest> MakeFillerRequest(const SequenceOptions& options,
                                                    const InferenceRequest& like);

// Moves the state outputs of `response` (one row) into `state`, checking their shapes against
// the state dims, then keeps only `client_outputs` in the response, in that order.
Status TakeStateOutputs(const ModelInfo& model, const SequenceOptions& options,
                        const std::vector<std::string>& client_outputs, InferenceResponse* response,
                        StoredState* state);

}  // namespace nereid
