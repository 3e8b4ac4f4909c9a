#include "core/scheduler/batch_runner.h"

#include <algorithm>
#include <cstring>

#include "core/model/batch_io.h"
#include "core/model/instance_runner.h"

namespace nereid {
namespace {

const InferInput* FindInput(const InferenceRequest& r, const std::string& name) {
  for (const auto& in : r.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

}  // namespace

StatusOr<std::unique_ptr<InferenceRequest>> GatherRequests(
    const ModelInfo& model, std::span<const InferenceRequest* const> requests, int64_t total) {
  const InferenceRequest& first = *requests.front();
  size_t bytes = 0;
  for (const auto& r : requests) {
    for (const auto& in : r->inputs) bytes += in.data.size();
  }
  auto buffer = std::make_shared<std::vector<char>>(bytes);
  auto merged = std::make_unique<InferenceRequest>();
  merged->model_name = first.model_name;
  merged->model_version = first.model_version;
  merged->id = first.id;
  merged->received_at = first.received_at;
  char* dst = buffer->data();
  for (const InferInput& in0 : first.inputs) {
    InferInput in;
    in.name = in0.name;
    in.data_type = in0.data_type;
    in.shape = in0.shape;
    if (in.shape.empty()) {
      return Internal("input '" + in0.name + "' of model '" + model.name +
                      "' has no batch dimension");
    }
    in.shape[0] = total;
    const char* begin = dst;
    for (const auto& r : requests) {
      const InferInput* src = FindInput(*r, in0.name);
      if (src == nullptr) {
        return Internal("requests batched together for model '" + model.name +
                        "' differ in inputs");
      }
      if (!src->data.empty()) std::memcpy(dst, src->data.data(), src->data.size());
      dst += src->data.size();
    }
    in.data = std::span<const char>(begin, static_cast<size_t>(dst - begin));
    merged->inputs.push_back(std::move(in));
  }
  const bool all_outputs = std::any_of(requests.begin(), requests.end(),
                                       [](const auto& r) { return r->outputs.empty(); });
  if (!all_outputs) {
    for (const auto& r : requests) {
      for (const auto& o : r->outputs) {
        const bool seen = std::any_of(merged->outputs.begin(), merged->outputs.end(),
                                      [&](const RequestedOutput& m) { return m.name == o.name; });
        if (!seen) merged->outputs.push_back({o.name, {}});
      }
    }
  }
  merged->KeepAlive(std::move(buffer));
  return merged;
}

namespace {

// Byte offsets of the batch items of `out` (total + 1 entries): fixed-size types by arithmetic,
// BYTES by walking the length prefixes.
StatusOr<std::vector<size_t>> ItemOffsets(const ModelInfo& model, const InferOutput& out,
                                          int64_t total) {
  if (out.shape.empty() || out.shape[0] != total) {
    return Internal("model '" + model.name + "' produced output '" + out.name +
                    "' whose batch dimension is not the batch size " + std::to_string(total));
  }
  std::vector<size_t> offsets(static_cast<size_t>(total) + 1, 0);
  if (out.data_type != DataType::kBytes) {
    if (out.data.size() % static_cast<size_t>(total) != 0) {
      return Internal("output '" + out.name + "' of model '" + model.name +
                      "' does not split evenly over the batch");
    }
    const size_t item = out.data.size() / static_cast<size_t>(total);
    for (size_t i = 0; i <= static_cast<size_t>(total); ++i) offsets[i] = i * item;
    return offsets;
  }
  const std::optional<int64_t> per_item =
      ElementCount(std::span<const int64_t>(out.shape).subspan(1));
  if (!per_item) return Internal("output '" + out.name + "' has an invalid shape");
  size_t pos = 0;
  for (int64_t i = 0; i < total; ++i) {
    offsets[static_cast<size_t>(i)] = pos;
    for (int64_t e = 0; e < *per_item; ++e) {
      uint32_t len = 0;
      if (pos + 4 > out.data.size()) {
        return Internal("BYTES output '" + out.name + "' of model '" + model.name +
                        "' is truncated");
      }
      std::memcpy(&len, out.data.data() + pos, 4);
      pos += 4 + len;
    }
  }
  if (pos != out.data.size()) {
    return Internal("BYTES output '" + out.name + "' of model '" + model.name +
                    "' does not match its shape");
  }
  offsets[static_cast<size_t>(total)] = pos;
  return offsets;
}

// Byte offsets of each request's part of batch output `out` (requests + 1 entries) and the shape
// each request receives: the model returned the whole batch's values one request after another.
StatusOr<std::vector<size_t>> ScatterOffsets(const ModelInfo& model, const InferOutput& out,
                                             const BatchOutputSpec& scatter,
                                             std::span<const InferenceRequest* const> requests,
                                             std::vector<Shape>* shapes) {
  const TensorSpec* spec = model.FindOutput(out.name);
  if (spec == nullptr)
    return Internal("model '" + model.name + "' has no output '" + out.name + "'");
  std::vector<size_t> offsets{0};
  size_t pos = 0;
  for (const InferenceRequest* r : requests) {
    NEREID_ASSIGN_OR_RETURN(Shape shape, ScatterShape(model, *spec, scatter, *r));
    const std::optional<int64_t> count = ElementCount(shape);
    if (!count) return Internal("batch output '" + out.name + "' has an invalid shape");
    if (out.data_type != DataType::kBytes) {
      pos += static_cast<size_t>(*count) * DataTypeByteSize(out.data_type);
    } else {
      for (int64_t e = 0; e < *count && pos + 4 <= out.data.size(); ++e) {
        uint32_t len = 0;
        std::memcpy(&len, out.data.data() + pos, 4);
        pos += 4 + len;
      }
    }
    if (pos > out.data.size()) break;
    offsets.push_back(pos);
    shapes->push_back(std::move(shape));
  }
  if (pos != out.data.size()) {
    return Internal("model '" + model.name + "' produced batch output '" + out.name + "' of " +
                    std::to_string(out.data.size()) +
                    " bytes, which does not match the requests' shapes of input '" +
                    scatter.source_input + "'");
  }
  return offsets;
}

}  // namespace

namespace {

// Appends `in`'s part of a batch shape key.
void AppendShapeKey(const InferInput& in, const ModelInfo* model, std::string* key) {
  *key += in.name;
  *key += '\0';
  *key += static_cast<char>(in.data_type);
  const TensorSpec* spec = model != nullptr ? model->FindInput(in.name) : nullptr;
  if (spec != nullptr && spec->ragged) {
    *key += '\1';  // any shape batches with any other
    return;
  }
  for (size_t d = 1; d < in.shape.size(); ++d) {
    key->append(reinterpret_cast<const char*>(&in.shape[d]), sizeof(int64_t));
  }
  *key += '\0';
}

}  // namespace

std::string BatchShapeKey(const InferenceRequest& request, const ModelInfo* model) {
  std::string key;
  size_t size = 0;
  for (const auto& in : request.inputs) size += in.name.size() + 3 + 8 * in.shape.size();
  key.reserve(size);
  // One input (the common case) needs no ordering: no list of pointers to sort.
  if (request.inputs.size() == 1) {
    AppendShapeKey(request.inputs.front(), model, &key);
    return key;
  }
  std::vector<const InferInput*> inputs;
  inputs.reserve(request.inputs.size());
  for (const auto& in : request.inputs) inputs.push_back(&in);
  std::sort(inputs.begin(), inputs.end(),
            [](const InferInput* a, const InferInput* b) { return a->name < b->name; });
  for (const InferInput* in : inputs) AppendShapeKey(*in, model, &key);
  return key;
}

std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> SplitBatchResponse(
    const ModelInfo& model, InferenceResponse& all,
    std::span<const InferenceRequest* const> requests, const std::vector<int64_t>& batch_sizes,
    std::span<const Status> request_errors) {
  std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> results;
  results.reserve(requests.size());
  auto fail_all = [&](const Status& s) {
    results.clear();
    for (size_t i = 0; i < requests.size(); ++i) results.emplace_back(s);
    return std::move(results);
  };
  auto failed = [&](size_t i) { return !request_errors.empty() && !request_errors[i].ok(); };
  // The requests that have rows in the outputs.
  std::vector<const InferenceRequest*> kept;
  kept.reserve(requests.size());
  int64_t total = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (failed(i)) continue;
    kept.push_back(requests[i]);
    total += std::max<int64_t>(1, batch_sizes[i]);
  }
  std::vector<std::vector<size_t>> offsets;
  offsets.reserve(all.outputs.size());
  std::vector<std::vector<Shape>> scatter_shapes(all.outputs.size());  // empty unless scattered
  // With every request failed, whatever the backend wrote is not split.
  for (const InferOutput& out : all.outputs) {
    if (kept.empty()) break;
    if (const BatchOutputSpec* scatter = model.FindBatchOutput(out.name)) {
      auto o = ScatterOffsets(model, out, *scatter, kept, &scatter_shapes[offsets.size()]);
      if (!o.ok()) return fail_all(o.status());
      offsets.push_back(std::move(o).value());
      continue;
    }
    auto o = ItemOffsets(model, out, total);
    if (!o.ok()) return fail_all(o.status());
    offsets.push_back(std::move(o).value());
  }
  auto find = [&](const std::string& name) -> size_t {
    for (size_t k = 0; k < all.outputs.size(); ++k) {
      if (all.outputs[k].name == name) return k;
    }
    return all.outputs.size();
  };
  int64_t first_item = 0;
  size_t j = 0;  // index of request i among `kept`
  for (size_t i = 0; i < requests.size(); ++i) {
    if (failed(i)) {
      results.emplace_back(request_errors[i]);
      continue;
    }
    const int64_t n = std::max<int64_t>(1, batch_sizes[i]);
    auto response = std::make_unique<InferenceResponse>();
    response->model_name = model.name;
    response->model_version = model.version;
    response->id = requests[i]->id;
    // The outputs this request asked for (every output of the model when it named none), read
    // in place: a list of their names was an allocation per request.
    const bool every_output = requests[i]->outputs.empty();
    const size_t wanted = every_output ? model.outputs.size() : requests[i]->outputs.size();
    response->outputs.reserve(wanted);
    Status status = Status::Ok();
    for (size_t w = 0; w < wanted; ++w) {
      const std::string& name = every_output ? model.outputs[w].name : requests[i]->outputs[w].name;
      const size_t k = find(name);
      if (k == all.outputs.size()) {
        status = Internal("model '" + model.name + "' did not produce output '" + name + "'");
        break;
      }
      const InferOutput& src = all.outputs[k];
      const bool scattered = !scatter_shapes[k].empty();
      const size_t begin = offsets[k][scattered ? j : static_cast<size_t>(first_item)];
      const size_t end = offsets[k][scattered ? j + 1 : static_cast<size_t>(first_item + n)];
      InferOutput out;
      out.name = src.name;
      out.data_type = src.data_type;
      if (scattered) {
        out.shape = scatter_shapes[k][j];
      } else {
        out.shape = src.shape;
        out.shape[0] = n;
      }
      out.data.assign(src.data.data() + begin, end - begin);
      response->outputs.push_back(std::move(out));
    }
    first_item += n;
    ++j;
    if (!status.ok()) {
      results.emplace_back(status);
      continue;
    }
    results.emplace_back(std::move(response));
  }
  return results;
}

std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> RunBatchOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::vector<std::unique_ptr<InferenceRequest>> requests,
    const std::vector<int64_t>& batch_sizes, ExecutionTimes* times, bool* executed,
    std::span<uint32_t> release_flags) {
  std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> results;
  if (executed != nullptr) *executed = false;
  if (requests.size() == 1) {
    const InferenceRequest* item = requests.front().get();
    Status lone_error;
    results.push_back(RunOnInstance(instance, model, std::move(requests.front()),
                                    batch_sizes.front(), std::span(&item, 1), times, {},
                                    std::span<Status>(&lone_error, 1), release_flags));
    if (executed != nullptr) *executed = results.front().ok() || !lone_error.ok();
    return results;
  }
  auto fail_all = [&](const Status& s) {
    for (size_t i = 0; i < requests.size(); ++i) results.emplace_back(s);
    return std::move(results);
  };
  int64_t total = 0;
  for (int64_t b : batch_sizes) total += std::max<int64_t>(1, b);
  std::vector<const InferenceRequest*> items;
  items.reserve(requests.size());
  for (const auto& r : requests) items.push_back(r.get());
  const uint64_t gather_start = NowNs();
  auto merged = GatherRequests(model, items, total);
  if (!merged.ok()) return fail_all(merged.status());
  std::vector<Status> request_errors(requests.size());
  auto batch = RunOnInstance(instance, model, std::move(merged).value(), total, items, times, {},
                             request_errors, release_flags);
  times->compute_start = gather_start;  // gathering is part of preparing the inputs
  if (!batch.ok()) return fail_all(batch.status());
  // A rescheduled request has no rows (as a failed one): split around it, then hand it back.
  for (size_t i = 0; i < requests.size(); ++i) {
    if (Rescheduled(release_flags, i))
      request_errors[i] = Internal("rescheduled");  // never delivered
  }
  results = SplitBatchResponse(model, **batch, items, batch_sizes, request_errors);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (Rescheduled(release_flags, i)) {
      auto back = std::make_unique<InferenceResponse>();
      back->model_name = model.name;
      back->model_version = model.version;
      back->id = requests[i]->id;
      results[i] = std::move(back);
      request_errors[i] = Status::Ok();
    }
    if (results[i].ok()) (*results[i])->request = std::move(requests[i]);
    // Outputs that do not split fail every request: that execution is not counted.
    if (executed != nullptr) *executed = *executed || results[i].ok() || !request_errors[i].ok();
  }
  times->compute_end = NowNs();
  return results;
}

}  // namespace nereid
