// Lock annotations checked by clang's thread-safety analysis (-Wthread-safety; CMake option
// NEREID_THREAD_SAFETY_ANALYSIS, preset "clang-tsa"), and the annotated lock types they need.
//
// Every member a mutex guards is declared GUARDED_BY(mu_); a function that expects a lock held
// says REQUIRES(mu_), one that takes it says EXCLUDES(mu_). clang then rejects, at compile time,
// any read or write of a guarded member without its lock. Other compilers see empty macros.
//
// libstdc++'s std::mutex and std::unique_lock carry no annotations, so the analysis cannot see
// them lock anything; the project's code uses these thin wrappers instead (no behaviour of their
// own, each call goes straight to the standard type):
//   Mutex       a std::mutex that is a capability (Lock/Unlock/TryLock);
//   MutexLock   a scoped lock for a whole block (std::lock_guard);
//   UniqueLock  a scoped lock that can be released and taken again (Unlock/Lock) and waits on a
//               std::condition_variable (Wait*, which releases and re-takes the lock inside, so
//               the analysis rightly treats the lock as held across the call). A predicate that
//               reads guarded members is a lambda declared `[&]() REQUIRES(mu_) { ... }`: it runs
//               only inside the wait, with the lock held.
// Reference: https://clang.llvm.org/docs/ThreadSafetyAnalysis.html
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#if defined(__clang__)
#define NEREID_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define NEREID_THREAD_ANNOTATION(x)
#endif

// Abseil's (legacy) thread_annotations.h, which gRPC's headers include, defines some of the same
// names for the same attributes; the #undefs keep either order of inclusion free of warnings.
#undef CAPABILITY
#undef SCOPED_CAPABILITY
#undef GUARDED_BY
#undef PT_GUARDED_BY
#undef ACQUIRED_BEFORE
#undef ACQUIRED_AFTER
#undef REQUIRES
#undef REQUIRES_SHARED
#undef ACQUIRE
#undef ACQUIRE_SHARED
#undef RELEASE
#undef RELEASE_SHARED
#undef TRY_ACQUIRE
#undef EXCLUDES
#undef ASSERT_CAPABILITY
#undef RETURN_CAPABILITY
#undef NO_THREAD_SAFETY_ANALYSIS

#define CAPABILITY(x) NEREID_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY NEREID_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) NEREID_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) NEREID_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) NEREID_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) NEREID_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) NEREID_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) NEREID_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) NEREID_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) NEREID_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) NEREID_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) NEREID_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) NEREID_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) NEREID_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) NEREID_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) NEREID_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS NEREID_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace nereid {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the lock is held where it cannot see it (checks nothing at run time).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

  // The standard mutex, for UniqueLock's condition-variable waits.
  std::mutex& native() RETURN_CAPABILITY(this) { return mu_; }

 private:
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

class SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.native()) {}
  ~UniqueLock() RELEASE() {}  // unlocks only if held, as std::unique_lock
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void Lock() ACQUIRE() { lock_.lock(); }
  void Unlock() RELEASE() { lock_.unlock(); }

  // The lock must be held; it is held again when these return.
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <typename Predicate>
  void Wait(std::condition_variable& cv, Predicate ready) {
    cv.wait(lock_, std::move(ready));
  }
  template <typename Clock, typename Duration>
  std::cv_status WaitUntil(std::condition_variable& cv,
                           const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline);
  }
  // True if `ready` holds (false: the time ran out first).
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout,
               Predicate ready) {
    return cv.wait_for(lock_, timeout, std::move(ready));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace nereid
