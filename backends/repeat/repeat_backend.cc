// Triton's QA test backend `repeat` (repeat_backend:src/repeat.cc), a decoupled model: for a
// request with inputs IN (INT32 [n]), DELAY (UINT32 [n]) and WAIT (UINT32 [1]) a thread sends, for
// each element e, a response {OUT=[IN[e]], IDX=[e]} after DELAY[e] ms, then a flags-only FINAL
// (only the FINAL when IN is empty). Execute sleeps WAIT ms before it returns.
// With max_batch_size > 0 (dynamic or sequence batcher) an execution holds several requests of
// batch size 1, one row each; each request gets its own thread and sender.
// When the client cancels, the thread stops and ends the request with CANCELLED "cancelled".
//
// Thread-safety: an instance keeps one sending thread per request in flight and joins them all
// when it is destroyed, so no thread outlives the plugin.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/config_reader.h"
#include "common/response_threads.h"
#include "nereid/backend_api.h"

namespace nereid::backends::repeat {
namespace {

// Row `r` of `rows` equal rows of a batched input, without the batch dimension.
backend::TensorRef Row(const backend::TensorRef& t, size_t r, size_t rows) {
  const size_t bytes = t.data.size() / rows;
  backend::TensorRef row = t;
  row.shape = t.shape.empty() ? t.shape : t.shape.subspan(1);
  row.data = t.data.subspan(r * bytes, bytes);
  return row;
}

// What one request asks for, copied out of the request before Execute returns.
struct Job {
  std::vector<int32_t> in;
  std::vector<uint32_t> delay;
};

StatusOr<Job> ReadJob(std::span<const backend::TensorRef> inputs, uint32_t* wait_ms) {
  const backend::TensorRef* in = FindTensor(inputs, "IN");
  const backend::TensorRef* delay = FindTensor(inputs, "DELAY");
  const backend::TensorRef* wait = FindTensor(inputs, "WAIT");
  if (in == nullptr || delay == nullptr || wait == nullptr) {
    return InvalidArgument("expected inputs IN, DELAY and WAIT");
  }
  if (in->data_type != DataType::kInt32) {
    return InvalidArgument("expected IN datatype to be INT32, got " +
                           std::string(DataTypeWireName(in->data_type)));
  }
  if (delay->data_type != DataType::kUint32) {
    return InvalidArgument("expected DELAY datatype to be UINT32, got " +
                           std::string(DataTypeWireName(delay->data_type)));
  }
  if (wait->data_type != DataType::kUint32) {
    return InvalidArgument("expected WAIT datatype to be UINT32, got " +
                           std::string(DataTypeWireName(wait->data_type)));
  }
  if (!std::equal(in->shape.begin(), in->shape.end(), delay->shape.begin(), delay->shape.end())) {
    return InvalidArgument("expected IN and DELAY shape to match, got " + ShapeToString(in->shape) +
                           " and " + ShapeToString(delay->shape));
  }
  if (wait->data.size() != sizeof(uint32_t)) {
    return InvalidArgument("unexpected size for WAIT input");
  }
  Job job;
  job.in.resize(in->data.size() / sizeof(int32_t));
  job.delay.resize(delay->data.size() / sizeof(uint32_t));
  if (job.in.size() != job.delay.size()) {
    return InvalidArgument("expected IN and DELAY to have the same element count");
  }
  if (!job.in.empty()) {  // a zero-element IN (zero responses) has no data to copy, maybe no buffer
    std::memcpy(job.in.data(), in->data.data(), job.in.size() * sizeof(int32_t));
    std::memcpy(job.delay.data(), delay->data.data(), job.delay.size() * sizeof(uint32_t));
  }
  std::memcpy(wait_ms, wait->data.data(), sizeof(uint32_t));
  return job;
}

void SendAll(const Job& job, const std::shared_ptr<backend::ResponseSender>& sender) {
  const int64_t one[] = {1};
  for (size_t e = 0; e < job.in.size(); ++e) {
    if (!SleepUnlessCancelled(*sender, std::chrono::milliseconds(job.delay[e]))) {
      (void)sender->SendError(Status(StatusCode::kCancelled, "cancelled"), backend::kResponseFinal);
      return;
    }
    const int32_t out = job.in[e];
    const uint32_t idx = static_cast<uint32_t>(e);
    const backend::TensorRef outputs[] = {
        {"OUT", DataType::kInt32, one, {reinterpret_cast<const char*>(&out), sizeof(out)}},
        {"IDX", DataType::kUint32, one, {reinterpret_cast<const char*>(&idx), sizeof(idx)}}};
    (void)sender->Send(outputs, 0);
  }
  (void)sender->Send({}, backend::kResponseFinal);
}

class RepeatInstance final : public backend::ModelInstance {
 public:
  Status Execute(const backend::ExecuteArgs& args) override {
    if (args.senders.empty()) {
      return InvalidArgument("the repeat backend needs a decoupled model");
    }
    const size_t requests = args.senders.size();
    if (args.batch_size > 0 && static_cast<size_t>(args.batch_size) != requests) {
      return InvalidArgument("the repeat backend batches only requests of batch size 1");
    }
    // One job per request: with batching (max_batch_size > 0) request r is row r of each input.
    std::vector<Job> jobs;
    uint32_t wait_ms = 0;
    for (size_t r = 0; r < requests; ++r) {
      std::vector<backend::TensorRef> rows;
      if (args.batch_size > 0) {
        for (const auto& t : args.inputs) rows.push_back(Row(t, r, requests));
      }
      uint32_t wait = 0;
      StatusOr<Job> job = ReadJob(args.batch_size > 0 ? std::span(rows) : args.inputs, &wait);
      if (!job.ok()) return job.status();
      jobs.push_back(std::move(*job));
      wait_ms = std::max(wait_ms, wait);
    }
    for (size_t r = 0; r < requests; ++r) {
      NEREID_RETURN_IF_ERROR(threads_.Start(
          "repeat",
          [job = std::move(jobs[r]), sender = args.senders[r]]() { SendAll(job, sender); }));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    return Status::Ok();
  }

 private:
  ResponseThreads threads_;  // joined at destruction
};

class RepeatModel final : public backend::Model {
 public:
  StatusOr<std::unique_ptr<backend::ModelInstance>> CreateInstance(
      const backend::InstanceOptions&) override {
    try {
      return std::unique_ptr<backend::ModelInstance>(std::make_unique<RepeatInstance>());
    } catch (const std::exception& e) {
      return Internal(std::string("repeat: ") + e.what());
    }
  }
};

class RepeatBackend final : public backend::Backend {
 public:
  backend::BackendInfo Info() const override { return {"repeat", {}, "", false}; }
  StatusOr<std::string> AutoCompleteConfig(const backend::AutoCompleteOptions&) override {
    return Unsupported("the repeat backend does not auto-complete configurations");
  }
  StatusOr<std::unique_ptr<backend::Model>> LoadModel(const backend::ModelLoadOptions&) override {
    try {
      return std::unique_ptr<backend::Model>(std::make_unique<RepeatModel>());
    } catch (const std::exception& e) {
      return Internal(std::string("repeat: ") + e.what());
    }
  }
};

}  // namespace
}  // namespace nereid::backends::repeat

NEREID_BACKEND_EXPORT uint32_t NereidBackendApiVersion() {
  return nereid::backend::kBackendApiVersion;
}

NEREID_BACKEND_EXPORT nereid::backend::Backend* NereidBackendCreate(
    const nereid::backend::BackendOptions*, std::string* error) {
  try {
    return new nereid::backends::repeat::RepeatBackend();
  } catch (const std::exception& e) {
    if (error != nullptr) *error = std::string("repeat backend: ") + e.what();
  }
  return nullptr;
}
