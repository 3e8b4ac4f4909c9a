#include "core/scheduler/sequence/sequence_batch_scheduler.h"

#include <algorithm>
#include <chrono>

#include "common/logging.h"
#include "common/saturating_time.h"
#include "common/thread_name.h"
#include "core/model/instance_runner.h"
#include "core/request/parameters.h"
#include "core/scheduler/batch_former.h"
#include "core/scheduler/batch_runner.h"
#include "core/scheduler/decoupled_batch_runner.h"
#include "core/stats/process_memory.h"

namespace nereid {
namespace {

std::chrono::steady_clock::time_point At(uint64_t ns) { return SteadyTimePoint(ns); }

template <typename Job>
bool IsCancelledJob(const Job& j) {
  return j.job.request->IsCancelled();
}

}  // namespace

SequenceBatchScheduler::SequenceBatchScheduler(
    const ModelInfo* model, ModelStats* stats, SequenceOptions options,
    std::vector<std::unique_ptr<backend::ModelInstance>>&& instances)
    : model_(model),
      exec_info_(SequenceExecInfo(*model, options)),
      stats_(stats),
      options_(std::move(options)),
      instances_(std::move(instances)),
      table_(instances_.size(), options_.slots_per_instance, options_.idle_ns) {
  for (size_t i = 0; i < instances_.size(); ++i) {
    cvs_.push_back(std::make_unique<std::condition_variable>());
  }
  {
    MutexLock lock(mu_);
    delay_remaining_.assign(instances_.size(), options_.delay_count);
  }
  if (options_.backlog_delay_count != 0) {
    LOG_INFO("Delaying scheduler until {} backlog queued requests...",
             options_.backlog_delay_count);
  }
  if (options_.delay_count != 0) {
    LOG_VERBOSE(1, "Delaying scheduler threads of {} until {} queued requests...", model_->name,
                options_.delay_count);
  }
  threads_.Start(instances_.size(), [this](size_t i) { ExecutorLoop(i); });
  reaper_ = StartNamedThread("seq-reaper", [this] { ReaperLoop(); });
}

SequenceBatchScheduler::~SequenceBatchScheduler() { Stop(); }

void SequenceBatchScheduler::Reject(SchedulerJob& job, const Status& status) {
  stats_->RecordFailure(FailureReason::kRejected, job.request_start_ns, NowNs());
  job.done(status);
}

void SequenceBatchScheduler::DropCancelledLocked(size_t instance, std::vector<Job>* dropped) {
  const size_t before = dropped->size();
  for (size_t k = 0; k < table_.slots_per_instance(); ++k) {
    // A dropped sequence's slot may go to a backlogged one whose head was cancelled too.
    while (Table::Sequence* s = table_.Head(instance, k)) {
      if (!IsCancelledJob(s->pending.front().second) || s->executing != 0) break;
      table_.Drop(s, dropped);
    }
  }
  if (dropped->size() > before) {
    stats_->AddPending(-static_cast<int64_t>(dropped->size() - before));
  }
}

void SequenceBatchScheduler::AnswerCancelled(std::vector<Job>& dropped) {
  if (dropped.empty()) return;
  LOG_VERBOSE(1, "model '{}': dropped {} cancelled sequence request(s)", model_->name,
              dropped.size());
  for (Job& j : dropped) {
    stats_->RecordFailure(FailureReason::kCanceled, j.job.request_start_ns, NowNs());
    j.job.done(j.job.request->CancelledStatus());
  }
  dropped.clear();
}

bool SequenceBatchScheduler::ShrinkIfDrainedLocked() {
  peak_queued_ = std::max(peak_queued_, table_.queued());
  if (table_.queued() != 0 || peak_queued_ < kShrinkAfter) return false;
  peak_queued_ = 0;
  table_.Shrink();
  return true;
}

void SequenceBatchScheduler::ReturnMemory() {
  ReturnFreeMemory();
  LOG_VERBOSE(1, "model '{}': the queue drained after a burst; free memory returned", model_->name);
}

Status SequenceBatchScheduler::ParseSequence(const InferenceRequest& request, int64_t batch_size,
                                             Job* job, bool* end) const {
  const std::string& name = model_->name;
  CorrelationId& id = job->corrid;
  if (const ParameterValue* v = request.parameters.Find("sequence_id")) {
    if (const std::string* s = std::get_if<std::string>(v)) {
      id.is_string = true;
      id.text = *s;
    } else if (const int64_t* i = std::get_if<int64_t>(v)) {
      id.number = static_cast<uint64_t>(*i);  // as Triton, which stores it unsigned
    } else if (const uint64_t* u = std::get_if<uint64_t>(v)) {
      id.number = *u;
    }
  }
  if (id.is_string ? id.text.empty() : id.number == 0) {
    if (!options_.iterative) {
      return InvalidArgument("inference request to model '" + name +
                             "' must specify a non-zero or non-empty correlation ID");
    }
    // Triton's IterativeSequencer: the request starts a sequence of its own, flags START only.
    const uint64_t n = next_auto_id_.fetch_add(1);
    const bool wants_string = options_.corrid && options_.corrid->data_type == DataType::kBytes;
    id.is_string = wants_string;
    id.text = wants_string ? std::to_string(n) : std::string();
    id.number = wants_string ? 0 : n;
    if (model_->max_batch_size > 0 && batch_size > 1) {
      return InvalidArgument("inference request to model '" + name +
                             "' must specify batch-size 1 due to requirements of sequence "
                             "batcher");
    }
    job->start = true;
    *end = false;
    return Status::Ok();
  }
  if (model_->max_batch_size > 0 && batch_size > 1) {
    return InvalidArgument("inference request to model '" + name +
                           "' must specify batch-size 1 due to requirements of sequence batcher");
  }
  if (options_.corrid) {
    const bool wants_string = options_.corrid->data_type == DataType::kBytes;
    if (wants_string != id.is_string) {
      return InvalidArgument("inference request to model '" + name + "' must specify " +
                             (wants_string ? "a string" : "an unsigned integer") +
                             " correlation ID: control input '" + options_.corrid->name +
                             "' (CONTROL_SEQUENCE_CORRID) has data type " +
                             std::string(DataTypeConfigName(options_.corrid->data_type)));
    }
  }
  job->start = GetBool(request.parameters, "sequence_start").value_or(false);
  *end = GetBool(request.parameters, "sequence_end").value_or(false);
  return Status::Ok();
}

void SequenceBatchScheduler::Enqueue(SchedulerJob&& scheduler_job, bool /*allow_inline*/) {
  scheduler_job.queue_start_ns = NowNs();
  Job job;
  bool end = false;
  Status parsed = ParseSequence(*scheduler_job.request, scheduler_job.batch_size, &job, &end);
  if (!parsed.ok()) {
    Reject(scheduler_job, parsed);
    return;
  }
  // What the client gets back; the state outputs are asked from the backend in any case.
  InferenceRequest& request = *scheduler_job.request;
  if (request.outputs.empty()) {
    for (const TensorSpec& spec : model_->outputs) job.client_outputs.push_back(spec.name);
  } else {
    for (const RequestedOutput& o : request.outputs) job.client_outputs.push_back(o.name);
    for (const StateSpec& s : options_.states) {
      const bool listed =
          std::any_of(request.outputs.begin(), request.outputs.end(),
                      [&](const RequestedOutput& o) { return o.name == s.output_name; });
      if (!listed) request.outputs.push_back({s.output_name, {}});
    }
  }
  job.shape_key = BatchShapeKey(request, model_);  // ragged inputs batch whatever their shapes
  job.client_inputs = request.inputs.size();
  job.end = end;
  job.job = std::move(scheduler_job);
  const std::string key = job.corrid.Key();

  std::vector<Job> dropped;
  UniqueLock lock(mu_);
  if (stopping_) {
    lock.Unlock();
    Reject(job.job, Unavailable("model '" + model_->name + "' is unloading"));
    return;
  }
  // Only requests that would wait for a slot count: a sequence that owns one always makes
  // progress (its END can never be refused behind a full backlog).
  const size_t limit = options_.max_backlog_size;
  if (limit != 0 && table_.backlog_queued() >= limit && table_.WouldWaitInBacklog(key)) {
    // Full: abandoned (cancelled) backlogged sequences make room first.
    const size_t before = table_.queued();
    table_.DropBacklogged(IsCancelledJob<Job>, &dropped);
    stats_->AddPending(-static_cast<int64_t>(before - table_.queued()));
    if (table_.backlog_queued() >= limit && table_.WouldWaitInBacklog(key)) {
      lock.Unlock();
      AnswerCancelled(dropped);
      Reject(job.job, Unavailable("Exceeds maximum queue size"));
      return;
    }
  }
  const size_t backlog = table_.backlog_size();
  const std::string id = logging::VerboseLevel() >= 1 ? job.corrid.ToString() : std::string();
  // Triton applies a request's `timeout` to a sequence waiting in the backlog (no policy needed).
  const uint64_t timeout_ns =
      MicrosToNanos(GetUint(job.job.request->parameters, "timeout").value_or(0));
  // iterative_sequence: the sequence also ends when its request is released (AfterRunLocked).
  if (!table_.Admit(key, job.start, end, job.job.queue_start_ns, job, timeout_ns)) {
    lock.Unlock();
    AnswerCancelled(dropped);
    Reject(job.job, InvalidArgument("inference request for sequence " + job.corrid.ToString() +
                                    " to model '" + model_->name +
                                    "' must specify the START flag on the first request of the "
                                    "sequence"));
    return;
  }
  stats_->AddPending(1);
  peak_queued_ = std::max(peak_queued_, table_.queued());
  const bool backlogged = table_.backlog_size() > backlog;
  const bool expires = timeout_ns != 0 && table_.InBacklog(key);
  lock.Unlock();
  if (expires) reaper_cv_.notify_one();  // it may be the earliest expiry
  AnswerCancelled(dropped);
  if (backlogged) {
    LOG_VERBOSE(1, "model '{}': sequence {} waits in the backlog (every slot is taken)",
                model_->name, id);
  }
  for (auto& cv : cvs_) cv->notify_one();
}

std::vector<SequenceBatchScheduler::Taken> SequenceBatchScheduler::TakeDirect(size_t instance,
                                                                              uint64_t now_ns,
                                                                              uint64_t* wake_ns) {
  const size_t slots = table_.slots_per_instance();
  std::vector<std::pair<size_t, Table::Sequence*>> heads;
  uint64_t oldest = UINT64_MAX;
  for (size_t k = 0; k < slots; ++k) {
    if (Table::Sequence* s = table_.Head(instance, k)) {
      heads.emplace_back(k, s);
      oldest = std::min(oldest, s->pending.front().second.job.queue_start_ns);
    }
  }
  std::vector<Taken> taken;
  if (heads.empty()) return taken;
  // The delay only applies with a minimum slot utilization (Triton's direct strategy).
  if (!stopping_ && options_.minimum_slot_utilization > 0 && options_.max_queue_delay_ns > 0 &&
      static_cast<float>(heads.size()) < options_.minimum_slot_utilization * slots &&
      now_ns < oldest + options_.max_queue_delay_ns) {
    *wake_ns = oldest + options_.max_queue_delay_ns;
    return taken;
  }
  for (auto& [slot, seq] : heads) {
    Taken t;
    t.slot = slot;
    t.seq = table_.Take(seq, &t.job, &t.end);
    taken.push_back(std::move(t));
  }
  return taken;
}

std::vector<SequenceBatchScheduler::Taken> SequenceBatchScheduler::TakeOldest(size_t instance,
                                                                              uint64_t now_ns,
                                                                              uint64_t* wake_ns) {
  std::vector<std::pair<size_t, Table::Sequence*>> heads;
  for (size_t k = 0; k < table_.slots_per_instance(); ++k) {
    if (Table::Sequence* s = table_.Head(instance, k)) heads.emplace_back(k, s);
  }
  std::vector<Taken> taken;
  if (heads.empty()) return taken;
  auto arrival = [](const std::pair<size_t, Table::Sequence*>& h) {
    return h.second->pending.front().second.job.queue_start_ns;
  };
  std::stable_sort(heads.begin(), heads.end(),
                   [&](const auto& a, const auto& b) { return arrival(a) < arrival(b); });
  // One item per candidate sequence, so no batch can hold two requests of one sequence.
  std::vector<QueuedItem> items;
  items.reserve(heads.size());
  for (const auto& h : heads) {
    const Job& j = h.second->pending.front().second;
    items.push_back({0, false, 1, j.shape_key, j.job.queue_start_ns, 0, false});
  }
  BatcherPolicy policy;
  policy.max_batch_size = std::max(1, options_.max_batch_size);
  policy.preferred_batch_sizes = options_.preferred_batch_sizes;
  policy.max_queue_delay_ns = options_.max_queue_delay_ns;
  const BatchDecision d = FormBatch(items, policy, now_ns, stopping_);
  if (d.batch.empty()) {
    *wake_ns = d.wake_at_ns;
    return taken;
  }
  for (size_t i : d.batch) {
    Taken t;
    t.slot = heads[i].first;
    t.seq = table_.Take(heads[i].second, &t.job, &t.end);
    taken.push_back(std::move(t));
  }
  return taken;
}

bool SequenceBatchScheduler::HeldLocked(size_t instance) {
  size_t& remaining = delay_remaining_[instance];
  if (remaining == 0) return false;
  bool ready = stopping_;  // shutting down runs what is queued
  if (options_.strategy == SequenceOptions::Strategy::kDirect) {
    // Triton's Direct batchers count the requests in every instance's slots, then the backlog.
    ready = ready || (table_.queued() - table_.backlog_queued() >= remaining &&
                      table_.backlog_queued() >= options_.backlog_delay_count);
  } else {
    // Oldest: Triton's per-instance dynamic batcher counts the sequences offered to it.
    size_t heads = 0;
    for (size_t k = 0; k < table_.slots_per_instance(); ++k) {
      heads += table_.Head(instance, k) != nullptr;
    }
    ready = ready || heads >= remaining;
  }
  if (!ready) return true;
  remaining = 0;
  return false;
}

void SequenceBatchScheduler::ExecutorLoop(size_t instance) {
  std::condition_variable& cv = *cvs_[instance];
  std::vector<Job> dropped;
  std::vector<Job> orphans;
  UniqueLock lock(mu_);
  for (;;) {
    if (HeldLocked(instance)) {  // the delay_count test hook: every arrival wakes us
      lock.Wait(cv);
      continue;
    }
    DropCancelledLocked(instance, &dropped);
    if (!dropped.empty()) {
      const bool trim = ShrinkIfDrainedLocked();
      lock.Unlock();
      AnswerCancelled(dropped);
      if (trim) ReturnMemory();
      for (auto& other : cvs_) other->notify_one();  // freed slots may belong to other sequences
      lock.Lock();
      continue;
    }
    uint64_t wake_ns = 0;
    std::vector<Taken> batch = options_.strategy == SequenceOptions::Strategy::kDirect
                                   ? TakeDirect(instance, NowNs(), &wake_ns)
                                   : TakeOldest(instance, NowNs(), &wake_ns);
    if (batch.empty()) {
      bool pending = false;
      for (size_t k = 0; k < table_.slots_per_instance() && !pending; ++k) {
        pending = table_.Head(instance, k) != nullptr;
      }
      if (stopping_ && !pending) return;
      if (wake_ns != 0) {
        lock.WaitUntil(cv, At(wake_ns));
      } else {
        lock.Wait(cv);
      }
      continue;
    }
    for (Taken& t : batch) {  // a rescheduled request keeps the order it was first given
      if (t.job.order == kNoOrder) t.job.order = next_seq_++;
    }
    stats_->AddPending(-static_cast<int64_t>(batch.size()));
    const bool trim = ShrinkIfDrainedLocked();
    lock.Unlock();
    if (trim) ReturnMemory();
    LOG_VERBOSE(1, "model '{}': instance {} executes {} sequence request(s)", model_->name,
                instance, batch.size());
    std::vector<Result> results = Run(instance, batch);
    const uint64_t now = NowNs();
    lock.Lock();
    // The table first (an iterative sequence ends with its request), then the answers.
    AfterRunLocked(batch, now, &orphans);
    reaper_cv_.notify_one();
    lock.Unlock();
    Deliver(batch, results);
    RejectOrphans(orphans);
    batch.clear();
    lock.Lock();
  }
}

void SequenceBatchScheduler::AfterRunLocked(std::vector<Taken>& batch, uint64_t now,
                                            std::vector<Job>* orphans) {
  bool freed = false;
  for (Taken& t : batch) {
    if (!t.rescheduled) {
      table_.Finish(t.seq.get(), now);
      if (options_.iterative) freed = table_.EndIfIdle(t.seq.get()) || freed;
      continue;
    }
    InferenceRequest& request = *t.job.job.request;
    request.inputs.resize(t.job.client_inputs);  // the next execution adds its own
    t.job.start = false;
    t.job.end = false;
    t.job.job.queue_start_ns = now;
    if (table_.Requeue(t.seq.get(), t.job, now)) {
      stats_->AddPending(1);
    } else {
      orphans->push_back(std::move(t.job));
    }
  }
  if (freed) {
    for (auto& cv : cvs_) cv->notify_one();  // a backlogged sequence may own a slot now
  }
}

void SequenceBatchScheduler::RejectOrphans(std::vector<Job>& orphans) {
  for (Job& j : orphans) {
    Reject(j.job, InvalidArgument("inference request for sequence " + j.corrid.ToString() +
                                  " to model '" + model_->name +
                                  "' must specify the START flag on the first request of the "
                                  "sequence"));
  }
  orphans.clear();
}

std::vector<SequenceBatchScheduler::Result> SequenceBatchScheduler::Run(size_t instance,
                                                                        std::vector<Taken>& batch) {
  // A sequence's state is touched only by the executor of its instance while one of its requests
  // is taken (executing > 0 keeps the reaper away), so it is read and written here unlocked.
  std::vector<std::string> keys;
  keys.reserve(batch.size());
  for (Taken& t : batch) {
    if (options_.iterative) {
      // What the backend sees of the request (RequestInfo): Triton's IterativeSequencer gives a
      // request without an ID its own and START, and a rescheduled request flags 0.
      Parameters& p = t.job.job.request->parameters;
      p.Set("sequence_start", t.job.start);
      p.Set("sequence_end", t.job.end);
      if (p.Find("sequence_id") == nullptr) {
        if (t.job.corrid.is_string) {
          p.Set("sequence_id", t.job.corrid.text);
        } else {
          p.Set("sequence_id", t.job.corrid.number);
        }
      }
    }
    const StoredState* state = t.job.start ? nullptr : &t.seq->state;
    AddSequenceInputs(options_, t.job.start, t.job.end, true, t.job.corrid, state,
                      t.job.job.request.get());
    keys.push_back(BatchShapeKey(*t.job.job.request, &exec_info_));
  }
  // Requests whose shapes (state shapes included) differ run as separate executions, except for
  // the shapes of ragged inputs (allow_ragged_batch), which batch whatever they are, as in Triton.
  std::vector<Result> results;
  results.reserve(batch.size());
  for (size_t k = 0; k < batch.size(); ++k) results.emplace_back(Internal("not executed"));
  std::vector<char> done(batch.size(), 0);
  for (size_t first = 0; first < batch.size(); ++first) {
    if (done[first]) continue;
    std::vector<size_t> group;
    for (size_t k = first; k < batch.size(); ++k) {
      if (!done[k] && keys[k] == keys[first]) {
        group.push_back(k);
        done[k] = 1;
      }
    }
    if (model_->decoupled) {
      RunDecoupledGroup(instance, batch, group);
    } else {
      RunGroup(instance, batch, group, &results);
    }
  }
  return results;
}

void SequenceBatchScheduler::Deliver(std::vector<Taken>& batch, std::vector<Result>& results) {
  if (model_->decoupled) return;  // the senders answered (RunDecoupledGroup)
  for (size_t k = 0; k < batch.size(); ++k) {
    if (batch[k].rescheduled) continue;  // answered by a later execution
    InferCallback& cb = batch[k].job.job.done;
    if (options_.preserve_ordering) {
      ordered_.Deliver(batch[k].job.order, cb, std::move(results[k]));
    } else {
      cb(std::move(results[k]));
    }
  }
}

std::vector<std::unique_ptr<InferenceRequest>> SequenceBatchScheduler::GroupRows(
    std::vector<Taken>& batch, const std::vector<size_t>& group, std::vector<int>* row_of) {
  // Direct: every request sits in its slot's row; rows without a request get a filler.
  const bool direct =
      options_.strategy == SequenceOptions::Strategy::kDirect && options_.max_batch_size > 0;
  size_t rows = group.size();
  if (direct) {
    rows = 0;
    for (size_t k : group) rows = std::max(rows, batch[k].slot + 1);
  }
  std::vector<std::unique_ptr<InferenceRequest>> requests(rows);
  row_of->assign(group.size(), 0);
  for (size_t g = 0; g < group.size(); ++g) {
    (*row_of)[g] = static_cast<int>(direct ? batch[group[g]].slot : g);
  }
  const InferenceRequest& like = *batch[group.front()].job.job.request;
  for (size_t r = 0; r < rows; ++r) {
    if (std::find(row_of->begin(), row_of->end(), static_cast<int>(r)) == row_of->end()) {
      requests[r] = MakeFillerRequest(options_, like);
    }
  }
  for (size_t g = 0; g < group.size(); ++g) {
    requests[static_cast<size_t>((*row_of)[g])] = std::move(batch[group[g]].job.job.request);
  }
  return requests;
}

void SequenceBatchScheduler::RunDecoupledGroup(size_t instance, std::vector<Taken>& batch,
                                               const std::vector<size_t>& group) {
  std::vector<int> row_of;
  std::vector<std::unique_ptr<InferenceRequest>> requests = GroupRows(batch, group, &row_of);
  // Filler rows get a sender whose answers, all of them, go nowhere; each request's go to its
  // callback.
  std::vector<InferCallback> dones(requests.size());
  std::vector<bool> fillers(requests.size(), false);
  for (size_t r = 0; r < requests.size(); ++r) {
    dones[r] = [](StatusOr<std::unique_ptr<InferenceResponse>>) {};
    if (std::find(row_of.begin(), row_of.end(), static_cast<int>(r)) == row_of.end()) {
      requests[r]->on_response = [](StatusOr<std::unique_ptr<InferenceResponse>>) {};
      fillers[r] = true;
    }
  }
  std::vector<ResponseProgress> progress(requests.size());
  for (size_t g = 0; g < group.size(); ++g) {
    Job& job = batch[group[g]].job;
    InferCallback done = std::move(job.job.done);
    if (options_.preserve_ordering && !job.done_ordered) {
      // Responses before FINAL flow at once; FINALs keep the order the requests were taken in.
      done = [this, seq = job.order,
              done = std::move(done)](StatusOr<std::unique_ptr<InferenceResponse>> result) mutable {
        ordered_.Deliver(seq, done, std::move(result));
      };
      job.done_ordered = true;
    }
    dones[static_cast<size_t>(row_of[g])] = std::move(done);
    progress[static_cast<size_t>(row_of[g])] = job.progress;
  }
  std::vector<int64_t> sizes(requests.size(), 1);
  ExecutionTimes times;
  std::vector<std::optional<DecoupledSender::TakenBack>> back;
  const Status executed = RunDecoupledBatchOnInstance(
      *instances_[instance], exec_info_, std::move(requests), sizes, std::move(dones), stats_,
      &times, fillers, options_.iterative ? &back : nullptr, progress);
  for (size_t g = 0; g < group.size() && !back.empty(); ++g) {
    std::optional<DecoupledSender::TakenBack>& b = back[static_cast<size_t>(row_of[g])];
    if (!b.has_value()) continue;
    Taken& t = batch[group[g]];
    t.rescheduled = true;
    t.job.job.request = std::move(b->request);
    t.job.job.done = std::move(b->done);
    t.job.progress = b->progress;
  }
  const uint64_t end = NowNs();
  for (size_t k : group) {
    const Job& job = batch[k].job;
    if (executed.ok()) {
      stats_->RecordSuccess(1, job.job.request_start_ns, job.job.queue_start_ns, times,
                            times.compute_end);
    } else {
      stats_->RecordFailure(FailureReason::kBackend, job.job.request_start_ns, end);
    }
  }
  if (executed.ok()) stats_->RecordExecution(static_cast<int64_t>(group.size()), times);
}

void SequenceBatchScheduler::RunGroup(size_t instance, std::vector<Taken>& batch,
                                      const std::vector<size_t>& group,
                                      std::vector<Result>* results) {
  std::vector<int> row_of;
  std::vector<std::unique_ptr<InferenceRequest>> requests = GroupRows(batch, group, &row_of);
  std::vector<int64_t> sizes(requests.size(), 1);
  ExecutionTimes times;
  bool executed = false;
  // Only an iterative sequence takes a request back (backend API v7).
  std::vector<uint32_t> release_flags(options_.iterative ? requests.size() : 0,
                                      backend::kReleaseAll);
  auto out = RunBatchOnInstance(*instances_[instance], exec_info_, std::move(requests), sizes,
                                &times, &executed, release_flags);
  const uint64_t end = NowNs();
  for (size_t g = 0; g < group.size(); ++g) {
    Taken& t = batch[group[g]];
    const size_t row = static_cast<size_t>(row_of[g]);
    Result r = std::move(out[row]);
    if (Rescheduled(release_flags, row) && r.ok()) {
      t.rescheduled = true;
      t.job.job.request = std::move((*r)->request);
      stats_->RecordSuccess(1, t.job.job.request_start_ns, t.job.job.queue_start_ns, times, end);
      continue;
    }
    if (r.ok()) {
      Status kept =
          TakeStateOutputs(*model_, options_, t.job.client_outputs, r->get(), &t.seq->state);
      if (!kept.ok()) r = Result(kept);
    }
    if (r.ok()) {
      stats_->RecordResponse(0, true, times.output_start - times.input_end,
                             times.compute_end - times.output_start);
      stats_->RecordSuccess(1, t.job.job.request_start_ns, t.job.job.queue_start_ns, times, end);
      (*r)->compute = DurationsOf(times);
    } else {
      stats_->RecordFailure(FailureReason::kBackend, t.job.job.request_start_ns, end);
    }
    (*results)[group[g]] = std::move(r);
  }
  if (executed) stats_->RecordExecution(static_cast<int64_t>(group.size()), times);
}

void SequenceBatchScheduler::ReaperLoop() {
  std::vector<Job> expired;
  UniqueLock lock(mu_);
  while (!stopping_) {
    const uint64_t now = NowNs();
    const std::vector<std::string> released = table_.Reap(now);
    if (!released.empty()) {
      LOG_VERBOSE(1, "model '{}': released {} idle sequence(s)", model_->name, released.size());
      for (auto& cv : cvs_) cv->notify_one();  // a backlogged sequence may own a slot now
    }
    if (table_.ExpireBacklog(now, &expired) != 0) {
      stats_->AddPending(-static_cast<int64_t>(expired.size()));
      lock.Unlock();
      LOG_VERBOSE(1, "model '{}': {} backlogged sequence request(s) timed out", model_->name,
                  expired.size());
      for (Job& j : expired) {
        Reject(j.job, Unavailable("timeout of the corresponding sequence has been expired"));
      }
      expired.clear();
      lock.Lock();
      continue;
    }
    uint64_t next = table_.NextReapNs();
    const uint64_t expiry = table_.NextExpiryNs();
    if (expiry != 0 && (next == 0 || expiry < next)) next = expiry;
    if (next == 0) {
      lock.Wait(reaper_cv_);
    } else {
      lock.WaitUntil(reaper_cv_, At(next));
    }
  }
}

void SequenceBatchScheduler::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  for (auto& cv : cvs_) cv->notify_all();
  reaper_cv_.notify_all();
  threads_.Join();
  if (reaper_.joinable()) reaper_.join();
  std::vector<Table::SequencePtr> backlog;
  {
    MutexLock lock(mu_);
    backlog = table_.DrainBacklog();
  }
  for (auto& seq : backlog) {
    for (auto& [end, job] : seq->pending) {
      stats_->AddPending(-1);
      Reject(job.job, Unavailable("model '" + model_->name + "' is unloading"));
    }
  }
  instances_.clear();
}

bool SequenceBatchScheduler::IsExecutorThread() const {
  const auto self = std::this_thread::get_id();
  if (reaper_.get_id() == self) return true;
  return threads_.Contains(self);
}

}  // namespace nereid
