// How the recorders react to SIGINT, SIGTERM, SIGHUP and SIGQUIT while a command runs under them.
//
// The first such signal sent to cudatool alone (kill) is passed on to the traced command (one
// from the terminal reaches the whole foreground process group, the command included, and is not
// passed twice); the recorder keeps recording until the command ends. A second signal ends the
// recording at once (attached with --pid: the first one detaches).
#pragma once

#include <sys/types.h>

namespace cudatool::record {

class RecorderSignals {
 public:
  // Installs the handlers (without SA_RESTART, so that a blocking wait returns EINTR); the
  // destructor restores the previous ones.
  RecorderSignals();
  ~RecorderSignals();
  RecorderSignals(const RecorderSignals&) = delete;
  RecorderSignals& operator=(const RecorderSignals&) = delete;

  // The process the first signal is passed to (0: none).
  void forward_to(pid_t pid);
  [[nodiscard]] int count() const;
  [[nodiscard]] int last() const;
};

}  // namespace cudatool::record
