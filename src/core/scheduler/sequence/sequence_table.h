// SequenceTable: the sequence batcher's bookkeeping as a pure data structure, with time passed in
// (so slot assignment, backlog promotion and the idle reaper are unit-tested on a fake clock).
//
// Every live sequence (keyed by its correlation ID) owns a batch slot of one model instance, or
// waits in the backlog (arrival order) when every slot is taken. A sequence keeps its slot for its
// whole life: its requests queue in `pending` and are taken one at a time by that instance. The
// slot is freed, and handed to the oldest backlogged sequence, when the request carrying END is
// taken for execution, or when the sequence has been idle (nothing pending, nothing executing)
// for `idle_ns`.
//
// A sequence whose oldest queued request was cancelled is dropped whole (Drop, DropBacklogged):
// its queued requests go back to the caller to be answered, it is forgotten (its next request
// needs START) and its slot, if it had one, goes to the oldest backlogged sequence at once, so
// abandoned sequences never hold a place.
//
// Memory: Shrink() gives back the capacity of the backlog and of the sequence map after a burst
// (std::deque and std::unordered_map keep theirs otherwise).
//
// A backlogged sequence may expire (Triton's request `timeout` under the sequence batcher): each
// request queued while its sequence waits in the backlog with a timeout lowers the sequence's
// expiry to its arrival + timeout; ExpireBacklog drops the sequences whose expiry has come, whole
// (their next request needs START). A sequence in a slot never expires.
//
// A request of an unknown (or ended, or reaped) sequence must carry START; a START on a live
// sequence restarts it in place (Triton's behaviour): the request queues behind the others and
// the executor resets the state when it runs.
//
// Thread-safety: none; the owner serialises every call (the scheduler's mutex).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/saturating_time.h"

namespace nereid {

template <typename Job, typename State>
class SequenceTable {
 public:
  struct Sequence {
    std::string key;
    std::deque<std::pair<bool, Job>> pending;  // (carries END, job), arrival order
    int instance = -1;                         // -1: in the backlog
    size_t slot = 0;
    uint64_t last_used_ns = 0;
    int executing = 0;
    bool ended = false;      // END admitted: later requests need START
    uint64_t expire_ns = 0;  // in the backlog: when it expires (0: never)
    State state{};
  };
  using SequencePtr = std::shared_ptr<Sequence>;

  SequenceTable(size_t instances, size_t slots_per_instance, uint64_t idle_ns)
      : slots_(instances, std::vector<SequencePtr>(slots_per_instance)), idle_ns_(idle_ns) {}

  // Queues `job` (moved from only on success). False: the sequence is unknown, ended or reaped
  // and the request does not carry START. `timeout_ns` (0: none) sets the sequence's expiry when
  // the request waits in the backlog.
  bool Admit(const std::string& key, bool start, bool end, uint64_t now_ns, Job& job,
             uint64_t timeout_ns = 0) {
    auto it = live_.find(key);
    if (it == live_.end() || (it->second->ended && !start)) {
      if (!start) return false;
    }
    SequencePtr seq;
    if (it == live_.end()) {
      seq = std::make_shared<Sequence>();
      seq->key = key;
      live_.emplace(key, seq);
      if (!AssignSlot(seq)) backlog_.push_back(seq);
    } else {
      seq = it->second;
    }
    seq->ended = end;
    seq->last_used_ns = now_ns;
    seq->pending.emplace_back(end, std::move(job));
    ++queued_;
    if (seq->instance < 0) {
      ++backlog_queued_;
      if (timeout_ns != 0) {
        const uint64_t at = SaturatingAdd(now_ns, timeout_ns);
        seq->expire_ns = seq->expire_ns == 0 ? at : std::min(seq->expire_ns, at);
      }
    }
    return true;
  }

  // True when the sequence of `key` is live and waits in the backlog.
  bool InBacklog(const std::string& key) const {
    auto it = live_.find(key);
    return it != live_.end() && it->second->instance < 0;
  }

  // When ExpireBacklog next has something to do (0: no backlogged sequence has an expiry).
  uint64_t NextExpiryNs() const {
    uint64_t next = 0;
    for (const SequencePtr& s : backlog_) {
      if (s->expire_ns != 0 && (next == 0 || s->expire_ns < next)) next = s->expire_ns;
    }
    return next;
  }

  // Drops every backlogged sequence whose expiry is at or before `now_ns`, appending their jobs
  // (oldest first) to `*jobs`. Returns how many sequences expired.
  size_t ExpireBacklog(uint64_t now_ns, std::vector<Job>* jobs) {
    return RemoveBacklogged(
        [now_ns](const Sequence& s) { return s.expire_ns != 0 && s.expire_ns <= now_ns; }, jobs);
  }

  // True when a request of `key` would wait in the backlog: its sequence is backlogged, or it
  // would start a new sequence and every slot is taken.
  bool WouldWaitInBacklog(const std::string& key) const {
    auto it = live_.find(key);
    if (it != live_.end()) return it->second->instance < 0;
    for (const auto& row : slots_) {
      for (const SequencePtr& s : row) {
        if (s == nullptr) return false;
      }
    }
    return true;
  }

  // The sequence in `slot` of `instance` when it has a request waiting, else nullptr.
  Sequence* Head(size_t instance, size_t slot) const {
    Sequence* s = slots_[instance][slot].get();
    return s != nullptr && !s->pending.empty() ? s : nullptr;
  }
  size_t slots_per_instance() const { return slots_.empty() ? 0 : slots_[0].size(); }
  size_t backlog_size() const { return backlog_.size(); }
  size_t live_size() const { return live_.size(); }
  // Requests queued and not yet taken, in slots and in the backlog.
  size_t queued() const { return queued_; }
  // Requests of backlogged sequences (waiting for a slot).
  size_t backlog_queued() const { return backlog_queued_; }
  size_t live_bucket_count() const { return live_.bucket_count(); }

  // Takes the oldest request of `seq` (which Head returned) for execution. Returns the sequence
  // (kept alive even when END removed it from the table) and sets `*end`.
  SequencePtr Take(Sequence* seq, Job* job, bool* end) {
    SequencePtr keep = slots_[seq->instance][seq->slot];
    *end = seq->pending.front().first;
    *job = std::move(seq->pending.front().second);
    seq->pending.pop_front();
    --queued_;
    ++seq->executing;
    if (*end && seq->pending.empty()) Release(keep);
    return keep;
  }

  // The execution of one taken request is over.
  void Finish(Sequence* seq, uint64_t now_ns) {
    --seq->executing;
    seq->last_used_ns = now_ns;
  }

  // The execution of one taken request is over and the request goes back to the end of its
  // sequence's queue (an iterative sequence's rescheduled request), without END. False (and
  // `job` untouched) when the sequence has ended meanwhile (the request carried END, or START
  // restarted it elsewhere): the request has no sequence to go back to.
  bool Requeue(Sequence* seq, Job& job, uint64_t now_ns) {
    Finish(seq, now_ns);
    auto it = live_.find(seq->key);
    if (it == live_.end() || it->second.get() != seq || seq->ended || seq->instance < 0) {
      return false;
    }
    seq->pending.emplace_back(false, std::move(job));
    ++queued_;
    return true;
  }

  // Ends `seq` (an iterative sequence whose request was released) when nothing of it is queued
  // or executing: its slot goes to the oldest backlogged sequence, its next request needs START.
  // Returns whether it ended.
  bool EndIfIdle(Sequence* seq) {
    if (seq->executing != 0 || !seq->pending.empty() || seq->instance < 0) return false;
    auto it = live_.find(seq->key);
    if (it == live_.end() || it->second.get() != seq) return false;  // already ended or reaped
    const SequencePtr keep = it->second;  // Release erases the map's entry
    Release(keep);
    return true;
  }

  // Releases every sequence idle for idle_ns by `now_ns`; returns their keys.
  std::vector<std::string> Reap(uint64_t now_ns) {
    std::vector<SequencePtr> idle;
    for (const auto& [key, seq] : live_) {
      if (Reapable(*seq) && SaturatingAdd(seq->last_used_ns, idle_ns_) <= now_ns)
        idle.push_back(seq);
    }
    std::vector<std::string> keys;
    for (const SequencePtr& seq : idle) {
      keys.push_back(seq->key);
      Release(seq);
    }
    return keys;
  }

  // When Reap next has something to do (0: nothing is idle).
  uint64_t NextReapNs() const {
    uint64_t next = std::numeric_limits<uint64_t>::max();
    for (const auto& [key, seq] : live_) {
      if (Reapable(*seq)) next = std::min(next, SaturatingAdd(seq->last_used_ns, idle_ns_));
    }
    return next == std::numeric_limits<uint64_t>::max() ? 0 : next;
  }

  // Removes every backlogged sequence (shutting down) and returns them.
  std::vector<SequencePtr> DrainBacklog() {
    std::vector<SequencePtr> out(backlog_.begin(), backlog_.end());
    backlog_.clear();
    for (const SequencePtr& s : out) {
      live_.erase(s->key);
      queued_ -= s->pending.size();
    }
    backlog_queued_ = 0;
    return out;
  }

  // Forgets `seq`, a sequence in a slot with nothing executing (which Head returned): its slot
  // goes to the oldest backlogged sequence. Appends its queued jobs, oldest first, to `*jobs`.
  void Drop(Sequence* seq, std::vector<Job>* jobs) {
    SequencePtr keep = slots_[seq->instance][seq->slot];
    TakeAll(*keep, jobs);
    Release(keep);
  }

  // Drops every backlogged sequence whose oldest request satisfies `cancelled(const Job&)`,
  // appending their jobs to `*jobs`. Returns how many sequences were dropped.
  template <typename Pred>
  size_t DropBacklogged(Pred cancelled, std::vector<Job>* jobs) {
    return RemoveBacklogged(
        [&](const Sequence& s) {
          return !s.pending.empty() && cancelled(s.pending.front().second);
        },
        jobs);
  }

  // Gives back the memory of containers that grew for a burst and have since emptied out.
  void Shrink() {
    if (backlog_.empty()) std::deque<SequencePtr>().swap(backlog_);
    if (live_.size() * 4 < live_.bucket_count() && live_.bucket_count() > kMinBuckets) {
      live_.rehash(0);
    }
  }

 private:
  static constexpr size_t kMinBuckets = 64;

  // Removes the backlogged sequences for which `drop(const Sequence&)` holds, forgetting them.
  template <typename Pred>
  size_t RemoveBacklogged(Pred drop, std::vector<Job>* jobs) {
    std::deque<SequencePtr> kept;
    size_t dropped = 0;
    for (SequencePtr& seq : backlog_) {
      if (!drop(*seq)) {
        kept.push_back(std::move(seq));
        continue;
      }
      backlog_queued_ -= seq->pending.size();
      TakeAll(*seq, jobs);
      auto it = live_.find(seq->key);
      if (it != live_.end() && it->second == seq) live_.erase(it);
      ++dropped;
    }
    backlog_.swap(kept);
    return dropped;
  }

  void TakeAll(Sequence& seq, std::vector<Job>* jobs) {
    for (auto& [end, job] : seq.pending) jobs->push_back(std::move(job));
    queued_ -= seq.pending.size();
    seq.pending.clear();
    seq.pending.shrink_to_fit();
  }

  static bool Reapable(const Sequence& s) {
    return s.instance >= 0 && s.pending.empty() && s.executing == 0;
  }

  // The instance with the most free slots (the lowest index on ties), its lowest free slot.
  bool AssignSlot(const SequencePtr& seq) {
    size_t best_free = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      size_t free = 0;
      for (const SequencePtr& s : slots_[i]) free += s == nullptr;
      if (free > best_free) {
        best_free = free;
        seq->instance = static_cast<int>(i);
      }
    }
    if (best_free == 0) return false;
    auto& row = slots_[static_cast<size_t>(seq->instance)];
    for (size_t k = 0; k < row.size(); ++k) {
      if (row[k] == nullptr) {
        row[k] = seq;
        seq->slot = k;
        return true;
      }
    }
    return false;
  }

  // Frees the slot of `seq` (forgetting it) and gives the slot to the oldest backlogged sequence.
  void Release(const SequencePtr& seq) {
    auto it = live_.find(seq->key);
    if (it != live_.end() && it->second == seq) live_.erase(it);
    if (seq->instance < 0) return;
    const size_t instance = static_cast<size_t>(seq->instance);
    slots_[instance][seq->slot] = nullptr;
    if (backlog_.empty()) return;
    SequencePtr next = std::move(backlog_.front());
    backlog_.pop_front();
    backlog_queued_ -= next->pending.size();
    next->instance = static_cast<int>(instance);
    next->slot = seq->slot;
    slots_[instance][seq->slot] = next;
  }

  std::vector<std::vector<SequencePtr>> slots_;  // [instance][slot]
  std::deque<SequencePtr> backlog_;
  std::unordered_map<std::string, SequencePtr> live_;
  const uint64_t idle_ns_;
  size_t queued_ = 0;
  size_t backlog_queued_ = 0;
};

}  // namespace nereid
