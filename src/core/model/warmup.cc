#include "core/model/warmup.h"

#include <cstring>
#include <map>
#include <random>

#include "common/logging.h"
#include "core/model/instance_runner.h"
#include "core/model/model_files.h"
#include "core/model/request_validator.h"
#include "core/tensor/bytes_tensor.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

using WarmupConfig = inference::ModelWarmup;

std::string Where(const std::string& model, const std::string& sample, const std::string& input) {
  return "model '" + model + "': warmup sample '" + sample + "' input '" + input + "'";
}

// One batch item of the input, serialized.
StatusOr<std::string> ItemData(const WarmupConfig::Input& in, DataType type, int64_t elements,
                               const std::filesystem::path& model_dir, const std::string& where) {
  if (type == DataType::kBytes) {
    if (in.has_input_data_file()) {
      NEREID_ASSIGN_OR_RETURN(std::string data,
                              ReadContainedFile(model_dir / "warmup", in.input_data_file(),
                                                where + ": input_data_file", kMaxWarmupInputBytes));
      auto n = CountBytesElements(data);
      if (!n.ok() || *n != elements) {
        return InvalidArgument(where + ": input_data_file '" + in.input_data_file() +
                               "' must hold " + std::to_string(elements) +
                               " length-prefixed string element(s)" +
                               (n.ok() ? ", it holds " + std::to_string(*n) : ""));
      }
      return data;
    }
    // zero_data and random_data: empty strings (Triton does the same for strings).
    if (static_cast<uint64_t>(elements) * 4 > kMaxWarmupInputBytes) {
      return InvalidArgument(where + ": the input is larger than the warmup limit");
    }
    std::string data;
    for (int64_t i = 0; i < elements; ++i) AppendBytesElement("", &data);
    return data;
  }
  NEREID_ASSIGN_OR_RETURN(size_t bytes, FixedByteSize(type, Shape{elements}, where));
  if (bytes > kMaxWarmupInputBytes) {
    return InvalidArgument(where + ": " + std::to_string(bytes) +
                           " bytes is larger than the warmup limit");
  }
  if (in.has_input_data_file()) {
    NEREID_ASSIGN_OR_RETURN(std::string data,
                            ReadContainedFile(model_dir / "warmup", in.input_data_file(),
                                              where + ": input_data_file", kMaxWarmupInputBytes));
    if (data.size() != bytes) {
      return InvalidArgument(where + ": warmup setting expects " + std::to_string(bytes) +
                             " bytes, but the data provided from '" + in.input_data_file() +
                             "' has " + std::to_string(data.size()) + " bytes");
    }
    return data;
  }
  std::string data(bytes, '\0');
  if (in.random_data()) {
    std::mt19937_64 rng(0x5eed);
    if (type == DataType::kFp32 || type == DataType::kFp64) {
      std::uniform_real_distribution<double> dist(0.0, 1.0);
      for (int64_t i = 0; i < elements; ++i) {
        if (type == DataType::kFp32) {
          const float f = static_cast<float>(dist(rng));
          std::memcpy(data.data() + i * 4, &f, 4);
        } else {
          const double d = dist(rng);
          std::memcpy(data.data() + i * 8, &d, 8);
        }
      }
    } else if (type == DataType::kBool) {
      for (auto& c : data) c = static_cast<char>(rng() & 1);
    } else {
      for (auto& c : data) c = static_cast<char>(rng());
    }
  }
  return data;
}

}  // namespace

StatusOr<std::vector<WarmupSample>> BuildWarmupSamples(const inference::ModelConfig& config,
                                                       const std::filesystem::path& model_dir) {
  std::vector<WarmupSample> samples;
  const bool batching = config.max_batch_size() > 0;
  for (const WarmupConfig& w : config.model_warmup()) {
    WarmupSample sample;
    sample.name = w.name();
    sample.count = static_cast<int>(std::min<uint32_t>(w.count(), 1u << 20));
    const int64_t batch = batching ? std::max<int64_t>(1, w.batch_size()) : 1;
    // Sorted by name: protobuf map order is unspecified, errors must be reproducible.
    std::map<std::string, const WarmupConfig::Input*> inputs;
    for (const auto& [name, in] : w.inputs()) inputs.emplace(name, &in);
    for (const auto& [name, in_ptr] : inputs) {
      const WarmupConfig::Input& in = *in_ptr;
      const std::string where = Where(config.name(), w.name(), name);
      const auto type = static_cast<DataType>(in.data_type());
      const Shape dims(in.dims().begin(), in.dims().end());
      auto per_item = ElementCount(dims);
      if (!per_item) return InvalidArgument(where + ": invalid dims " + ShapeToString(dims));
      NEREID_ASSIGN_OR_RETURN(std::string item, ItemData(in, type, *per_item, model_dir, where));
      if (item.size() * static_cast<uint64_t>(batch) > kMaxWarmupInputBytes) {
        return InvalidArgument(where + ": the batch is larger than the warmup limit");
      }
      auto data = std::make_shared<std::string>();
      data->reserve(item.size() * batch);
      for (int64_t b = 0; b < batch; ++b) data->append(item);
      WarmupInput input{name, type, dims, std::move(data)};
      if (batching) input.shape.insert(input.shape.begin(), batch);
      sample.inputs.push_back(std::move(input));
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

Status RunWarmup(const ModelInfo& model, const std::vector<WarmupSample>& samples,
                 const std::vector<std::unique_ptr<backend::ModelInstance>>& instances) {
  for (const WarmupSample& sample : samples) {
    if (sample.count <= 0) continue;
    LOG_INFO("model '{}' version {}: warmup sample '{}' ({} run(s) on {} instance(s))", model.name,
             model.version, sample.name, sample.count, instances.size());
    for (size_t i = 0; i < instances.size(); ++i) {
      for (int run = 0; run < sample.count; ++run) {
        auto request = std::make_unique<InferenceRequest>();
        request->model_name = model.name;
        request->model_version = model.version;
        request->id = "warmup:" + sample.name;
        for (const WarmupInput& in : sample.inputs) {
          InferInput input;
          input.name = in.name;
          input.data_type = in.data_type;
          input.shape = in.shape;
          input.data = std::span<const char>(in.data->data(), in.data->size());
          request->inputs.push_back(std::move(input));
          request->KeepAlive(in.data);
        }
        auto fail = [&](const Status& s) {
          return Status(s.code(), "model '" + model.name + "': warmup sample '" + sample.name +
                                      "' failed on instance " + std::to_string(i) + ": " +
                                      s.message());
        };
        auto batch = ValidateRequest(model, *request);
        if (!batch.ok()) return fail(batch.status());
        ExecutionTimes times;  // warmup is not counted in the model's statistics
        auto result = RunOnInstance(*instances[i], model, std::move(request), *batch, &times);
        if (!result.ok()) return fail(result.status());
      }
    }
  }
  return Status::Ok();
}

}  // namespace nereid
