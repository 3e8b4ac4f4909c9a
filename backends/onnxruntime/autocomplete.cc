#include "onnxruntime/autocomplete.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "common/config_json.h"

namespace nereid::backends::ort {
namespace {

using rapidjson::Value;
using Allocator = rapidjson::Document::AllocatorType;

const TensorInfo* FindTensor(const std::vector<TensorInfo>& tensors, std::string_view name) {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Value* FindEntry(Value& list, std::string_view name) {
  for (Value& entry : list.GetArray()) {
    if (StringMember(entry, "name") == name) return &entry;
  }
  return nullptr;
}

// Replaces or adds member `key` (a string literal) of `obj`.
void SetMember(Value& obj, const char* key, Value value, Allocator& alloc) {
  auto it = obj.FindMember(key);
  if (it != obj.MemberEnd()) {
    it->value = std::move(value);
  } else {
    obj.AddMember(rapidjson::StringRef(key), std::move(value), alloc);
  }
}

Value IntArray(const std::vector<int64_t>& values, Allocator& alloc) {
  Value array(rapidjson::kArrayType);
  for (int64_t v : values) array.PushBack(Value(v), alloc);
  return array;
}

// The shape the config lists for a tensor (reshape.shape when present, else dims).
StatusOr<std::vector<int64_t>> ListedShape(const Value& entry) {
  if (const Value* reshape = FindMember(entry, "reshape"); reshape != nullptr) {
    return IntArrayMember(*reshape, "shape");
  }
  return IntArrayMember(entry, "dims");
}

// True unless a listed tensor with dims has the model's full rank (a hint of no batching).
StatusOr<bool> ListedShapesAllowBatching(const Value& doc, const ModelIo& io) {
  using Named = std::pair<const char*, const std::vector<TensorInfo>*>;
  for (const auto& [key, tensors] : {Named{"input", &io.inputs}, Named{"output", &io.outputs}}) {
    const Value* list = FindMember(doc, key);
    if (list == nullptr) continue;
    for (const Value& entry : list->GetArray()) {
      const TensorInfo* tensor = FindTensor(*tensors, StringMember(entry, "name"));
      if (tensor == nullptr) continue;
      // A ragged input is [-1] in the model whatever the batching (Triton: a batching hint).
      if (const Value* ragged = FindMember(entry, "allow_ragged_batch");
          ragged != nullptr && ragged->IsBool() && ragged->GetBool()) {
        continue;
      }
      NEREID_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ListedShape(entry));
      if (!shape.empty() && shape.size() + 1 != tensor->shape.size()) return false;
    }
  }
  return true;
}

// Sets dims from the model (and reshape [] when that would leave no dims).
void SetDims(Value& entry, const TensorInfo& tensor, int64_t max_batch_size, Allocator& alloc) {
  const size_t skip = (max_batch_size > 0 && !tensor.shape.empty()) ? 1 : 0;
  std::vector<int64_t> dims(tensor.shape.begin() + skip, tensor.shape.end());
  for (int64_t& d : dims) d = d < 0 ? -1 : d;
  if (dims.empty()) {
    dims.push_back(1);
    if (FindMember(entry, "reshape") == nullptr) {
      Value reshape(rapidjson::kObjectType);
      reshape.AddMember("shape", Value(rapidjson::kArrayType), alloc);
      SetMember(entry, "reshape", std::move(reshape), alloc);
    }
  }
  SetMember(entry, "dims", IntArray(dims, alloc), alloc);
}

void SetDataType(Value& entry, DataType type, Allocator& alloc) {
  const std::string_view name = DataTypeConfigName(type);
  SetMember(entry, "data_type",
            Value(name.data(), static_cast<rapidjson::SizeType>(name.size()), alloc), alloc);
}

// Tensors the sequence batcher feeds or reads (control inputs, state) and batch input targets
// (the core computes them): never configured as ordinary inputs or outputs.
bool IsServerTensor(const rapidjson::Document& doc, std::string_view name) {
  if (const Value* bis = FindMember(doc, "batch_input"); bis && bis->IsArray()) {
    for (const Value& bi : bis->GetArray()) {
      const Value* targets = FindMember(bi, "target_name");
      if (targets == nullptr || !targets->IsArray()) continue;
      for (const Value& t : targets->GetArray()) {
        if (t.IsString() && std::string_view(t.GetString(), t.GetStringLength()) == name) {
          return true;
        }
      }
    }
  }
  const Value* sb = FindMember(doc, "sequence_batching");
  if (sb == nullptr || !sb->IsObject()) return false;
  if (const Value* inputs = FindMember(*sb, "control_input"); inputs && inputs->IsArray()) {
    for (const Value& in : inputs->GetArray()) {
      if (StringMember(in, "name") == name) return true;
    }
  }
  if (const Value* states = FindMember(*sb, "state"); states && states->IsArray()) {
    for (const Value& s : states->GetArray()) {
      if (StringMember(s, "input_name") == name || StringMember(s, "output_name") == name) {
        return true;
      }
    }
  }
  return false;
}

Status CompleteList(rapidjson::Document& doc, const char* key,
                    const std::vector<TensorInfo>& tensors, int64_t max_batch_size) {
  Allocator& alloc = doc.GetAllocator();
  if (FindMember(doc, key) == nullptr) SetMember(doc, key, Value(rapidjson::kArrayType), alloc);
  Value& list = doc[key];
  if (!list.IsArray()) return InvalidArgument(std::string("'") + key + "' must be an array");
  for (const Value& entry : list.GetArray()) {
    if (!entry.IsObject()) return InvalidArgument(std::string(key) + " entries must be objects");
  }
  for (const TensorInfo& tensor : tensors) {
    Value* entry = FindEntry(list, tensor.name);
    if (entry == nullptr && IsServerTensor(doc, tensor.name)) continue;
    if (entry == nullptr) {
      Value added(rapidjson::kObjectType);
      added.AddMember("name", Value(tensor.name.c_str(), alloc), alloc);
      SetDataType(added, tensor.data_type, alloc);
      SetDims(added, tensor, max_batch_size, alloc);
      list.PushBack(std::move(added), alloc);
      continue;
    }
    const std::string_view type = StringMember(*entry, "data_type");
    if (type.empty() || type == "TYPE_INVALID") SetDataType(*entry, tensor.data_type, alloc);
    const Value* dims = FindMember(*entry, "dims");
    if (dims == nullptr || (dims->IsArray() && dims->Empty())) {
      SetDims(*entry, tensor, max_batch_size, alloc);
    }
  }
  return Status::Ok();
}

void SetStringIfEmpty(rapidjson::Document& doc, const char* key, const char* value) {
  if (!StringMember(doc, key).empty()) return;
  SetMember(doc, key, Value(rapidjson::StringRef(value)), doc.GetAllocator());
}

}  // namespace

StatusOr<std::string> CompleteConfig(std::string_view config_json, const ModelIo& io,
                                     int default_max_batch_size) {
  rapidjson::Document doc;
  NEREID_RETURN_IF_ERROR(ParseJsonObject(config_json, "model configuration", &doc));
  Allocator& alloc = doc.GetAllocator();
  NEREID_ASSIGN_OR_RETURN(int64_t max_batch_size, IntMember(doc, "max_batch_size", 0));
  for (const char* key : {"input", "output"}) {
    const Value* list = FindMember(doc, key);
    if (list != nullptr && !list->IsArray()) {
      return InvalidArgument(std::string("'") + key + "' must be an array");
    }
  }
  if (max_batch_size == 0 && default_max_batch_size > 0 && ModelCanBatch(io)) {
    NEREID_ASSIGN_OR_RETURN(bool allowed, ListedShapesAllowBatching(doc, io));
    if (allowed) {
      max_batch_size = default_max_batch_size;
      SetMember(doc, "max_batch_size", Value(max_batch_size), alloc);
      // As Triton: a batch size it chose above 1 comes with the dynamic batcher, unless the
      // configuration already picked a scheduler.
      if (max_batch_size > 1 && FindMember(doc, "dynamic_batching") == nullptr &&
          FindMember(doc, "sequence_batching") == nullptr) {
        SetMember(doc, "dynamic_batching", Value(rapidjson::kObjectType), alloc);
      }
    }
  }
  NEREID_RETURN_IF_ERROR(CompleteList(doc, "input", io.inputs, max_batch_size));
  NEREID_RETURN_IF_ERROR(CompleteList(doc, "output", io.outputs, max_batch_size));
  SetStringIfEmpty(doc, "platform", "onnxruntime_onnx");
  SetStringIfEmpty(doc, "backend", "onnxruntime");
  return WriteJson(doc);
}

}  // namespace nereid::backends::ort
