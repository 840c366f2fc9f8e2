#include "base/helper_thread.hpp"

#include <time.h>

#include <system_error>

namespace cudatool {

HelperThread::HelperThread(std::function<void()> work) : work_(std::move(work)) {
  pthread_attr_t attr;
  if (int e = pthread_attr_init(&attr); e != 0) throw std::system_error(e, std::generic_category());
  // Best effort: without the process's CPU set or the caller's CPU, start it as std::thread would.
  const int here = sched_getcpu();
  if (here >= 0 && here < CPU_SETSIZE && sched_getaffinity(0, sizeof allowed_, &allowed_) == 0 &&
      CPU_ISSET(here, &allowed_) && CPU_COUNT(&allowed_) > 1) {
    cpu_set_t elsewhere = allowed_;
    CPU_CLR(here, &elsewhere);
    restore_ = pthread_attr_setaffinity_np(&attr, sizeof elsewhere, &elsewhere) == 0;
  }
  int e = pthread_create(&thread_, &attr, &HelperThread::run, this);
  pthread_attr_destroy(&attr);
  if (e != 0) throw std::system_error(e, std::generic_category(), "pthread_create");
  joinable_ = true;
}

bool HelperThread::another_cpu() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
}

HelperThread::~HelperThread() {
  join();
}

namespace {

uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace

void HelperThread::join() {
  if (!joinable_) return;
  joinable_ = false;
  // Spinning is only worth it while the thread runs elsewhere: with one CPU it would take the
  // thread's turn.
  if (restore_) {
    constexpr uint64_t kSpinNs = 1000000;
    const uint64_t until = now_ns() + kSpinNs;
    for (uint32_t i = 1;; ++i) {
      if (done_.load(std::memory_order_acquire)) {
        pthread_detach(thread_);  // it exits on its own; it no longer touches *this
        return;
      }
      if (i % 64 == 0 && now_ns() > until) break;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
  pthread_join(thread_, nullptr);
}

void* HelperThread::run(void* self) {
  auto* h = static_cast<HelperThread*>(self);
  if (h->restore_) sched_setaffinity(0, sizeof h->allowed_, &h->allowed_);
  h->work_();
  h->done_.store(true, std::memory_order_release);  // the last use of *h: join() may free it now
  return nullptr;
}

}  // namespace cudatool
