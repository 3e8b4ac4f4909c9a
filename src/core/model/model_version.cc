#include "core/model/model_version.h"

#include <cstdlib>

#include "common/logging.h"
#include "core/model/instance_readiness.h"
#include "core/model/model_version_trace.h"
#include "core/model/request_validator.h"
#include "core/model/warmup.h"
#include "core/scheduler/caching_scheduler.h"
#include "core/scheduler/default_scheduler.h"
#include "core/scheduler/dynamic_batch_scheduler.h"
#include "core/scheduler/scheduler_test_hooks.h"
#include "core/scheduler/sequence/sequence_batch_scheduler.h"
#include "core/stats/process_memory.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

// The metrics' per-request observer (latency summaries and histograms), when the server has any.
void InstallLatencyObserver(const ModelVersion::Options& options, ModelStats* stats) {
  if (options.latency_observers == nullptr || !*options.latency_observers) return;
  const inference::ModelConfig& config = *options.config;
  ObservedModel observed{
      config.name(), options.version, config.model_transaction_policy().decoupled(), {}};
  for (const auto& control : config.model_metrics().metric_control()) {
    const auto& buckets = control.histogram_options().buckets();
    observed.histogram_buckets.emplace_back(control.metric_identifier().family(),
                                            std::vector<double>(buckets.begin(), buckets.end()));
  }
  stats->SetLatencyObserver((*options.latency_observers)(observed));
}

// Puts the response cache in front of `scheduler` when the configuration asks for it and the
// server has a cache (REFERENCE-2 §8.1: without a server cache the setting has no effect).
std::unique_ptr<Scheduler> WithCache(const ModelVersion::Options& options, const ModelInfo* info,
                                     ModelStats* stats, std::unique_ptr<Scheduler> scheduler) {
  const inference::ModelConfig& config = *options.config;
  if (options.response_cache == nullptr || !config.response_cache().enable() ||
      config.has_sequence_batching() || config.model_transaction_policy().decoupled()) {
    return scheduler;
  }
  stats->SetCacheEnabled();
  return std::make_unique<CachingScheduler>(info, stats, options.response_cache,
                                            std::move(scheduler));
}

}  // namespace

ModelVersion::~ModelVersion() {
  if (scheduler_ && scheduler_->IsExecutorThread()) {
    // Stopping would join this very thread. The repository hands every served version to its
    // reaper thread (served_version.h), so this is a bug, never a runtime condition.
    LOG_ERROR("model '{}' version {} destroyed on one of its own executor threads", info_.name,
              info_.version);
    std::abort();
  }
  if (scheduler_) scheduler_->Stop();
  scheduler_.reset();
  backend_model_.reset();
}

StatusOr<std::shared_ptr<ModelVersion>> ModelVersion::Load(const Options& options) {
  const inference::ModelConfig& config = *options.config;
  const uint64_t load_start = options.load_started_ns != 0 ? options.load_started_ns : NowNs();
  const uint64_t resident_before = ResidentBytesTrimmed();
  // Destruction joins the executors: a served version is destroyed on the repository's reaper
  // thread (served_version.h), never on one of its own threads.
  std::shared_ptr<ModelVersion> mv(new ModelVersion());
  mv->info_ = ModelInfo::FromConfig(config, options.version);
  mv->config_ = options.config;
  mv->config_json_ = options.config_json;
  NEREID_ASSIGN_OR_RETURN(mv->labels_, LoadOutputLabels(config, options.model_dir));
  if (options.make_scheduler) {
    mv->stats_ = std::make_unique<ModelStats>(mv->info_.max_batch_size);
    InstallLatencyObserver(options, mv->stats_.get());
    NEREID_ASSIGN_OR_RETURN(mv->scheduler_, options.make_scheduler(mv->info_, mv->stats_.get()));
    mv->scheduler_ = WithCache(options, &mv->info_, mv->stats_.get(), std::move(mv->scheduler_));
    mv->stats_->SetLoadDuration(NowNs() - load_start);
    return mv;
  }
  // Warmup data is read (and size-checked) before any instance exists.
  NEREID_ASSIGN_OR_RETURN(std::vector<WarmupSample> warmup,
                          BuildWarmupSamples(config, options.model_dir));

  backend::ModelLoadOptions lo;
  lo.model_name = config.name();
  lo.version = options.version;
  lo.model_dir = options.model_dir.string();
  const std::string& file = config.default_model_filename();
  const auto version_dir = options.model_dir / std::to_string(options.version);
  lo.model_path = file.empty() ? version_dir.string() : (version_dir / file).string();
  lo.config_json = *options.config_json;
  mv->info_.wants_request_info = options.backend->info.wants_request_info;
  auto model = options.backend->backend->LoadModel(lo);
  if (!model.ok()) return model.status();
  mv->backend_model_ = std::move(model).value();

  std::vector<std::unique_ptr<backend::ModelInstance>> instances;
  int index = 0;
  for (const auto& group : config.instance_group()) {
    for (int i = 0; i < group.count(); ++i) {
      backend::InstanceOptions io;
      io.name = group.name() + "_" + std::to_string(i);
      io.index = index++;
      io.kind = inference::ModelInstanceGroup::Kind_Name(group.kind());
      io.report_health = [health = mv->health_, slot = mv->health_->Add(io.name)](
                             bool healthy, std::string_view reason) {
        health->Report(slot, healthy, reason);
      };
      auto instance = mv->backend_model_->CreateInstance(io);
      if (!instance.ok()) {
        return Status(instance.status().code(), "failed to create instance '" + io.name +
                                                    "' of model '" + config.name() +
                                                    "': " + instance.status().message());
      }
      mv->instances_.push_back(instance->get());
      instances.push_back(std::move(instance).value());
    }
  }
  if (instances.empty()) {
    return InvalidArgument("model '" + config.name() + "' has no instances to serve with");
  }
  LOG_VERBOSE(1, "model '{}' version {}: {} instance(s)", config.name(), options.version,
              instances.size());
  NEREID_RETURN_IF_ERROR(RunWarmup(mv->info_, warmup, instances));
  mv->stats_ = std::make_unique<ModelStats>(mv->info_.max_batch_size);
  const uint64_t resident_after = ResidentBytesTrimmed();
  if (resident_after > resident_before) {
    mv->stats_->SetMemoryUsage({{"CPU", 0, resident_after - resident_before}});
  }
  InstallLatencyObserver(options, mv->stats_.get());
  mv->stats_->SetLoadDuration(NowNs() - load_start);
  // With max_batch_size 0 the dynamic batcher still applies priorities and queue policies; its
  // batches are then single requests (as Triton's, whose batcher caps them at max(1, max)).
  // Triton's test hooks (scheduler_test_hooks.h), read when the scheduler is created, as Triton.
  const SchedulerTestHooks hooks = SchedulerTestHooks::FromEnvironment();
  if (config.has_sequence_batching()) {
    auto sequence = SequenceOptions::FromConfig(config, options.model_dir);
    if (!sequence.ok()) return sequence.status();
    sequence->max_backlog_size = options.max_sequence_backlog_size;
    sequence->delay_count = hooks.delay_count;
    sequence->backlog_delay_count = hooks.backlog_delay_count;
    mv->scheduler_ = std::make_unique<SequenceBatchScheduler>(
        &mv->info_, mv->stats_.get(), std::move(sequence).value(), std::move(instances));
  } else if (config.has_dynamic_batching()) {
    DynamicBatchingOptions batching = DynamicBatchingOptions::FromConfig(config);
    batching.delay_count = hooks.delay_count;
    mv->scheduler_ = std::make_unique<DynamicBatchScheduler>(
        &mv->info_, mv->stats_.get(), std::move(batching), std::move(instances));
  } else {
    mv->scheduler_ =
        std::make_unique<DefaultScheduler>(&mv->info_, mv->stats_.get(), std::move(instances));
  }
  mv->scheduler_ = WithCache(options, &mv->info_, mv->stats_.get(), std::move(mv->scheduler_));
  return mv;
}

std::optional<std::string> ModelVersion::UnavailableReason() const {
  return VersionUnavailableReason(*health_, instances_);
}

void ModelVersion::Infer(const std::shared_ptr<ModelVersion>& self,
                         std::unique_ptr<InferenceRequest>&& request, InferCallback done,
                         bool allow_inline) {
  // The closure holds the version alive until the reply has been handed over.
  const bool classify = WantsClassification(*request);
  self->InferHeld(
      std::move(request),
      [self, classify,
       done = std::move(done)](StatusOr<std::unique_ptr<InferenceResponse>> result) mutable {
        self->FinishResult(classify, &result);
        done(std::move(result));
      },
      allow_inline);
}

void ModelVersion::InferHeld(std::unique_ptr<InferenceRequest>&& request, InferCallback done,
                             bool allow_inline) {
  if (request->trace != nullptr) {  // sampled by the trace extension; null is the usual case
    TraceRequestStart(*request->trace, info_, *request);
    done = TracedCallback(request->trace, std::move(done));
  }
  auto batch = ValidateRequest(info_, *request);
  if (!batch.ok()) {
    done(batch.status());
    return;
  }
  SchedulerJob job;
  job.request = std::move(request);
  job.batch_size = *batch;
  job.request_start_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   job.request->received_at.time_since_epoch())
                                                   .count());
  job.done = std::move(done);
  scheduler_->Enqueue(std::move(job), allow_inline);
}

void ModelVersion::FinishResult(bool classify,
                                StatusOr<std::unique_ptr<InferenceResponse>>* result) const {
  if (!classify || !result->ok()) return;
  Status s = ApplyClassification(info_, labels_, (*result)->get());
  if (!s.ok()) *result = s;
}

}  // namespace nereid
