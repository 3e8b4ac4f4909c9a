#include "python/metric_message.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/config_json.h"

namespace nereid::backends::python {
namespace {

Status Bad(const std::string& what) {
  return InvalidArgument("malformed metric message from the Python stub: " + what);
}

StatusOr<std::string> StringMember(const rapidjson::Value& doc, const char* key) {
  const rapidjson::Value* v = FindMember(doc, key);
  if (v == nullptr || !v->IsString()) return Bad(std::string("'") + key + "' is not a string");
  return std::string(v->GetString(), v->GetStringLength());
}

StatusOr<int64_t> IdMember(const rapidjson::Value& doc, const char* key) {
  const rapidjson::Value* v = FindMember(doc, key);
  if (v == nullptr || !v->IsInt64()) return Bad(std::string("'") + key + "' is not an integer");
  return v->GetInt64();
}

StatusOr<MetricOp> OpOf(const std::string& what) {
  if (what == "increment") return MetricOp::kIncrement;
  if (what == "set") return MetricOp::kSet;
  if (what == "observe") return MetricOp::kObserve;
  if (what == "value") return MetricOp::kValue;
  return Bad("unknown operation '" + what + "'");
}

StatusOr<backend::MetricKind> KindOf(const std::string& kind) {
  if (kind == "COUNTER") return backend::MetricKind::kCounter;
  if (kind == "GAUGE") return backend::MetricKind::kGauge;
  if (kind == "HISTOGRAM") return backend::MetricKind::kHistogram;
  return Bad("unknown kind '" + kind + "'");
}

Status ParseLabelsAndBuckets(const rapidjson::Value& doc, MetricMessage* m) {
  if (const rapidjson::Value* labels = FindMember(doc, "labels")) {
    if (!labels->IsObject()) return Bad("'labels' is not an object");
    for (const auto& l : labels->GetObject()) {
      if (!l.value.IsString()) return Bad("a label value is not a string");
      m->labels[std::string(l.name.GetString(), l.name.GetStringLength())] =
          std::string(l.value.GetString(), l.value.GetStringLength());
    }
  }
  if (const rapidjson::Value* buckets = FindMember(doc, "buckets")) {
    if (!buckets->IsArray()) return Bad("'buckets' is not an array");
    std::vector<double> bounds;
    for (const rapidjson::Value& b : buckets->GetArray()) {
      if (!b.IsNumber()) return Bad("a bucket is not a number");
      bounds.push_back(b.GetDouble());
    }
    m->buckets = std::move(bounds);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<MetricMessage> ParseMetricMessage(std::string_view json) {
  rapidjson::Document doc;
  NEREID_RETURN_IF_ERROR(ParseJsonObject(json, "metric message", &doc));
  MetricMessage m;
  NEREID_ASSIGN_OR_RETURN(const std::string action, StringMember(doc, "action"));
  if (action == "release") {
    m.action = MetricMessage::Action::kRelease;
    NEREID_ASSIGN_OR_RETURN(m.id, IdMember(doc, "id"));
    return m;
  }
  NEREID_ASSIGN_OR_RETURN(m.tag, IdMember(doc, "tag"));
  if (action == "family") {
    m.action = MetricMessage::Action::kFamily;
    NEREID_ASSIGN_OR_RETURN(m.name, StringMember(doc, "name"));
    NEREID_ASSIGN_OR_RETURN(m.description, StringMember(doc, "description"));
    NEREID_ASSIGN_OR_RETURN(const std::string kind, StringMember(doc, "kind"));
    NEREID_ASSIGN_OR_RETURN(m.kind, KindOf(kind));
  } else if (action == "metric") {
    m.action = MetricMessage::Action::kMetric;
    NEREID_ASSIGN_OR_RETURN(m.id, IdMember(doc, "family"));
    NEREID_RETURN_IF_ERROR(ParseLabelsAndBuckets(doc, &m));
  } else if (action == "apply") {
    m.action = MetricMessage::Action::kApply;
    NEREID_ASSIGN_OR_RETURN(m.id, IdMember(doc, "metric"));
    NEREID_ASSIGN_OR_RETURN(const std::string what, StringMember(doc, "what"));
    NEREID_ASSIGN_OR_RETURN(m.op, OpOf(what));
    const rapidjson::Value* v = FindMember(doc, "value");
    if (v == nullptr || !v->IsNumber()) return Bad("'value' is not a number");
    m.value = v->GetDouble();
  } else {
    return Bad("unknown action '" + action + "'");
  }
  return m;
}

std::string EncodeMetricAnswer(int64_t tag, const StatusOr<double>& result) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("op");
  w.String("metric_answer");
  w.Key("tag");
  w.Int64(tag);
  if (result.ok()) {
    w.Key("value");
    w.Double(*result);
  } else {
    w.Key("error");
    const std::string message(result.status().message());
    w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
  }
  w.EndObject();
  return buf.GetString();
}

}  // namespace nereid::backends::python
