#include "perf_request.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>
#include <random>

namespace nereid::perf {
namespace {

template <typename T>
void Append(std::string& raw, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  raw.append(b, sizeof(T));
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Appends `value` as one element of `datatype`.
void AppendNumber(std::string& raw, std::string_view dt, double value) {
  if (dt == "BOOL") return Append<uint8_t>(raw, value != 0 ? 1 : 0);
  if (dt == "INT8") return Append<int8_t>(raw, static_cast<int8_t>(value));
  if (dt == "UINT8") return Append<uint8_t>(raw, static_cast<uint8_t>(value));
  if (dt == "INT16") return Append<int16_t>(raw, static_cast<int16_t>(value));
  if (dt == "UINT16") return Append<uint16_t>(raw, static_cast<uint16_t>(value));
  if (dt == "INT32") return Append<int32_t>(raw, static_cast<int32_t>(value));
  if (dt == "UINT32") return Append<uint32_t>(raw, static_cast<uint32_t>(value));
  if (dt == "INT64") return Append<int64_t>(raw, static_cast<int64_t>(value));
  if (dt == "UINT64") return Append<uint64_t>(raw, static_cast<uint64_t>(value));
  if (dt == "FP32") return Append<float>(raw, static_cast<float>(value));
  if (dt == "FP64") return Append<double>(raw, value);
  // FP16 / BF16: the value's upper bits are not worth converting for load; zero or a small
  // constant keeps the bytes valid.
  Append<uint16_t>(raw, value != 0 ? 0x3c00 : 0);
}

void AppendString(InputTensor& t, std::string s) {
  Append<uint32_t>(t.raw, static_cast<uint32_t>(s.size()));
  t.raw += s;
  t.strings.push_back(std::move(s));
}

void WriteElement(rapidjson::Writer<rapidjson::StringBuffer>& w, std::string_view dt,
                  const char* p) {
  if (dt == "BOOL")
    w.Bool(*p != 0);
  else if (dt == "INT8")
    w.Int(Load<int8_t>(p));
  else if (dt == "UINT8")
    w.Uint(Load<uint8_t>(p));
  else if (dt == "INT16")
    w.Int(Load<int16_t>(p));
  else if (dt == "UINT16")
    w.Uint(Load<uint16_t>(p));
  else if (dt == "INT32")
    w.Int(Load<int32_t>(p));
  else if (dt == "UINT32")
    w.Uint(Load<uint32_t>(p));
  else if (dt == "INT64")
    w.Int64(Load<int64_t>(p));
  else if (dt == "UINT64")
    w.Uint64(Load<uint64_t>(p));
  else if (dt == "FP32")
    w.Double(Load<float>(p));
  else
    w.Double(Load<double>(p));  // FP64
}

}  // namespace

size_t ElementSize(std::string_view dt) {
  if (dt == "BOOL" || dt == "INT8" || dt == "UINT8") return 1;
  if (dt == "INT16" || dt == "UINT16" || dt == "FP16" || dt == "BF16") return 2;
  if (dt == "INT32" || dt == "UINT32" || dt == "FP32") return 4;
  if (dt == "INT64" || dt == "UINT64" || dt == "FP64") return 8;
  return 0;
}

StatusOr<std::vector<InputTensor>> MakeInputs(const ModelMetadata& md, const PerfOptions& options,
                                              const std::map<std::string, FileInput>* file) {
  std::mt19937_64 rng(1234);
  std::vector<InputTensor> out;
  for (const TensorSpec& spec : md.inputs) {
    InputTensor t{spec.name, spec.datatype, spec.shape, {}, {}};
    bool is_bytes = spec.datatype == "BYTES";
    if (!is_bytes && ElementSize(spec.datatype) == 0) {
      return InvalidArgument("input '" + spec.name + "': unsupported datatype " + spec.datatype);
    }
    const FileInput* values = nullptr;
    if (file != nullptr) {
      auto it = file->find(spec.name);
      if (it == file->end()) {
        return InvalidArgument("input data file has no values for input '" + spec.name + "'");
      }
      values = &it->second;
      if (values->has_shape) t.shape = values->shape;
    }
    auto given = options.shapes.find(spec.name);
    if (given != options.shapes.end()) t.shape = given->second;
    int64_t count = 1;
    for (int64_t& d : t.shape) {
      if (d < 0) d = 1;  // a variable (or batch) dim without --shape: 1, as perf_analyzer's batch 1
      count *= d;
    }
    if (values != nullptr) {
      size_t n = is_bytes ? values->strings.size() : values->numbers.size();
      if (static_cast<int64_t>(n) != count) {
        return InvalidArgument("input '" + spec.name + "': the data file gives " +
                               std::to_string(n) + " elements, the shape needs " +
                               std::to_string(count));
      }
      for (size_t i = 0; i < n; ++i) {
        if (is_bytes)
          AppendString(t, values->strings[i]);
        else
          AppendNumber(t.raw, spec.datatype, values->numbers[i]);
      }
    } else {
      bool random = options.input_data == "random";
      std::uniform_int_distribution<int> digit(0, 127);
      std::uniform_real_distribution<double> real(0, 1);
      bool is_float = spec.datatype.starts_with("FP");
      for (int64_t i = 0; i < count; ++i) {
        if (is_bytes) {
          std::string s(options.string_length, '0');
          if (random) {
            for (char& c : s) c = static_cast<char>('a' + digit(rng) % 26);
          }
          AppendString(t, std::move(s));
        } else {
          double v = !random ? 0 : (is_float ? real(rng) : digit(rng));
          AppendNumber(t.raw, spec.datatype, v);
        }
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

StatusOr<std::string> HttpInferBody(const std::vector<InputTensor>& inputs, bool binary,
                                    size_t* header_length) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("inputs");
  w.StartArray();
  for (const InputTensor& t : inputs) {
    w.StartObject();
    w.Key("name");
    w.String(t.name.c_str(), t.name.size());
    w.Key("shape");
    w.StartArray();
    for (int64_t d : t.shape) w.Int64(d);
    w.EndArray();
    w.Key("datatype");
    w.String(t.datatype.c_str(), t.datatype.size());
    if (binary) {
      w.Key("parameters");
      w.StartObject();
      w.Key("binary_data_size");
      w.Uint64(t.raw.size());
      w.EndObject();
    } else {
      if (t.datatype == "FP16" || t.datatype == "BF16") {
        return InvalidArgument("input '" + t.name + "': " + t.datatype +
                               " has no JSON form, use --binary");
      }
      w.Key("data");
      w.StartArray();
      if (t.datatype == "BYTES") {
        for (const std::string& s : t.strings) w.String(s.c_str(), s.size());
      } else {
        size_t size = ElementSize(t.datatype);
        for (size_t off = 0; off < t.raw.size(); off += size) {
          WriteElement(w, t.datatype, t.raw.data() + off);
        }
      }
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  if (binary) {
    w.Key("parameters");
    w.StartObject();
    w.Key("binary_data_output");
    w.Bool(true);
    w.EndObject();
  }
  w.EndObject();
  std::string body(sb.GetString(), sb.GetSize());
  *header_length = binary ? body.size() : 0;
  if (binary) {
    for (const InputTensor& t : inputs) body += t.raw;
  }
  return body;
}

std::string HttpInferRequest(const std::string& host, const std::string& path,
                             const std::string& body, size_t header_length) {
  std::string r = "POST /" + path + "/infer HTTP/1.1\r\nHost: " + host + "\r\n";
  if (header_length > 0) {
    r += "Content-Type: application/octet-stream\r\nInference-Header-Content-Length: " +
         std::to_string(header_length) + "\r\n";
  } else {
    r += "Content-Type: application/json\r\n";
  }
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  r += body;
  return r;
}

std::string ModelPath(const std::string& model, const std::string& version) {
  std::string p = "v2/models/" + model;
  if (!version.empty()) p += "/versions/" + version;
  return p;
}

}  // namespace nereid::perf
