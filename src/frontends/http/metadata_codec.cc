#include "frontends/http/metadata_codec.h"

#include "frontends/http/json_writer.h"

namespace nereid {
namespace {

void WriteTensors(const std::vector<TensorMetadata>& tensors, JsonWriter& w) {
  w.StartArray();
  for (const TensorMetadata& t : tensors) {
    w.StartObject();
    WriteJsonKey(w, "name");
    WriteJsonString(w, t.name);
    WriteJsonKey(w, "datatype");
    WriteJsonString(w, t.datatype);
    WriteJsonKey(w, "shape");
    w.StartArray();
    for (int64_t d : t.shape) w.Int64(d);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string EncodeServerMetadata(const ServerMetadata& metadata) {
  std::string out;
  StringOutputStream stream(&out);
  JsonWriter w(stream);
  w.StartObject();
  WriteJsonKey(w, "name");
  WriteJsonString(w, metadata.name);
  WriteJsonKey(w, "version");
  WriteJsonString(w, metadata.version);
  WriteJsonKey(w, "extensions");
  w.StartArray();
  for (const std::string& e : metadata.extensions) WriteJsonString(w, e);
  w.EndArray();
  w.EndObject();
  return out;
}

std::string EncodeModelMetadata(const ModelMetadata& metadata) {
  std::string out;
  StringOutputStream stream(&out);
  JsonWriter w(stream);
  w.StartObject();
  WriteJsonKey(w, "name");
  WriteJsonString(w, metadata.name);
  WriteJsonKey(w, "versions");
  w.StartArray();
  for (const std::string& v : metadata.versions) WriteJsonString(w, v);
  w.EndArray();
  WriteJsonKey(w, "platform");
  WriteJsonString(w, metadata.platform);
  WriteJsonKey(w, "inputs");
  WriteTensors(metadata.inputs, w);
  WriteJsonKey(w, "outputs");
  WriteTensors(metadata.outputs, w);
  w.EndObject();
  return out;
}

}  // namespace nereid
