// Environment events (v2) in the pieces that are pure logic: the seccomp filter with --env (which
// path calls stop, fstat's AT_EMPTY_PATH form not), the trace file round trip of the members the
// recorders write (a file's stat answer, a content buffer without a pre side, AT_* flags, chown's
// uid and gid), the decoder's lines and members, and A/B normalisation (an fd returned by a file
// event is not compared; a content byte is, and masked clock files are not).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ab/compare.hpp"
#include "record/seccomp_filter.hpp"
#include "rm/tables.hpp"
#include "trace/decode.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_json.hpp"

namespace cudatool {
namespace {

using nlohmann::json;
using trace::Event;
using trace::Sys;

TEST(SeccompFilter, WithEnvStopsThePathCallsButNotFstat) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int devnull = open("/dev/null", O_RDWR);
    if (record::install_filter(record::recorder_filter(true)) != 0) _exit(99);
    auto caught = [](long r) { return r == -1 && errno == ENOSYS ? '1' : '0'; };
    struct stat st;
    char buf[64];
    char res[32];
    int n = 0;
    res[n++] = caught(syscall(SYS_getpid));
    res[n++] = caught(syscall(SYS_stat, "/", &st));
    res[n++] = caught(syscall(SYS_lstat, "/", &st));
    res[n++] = caught(syscall(SYS_newfstatat, AT_FDCWD, "/", &st, 0));
    res[n++] = caught(syscall(SYS_newfstatat, devnull, "", &st, AT_EMPTY_PATH));
    res[n++] = caught(syscall(SYS_statx, AT_FDCWD, "/", 0, 0x7ff, buf));
    res[n++] = caught(syscall(SYS_statx, devnull, "", AT_EMPTY_PATH, 0x7ff, buf));
    res[n++] = caught(syscall(SYS_fstat, devnull, &st));
    res[n++] = caught(syscall(SYS_access, "/", F_OK));
    res[n++] = caught(syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", buf, sizeof buf));
    res[n++] = caught(syscall(SYS_mknodat, AT_FDCWD, "/nonexistent/x", S_IFIFO | 0600, 0));
    res[n++] = caught(syscall(SYS_unlinkat, AT_FDCWD, "/nonexistent/x", 0));
    res[n++] = caught(syscall(SYS_read, devnull, buf, 0));
    res[n++] = caught(syscall(SYS_ioctl, devnull, 0x5401, 0));
    (void)!write(fds[1], res, static_cast<size_t>(n));
    _exit(0);
  }
  close(fds[1]);
  char res[32] = {};
  ssize_t n = read(fds[0], res, sizeof res);
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
  //   getpid stat lstat fstatat fstatat(EMPTY) statx statx(EMPTY) fstat access readlinkat
  //   mknodat unlinkat read ioctl
  EXPECT_EQ(std::string(res, static_cast<size_t>(n)), "01110100111101");
}

Event env_event(Sys sys, std::string op, std::string path) {
  Event e;
  e.sys = sys;
  e.sys_raw = std::string(trace::sys_name(sys));
  e.op = std::move(op);
  e.path = std::move(path);
  e.pid = e.tid = 7;
  return e;
}

// Written by the trace writer, read by nlohmann (the format as documented) and by our reader.
std::vector<Event> round_trip(const std::vector<Event>& in, std::vector<json>* as_json) {
  trace::Header h;
  h.argv = {"x"};
  h.mode = "ptrace";
  h.env = "/dev/nvidia*";
  std::string text;
  trace::append_header_line(text, h);
  for (const Event& e : in) trace::append_event_line(text, e);
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) as_json->push_back(json::parse(line));
  auto r = trace::TraceReader::from_memory(text, "env.jsonl");
  EXPECT_TRUE(r) << r.error().message();
  std::vector<Event> out;
  Event e;
  while (r && (*r)->next(e)) out.push_back(e);
  if (r) {
    EXPECT_TRUE((*r)->diagnostics().empty());
  }
  return out;
}

TEST(EnvEvents, MembersRoundTripAsDocumented) {
  std::vector<Event> v;
  Event file = env_event(Sys::kFile, "openat", "/proc/driver/nvidia/params");
  file.open_flags = O_RDONLY | O_CLOEXEC;
  file.ret = 5;
  file.has_stat = true;
  file.mode = S_IFREG | 0444;
  file.st_size = 0;
  trace::Buffer& c = file.content.emplace();
  c.role = "content";
  c.after = {'A', ':', ' ', '1', '\n'};
  c.size = c.after.size();
  v.push_back(file);
  Event empty = file;
  empty.content->after.clear();
  empty.content->size = 0;
  v.push_back(empty);
  Event unreadable = file;
  unreadable.content->after.clear();
  unreadable.content->size = 0;
  unreadable.content->after_error = "EACCES";
  v.push_back(unreadable);
  Event lst = env_event(Sys::kStat, "newfstatat", "/dev/nvidia-link");
  lst.open_flags = AT_SYMLINK_NOFOLLOW;
  lst.has_stat = true;
  lst.mode = S_IFLNK | 0777;
  lst.st_size = 9;
  v.push_back(lst);
  Event own = env_event(Sys::kChmod, "chown", "/dev/nvidiactl");
  own.extra = {{"uid", "0"}, {"gid", "44"}};
  v.push_back(own);
  Event rm = env_event(Sys::kUnlink, "unlinkat", "/dev/nvidia-caps");
  rm.open_flags = AT_REMOVEDIR;
  v.push_back(rm);

  std::vector<json> j;
  std::vector<Event> back = round_trip(v, &j);
  ASSERT_EQ(back.size(), v.size());
  ASSERT_EQ(j.size(), v.size());
  // The content buffer: bytes as `post`, no `pre`; an empty file has an empty `post`; an
  // unreadable one a `post_error` and no bytes.
  EXPECT_EQ(j[0]["content"]["post"], "413a20310a");
  EXPECT_FALSE(j[0]["content"].contains("pre"));
  EXPECT_EQ(j[0]["mode"], "0x8124");
  EXPECT_EQ(j[0]["size"], 0);
  EXPECT_EQ(j[1]["content"]["post"], "");
  EXPECT_FALSE(j[2]["content"].contains("post"));
  EXPECT_EQ(j[2]["content"]["post_error"], "EACCES");
  EXPECT_EQ(j[3]["flags"], "0x100");
  EXPECT_FALSE(j[4].contains("mode")) << j[4].dump();  // chown has no mode
  EXPECT_EQ(j[4]["uid"], 0);
  EXPECT_EQ(j[4]["gid"], 44);
  EXPECT_EQ(j[5]["flags"], "0x200");
  EXPECT_TRUE(back[0].has_stat);
  EXPECT_EQ(back[0].mode, static_cast<uint64_t>(S_IFREG | 0444));
  EXPECT_EQ(back[0].content->after, c.after);
  EXPECT_TRUE(back[0].content->before.empty());
  EXPECT_EQ(back[0].open_flags, static_cast<uint64_t>(O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(back[2].content->after_error, "EACCES");
  EXPECT_EQ(back[3].open_flags, static_cast<uint64_t>(AT_SYMLINK_NOFOLLOW));
  EXPECT_EQ(back[3].st_size, 9u);
  EXPECT_EQ(back[5].open_flags, static_cast<uint64_t>(AT_REMOVEDIR));
  // Written again, byte for byte the same.
  std::vector<json> again;
  round_trip(back, &again);
  EXPECT_EQ(again, j);
}

std::string line_of(const Event& e) {
  trace::Decoded d = trace::decode_event(rm::tables_for_driver("580.159.04"), e);
  return trace::format_line(d);
}

TEST(EnvEvents, DecodeReadsAsTheCallsMeant) {
  Event st = env_event(Sys::kStat, "__xstat", "/dev/nvidiactl");
  st.has_stat = true;
  st.mode = S_IFCHR | 0666;
  st.rdev = makedev(195, 255);
  EXPECT_EQ(line_of(st), "stat /dev/nvidiactl → char 195:255 0666 (__xstat)");
  Event missing = env_event(Sys::kStat, "__xstat", "/dev/nvidiactl");
  missing.ret = -1;
  missing.err = ENOENT;
  EXPECT_EQ(line_of(missing), "stat /dev/nvidiactl (__xstat)");
  Event acc = env_event(Sys::kStat, "access", "/dev/nvidiactl");
  acc.mode = R_OK | W_OK;
  EXPECT_EQ(line_of(acc), "stat /dev/nvidiactl access R_OK|W_OK (access)");
  Event f = env_event(Sys::kFile, "fopen", "/proc/driver/nvidia/params");
  f.has_stat = true;
  f.mode = S_IFREG | 0444;
  trace::Buffer& c = f.content.emplace();
  c.role = "content";
  std::string text = "ModifyDeviceFiles: 1\n";
  c.after.assign(text.begin(), text.end());
  c.size = c.after.size();
  EXPECT_EQ(line_of(f),
            "file /proc/driver/nvidia/params → file 0444, 21 bytes \"ModifyDeviceFiles: 1\\n\" "
            "(fopen)");
  Event dir = env_event(Sys::kFile, "opendir", "/sys/bus/pci/devices");
  dir.has_stat = true;
  dir.mode = S_IFDIR | 0755;
  dir.has_entries = true;
  dir.entries = {"0000:00:00.0", "0000:00:01.0", "0000:00:02.0", "0000:00:03.0", "0000:45:00.0"};
  EXPECT_EQ(line_of(dir),
            "file /sys/bus/pci/devices → dir 0755, 5 entries [0000:00:00.0, 0000:00:01.0, "
            "0000:00:02.0, 0000:00:03.0, …] (opendir)");
  Event mk = env_event(Sys::kMknod, "__xmknod", "/dev/nvidiactl");
  mk.mode = S_IFCHR | 0666;
  mk.rdev = makedev(195, 255);
  EXPECT_EQ(line_of(mk), "mknod /dev/nvidiactl char 195:255 0666 (__xmknod)");
  Event ln = env_event(Sys::kReadlink, "readlink", "/sys/bus/pci/devices/0000:45:00.0");
  ln.target = "../../../devices/pci0000:40/0000:45:00.0";
  EXPECT_EQ(line_of(ln),
            "readlink /sys/bus/pci/devices/0000:45:00.0 → ../../../devices/pci0000:40/0000:45:00.0 "
            "(readlink)");
  Event own = env_event(Sys::kChmod, "chown", "/dev/nvidiactl");
  own.extra = {{"uid", "0"}, {"gid", "44"}};
  EXPECT_EQ(line_of(own), "chmod /dev/nvidiactl owner 0:44 (chown)");
  // The JSON twin: the facts as members.
  trace::Decoded d = trace::decode_event(rm::tables_for_driver("580.159.04"), st);
  std::map<std::string, rm::Field> m;
  for (const rm::Field& x : d.args) m[std::string(x.name)] = x;
  EXPECT_EQ(m["type"].text, "char");
  EXPECT_EQ(m["major"].value, 195u);
  EXPECT_EQ(m["minor"].value, 255u);
  EXPECT_EQ(m["perms"].text, "0666");
  EXPECT_EQ(m["op"].text, "__xstat");
}

// Two runs that read the same files: equivalent though the fds and tids differ; a changed byte of
// a content is a different_parameters divergence at that call; a clock file's content is not
// compared.
std::vector<Event> env_run(int fd, int tid, char config_byte, std::string clock) {
  std::vector<Event> v;
  auto add = [&](Event e) {
    e.seq = v.size();
    e.tid = e.pid = tid;
    v.push_back(std::move(e));
  };
  Event st = env_event(Sys::kStat, "__xstat", "/dev/nvidiactl");
  st.has_stat = true;
  st.mode = S_IFCHR | 0666;
  st.rdev = makedev(195, 255);
  add(st);
  Event cfg = env_event(Sys::kFile, "openat", "/sys/bus/pci/devices/0000:45:00.0/config");
  cfg.ret = fd;
  cfg.has_stat = true;
  cfg.mode = S_IFREG | 0644;
  cfg.st_size = 4096;
  trace::Buffer& c = cfg.content.emplace();
  c.role = "content";
  c.after = {0xde, 0x10, 0x35, 0x23, static_cast<uint8_t>(config_byte), 0, 0x10, 0};
  c.size = c.after.size();
  add(cfg);
  Event t = env_event(Sys::kFile, "openat",
                      "/sys/bus/pci/devices/0000:45:00.0/power/runtime_active_time");
  t.ret = fd + 1;
  trace::Buffer& tc = t.content.emplace();
  tc.role = "content";
  tc.after.assign(clock.begin(), clock.end());
  tc.size = tc.after.size();
  add(t);
  return v;
}

TEST(EnvEvents, AbComparesWhatWasReadNotTheFds) {
  trace::Header h;
  h.driver_version = "580.159.04";
  auto a = ab::normalize_events(h, env_run(5, 100, 0x06, "123456\n"));
  auto b = ab::normalize_events(h, env_run(9, 200, 0x06, "123999\n"));
  ab::Comparison same = ab::compare(*a, *b);
  EXPECT_TRUE(same.equivalent());
  EXPECT_GT(a->masks.by_rule, 0u);  // the clock file
  auto changed = ab::normalize_events(h, env_run(5, 100, 0x07, "123456\n"));
  ab::Comparison diff = ab::compare(*a, *changed);
  ASSERT_EQ(diff.divergences.size(), 1u);
  const ab::Divergence& dv = diff.divergences[0];
  EXPECT_EQ(dv.kind, ab::Kind::kParameters);
  EXPECT_EQ(dv.a, 1u);
  ASSERT_FALSE(dv.fields.empty());
  EXPECT_EQ(dv.fields[0].field, "content+0x4");
  std::string line = ab::summarize(diff.namer_a(), a->events[dv.a]);
  EXPECT_NE(line.find("/sys/bus/pci/devices/0000:45:00.0/config"), std::string::npos) << line;
}

}  // namespace
}  // namespace cudatool
