#include "core/model/request_info.h"

#include <array>
#include <cstdio>
#include <string_view>
#include <type_traits>

namespace nereid {
namespace {

// Parameters Triton's core takes out of a request before a backend sees its parameters.
constexpr std::array<std::string_view, 7> kReserved = {"sequence_id",
                                                       "sequence_start",
                                                       "sequence_end",
                                                       "priority",
                                                       "timeout",
                                                       "binary_data_output",
                                                       "triton_enable_empty_final_response"};

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace

std::string RequestParametersJson(const Parameters& parameters) {
  std::string out = "{";
  for (const auto& [key, value] : parameters) {
    bool reserved = false;
    for (std::string_view r : kReserved) reserved = reserved || key == r;
    if (reserved) continue;
    if (out.size() > 1) out.push_back(',');
    AppendJsonString(key, &out);
    out.push_back(':');
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            out += v ? "true" : "false";
          } else if constexpr (std::is_same_v<T, std::string>) {
            AppendJsonString(v, &out);
          } else if constexpr (std::is_same_v<T, double>) {
            char buf[32];
            std::snprintf(buf, sizeof(buf), "%.17g", v);
            out += buf;
          } else {
            out += std::to_string(v);
          }
        },
        value);
  }
  out.push_back('}');
  return out;
}

std::vector<backend::RequestInfo> MakeRequestInfos(const ModelInfo& model,
                                                   std::span<const InferenceRequest* const> items) {
  std::vector<backend::RequestInfo> infos(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const InferenceRequest& r = *items[i];
    backend::RequestInfo& info = infos[i];
    info.id = r.id;
    if (model.max_batch_size > 0 && !r.inputs.empty() && !r.inputs[0].shape.empty()) {
      info.batch_size = r.inputs[0].shape[0];
    }
    if (const ParameterValue* id = r.parameters.Find("sequence_id")) {
      if (const auto* s = std::get_if<std::string>(id)) {
        info.correlation_id_str = *s;
      } else if (std::optional<uint64_t> n = GetUint(r.parameters, "sequence_id")) {
        info.correlation_id = *n;
      }
    }
    if (GetBool(r.parameters, "sequence_start").value_or(false)) info.flags |= 1;
    if (GetBool(r.parameters, "sequence_end").value_or(false)) info.flags |= 2;
    info.parameters_json = r.parameters.empty() ? "{}" : RequestParametersJson(r.parameters);
    info.trace = r.trace;  // InferCall::parent_trace: plugin_infer.cc
    if (r.cancel_token != nullptr || r.server_stop != nullptr) {
      info.is_cancelled = [client = r.cancel_token, stop = r.server_stop] {
        return (client != nullptr && client->Probe()) || (stop != nullptr && stop->cancelled());
      };
    }
  }
  return infos;
}

}  // namespace nereid
