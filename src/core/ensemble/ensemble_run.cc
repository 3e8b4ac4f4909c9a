#include "core/ensemble/ensemble_run.h"

namespace nereid {

Status InEnsemble(const std::string& ensemble, const Status& status) {
  return Status(status.code(), "in ensemble '" + ensemble + "', " + status.message());
}

EnsembleRun::EnsembleRun(const EnsemblePlan* plan, std::vector<size_t> wanted,
                         StepDispatcher dispatch, EnsembleDone done)
    : plan_(plan),
      wanted_(std::move(wanted)),
      dispatch_(std::move(dispatch)),
      done_(std::move(done)),
      needed_(plan->NeededSteps(wanted_)) {
  MutexLock lock(mu_);
  values_.resize(plan->tensor_count());
  missing_.reserve(plan->steps().size());
  for (const auto& step : plan->steps()) missing_.push_back(step.distinct_inputs);
}

void EnsembleRun::Start(const EnsemblePlan* plan,
                        std::vector<std::pair<size_t, EnsembleTensorValue>> inputs,
                        std::vector<size_t> wanted, StepDispatcher dispatch, EnsembleDone done) {
  auto run =
      std::make_shared<EnsembleRun>(plan, std::move(wanted), std::move(dispatch), std::move(done));
  std::vector<size_t> ready;
  bool finish = false;
  {
    MutexLock lock(run->mu_);
    for (auto& [t, value] : inputs) run->SetTensorLocked(t, std::move(value), &ready);
    run->inflight_ = ready.size();
    finish = ready.empty();
    run->finished_ = finish;
  }
  run->Dispatch(ready);
  if (finish) run->Finish();
}

void EnsembleRun::SetTensorLocked(size_t t, EnsembleTensorValue value, std::vector<size_t>* ready) {
  if (values_[t].has_value()) return;
  values_[t] = std::move(value);
  for (size_t step : plan_->consumers(t)) {
    if (needed_[step] && --missing_[step] == 0) ready->push_back(step);
  }
}

void EnsembleRun::Dispatch(const std::vector<size_t>& steps) {
  for (size_t step : steps) {
    NamedTensors inputs;
    {
      MutexLock lock(mu_);
      const auto& plan = plan_->steps()[step];
      inputs.reserve(plan.inputs.size());
      for (const auto& [name, t] : plan.inputs) inputs.emplace_back(name, *values_[t]);
    }
    dispatch_(step, std::move(inputs),
              [self = shared_from_this(), step](StatusOr<NamedTensors> result) {
                self->OnStepDone(step, std::move(result));
              });
  }
}

void EnsembleRun::OnStepDone(size_t step, StatusOr<NamedTensors> result) {
  std::vector<size_t> ready;
  bool finish = false;
  {
    MutexLock lock(mu_);
    --inflight_;
    if (!result.ok()) {
      if (error_.ok()) error_ = InEnsemble(plan_->name(), result.status());
    } else if (error_.ok()) {
      for (const auto& [name, t] : plan_->steps()[step].outputs) {
        for (auto& [produced, value] : *result) {
          if (produced == name) {
            SetTensorLocked(t, std::move(value), &ready);
            break;
          }
        }
      }
    }
    if (!error_.ok()) ready.clear();  // the first error wins: nothing new starts
    inflight_ += ready.size();
    if (inflight_ == 0 && !finished_) finished_ = finish = true;
  }
  Dispatch(ready);
  if (finish) Finish();
}

void EnsembleRun::Finish() {
  StatusOr<EnsembleResult> out = EnsembleResult{};
  {
    MutexLock lock(mu_);
    if (!error_.ok()) {
      out = error_;
    } else {
      EnsembleResult result;
      result.reserve(wanted_.size());
      for (size_t t : wanted_) {
        if (!values_[t].has_value()) {
          result.clear();
          out = InEnsemble(plan_->name(),
                           InvalidArgument("unexpected deadlock, at least one output is not set "
                                           "while no more ensemble steps can be made"));
          break;
        }
        result.emplace_back(t, *values_[t]);
      }
      if (out.ok()) out = std::move(result);
    }
    values_.clear();  // releases every intermediate tensor before the reply is built
  }
  EnsembleDone done = std::move(done_);
  done(std::move(out));
}

}  // namespace nereid
