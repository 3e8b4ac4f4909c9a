// The unary RPCs answered on the completion-queue thread: health, metadata, configuration, the
// standard health service, and the logging and trace extensions.
#include <algorithm>
#include <string>
#include <utility>

#include "common/logging.h"
#include "frontends/grpc/grpc_call.h"
#include "frontends/grpc/grpc_codec.h"
#include "frontends/grpc/grpc_shm_handlers.h"
#include "model_config.pb.h"

namespace nereid::grpc_frontend {
namespace {

namespace pb = inference;
using Service = pb::GRPCInferenceService::AsyncService;
using HealthService = grpc::health::v1::Health::AsyncService;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

grpc::Status ServerLive(InferenceServer& server, const pb::ServerLiveRequest&,
                        pb::ServerLiveResponse* response) {
  response->set_live(server.IsLive());
  return grpc::Status::OK;
}

grpc::Status ServerReady(InferenceServer& server, const pb::ServerReadyRequest&,
                         pb::ServerReadyResponse* response) {
  response->set_ready(server.IsReady());
  return grpc::Status::OK;
}

grpc::Status ModelReady(InferenceServer& server, const pb::ModelReadyRequest& request,
                        pb::ModelReadyResponse* response) {
  StatusOr<int64_t> version = ParseModelVersion(request.version());
  if (!version.ok()) return ToGrpcStatus(version.status());
  StatusOr<bool> ready = server.ModelIsReady(request.name(), *version);
  if (!ready.ok()) return ToGrpcStatus(ready.status());
  response->set_ready(*ready);
  return grpc::Status::OK;
}

grpc::Status ServerMetadata(InferenceServer& server, const pb::ServerMetadataRequest&,
                            pb::ServerMetadataResponse* response) {
  const nereid::ServerMetadata& m = server.Metadata();
  response->set_name(m.name);
  response->set_version(m.version);
  for (const std::string& e : m.extensions) response->add_extensions(e);
  return grpc::Status::OK;
}

void AddTensors(
    const std::vector<TensorMetadata>& tensors,
    google::protobuf::RepeatedPtrField<pb::ModelMetadataResponse::TensorMetadata>* out) {
  for (const TensorMetadata& t : tensors) {
    auto* m = out->Add();
    m->set_name(t.name);
    m->set_datatype(t.datatype);
    m->mutable_shape()->Add(t.shape.begin(), t.shape.end());
  }
}

grpc::Status ModelMetadata(InferenceServer& server, const pb::ModelMetadataRequest& request,
                           pb::ModelMetadataResponse* response) {
  StatusOr<int64_t> version = ParseModelVersion(request.version());
  if (!version.ok()) return ToGrpcStatus(version.status());
  StatusOr<nereid::ModelMetadata> m = server.GetModelMetadata(request.name(), *version);
  if (!m.ok()) return ToGrpcStatus(m.status());
  response->set_name(m->name);
  for (const std::string& v : m->versions) response->add_versions(v);
  response->set_platform(m->platform);
  AddTensors(m->inputs, response->mutable_inputs());
  AddTensors(m->outputs, response->mutable_outputs());
  return grpc::Status::OK;
}

grpc::Status ModelConfig(InferenceServer& server, const pb::ModelConfigRequest& request,
                         pb::ModelConfigResponse* response) {
  StatusOr<int64_t> version = ParseModelVersion(request.version());
  if (!version.ok()) return ToGrpcStatus(version.status());
  auto config = server.GetModelConfig(request.name(), *version);
  if (!config.ok()) return ToGrpcStatus(config.status());
  *response->mutable_config() = **config;
  return grpc::Status::OK;
}

void SetDuration(const DurationStat& from, pb::StatisticDuration* to) {
  to->set_count(from.count);
  to->set_ns(from.ns);
}

void FillModelStatistics(const ModelVersionStatistics& m, pb::ModelStatistics* out) {
  const ModelStatsSnapshot& s = m.stats;
  out->set_name(m.name);
  out->set_version(std::to_string(m.version));
  out->set_last_inference(s.last_inference_ms);
  out->set_inference_count(s.inference_count);
  out->set_execution_count(s.execution_count);
  pb::InferStatistics* is = out->mutable_inference_stats();
  SetDuration(s.success, is->mutable_success());
  SetDuration(s.fail, is->mutable_fail());
  SetDuration(s.queue, is->mutable_queue());
  SetDuration(s.compute_input, is->mutable_compute_input());
  SetDuration(s.compute_infer, is->mutable_compute_infer());
  SetDuration(s.compute_output, is->mutable_compute_output());
  SetDuration(s.cache_hit, is->mutable_cache_hit());
  SetDuration(s.cache_miss, is->mutable_cache_miss());
  for (const BatchStat& b : s.batch_stats) {
    pb::InferBatchStatistics* bs = out->add_batch_stats();
    bs->set_batch_size(b.batch_size);
    SetDuration(b.compute_input, bs->mutable_compute_input());
    SetDuration(b.compute_infer, bs->mutable_compute_infer());
    SetDuration(b.compute_output, bs->mutable_compute_output());
  }
  for (const MemoryUsage& u : s.memory_usage) {
    pb::MemoryUsage* mu = out->add_memory_usage();
    mu->set_type(u.type);
    mu->set_id(u.id);
    mu->set_byte_size(u.byte_size);
  }
  for (const auto& [key, r] : s.response_stats) {
    pb::InferResponseStatistics& rs = (*out->mutable_response_stats())[key];
    SetDuration(r.compute_infer, rs.mutable_compute_infer());
    SetDuration(r.compute_output, rs.mutable_compute_output());
    SetDuration(r.success, rs.mutable_success());
    SetDuration(r.fail, rs.mutable_fail());
    SetDuration(r.empty_response, rs.mutable_empty_response());
    SetDuration(r.cancel, rs.mutable_cancel());
  }
}

// Statistics extension: an empty name means every model (the version is then ignored, as Triton
// does).
grpc::Status ModelStatistics(InferenceServer& server, const pb::ModelStatisticsRequest& request,
                             pb::ModelStatisticsResponse* response) {
  StatusOr<int64_t> version = ParseModelVersion(request.version());
  if (!version.ok()) return ToGrpcStatus(version.status());
  auto stats = server.GetModelStatistics(request.name(), *version);
  if (!stats.ok()) return ToGrpcStatus(stats.status());
  for (const ModelVersionStatistics& m : *stats)
    FillModelStatistics(m, response->add_model_stats());
  return grpc::Status::OK;
}

// Triton's health service answers readiness, not liveness.
grpc::Status HealthCheck(InferenceServer& server, const HealthCheckRequest&,
                         HealthCheckResponse* response) {
  response->set_status(server.IsReady() ? HealthCheckResponse::SERVING
                                        : HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

// Trace extension (REFERENCE-2.md §12.2) with the texts of Triton's gRPC frontend; every key is
// checked before the update is applied, and the update is applied whole or not at all.
grpc::Status TraceSetting(InferenceServer& server, const pb::TraceSettingRequest& request,
                          pb::TraceSettingResponse* response) {
  const std::string& model = request.model_name();
  if (!model.empty()) {
    StatusOr<bool> ready = server.ModelIsReady(model, -1);
    if (!ready.ok() || !*ready) {
      return ToGrpcStatus(InvalidArgument("Request for unknown model : " + model));
    }
  }
  const auto& settings = request.settings();
  if (settings.count("trace_file") > 0) {
    return ToGrpcStatus(
        Unsupported("trace file location can not be updated through network protocol"));
  }
  trace::TraceSettingsUpdate update;
  if (auto it = settings.find("trace_level"); it != settings.end()) {
    if (it->second.value().empty()) {
      update.level = std::optional<uint32_t>();
    } else {
      const std::vector<std::string> names(it->second.value().begin(), it->second.value().end());
      StatusOr<std::optional<uint32_t>> level = trace::ParseLevels(names);
      if (!level.ok()) return ToGrpcStatus(level.status());
      if (*level) update.level = **level;
    }
  }
  // One value, parsed; an empty list clears the key.
  auto number = [&](const char* key, auto parse, auto* field) -> Status {
    auto it = settings.find(key);
    if (it == settings.end()) return Status::Ok();
    if (it->second.value().empty()) {
      field->emplace();
      return Status::Ok();
    }
    if (it->second.value().size() != 1) {
      return InvalidArgument(std::string("expect only 1 value for '") + key + "'");
    }
    auto value = parse(it->second.value(0));
    if (!value.ok()) return value.status();
    field->emplace(*value);
    return Status::Ok();
  };
  Status s = number(
      "trace_rate", [](const std::string& v) { return trace::ParseUnsigned("trace_rate", v); },
      &update.rate);
  if (s.ok()) {
    s = number(
        "trace_count", [](const std::string& v) { return trace::ParseCount(v, /*grpc=*/true); },
        &update.count);
  }
  if (s.ok()) {
    s = number(
        "log_frequency",
        [](const std::string& v) { return trace::ParseUnsigned("log_frequency", v); },
        &update.log_frequency);
  }
  if (s.ok() && !settings.empty()) s = server.tracer().Update(model, update);
  if (!s.ok()) return ToGrpcStatus(s);
  const trace::TraceConfig now = server.tracer().Get(model);
  auto& out = *response->mutable_settings();
  for (const std::string& name : trace::LevelNames(now.level)) out["trace_level"].add_value(name);
  out["trace_rate"].add_value(std::to_string(now.rate));
  out["trace_count"].add_value(std::to_string(now.count));
  out["log_frequency"].add_value(std::to_string(now.log_frequency));
  out["trace_file"].add_value(now.file);
  out["trace_mode"].add_value(now.mode);
  return grpc::Status::OK;
}

// Logging extension (REFERENCE-2.md §12.1) with Triton's texts; every key is checked before any
// is applied, so a failing request changes nothing (Triton applies keys up to the failing one).
grpc::Status LogSettings(InferenceServer&, const pb::LogSettingsRequest& request,
                         pb::LogSettingsResponse* response) {
  using Value = pb::LogSettingsRequest::SettingValue;
  const auto& settings = request.settings();
  if (settings.count("log_file") > 0) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "log file location can not be updated through network protocol");
  }
  auto find = [&](const char* key, Value::ParameterChoiceCase type, const char* type_name,
                  const Value** out) {
    auto it = settings.find(key);
    *out = nullptr;
    if (it == settings.end()) return grpc::Status::OK;
    if (it->second.parameter_choice_case() != type) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          std::string("expect ") + type_name + " for '" + key + "'");
    }
    *out = &it->second;
    return grpc::Status::OK;
  };
  logging::SettingsUpdate update;
  const Value* v = nullptr;
  for (auto [key, field] :
       {std::pair{"log_info", &update.info}, std::pair{"log_warning", &update.warning},
        std::pair{"log_error", &update.error}}) {
    grpc::Status s = find(key, Value::kBoolParam, "boolean", &v);
    if (!s.ok()) return s;
    if (v != nullptr) *field = v->bool_param();
  }
  grpc::Status s = find("log_verbose_level", Value::kUint32Param, "int32", &v);
  if (!s.ok()) return s;
  if (v != nullptr) update.verbose_level = std::min(v->uint32_param(), logging::kMaxVerboseLevel);
  s = find("log_format", Value::kStringParam, "string", &v);
  if (!s.ok()) return s;
  if (v != nullptr) {
    update.format = logging::ParseFormat(v->string_param());
    if (!update.format) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "invalid argument for log_format, got: " + v->string_param());
    }
  }
  logging::Apply(update);
  const logging::Settings now = logging::CurrentSettings();
  auto& out = *response->mutable_settings();
  out["log_file"].set_string_param(now.file);
  out["log_info"].set_bool_param(now.info);
  out["log_warning"].set_bool_param(now.warning);
  out["log_error"].set_bool_param(now.error);
  out["log_verbose_level"].set_uint32_param(now.verbose_level);
  out["log_format"].set_string_param(logging::FormatName(now.format));
  return grpc::Status::OK;
}

template <typename Req, typename Resp, typename Method>
void ListenOne(const std::shared_ptr<GrpcShared>& shared, RestrictedCategory category,
               Method method, grpc::Status (*handler)(InferenceServer&, const Req&, Resp*)) {
  UnaryCall<Service, Req, Resp>::Listen(shared, &shared->service, method, handler, category);
}

// grpc.health.v1.Health/Watch (server streaming), which Triton does not implement either.
class WatchCall final : public CqEvent {
 public:
  static void Listen(std::shared_ptr<GrpcShared> shared) {
    if (!shared->accepting.load()) return;
    GateScope gate(shared->gate);
    if (!gate) return;
    auto* call = new WatchCall(std::move(shared));
    call->shared_->health.RequestWatch(&call->ctx_, &call->request_, &call->writer_,
                                       call->shared_->cq, call->shared_->cq, call);
  }
  void OnEvent(bool ok) override {
    if (finishing_ || !ok) {
      delete this;
      return;
    }
    Listen(shared_);
    finishing_ = true;
    GateScope gate(shared_->gate);
    if (gate) {
      writer_.Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                  "grpc.health.v1.Health/Watch is not supported"),
                     this);
    }
  }

 private:
  explicit WatchCall(std::shared_ptr<GrpcShared> shared)
      : shared_(std::move(shared)), writer_(&ctx_) {}
  ~WatchCall() = default;

  std::shared_ptr<GrpcShared> shared_;
  grpc::ServerContext ctx_;
  HealthCheckRequest request_;
  grpc::ServerAsyncWriter<HealthCheckResponse> writer_;
  bool finishing_ = false;
};

}  // namespace

grpc::Status ToGrpcStatus(const Status& status) {
  using grpc::StatusCode;
  StatusCode code = StatusCode::UNKNOWN;
  switch (status.code()) {
    case nereid::StatusCode::kOk:
      return grpc::Status::OK;
    case nereid::StatusCode::kUnknown:
      code = StatusCode::UNKNOWN;
      break;
    case nereid::StatusCode::kInternal:
      code = StatusCode::INTERNAL;
      break;
    case nereid::StatusCode::kNotFound:
      code = StatusCode::NOT_FOUND;
      break;
    case nereid::StatusCode::kInvalidArgument:
      code = StatusCode::INVALID_ARGUMENT;
      break;
    case nereid::StatusCode::kUnavailable:
      code = StatusCode::UNAVAILABLE;
      break;
    case nereid::StatusCode::kUnsupported:
      code = StatusCode::UNIMPLEMENTED;
      break;
    case nereid::StatusCode::kAlreadyExists:
      code = StatusCode::ALREADY_EXISTS;
      break;
    case nereid::StatusCode::kCancelled:
      code = StatusCode::CANCELLED;
      break;
    case nereid::StatusCode::kPermissionDenied:
      code = StatusCode::UNAVAILABLE;
      break;
  }
  return grpc::Status(code, status.message());
}

grpc::Status CheckRestricted(const GrpcShared& shared, std::optional<RestrictedCategory> category,
                             const grpc::ServerContext& ctx) {
  if (!category) return grpc::Status::OK;
  const Restriction* restriction = shared.restricted.Get(*category);
  if (restriction == nullptr) return grpc::Status::OK;
  const auto& md = ctx.client_metadata();
  auto it = md.find(restriction->key);
  if (it != md.end() &&
      std::string_view(it->second.data(), it->second.size()) == restriction->value) {
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "This protocol is restricted, expecting header '" + restriction->key + "'");
}

void ListenUnaryCalls(const std::shared_ptr<GrpcShared>& shared) {
  ListenOne(shared, RestrictedCategory::kHealth, &Service::RequestServerLive, &ServerLive);
  ListenOne(shared, RestrictedCategory::kHealth, &Service::RequestServerReady, &ServerReady);
  ListenOne(shared, RestrictedCategory::kHealth, &Service::RequestModelReady, &ModelReady);
  ListenOne(shared, RestrictedCategory::kMetadata, &Service::RequestServerMetadata,
            &ServerMetadata);
  ListenOne(shared, RestrictedCategory::kMetadata, &Service::RequestModelMetadata, &ModelMetadata);
  ListenOne(shared, RestrictedCategory::kModelConfig, &Service::RequestModelConfig, &ModelConfig);
  ListenOne(shared, RestrictedCategory::kStatistics, &Service::RequestModelStatistics,
            &ModelStatistics);
  ListenOne(shared, RestrictedCategory::kSharedMemory, &Service::RequestSystemSharedMemoryStatus,
            &SystemShmStatus);
  ListenOne(shared, RestrictedCategory::kSharedMemory, &Service::RequestSystemSharedMemoryRegister,
            &SystemShmRegister);
  ListenOne(shared, RestrictedCategory::kSharedMemory,
            &Service::RequestSystemSharedMemoryUnregister, &SystemShmUnregister);
  ListenOne(shared, RestrictedCategory::kSharedMemory, &Service::RequestCudaSharedMemoryStatus,
            &CudaShmStatus);
  ListenOne(shared, RestrictedCategory::kSharedMemory, &Service::RequestCudaSharedMemoryRegister,
            &CudaShmRegister);
  ListenOne(shared, RestrictedCategory::kSharedMemory, &Service::RequestCudaSharedMemoryUnregister,
            &CudaShmUnregister);
  ListenOne(shared, RestrictedCategory::kTrace, &Service::RequestTraceSetting, &TraceSetting);
  ListenOne(shared, RestrictedCategory::kLogging, &Service::RequestLogSettings, &LogSettings);
  UnaryCall<HealthService, HealthCheckRequest, HealthCheckResponse>::Listen(
      shared, &shared->health, &HealthService::RequestCheck, &HealthCheck,
      RestrictedCategory::kHealth);
  WatchCall::Listen(shared);
}

}  // namespace nereid::grpc_frontend
