// UniqueFunction<R(Args...)[, N]>: a move-only std::function with room for a larger callable
// inline. Holds any callable that is move-constructible (a lambda owning a unique_ptr or a ticket
// is fine), so one object per request can be handed around without a shared_ptr around it. A
// callable up to kInlineBytes (and nothrow-movable) lives inside the UniqueFunction; a larger one
// is allocated once, on construction.
//
// Not thread-safe (like std::function); moving leaves the source empty.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace nereid {

// The default inline room: enough for a lambda holding a shared_ptr, a std::string and a few
// flags (an HTTP reply's closure), or a pointer to a per-request object.
template <typename Signature, size_t InlineBytes = 64>
class UniqueFunction;

template <typename R, typename... Args, size_t InlineBytes>
class UniqueFunction<R(Args...), InlineBytes> {
 public:
  static constexpr size_t kInlineBytes = InlineBytes;

  UniqueFunction() noexcept = default;
  UniqueFunction(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, UniqueFunction> &&
                                        std::is_invocable_r_v<R, D&, Args...>>>
  UniqueFunction(F&& f) {  // NOLINT(google-explicit-constructor): as std::function
    if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D> ||
                  std::is_same_v<D, std::function<R(Args...)>>) {
      if (!f) return;  // a null pointer or empty std::function stays empty, as in std::function
    }
    if constexpr (kFitsInline<D>) {
      ::new (static_cast<void*>(&storage_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      *reinterpret_cast<D**>(&storage_) = new D(std::forward<F>(f));
      ops_ = &kHeapOps<D>;
    }
  }

  UniqueFunction(UniqueFunction&& other) noexcept { MoveFrom(other); }
  UniqueFunction& operator=(UniqueFunction&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  UniqueFunction& operator=(std::nullptr_t) noexcept {
    Reset();
    return *this;
  }
  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, UniqueFunction> &&
                                        std::is_invocable_r_v<R, std::decay_t<F>&, Args...>>>
  UniqueFunction& operator=(F&& f) {
    return *this = UniqueFunction(std::forward<F>(f));
  }
  UniqueFunction(const UniqueFunction&) = delete;
  UniqueFunction& operator=(const UniqueFunction&) = delete;
  ~UniqueFunction() { Reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  friend bool operator==(const UniqueFunction& f, std::nullptr_t) noexcept { return !f; }

  // Precondition: not empty (std::function would throw bad_function_call).
  R operator()(Args... args) const {
    return ops_->invoke(const_cast<Storage*>(&storage_), std::forward<Args>(args)...);
  }

 private:
  using Storage = std::aligned_storage_t<kInlineBytes, alignof(std::max_align_t)>;
  struct Ops {
    R (*invoke)(Storage*, Args&&...);
    void (*move)(Storage* from, Storage* to) noexcept;  // to is empty; from is left destroyed
    void (*destroy)(Storage*) noexcept;
  };

  template <typename D>
  static constexpr bool kFitsInline =
      sizeof(D) <= kInlineBytes &&
      alignof(D) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<D>;

  template <typename D>
  static constexpr Ops kInlineOps = {
      [](Storage* s, Args&&... args) -> R {
        return std::invoke(*std::launder(reinterpret_cast<D*>(s)), std::forward<Args>(args)...);
      },
      [](Storage* from, Storage* to) noexcept {
        D* f = std::launder(reinterpret_cast<D*>(from));
        ::new (static_cast<void*>(to)) D(std::move(*f));
        f->~D();
      },
      [](Storage* s) noexcept { std::launder(reinterpret_cast<D*>(s))->~D(); }};

  template <typename D>
  static constexpr Ops kHeapOps = {[](Storage* s, Args&&... args) -> R {
                                     return std::invoke(**reinterpret_cast<D**>(s),
                                                        std::forward<Args>(args)...);
                                   },
                                   [](Storage* from, Storage* to) noexcept {
                                     *reinterpret_cast<D**>(to) = *reinterpret_cast<D**>(from);
                                   },
                                   [](Storage* s) noexcept { delete *reinterpret_cast<D**>(s); }};

  void MoveFrom(UniqueFunction& other) noexcept {
    if (other.ops_ == nullptr) return;
    other.ops_->move(&other.storage_, &storage_);
    ops_ = other.ops_;
    other.ops_ = nullptr;
  }
  void Reset() noexcept {
    if (ops_ == nullptr) return;
    const Ops* ops = ops_;
    ops_ = nullptr;  // a callable whose destructor reaches back here sees an empty function
    ops->destroy(&storage_);
  }

  Storage storage_;
  const Ops* ops_ = nullptr;
};

}  // namespace nereid
