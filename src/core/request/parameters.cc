#include "core/request/parameters.h"

#include <limits>

namespace nereid {

size_t Parameters::IndexOf(std::string_view key) const {
  if (!index_.empty()) {
    auto it = index_.find(key);
    return it == index_.end() ? kNotFound : it->second;
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].first == key) return i;
  }
  return kNotFound;
}

void Parameters::Reindex() {
  index_.clear();
  if (entries_.size() <= kIndexThreshold) return;
  index_.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
}

void Parameters::Set(std::string key, ParameterValue value) {
  if (const size_t i = IndexOf(key); i != kNotFound) {
    entries_[i].second = std::move(value);
    return;
  }
  entries_.emplace_back(std::move(key), std::move(value));
  if (!index_.empty()) {
    index_.emplace(entries_.back().first, entries_.size() - 1);
  } else if (entries_.size() > kIndexThreshold) {
    Reindex();
  }
}

const ParameterValue* Parameters::Find(std::string_view key) const {
  const size_t i = IndexOf(key);
  return i == kNotFound ? nullptr : &entries_[i].second;
}

bool Parameters::Remove(std::string_view key) {
  const size_t i = IndexOf(key);
  if (i == kNotFound) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
  if (!index_.empty()) Reindex();
  return true;
}

std::optional<bool> GetBool(const Parameters& p, std::string_view key) {
  const ParameterValue* v = p.Find(key);
  if (v == nullptr) return std::nullopt;
  if (const bool* b = std::get_if<bool>(v)) return *b;
  return std::nullopt;
}

std::optional<int64_t> GetInt(const Parameters& p, std::string_view key) {
  const ParameterValue* v = p.Find(key);
  if (v == nullptr) return std::nullopt;
  if (const int64_t* i = std::get_if<int64_t>(v)) return *i;
  if (const uint64_t* u = std::get_if<uint64_t>(v)) {
    if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(*u);
    }
  }
  return std::nullopt;
}

// Triton's HTTP frontend reads an ID as an unsigned integer and, failing that, as a string: the
// error a client sees is the string attempt's.
Status InvalidSequenceId() {
  return InvalidArgument(
      "Unable to parse 'sequence_id': attempt to access JSON non-string as string");
}

std::optional<uint64_t> GetUint(const Parameters& p, std::string_view key) {
  const ParameterValue* v = p.Find(key);
  if (v == nullptr) return std::nullopt;
  if (const uint64_t* u = std::get_if<uint64_t>(v)) return *u;
  if (const int64_t* i = std::get_if<int64_t>(v)) {
    if (*i >= 0) return static_cast<uint64_t>(*i);
  }
  return std::nullopt;
}

}  // namespace nereid
