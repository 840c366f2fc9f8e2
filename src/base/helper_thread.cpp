#include "base/helper_thread.hpp"

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

void HelperThread::join() {
  if (!joinable_) return;
  pthread_join(thread_, nullptr);
  joinable_ = false;
}

void* HelperThread::run(void* self) {
  auto* h = static_cast<HelperThread*>(self);
  if (h->restore_) sched_setaffinity(0, sizeof h->allowed_, &h->allowed_);
  h->work_();
  return nullptr;
}

}  // namespace cudatool
