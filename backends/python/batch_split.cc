#include "python/batch_split.h"

#include <cstring>
#include <numeric>

#include "common/tensor_util.h"

namespace nereid::backends::python {
namespace {

// Byte offsets of the row boundaries of `t` (rows.size() + 1 entries), or empty when `t` cannot
// be split so.
std::vector<size_t> RowOffsets(const backend::TensorRef& t, std::span<const int64_t> rows) {
  if (t.shape.empty()) return {};
  const int64_t total = std::accumulate(rows.begin(), rows.end(), int64_t{0});
  if (t.shape[0] != total) return {};
  const std::optional<size_t> per_row = ElementCount(t.shape.subspan(1));
  if (!per_row) return {};
  std::vector<size_t> offsets{0};
  const size_t element_size = DataTypeByteSize(t.data_type);
  if (element_size != 0) {
    for (int64_t r : rows) offsets.push_back(offsets.back() + r * *per_row * element_size);
    return offsets.back() == t.data.size() ? offsets : std::vector<size_t>{};
  }
  size_t pos = 0;  // BYTES: walk the length prefixes
  for (int64_t r : rows) {
    for (size_t e = 0; e < static_cast<size_t>(r) * *per_row; ++e) {
      if (t.data.size() - pos < kBytesLengthPrefix) return {};
      uint32_t n = 0;
      for (size_t k = 0; k < kBytesLengthPrefix; ++k) {
        n |= static_cast<uint32_t>(static_cast<unsigned char>(t.data[pos + k])) << (8 * k);
      }
      pos += kBytesLengthPrefix;
      if (t.data.size() - pos < n) return {};
      pos += n;
    }
    offsets.push_back(pos);
  }
  return pos == t.data.size() ? offsets : std::vector<size_t>{};
}

RequestHeader HeaderOf(const backend::RequestInfo* info,
                       std::span<const std::string> requested_outputs) {
  RequestHeader h;
  if (info != nullptr) {
    h.id = std::string(info->id);
    h.correlation_id = info->correlation_id;
    h.correlation_id_str = std::string(info->correlation_id_str);
    h.flags = info->flags;
    h.parameters_json = info->parameters_json;
  }
  h.requested_outputs.assign(requested_outputs.begin(), requested_outputs.end());
  return h;
}

}  // namespace

std::vector<RequestHeader> SplitRequests(std::span<const backend::TensorRef> inputs,
                                         std::span<const backend::RequestInfo> infos,
                                         std::span<const std::string> requested_outputs,
                                         std::deque<std::vector<int64_t>>* shapes) {
  std::vector<int64_t> rows;
  for (const auto& info : infos) rows.push_back(info.batch_size);
  std::vector<std::vector<size_t>> offsets;
  bool split = infos.size() > 1;
  for (size_t i = 0; split && i < inputs.size(); ++i) {
    offsets.push_back(RowOffsets(inputs[i], rows));
    split = !offsets.back().empty();
  }
  if (!split) {
    std::vector<RequestHeader> one{
        HeaderOf(infos.empty() ? nullptr : &infos[0], requested_outputs)};
    one[0].inputs.assign(inputs.begin(), inputs.end());
    return one;
  }
  std::vector<RequestHeader> headers;
  for (size_t r = 0; r < infos.size(); ++r) {
    RequestHeader h = HeaderOf(&infos[r], requested_outputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<int64_t>& shape =
          shapes->emplace_back(inputs[i].shape.begin(), inputs[i].shape.end());
      shape[0] = rows[r];
      h.inputs.push_back(
          {inputs[i].name, inputs[i].data_type, shape,
           inputs[i].data.subspan(offsets[i][r], offsets[i][r + 1] - offsets[i][r])});
    }
    headers.push_back(std::move(h));
  }
  return headers;
}

Status GatherOutputs(std::span<const StubResponse> responses, std::span<const char> payload,
                     std::span<const char> pool, std::span<const RequestHeader> requests,
                     std::span<const int64_t> rows, backend::OutputAllocator* outputs,
                     std::span<Status> request_errors, std::span<const uint32_t> release_flags) {
  if (responses.size() != requests.size()) {
    return Internal("the Python stub answered " + std::to_string(responses.size()) +
                    " responses for " + std::to_string(requests.size()) + " requests");
  }
  const bool fail_alone = request_errors.size() == responses.size();
  auto rescheduled = [&](size_t r) {
    return r < release_flags.size() && (release_flags[r] & backend::kReleaseReschedule) != 0;
  };
  const StubResponse* first_ok = nullptr;
  for (size_t r = 0; r < responses.size(); ++r) {
    const StubResponse& response = responses[r];
    if (rescheduled(r)) continue;  // no rows: the request runs again later
    if (!response.has_error) {
      if (first_ok == nullptr) first_ok = &response;
      continue;
    }
    const Status error(StubErrorCode(response.error.code), response.error.message);
    if (!fail_alone) return error;
    request_errors[r] = error;
  }
  if (first_ok == nullptr) return Status::Ok();  // every request failed alone
  for (const TensorDesc& first : first_ok->outputs) {
    if (outputs == nullptr || !outputs->IsRequested(first.name)) continue;
    std::vector<const TensorDesc*> parts;
    int64_t total_rows = 0;
    uint64_t total_bytes = 0;
    for (size_t r = 0; r < responses.size(); ++r) {
      if (responses[r].has_error || rescheduled(r)) continue;  // no rows for it
      const TensorDesc* part = nullptr;
      for (const TensorDesc& t : responses[r].outputs) {
        if (t.name == first.name) part = &t;
      }
      const bool same =
          part != nullptr && part->data_type == first.data_type &&
          part->shape.size() == first.shape.size() && !part->shape.empty() &&
          std::equal(part->shape.begin() + 1, part->shape.end(), first.shape.begin() + 1);
      if (!same) {
        return InvalidArgument("output '" + first.name + "' of request " + std::to_string(r) +
                               " is missing or has another datatype or shape than in request " +
                               std::to_string(first_ok - responses.data()));
      }
      if (part->shape[0] != rows[r]) {
        return InvalidArgument("output '" + first.name + "' of request " + std::to_string(r) +
                               " has " + std::to_string(part->shape[0]) +
                               " rows, the request has " + std::to_string(rows[r]));
      }
      parts.push_back(part);
      total_rows += part->shape[0];
      total_bytes += part->size;
    }
    std::vector<int64_t> shape = first.shape;
    shape[0] = total_rows;
    NEREID_ASSIGN_OR_RETURN(std::span<char> dst,
                            outputs->Allocate(first.name, first.data_type, shape, total_bytes));
    size_t pos = 0;
    for (const TensorDesc* p : parts) {
      const char* src = (p->in_pool ? pool : payload).data() + p->offset;
      if (p->size != 0) std::memcpy(dst.data() + pos, src, p->size);
      pos += p->size;
    }
  }
  return Status::Ok();
}

}  // namespace nereid::backends::python
