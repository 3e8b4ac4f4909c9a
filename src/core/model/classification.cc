#include "core/model/classification.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/model/model_files.h"
#include "core/tensor/bytes_tensor.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

template <typename T>
void TopK(const InferOutput& out, size_t items, size_t per_item, size_t k,
          const std::vector<std::string>* labels, std::string* result) {
  std::vector<T> values(per_item);
  std::vector<size_t> idx(per_item);
  for (size_t b = 0; b < items; ++b) {
    std::memcpy(values.data(), out.data.data() + b * per_item * sizeof(T), per_item * sizeof(T));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t a, size_t c) { return values[a] > values[c]; });
    for (size_t j = 0; j < k; ++j) {
      std::string s = std::to_string(values[idx[j]]) + ":" + std::to_string(idx[j]);
      if (labels != nullptr && idx[j] < labels->size() && !(*labels)[idx[j]].empty()) {
        s += ":" + (*labels)[idx[j]];
      }
      AppendBytesElement(s, result);
    }
  }
}

Status Classify(const ModelInfo& model, const std::vector<std::string>* labels, int64_t n,
                InferOutput* out) {
  const size_t elem = DataTypeByteSize(out->data_type);
  switch (out->data_type) {
    case DataType::kBool:
    case DataType::kBytes:
    case DataType::kFp16:
    case DataType::kBf16:
    case DataType::kInvalid:
      return InvalidArgument("class result not available for output due to unsupported type '" +
                             std::string(DataTypeWireName(out->data_type)) + "'");
    default:
      break;
  }
  const size_t total = out->data.size() / elem;
  const bool batched = model.max_batch_size > 0 && !out->shape.empty();
  const size_t items = batched ? static_cast<size_t>(std::max<int64_t>(out->shape[0], 0)) : 1;
  const size_t per_item = items == 0 ? 0 : total / items;
  const size_t k = std::min<size_t>(static_cast<size_t>(n), per_item);
  std::string result;
  switch (out->data_type) {
    case DataType::kUint8:
      TopK<uint8_t>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kUint16:
      TopK<uint16_t>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kUint32:
      TopK<uint32_t>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kUint64:
      TopK<uint64_t>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kInt8:
      TopK<int8_t>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kInt16:
      TopK<int16_t>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kInt32:
      TopK<int32_t>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kInt64:
      TopK<int64_t>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kFp32:
      TopK<float>(*out, items, per_item, k, labels, &result);
      break;
    case DataType::kFp64:
      TopK<double>(*out, items, per_item, k, labels, &result);
      break;
    default:
      break;
  }
  out->data = std::move(result);
  out->data_type = DataType::kBytes;
  out->shape = batched ? Shape{static_cast<int64_t>(items), static_cast<int64_t>(k)}
                       : Shape{static_cast<int64_t>(k)};
  return Status::Ok();
}

}  // namespace

StatusOr<OutputLabels> LoadOutputLabels(const inference::ModelConfig& config,
                                        const std::filesystem::path& model_dir) {
  OutputLabels labels;
  for (const auto& out : config.output()) {
    if (out.label_filename().empty()) continue;
    NEREID_ASSIGN_OR_RETURN(
        std::string text, ReadContainedFile(model_dir, out.label_filename(),
                                            "model '" + config.name() + "' output '" + out.name() +
                                                "': label_filename"));
    std::vector<std::string>& lines = labels[out.name()];
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(std::move(line));
      pos = end + 1;
    }
  }
  return labels;
}

bool WantsClassification(const InferenceRequest& request) {
  for (const RequestedOutput& o : request.outputs) {
    if (o.parameters.Find("classification") != nullptr) return true;
  }
  return false;
}

Status ApplyClassification(const ModelInfo& model, const OutputLabels& labels,
                           InferenceResponse* response) {
  if (!response->request) return Status::Ok();
  for (const RequestedOutput& requested : response->request->outputs) {
    if (requested.parameters.Find("classification") == nullptr) continue;
    const std::optional<int64_t> n = GetInt(requested.parameters, "classification");
    if (!n || *n < 0) return InvalidArgument("Unable to set 'classification'");
    if (*n == 0) continue;
    for (InferOutput& out : response->outputs) {
      if (out.name != requested.name) continue;
      auto l = labels.find(out.name);
      NEREID_RETURN_IF_ERROR(Classify(model, l == labels.end() ? nullptr : &l->second, *n, &out));
    }
  }
  return Status::Ok();
}

}  // namespace nereid
