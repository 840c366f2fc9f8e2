// A second thread for work of a millisecond or two, started on another CPU.
//
// Linux puts a new thread on its parent's CPU's run queue and moves it to an idle CPU only when
// the load balancer next looks. On the 2-vCPU VMs this project is measured on, a helper made
// with std::thread therefore began only once its parent had finished ~1 ms of work of its own or
// blocked: the two ran one after the other. A HelperThread is created with every CPU the process
// may use except the caller's (when there is another), so that it starts at once elsewhere; its
// first act is to allow itself every CPU again, so nothing else about its scheduling changes.
//
// join() waits for the work, not for the thread's exit. With another CPU it spins for up to a
// millisecond on a flag the work sets as it ends, then lets the thread exit on its own
// (detached), instead of waiting out glibc's thread epilogue and the wake-up of its own halted
// vCPU on the 2-vCPU KVM guest: `functions` 0.01-0.03 ms faster, in alternation. Past the
// millisecond, or with one CPU, it joins.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <functional>

namespace cudatool {

class HelperThread {
 public:
  // Starts `work` (which must not throw); throws std::system_error when no thread can be made.
  explicit HelperThread(std::function<void()> work);
  ~HelperThread();  // join()s
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;

  // Returns once the work has ended; what it wrote is then visible here. Again: nothing.
  void join();

  // Whether this thread may run on more than one CPU: with one, a helper only takes turns.
  static bool another_cpu();

 private:
  static void* run(void* self);

  std::function<void()> work_;
  cpu_set_t allowed_{};
  bool restore_ = false;           // started on another CPU than the caller's
  std::atomic<bool> done_{false};  // set by the thread as its last act on this object
  pthread_t thread_{};
  bool joinable_ = false;
};

}  // namespace cudatool
