#include "record/signals.hpp"

#include <signal.h>

#include <iterator>

namespace cudatool::record {
namespace {

volatile sig_atomic_t g_count = 0;
volatile sig_atomic_t g_last = 0;
volatile pid_t g_forward_to = 0;

void on_signal(int sig, siginfo_t* info, void*) {
  g_last = sig;
  g_count = g_count + 1;
  bool from_process = info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE ||
                                          info->si_code == SI_TKILL);
  if (g_count == 1 && g_forward_to > 0 && from_process) kill(g_forward_to, sig);
}

constexpr int kHandled[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction g_old[std::size(kHandled)];

}  // namespace

RecorderSignals::RecorderSignals() {
  g_count = 0;
  g_last = 0;
  g_forward_to = 0;
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < std::size(kHandled); ++i) sigaction(kHandled[i], &sa, &g_old[i]);
}

RecorderSignals::~RecorderSignals() {
  for (size_t i = 0; i < std::size(kHandled); ++i) sigaction(kHandled[i], &g_old[i], nullptr);
  g_forward_to = 0;
}

void RecorderSignals::forward_to(pid_t pid) {
  g_forward_to = pid;
}
int RecorderSignals::count() const {
  return g_count;
}
int RecorderSignals::last() const {
  return g_last;
}

}  // namespace cudatool::record
