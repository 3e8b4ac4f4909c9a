#include "core/model/model_version_trace.h"

#include <chrono>

#include "core/stats/model_stats.h"

namespace nereid {

void TraceRequestStart(trace::Trace& trace, const ModelInfo& model,
                       const InferenceRequest& request) {
  const auto received =
      std::chrono::duration_cast<std::chrono::nanoseconds>(request.received_at.time_since_epoch())
          .count();
  trace.Start(model.name, model.version, request.id, static_cast<uint64_t>(received));
  if (trace.tensors()) {
    for (const InferInput& in : request.inputs) {
      trace.Tensor("TENSOR_QUEUE_INPUT", in.name, in.data_type, in.shape, in.data);
    }
  }
  trace.Capture("QUEUE_START", NowNs());
}

InferCallback TracedCallback(std::shared_ptr<trace::Trace> trace, InferCallback done) {
  return [trace = std::move(trace),
          done = std::move(done)](StatusOr<std::unique_ptr<InferenceResponse>> result) mutable {
    if (result.ok()) {
      const ComputeDurations& c = (*result)->compute;
      if (c.start_ns != 0) {
        trace->Capture("COMPUTE_START", c.start_ns);
        trace->Capture("COMPUTE_INPUT_END", c.start_ns + c.input_ns);
        trace->Capture("COMPUTE_OUTPUT_START", c.start_ns + c.input_ns + c.infer_ns);
        trace->Capture("COMPUTE_END", c.start_ns + c.input_ns + c.infer_ns + c.output_ns);
      }
      if (trace->tensors()) {
        for (const InferOutput& out : (*result)->outputs) {
          trace->Tensor("TENSOR_BACKEND_OUTPUT", out.name, out.data_type, out.shape, out.data);
        }
      }
    }
    trace->Capture("REQUEST_END", NowNs());
    trace.reset();  // a root trace is collected here unless an ensemble step still holds it
    done(std::move(result));
  };
}

}  // namespace nereid
