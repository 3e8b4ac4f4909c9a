#include "core/scheduler/decoupled_batch_runner.h"

#include <algorithm>

#include "core/model/decoupled_sender.h"
#include "core/model/instance_runner.h"
#include "core/scheduler/batch_runner.h"

namespace nereid {

Status RunDecoupledBatchOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::vector<std::unique_ptr<InferenceRequest>> requests,
    const std::vector<int64_t>& batch_sizes, std::vector<InferCallback> dones, ModelStats* stats,
    ExecutionTimes* times, const std::vector<bool>& fillers,
    std::vector<std::optional<DecoupledSender::TakenBack>>* taken_back,
    std::span<const ResponseProgress> progress) {
  if (taken_back != nullptr) {
    taken_back->clear();
    taken_back->resize(requests.size());
  }
  auto progress_of = [&](size_t i) {
    return i < progress.size() ? progress[i] : ResponseProgress{};
  };
  if (requests.size() == 1) {
    return RunDecoupledOnInstance(instance, model, std::move(requests.front()), batch_sizes.front(),
                                  stats, std::move(dones.front()), times,
                                  taken_back != nullptr ? &taken_back->front() : nullptr,
                                  progress_of(0));
  }
  const uint64_t gather_start = NowNs();
  int64_t total = 0;
  for (int64_t b : batch_sizes) total += std::max<int64_t>(1, b);
  std::vector<const InferenceRequest*> items;
  items.reserve(requests.size());
  for (const auto& r : requests) items.push_back(r.get());
  auto merged = GatherRequests(model, items, total);
  // The senders own the requests (and so the memory `items` points to) from here on.
  std::vector<std::shared_ptr<DecoupledSender>> owned;
  std::vector<std::shared_ptr<backend::ResponseSender>> senders;
  owned.reserve(requests.size());
  senders.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const bool filler = i < fillers.size() && fillers[i];
    owned.push_back(std::make_shared<DecoupledSender>(model, filler ? nullptr : stats,
                                                      std::move(requests[i]), std::move(dones[i]),
                                                      progress_of(i)));
    senders.push_back(owned.back());
  }
  if (!merged.ok()) {
    times->compute_start = gather_start;
    times->compute_end = NowNs();
    for (auto& s : owned) s->FailIfOpen(merged.status());
    return merged.status();
  }
  std::vector<uint32_t> release_flags(requests.size(), backend::kReleaseAll);
  auto all = RunOnInstance(instance, model, std::move(merged).value(), total, items, times, senders,
                           {}, release_flags);
  times->compute_start = gather_start;  // gathering is part of preparing the inputs
  senders.clear();
  if (!all.ok()) {
    for (auto& s : owned) s->FailIfOpen(all.status());
    return all.status();
  }
  if (TakeBackRescheduled(owned, release_flags, taken_back)) {
    times->compute_end = NowNs();
    return Status::Ok();  // a rescheduled request's rows are not in the outputs
  }
  // A plugin that kept no sender and sent nothing answered through the allocator: each request
  // gets its rows as its only (FINAL) response. Requests the plugin answered in part and then
  // released are failed by their sender's destructor.
  const bool from_allocator = std::all_of(owned.begin(), owned.end(), [](const auto& s) {
    return s.use_count() == 1 && s->UnansweredRequest() != nullptr;
  });
  if (from_allocator) {
    auto parts = SplitBatchResponse(model, **all, items, batch_sizes);
    for (size_t i = 0; i < owned.size(); ++i) {
      owned[i]->FinishFromAllocator([&parts, i](InferenceResponse* response) {
        if (!parts[i].ok()) return parts[i].status();
        response->outputs = std::move((*parts[i])->outputs);
        return Status::Ok();
      });
    }
  }
  times->compute_end = NowNs();
  return Status::Ok();
}

}  // namespace nereid
