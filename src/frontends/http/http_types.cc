#include "frontends/http/http_types.h"

#include <algorithm>

namespace nereid {

std::string_view HttpMethodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "GET";
    case HttpMethod::kHead:
      return "HEAD";
    case HttpMethod::kPost:
      return "POST";
    case HttpMethod::kPut:
      return "PUT";
    case HttpMethod::kDelete:
      return "DELETE";
    case HttpMethod::kPatch:
      return "PATCH";
    case HttpMethod::kOptions:
      return "OPTIONS";
    case HttpMethod::kOther:
      return "OTHER";
  }
  return "OTHER";
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

void HttpHeaders::Add(std::string name, std::string value) {
  if (size_ < entries_.size()) {
    entries_[size_++] = {std::move(name), std::move(value)};
    return;
  }
  entries_.emplace_back(std::move(name), std::move(value));
  ++size_;
}

void HttpHeaders::AddCopy(std::string_view name, std::string_view value) {
  if (size_ < entries_.size()) {
    entries_[size_].first.assign(name);
    entries_[size_++].second.assign(value);
    return;
  }
  entries_.emplace_back(std::string(name), std::string(value));
  ++size_;
}

const std::string* HttpHeaders::Find(std::string_view name) const {
  for (const auto& [k, v] : *this) {
    if (EqualsIgnoreCase(k, name)) return &v;
  }
  return nullptr;
}

size_t HttpHeaders::Count(std::string_view name) const {
  size_t n = 0;
  for (const auto& [k, v] : *this) n += EqualsIgnoreCase(k, name) ? 1 : 0;
  return n;
}

void HttpHeaders::Set(std::string_view name, std::string value) {
  const auto active_end = entries_.begin() + static_cast<std::ptrdiff_t>(size_);
  const auto kept = std::remove_if(entries_.begin(), active_end, [name](const auto& e) {
    return EqualsIgnoreCase(e.first, name);
  });
  size_ = static_cast<size_t>(kept - entries_.begin());
  Add(std::string(name), std::move(value));
}

std::string_view HttpRequest::Path() const {
  const std::string_view t(target);
  return t.substr(0, t.find('?'));
}

std::string_view HttpRequest::Query() const {
  const std::string_view t(target);
  const size_t q = t.find('?');
  return q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
}

void HttpBody::Add(Segment segment) {
  if (segment_count_++ == 0) {
    first_ = std::move(segment);
  } else {
    more_.push_back(std::move(segment));
  }
}

void HttpBody::Append(std::string chunk) {
  size_ += chunk.size();
  Add(Segment{std::move(chunk), {}, false});
}

void HttpBody::AppendView(std::string_view view) {
  size_ += view.size();
  Add(Segment{{}, view, true});
}

std::string HttpBody::Flatten() const {
  std::string out;
  out.reserve(size_);
  ForEachBuffer([&out](std::string_view v) { out.append(v); });
  return out;
}

void HttpBody::Clear() {
  first_ = Segment{};
  more_.clear();
  segment_count_ = 0;
  owners_.clear();
  first_owner_.reset();
  size_ = 0;
}

HttpResponse HttpResponse::Empty(int status) {
  HttpResponse r;
  r.status = status;
  return r;
}

HttpResponse HttpResponse::Json(int status, std::string json) {
  HttpResponse r;
  r.status = status;
  r.headers.Add("Content-Type", "application/json");
  r.body.Append(std::move(json));
  return r;
}

bool HttpBodyStream::Push(std::string piece) {
  {
    MutexLock lock(mu_);
    if (abandoned_) return false;
    if (closed_ || piece.empty()) return true;
    pieces_.push_back(std::move(piece));
  }
  Wake();
  return true;
}

void HttpBodyStream::Close() {
  {
    MutexLock lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  Wake();
}

bool HttpBodyStream::abandoned() const {
  MutexLock lock(mu_);
  return abandoned_;
}

void HttpBodyStream::SetWaker(std::function<void()> wake) {
  bool pending = false;
  {
    MutexLock lock(mu_);
    wake_ = std::make_shared<std::function<void()>>(std::move(wake));
    pending = !pieces_.empty() || closed_;
  }
  if (pending) Wake();
}

std::vector<std::string> HttpBodyStream::Take(bool* closed) {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  out.swap(pieces_);
  *closed = closed_;
  return out;
}

void HttpBodyStream::Abandon() {
  MutexLock lock(mu_);
  abandoned_ = true;
  pieces_.clear();
  wake_.reset();
}

void HttpBodyStream::Wake() {
  std::shared_ptr<std::function<void()>> wake;
  {
    MutexLock lock(mu_);
    wake = wake_;
  }
  if (wake != nullptr && *wake) (*wake)();
}

}  // namespace nereid
