// The launcher of the preload modes (record/launch.hpp): environment, output, exec errors,
// process groups, the ways a wait ends, and launches in parallel threads that reap only their
// own processes. Commands are /bin/sh one-liners.
#include "record/launch.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace cudatool::record {
namespace {

LaunchSpec shell(const std::string& script) {
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c", script};
  s.output = ChildOutput::kCapture;
  return s;
}

// Runs a spec to its end; the captured output.
std::string run_to_end(const LaunchSpec& spec, int* status = nullptr) {
  auto c = Child::start(spec, "test");
  EXPECT_TRUE(c.ok());
  if (!c) return "";
  Watch w;
  w.poll_ms = 5;
  EXPECT_EQ(c->wait(w), WaitEnd::kDone);
  EXPECT_TRUE(c->command_done());
  EXPECT_EQ(c->exec_errno(), 0);
  if (status != nullptr) *status = c->status();
  return c->take_output();
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

TEST(Launch, EnvironmentSetUnsetAndPreloadFirst) {
  setenv("CUDATOOL_LAUNCH_TEST_KEEP", "kept", 1);
  setenv("CUDATOOL_LAUNCH_TEST_DROP", "dropped", 1);
  setenv("CUDATOOL_LAUNCH_TEST_SET", "old", 1);
  setenv("LD_PRELOAD", "/nonexistent/other.so", 1);
  LaunchSpec s = shell(
      "echo \"$CUDATOOL_LAUNCH_TEST_KEEP|${CUDATOOL_LAUNCH_TEST_DROP-unset}|"
      "$CUDATOOL_LAUNCH_TEST_SET|$CUDATOOL_LAUNCH_TEST_NEW|$LD_PRELOAD\"");
  s.preload = "/nonexistent/shim.so";
  s.set_env = {{"CUDATOOL_LAUNCH_TEST_SET", "new"}, {"CUDATOOL_LAUNCH_TEST_NEW", "added"}};
  s.unset_env = {"CUDATOOL_LAUNCH_TEST_DROP"};
  std::string out = run_to_end(s);
  unsetenv("LD_PRELOAD");
  // The loader says it cannot preload the missing objects (stderr, captured too): the last line
  // is the script's.
  std::string last = out.substr(out.rfind('\n', out.size() - 2) + 1);
  EXPECT_EQ(last, "kept|unset|new|added|/nonexistent/shim.so:/nonexistent/other.so\n") << out;
  EXPECT_STREQ(std::getenv("CUDATOOL_LAUNCH_TEST_DROP"), "dropped");  // ours is untouched
}

TEST(Launch, StatusOutputAndDirectory) {
  int status = 0;
  LaunchSpec s = shell("pwd; echo to-stderr >&2; exit 3");
  s.dir = "/tmp";
  EXPECT_EQ(run_to_end(s, &status), "/tmp\nto-stderr\n");
  EXPECT_EQ(status, 3);
  LaunchSpec k = shell("kill -TERM $$");
  run_to_end(k, &status);
  EXPECT_EQ(status, -SIGTERM);
}

// The fds a command starts with, as it sees them, when its output goes `how`.
std::string fds_of_command(ChildOutput how) {
  char path[] = "/tmp/cudatool-launch-fds-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "mkstemp failed";
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c", std::string("ls /proc/$$/fd > ") + path};
  s.output = how;
  auto c = Child::start(s, "test");
  if (!c) return "not started";
  c->wait(Watch{});
  std::string got;
  char buf[512];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  close(fd);
  unlink(path);
  return got;
}

TEST(Launch, DiscardedOutputLeavesNoExtraFd) {
  // /dev/null goes to 1 and 2 and is not left open as another fd: the program's own fds get the
  // numbers they would get without the launcher (the replayed program's fd numbers are the
  // recording's).
  std::string inherited = fds_of_command(ChildOutput::kInherit);
  EXPECT_NE(inherited.find("2\n"), std::string::npos) << inherited;
  EXPECT_EQ(fds_of_command(ChildOutput::kDiscard), inherited);
  EXPECT_EQ(fds_of_command(ChildOutput::kCapture), inherited);
}

TEST(Launch, ExecFailureIsSaidAsSuch) {
  LaunchSpec s;
  s.argv = {"/nonexistent/program"};
  auto c = Child::start(s, "test");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->wait(Watch{}), WaitEnd::kDone);
  EXPECT_EQ(c->exec_errno(), ENOENT);
  EXPECT_EQ(c->status(), 127);
  LaunchSpec d = shell("true");
  d.dir = "/nonexistent/dir";
  auto e = Child::start(d, "test");
  ASSERT_TRUE(e.ok());
  e->wait(Watch{});
  EXPECT_EQ(e->exec_errno(), ENOENT);
}

TEST(Launch, FindShimNamesTheOption) {
  auto r = find_shim("/nonexistent/lib.so", "lib.so", "replay", "replay shim", "--shim");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("replay shim /nonexistent/lib.so not found"),
            std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("pass --shim"), std::string::npos);
  auto here = find_shim("", "unit_tests", "trace", "shim", "--x");  // this test binary
  ASSERT_TRUE(here.ok()) << here.error().message();
  EXPECT_EQ(*here, self_dir() + "/unit_tests");
  EXPECT_EQ(absolute_path("/a/b"), "/a/b");
  EXPECT_EQ(absolute_path("b").back(), 'b');
  EXPECT_EQ(absolute_path("b")[0], '/');
}

TEST(Launch, OwnGroupEndsWithWhatItLeftBehind) {
  // The command starts a grandchild that outlives it in the group; the launcher (a subreaper
  // while it waits) ends and reaps it with the command.
  LaunchSpec s = shell("sleep 300 & echo $!");
  s.own_group = true;
  auto c = Child::start(s, "test");
  ASSERT_TRUE(c.ok());
  Watch w;
  w.poll_ms = 5;
  w.end_rest_with_command = true;
  EXPECT_EQ(c->wait(w), WaitEnd::kDone);
  EXPECT_EQ(c->status(), 0);
  pid_t left = static_cast<pid_t>(std::atoi(c->take_output().c_str()));
  ASSERT_GT(left, 0);
  EXPECT_FALSE(alive(left)) << "the grandchild should have been killed and reaped";
  int subreaper = -1;
  prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0);
  EXPECT_EQ(subreaper, 0) << "released once no launch waits";
}

TEST(Launch, WaitEndsByTimeLimitAndByRequest) {
  LaunchSpec s = shell("sleep 300");
  s.own_group = true;
  auto c = Child::start(s, "test");
  ASSERT_TRUE(c.ok());
  Watch w;
  w.poll_ms = 5;
  w.time_limit_s = 0.05;
  EXPECT_EQ(c->wait(w), WaitEnd::kTimeLimit);
  EXPECT_EQ(c->status(), -SIGKILL);

  auto d = Child::start(s, "test");
  ASSERT_TRUE(d.ok());
  std::atomic<bool> stop{true};  // a Ctrl-C seen by the caller's signal handler
  Watch r;
  r.poll_ms = 5;
  r.end_now = [&stop] { return stop.load(); };
  EXPECT_EQ(d->wait(r), WaitEnd::kEnded);
  EXPECT_EQ(d->status(), -SIGKILL);
}

TEST(Launch, DestroyingARunningChildKillsAndReapsIt) {
  pid_t pid = 0;
  {
    LaunchSpec s = shell("sleep 300");
    s.own_group = true;
    auto c = Child::start(s, "test");
    ASSERT_TRUE(c.ok());
    pid = c->pid();
    EXPECT_TRUE(alive(pid));
  }
  EXPECT_FALSE(alive(pid));
}

TEST(Launch, ParallelLaunchesReapOnlyTheirOwn) {
  // explore's way: several replays at once, one thread each, each in its own group.
  constexpr int kRuns = 6;
  std::vector<int> status(kRuns, -1000);
  std::vector<std::string> out(kRuns);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i) {
    threads.emplace_back([i, &status, &out] {
      LaunchSpec s = shell("sleep 0.0" + std::to_string(i) + "; echo run" + std::to_string(i) +
                           "; exit " + std::to_string(10 + i));
      s.own_group = true;
      auto c = Child::start(s, "test");
      if (!c) return;
      Watch w;
      w.poll_ms = 2;
      w.end_rest_with_command = true;
      if (c->wait(w) == WaitEnd::kDone) status[i] = c->status();
      out[i] = c->take_output();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kRuns; ++i) {
    EXPECT_EQ(status[i], 10 + i) << "run " << i;
    EXPECT_EQ(out[i], "run" + std::to_string(i) + "\n") << "run " << i;
  }
}

TEST(Launch, ParallelTracedLaunchesNeverWaitForEachOther) {
  // Traced launches (catch_crashes) hold their child before exec until the parent has seized it.
  // A child forked in one thread while another thread's hold pipe was open kept that pipe's
  // write end until its own exec: two such children each held the other's, and both waited for
  // ever (explore's "hangs" that were not the program's). Many small launches at once, each
  // must end by itself well inside its limit.
  constexpr int kThreads = 6;
  constexpr int kEach = 30;
  std::atomic<int> ready{0}, ended{0}, limited{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int i = 0; i < kEach; ++i) {
        LaunchSpec s;
        s.argv = {"/bin/true"};
        s.own_group = true;
        s.catch_crashes = true;
        auto c = Child::start(s, "test");
        if (!c) continue;
        Watch w;
        w.poll_ms = 1;
        w.time_limit_s = 10;
        w.end_rest_with_command = true;
        WaitEnd how = c->wait(w);
        if (how == WaitEnd::kDone && c->status() == 0) ended.fetch_add(1);
        if (how == WaitEnd::kTimeLimit) limited.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(limited.load(), 0);
  EXPECT_EQ(ended.load(), kThreads * kEach);
}

}  // namespace
}  // namespace cudatool::record
