// RequestCompletion: the core's one object per inference request. It carries what the server
// keeps for a request from InferAsync until its result is handed to the frontend (the admission
// ticket, the model version, the classification flag, the shared-memory output targets and the
// frontend's own callback, inline), instead of one closure per stage each wrapping the next (four
// heap allocations per request before). Allocated from the calling thread's block cache
// (common/block_recycler.h), so a steady stream of requests allocates nothing here.
//
// Ownership: the returned InferCallback owns the completion; destroying the callback (after it ran,
// or unrun when a request is dropped) destroys the frontend's callback first, then the version,
// then the ticket, so the request is counted until nothing of it can run any more.
#pragma once

#include <memory>

#include "core/model/model_version.h"
#include "core/request/inference_request.h"
#include "core/server/admission.h"
#include "core/shm/shm_tensors.h"

namespace nereid {

// The callback to give ModelVersion::InferHeld: on the result it applies the version's last step
// (FinishResult), writes outputs asked into shared memory (`shm`, may be empty), then calls `done`.
InferCallback MakeRequestCompletion(Admission::Ticket&& ticket,
                                    std::shared_ptr<ModelVersion> version, bool classify,
                                    ShmOutputTargets&& shm, InferCallback&& done);

}  // namespace nereid
