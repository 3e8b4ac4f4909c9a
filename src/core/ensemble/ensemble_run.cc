#include "core/ensemble/ensemble_run.h"

#include <atomic>

namespace nereid {

Status InEnsemble(const std::string& ensemble, const Status& status) {
  return Status(status.code(), "in ensemble '" + ensemble + "', " + status.message());
}

EnsembleRun::EnsembleRun(const EnsemblePlan* plan, std::vector<size_t> wanted,
                         StepDispatcher dispatch, EnsembleDone done, EnsemblePartial partial)
    : plan_(plan),
      wanted_(std::move(wanted)),
      dispatch_(std::move(dispatch)),
      done_(std::move(done)),
      partial_(std::move(partial)),
      needed_(plan->NeededSteps(wanted_)) {
  auto first = std::make_unique<Flow>();
  first->values.resize(plan->tensor_count());
  first->missing.reserve(plan->steps().size());
  for (const auto& step : plan->steps()) first->missing.push_back(step.distinct_inputs);
  first->inherits.assign(plan->steps().size(), false);
  MutexLock lock(mu_);
  flows_.push_back(std::move(first));
}

void EnsembleRun::Start(const EnsemblePlan* plan,
                        std::vector<std::pair<size_t, EnsembleTensorValue>> inputs,
                        std::vector<size_t> wanted, StepDispatcher dispatch, EnsembleDone done,
                        EnsemblePartial partial) {
  auto run = std::make_shared<EnsembleRun>(plan, std::move(wanted), std::move(dispatch),
                                           std::move(done), std::move(partial));
  Ready ready;
  bool finish = false;
  {
    MutexLock lock(run->mu_);
    for (auto& [t, value] : inputs) run->SetTensorLocked(0, t, value, &ready);
    run->inflight_ = ready.size();
    if (run->partial_) run->AnswerLocked(0);
    finish = ready.empty();
    run->finished_ = finish;
  }
  run->Dispatch(ready);
  if (finish) run->Finish();
  run->Deliver();
}

void EnsembleRun::SetTensorLocked(size_t flow, size_t t, const EnsembleTensorValue& value,
                                  Ready* ready) {
  Flow& f = *flows_[flow];
  if (f.values[t].has_value()) return;
  f.values[t] = value;
  for (size_t step : plan_->consumers(t)) {
    if (needed_[step] && --f.missing[step] == 0) ready->emplace_back(flow, step);
  }
  const int64_t producer = plan_->producer(t);
  if (producer < 0) return;
  for (size_t child : f.children) {
    if (flows_[child]->inherits[static_cast<size_t>(producer)]) {
      SetTensorLocked(child, t, value, ready);
    }
  }
}

void EnsembleRun::SetOutputsLocked(size_t flow, size_t step, NamedTensors& outputs, Ready* ready) {
  for (const auto& [name, t] : plan_->steps()[step].outputs) {
    for (auto& [produced, value] : outputs) {
      if (produced == name) {
        SetTensorLocked(flow, t, value, ready);
        break;
      }
    }
  }
}

void EnsembleRun::ForkLocked(size_t parent, size_t step, NamedTensors& outputs, Ready* ready) {
  const Flow& p = *flows_[parent];
  auto child = std::make_unique<Flow>();
  child->values = p.values;
  child->missing = p.missing;
  // The steps already running (or done) in the parent do not run again here; what they still
  // produce there is this flow's too. `step` itself answers here through `outputs`.
  child->inherits.resize(p.missing.size());
  for (size_t s = 0; s < p.missing.size(); ++s) child->inherits[s] = p.missing[s] == 0;
  child->inherits[step] = false;
  const size_t id = flows_.size();
  flows_.push_back(std::move(child));
  flows_[parent]->children.push_back(id);
  SetOutputsLocked(id, step, outputs, ready);
}

void EnsembleRun::AnswerLocked(size_t flow) {
  Flow& f = *flows_[flow];
  if (!f.answered) {
    EnsembleResult result;
    result.reserve(wanted_.size());
    for (size_t t : wanted_) {
      if (!f.values[t].has_value()) break;
      result.emplace_back(t, *f.values[t]);
    }
    if (result.size() == wanted_.size()) {
      f.answered = true;
      outbox_.push_back({false, std::move(result)});
    }
  }
  for (size_t child : f.children) AnswerLocked(child);
}

void EnsembleRun::Dispatch(const Ready& steps) {
  for (const auto& ready_step : steps) {
    // Plain copies: clang 14 cannot capture structured bindings in the lambdas below.
    const size_t flow = ready_step.first;
    const size_t step = ready_step.second;
    NamedTensors inputs;
    {
      MutexLock lock(mu_);
      const auto& plan = plan_->steps()[step];
      inputs.reserve(plan.inputs.size());
      for (const auto& [name, t] : plan.inputs) inputs.emplace_back(name, *flows_[flow]->values[t]);
    }
    // Whether the step sent responses before its FINAL one (then its FINAL forks as well).
    auto forked = std::make_shared<std::atomic<bool>>(false);
    dispatch_(
        step, std::move(inputs),
        [self = shared_from_this(), flow, step, forked](StatusOr<NamedTensors> result) {
          forked->store(true);
          self->OnStepPartial(flow, step, std::move(result));
        },
        [self = shared_from_this(), flow, step, forked](StatusOr<NamedTensors> result) {
          self->OnStepDone(flow, step, forked->load(), std::move(result));
        });
  }
}

void EnsembleRun::OnStepPartial(size_t flow, size_t step, StatusOr<NamedTensors> result) {
  Ready ready;
  {
    MutexLock lock(mu_);
    if (!result.ok()) {
      if (error_.ok()) error_ = InEnsemble(plan_->name(), result.status());
    } else if (!partial_) {
      if (error_.ok()) {
        error_ =
            InEnsemble(plan_->name(), Internal("step " + std::to_string(step) +
                                               " sent several responses to an ensemble that is not "
                                               "decoupled"));
      }
    } else if (error_.ok()) {
      ForkLocked(flow, step, *result, &ready);
      AnswerLocked(flows_.size() - 1);
    }
    if (!error_.ok()) ready.clear();
    inflight_ += ready.size();
  }
  Dispatch(ready);
  Deliver();
}

void EnsembleRun::OnStepDone(size_t flow, size_t step, bool forked, StatusOr<NamedTensors> result) {
  Ready ready;
  bool finish = false;
  {
    MutexLock lock(mu_);
    --inflight_;
    if (!result.ok()) {
      if (error_.ok()) error_ = InEnsemble(plan_->name(), result.status());
    } else if (error_.ok() && !result->empty()) {
      if (forked && partial_) {
        ForkLocked(flow, step, *result, &ready);
        AnswerLocked(flows_.size() - 1);
      } else {
        SetOutputsLocked(flow, step, *result, &ready);
        if (partial_) AnswerLocked(flow);
      }
    }
    if (!error_.ok()) ready.clear();  // the first error wins: nothing new starts
    inflight_ += ready.size();
    if (inflight_ == 0 && !finished_) finished_ = finish = true;
  }
  Dispatch(ready);
  if (finish) Finish();
  Deliver();
}

void EnsembleRun::Finish() {
  StatusOr<EnsembleResult> out = EnsembleResult{};
  {
    MutexLock lock(mu_);
    if (!error_.ok()) {
      out = error_;
    } else if (!partial_) {
      const Flow& f = *flows_[0];
      EnsembleResult result;
      result.reserve(wanted_.size());
      for (size_t t : wanted_) {
        if (!f.values[t].has_value()) {
          result.clear();
          out = InEnsemble(plan_->name(),
                           InvalidArgument("unexpected deadlock, at least one output is not set "
                                           "while no more ensemble steps can be made"));
          break;
        }
        result.emplace_back(t, *f.values[t]);
      }
      if (out.ok()) out = std::move(result);
    }
    // Every intermediate tensor is released before the reply is built (the queued responses
    // hold what they answer with).
    flows_.clear();
    if (partial_) {
      outbox_.push_back({true, std::move(out)});
      return;
    }
  }
  EnsembleDone done = std::move(done_);
  done(std::move(out));
}

void EnsembleRun::Deliver() {
  {
    MutexLock lock(mu_);
    if (delivering_ || outbox_.empty()) return;
    delivering_ = true;
  }
  for (;;) {
    Outgoing next;
    {
      MutexLock lock(mu_);
      if (outbox_.empty()) {
        delivering_ = false;
        return;
      }
      next = std::move(outbox_.front());
      outbox_.pop_front();
    }
    if (next.final) {
      EnsembleDone done = std::move(done_);
      done(std::move(next.result));
    } else {
      partial_(std::move(*next.result));
    }
  }
}

}  // namespace nereid
