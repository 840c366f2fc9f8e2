// Trace files: what the writer writes, nlohmann/json reads the same; what the reader reads back
// equals what was written; damaged, cut, padded and newer files are handled as the format says.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trace/capture_import.hpp"
#include "trace/loaded_libcuda.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_json.hpp"

namespace cudatool::trace {
namespace {

using nlohmann::json;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/cudatool-trace-unit-" + std::to_string(getpid()) + "-" + name;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Buffer buf(std::string role, uint64_t addr, std::vector<uint8_t> pre, std::vector<uint8_t> post) {
  Buffer b;
  b.role = std::move(role);
  b.addr = addr;
  b.size = pre.size();
  b.before = std::move(pre);
  b.after = std::move(post);
  return b;
}

std::vector<Event> sample_events() {
  std::vector<Event> v;
  auto add = [&](Sys s) -> Event& {
    Event e;
    e.seq = v.size();
    e.t_ns = 1000 * (v.size() + 1);
    e.dur_ns = 50;
    e.has_duration = true;
    e.pid = 100;
    e.tid = 101;
    e.sys = s;
    e.sys_raw = std::string(sys_name(s));
    v.push_back(e);
    return v.back();
  };
  Event& o = add(Sys::kOpen);
  o.path = "/dev/nvidiactl";
  o.open_flags = 0x80002;
  o.ret = 3;
  Event& io = add(Sys::kIoctl);
  io.fd = 3;
  io.path = "/dev/nvidiactl";
  io.request = 0xc020462a;
  io.ret = -1;
  io.err = 25;
  io.arg = buf("arg", 0x7ffd0000, {1, 2, 3, 4}, {1, 2, 3, 5});
  io.nested.push_back(buf("params", 0x7ffd1000, {9, 9}, {8, 8}));
  Buffer bad;
  bad.role = "params";
  bad.addr = 0x10;
  bad.size = 64;
  bad.before_error = "EFAULT";
  bad.after_error = "EFAULT";
  io.nested.push_back(bad);
  Buffer part = buf("xfer", 0x1000, {7}, {7});
  part.size = 16;
  part.before_error = part.after_error = "EFAULT after 1 of 16 bytes";
  io.nested.push_back(part);
  Event& uvm = add(Sys::kIoctl);
  uvm.fd = 4;
  uvm.path = "/dev/nvidia-uvm";
  uvm.request = 0x30000001;
  uvm.arg = buf("arg", 0x7ffd2000, {0, 1}, {0, 1});
  uvm.arg->size = 4096;
  uvm.arg->bounded = true;
  Event& m = add(Sys::kMmap);
  m.fd = 5;
  m.path = "/dev/nvidia0";
  m.len = 2097152;
  m.prot = 3;
  m.map_flags = 0x11;
  m.offset = 0x204a00000;
  m.ret = 0x7f0000000000;
  Event& u = add(Sys::kMunmap);
  u.addr = 0x7f0000000000;
  u.len = 4096;
  u.path = "/dev/nvidia0";
  Event& d = add(Sys::kDup);
  d.fd = 3;
  d.path = "/dev/nvidiactl";
  d.ret = 7;
  Event& c = add(Sys::kClose);
  c.fd = 7;
  c.path = "/dev/nvidiactl";
  Event& x = add(Sys::kExecve);
  x.path = "/usr/bin/weird \"name\"\n\xe9";
  Event& f = add(Sys::kFork);
  f.child_pid = 102;
  f.ret = 102;
  f.has_duration = false;
  f.dur_ns = 0;
  Event& q = add(Sys::kExit);
  q.ret = -9;
  return v;
}

void expect_same(const Event& a, const Event& b) {
  std::string la, lb;
  append_event_line(la, a);
  append_event_line(lb, b);
  EXPECT_EQ(la, lb);
}

Header sample_header() {
  Header h;
  h.argv = {"./work", "kern.cubin"};
  h.mode = "ptrace";
  h.driver_version = "580.159.04";
  h.driver_version_line = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04";
  h.host = "h200";
  h.kernel = "6.18.0";
  h.start_time = "2026-11-29T19:43:52Z";
  h.devices = "/dev/nvidia*";
  h.recorder = "cudatool test";
  h.placement = "same-cpu 0";
  return h;
}

void write_trace(const std::string& path, const std::vector<Event>& events, bool trailer) {
  auto w = TraceWriter::create(path);
  ASSERT_TRUE(w) << w.error().message();
  ASSERT_TRUE((*w)->write_header(sample_header()).ok());
  for (const auto& e : events) ASSERT_TRUE((*w)->write_event(e).ok());
  if (trailer) {
    Trailer t;
    t.events = events.size();
    t.reason = "exit";
    t.routes = {{"ioctl", 2}, {"syscall", 0}};
    ASSERT_TRUE((*w)->write_trailer(t).ok());
  }
  ASSERT_TRUE((*w)->close().ok());
}

TEST(TraceFile, RoundTripsPlainAndZstd) {
  auto events = sample_events();
  for (std::string name : {"rt.jsonl", "rt.jsonl.zst"}) {
    std::string p = temp_path(name);
    write_trace(p, events, true);
    auto r = TraceReader::open(p);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ((*r)->compression(), name.ends_with(".zst") ? "zstd" : "none");
    EXPECT_EQ((*r)->header().argv, sample_header().argv);
    EXPECT_EQ((*r)->header().driver_version, "580.159.04");
    EXPECT_EQ((*r)->header().placement, "same-cpu 0");
    Event ev;
    size_t i = 0;
    while ((*r)->next(ev)) {
      ASSERT_LT(i, events.size());
      expect_same(ev, events[i++]);
    }
    EXPECT_EQ(i, events.size());
    ASSERT_TRUE((*r)->trailer());
    EXPECT_EQ((*r)->trailer()->events, events.size());
    EXPECT_EQ((*r)->trailer()->routes.size(), 2u);
    EXPECT_TRUE((*r)->diagnostics().empty());
    std::remove(p.c_str());
  }
}

// The mapped writer reserves, maps and prefaults the file ahead of what it has written (zeros
// written ahead, then the pages made writable): across 16 MiB windows and hundreds of 64 KiB
// steps, every line must read back intact both before close() (the file then ends with the
// reserved NUL bytes, as when the tracer is killed) and after it (cut to its length).
TEST(TraceFile, MappedWriterKeepsEveryLineAcrossWindows) {
  const std::string p = temp_path("mapped.jsonl");
  auto w = TraceWriter::create(p);
  ASSERT_TRUE(w) << w.error().message();
  ASSERT_TRUE((*w)->write_header(sample_header()).ok());
  Event e;
  e.sys = Sys::kIoctl;
  e.fd = 3;
  e.path = "/dev/nvidiactl";
  e.request = 0xc020462a;
  e.arg.emplace();
  e.arg->role = "arg";
  e.arg->size = 1501;       // odd: lines straddle the step and window boundaries at changing places
  const uint64_t n = 3000;  // ~18 MB of lines: two windows
  std::string expected;
  append_header_line(expected, sample_header());
  for (uint64_t i = 0; i < n; ++i) {
    e.seq = i;
    e.arg->before.assign(e.arg->size, static_cast<uint8_t>(i));
    e.arg->after.assign(e.arg->size, static_cast<uint8_t>(i * 7 + 1));
    append_event_line(expected, e);
    ASSERT_TRUE((*w)->write_event(e).ok());
  }
  ASSERT_GT(expected.size(), uint64_t{17} << 20);
  auto read_all = [&] {
    std::ifstream f(p, std::ios::binary);
    std::string bytes(std::filesystem::file_size(p), '\0');
    f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return bytes;
  };
  std::string open_file = read_all();
  ASSERT_GE(open_file.size(), expected.size());
  EXPECT_EQ(open_file.compare(0, expected.size(), expected), 0) << "a written line was changed";
  EXPECT_EQ(open_file.find_first_not_of('\0', expected.size()), std::string::npos);
  ASSERT_TRUE((*w)->close().ok());
  EXPECT_EQ(read_all(), expected);
  std::remove(p.c_str());
}

TEST(TraceFile, LinesAreWhatTheFormatSays) {
  // Read by nlohmann, independently of our reader.
  auto events = sample_events();
  std::string p = temp_path("spec.jsonl");
  write_trace(p, events, true);
  std::istringstream in(slurp(p));
  std::string line;
  std::vector<json> lines;
  while (std::getline(in, line)) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), events.size() + 2);
  EXPECT_EQ(lines[0]["cudatool_trace"], kFormatVersion);
  const json& io = lines[2];
  EXPECT_EQ(io["req"], "0xc020462a");
  EXPECT_EQ(io["errno"], 25);
  EXPECT_EQ(io["arg"]["pre"], "01020304");
  EXPECT_EQ(io["arg"]["post"], "01020305");
  EXPECT_EQ(io["arg"]["addr"], "0x7ffd0000");
  EXPECT_EQ(io["nested"][1]["pre_error"], "EFAULT");
  EXPECT_FALSE(io["nested"][1].contains("pre"));
  EXPECT_EQ(io["nested"][2]["pre"], "07");
  EXPECT_EQ(lines[3]["arg"]["bounded"], true);
  EXPECT_EQ(lines[4]["off"], "0x204a00000");
  EXPECT_EQ(lines[4]["ret"], 0x7f0000000000);
  EXPECT_EQ(lines[4]["flags"], "0x11");
  EXPECT_FALSE(lines[9].contains("dur"));
  EXPECT_EQ(lines.back()["end"]["routes"]["ioctl"], 2);
  std::remove(p.c_str());
}

TEST(TraceReader, KeepsUnknownMembersAndKinds) {
  std::string text =
      "{\"cudatool_trace\":1,\"argv\":[],\"mode\":\"ptrace\",\"future\":{\"x\":1}}\n"
      "{\"seq\":0,\"t\":5,\"pid\":1,\"tid\":1,\"sys\":\"ioctl\",\"fd\":3,\"path\":\"/dev/nvidia0\","
      "\"req\":\"0x1\",\"ret\":0,\"arg\":{\"role\":\"arg\",\"addr\":\"0x10\",\"size\":1,"
      "\"pre\":\"ab\",\"post\":\"cd\",\"crc\":7},\"gpu_time\":[1,2]}\n"
      "{\"seq\":1,\"t\":6,\"pid\":1,\"tid\":1,\"sys\":\"madvise\",\"addr\":\"0x1000\",\"how\":4}\n";
  auto r = TraceReader::from_memory(text, "mem");
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ((*r)->header().extra.size(), 1u);
  EXPECT_EQ((*r)->header().extra[0].json, "{\"x\":1}");
  Event e;
  ASSERT_TRUE((*r)->next(e));
  ASSERT_EQ(e.extra.size(), 1u);
  EXPECT_EQ(e.extra[0].key, "gpu_time");
  EXPECT_EQ(e.extra[0].json, "[1,2]");
  ASSERT_EQ(e.arg->extra.size(), 1u);
  EXPECT_EQ(e.arg->after, std::vector<uint8_t>{0xcd});
  std::string written;
  append_event_line(written, e);
  EXPECT_NE(written.find("\"gpu_time\":[1,2]"), std::string::npos) << written;
  ASSERT_TRUE((*r)->next(e));
  EXPECT_EQ(e.sys, Sys::kUnknown);
  EXPECT_EQ(e.sys_raw, "madvise");
  EXPECT_EQ(e.addr, 0x1000u);
  ASSERT_EQ(e.extra.size(), 1u);
  written.clear();
  append_event_line(written, e);
  EXPECT_NE(written.find("\"sys\":\"madvise\""), std::string::npos) << written;
  EXPECT_NE(written.find("\"how\":4"), std::string::npos) << written;
  EXPECT_FALSE((*r)->next(e));
  EXPECT_FALSE((*r)->trailer());
  EXPECT_TRUE((*r)->diagnostics().empty());
}

TEST(TraceReader, RefusesANewerVersionClearly) {
  const int newer = kFormatVersion + 1;
  auto r = TraceReader::from_memory(
      "{\"cudatool_trace\":" + std::to_string(newer) + ",\"argv\":[]}\n", "new.jsonl");
  ASSERT_FALSE(r);
  std::string want = "version " + std::to_string(newer) + " is newer than this cudatool reads " +
                     "(version " + std::to_string(kFormatVersion) + ")";
  EXPECT_NE(r.error().message().find(want), std::string::npos) << r.error().message();
}

// Version 2: stacks, module records, environment events, unrecorded notes survive a round trip
// through the writer and the reader, member for member.
TEST(TraceFile, Version2MembersRoundTrip) {
  std::vector<Event> v;
  Event io;
  io.seq = 0;
  io.pid = io.tid = 7;
  io.sys = Sys::kIoctl;
  io.sys_raw = "ioctl";
  io.fd = 3;
  io.path = "/dev/nvidiactl";
  io.request = 0xc030462b;
  io.arg = buf("arg", 0x7ffd0000, {1, 2}, {1, 2});
  io.nested.push_back(buf("params", 0x7ffd1000, {0, 0, 0, 0}, {1, 0, 0, 0}));
  io.nested.push_back(buf("params.grInfoList", 0x7ffd2000, {5, 0, 0, 0}, {5, 0, 9, 0}));
  io.stack = {0x7f0000001234, 0x7f0000005678, 0x55550000abcd};
  io.stack_error = "frame limit 32";
  io.unrecorded.push_back({"params.pList", "count 100000 x 8 bytes over --max-buffer"});
  v.push_back(io);
  Event st;
  st.seq = 1;
  st.sys = Sys::kStat;
  st.sys_raw = "stat";
  st.op = "__xstat";
  st.path = "/dev/nvidiactl";
  st.mode = 0x21b6;
  st.rdev = 0xc3ff;
  st.st_size = 0;
  st.has_stat = true;
  v.push_back(st);
  Event acc = st;
  acc.seq = 2;
  acc.op = "access";
  acc.has_stat = false;
  acc.mode = 6;
  acc.rdev = 0;
  acc.ret = -1;
  acc.err = 2;
  v.push_back(acc);
  Event f;
  f.seq = 3;
  f.sys = Sys::kFile;
  f.sys_raw = "file";
  f.op = "fopen";
  f.path = "/proc/driver/nvidia/params";
  f.open_flags = 0x80000;
  f.ret = 5;
  f.content = buf("content", 0, {}, {'a', '=', '1', '\n'});
  f.content->size = 4;
  v.push_back(f);
  Event dir = f;
  dir.seq = 4;
  dir.op = "opendir";
  dir.path = "/sys/bus/pci/devices";
  dir.content.reset();
  dir.entries = {"0000:00:00.0", "0000:45:00.0"};
  dir.has_entries = true;
  v.push_back(dir);
  Event mk;
  mk.seq = 5;
  mk.sys = Sys::kMknod;
  mk.sys_raw = "mknod";
  mk.op = "__xmknod";
  mk.path = "/dev/nvidiactl";
  mk.mode = 0x21b6;
  mk.rdev = 0xc3ff;
  mk.ret = -1;
  mk.err = 17;
  v.push_back(mk);
  Event ln;
  ln.seq = 6;
  ln.sys = Sys::kReadlink;
  ln.sys_raw = "readlink";
  ln.op = "readlink";
  ln.path = "/sys/bus/pci/devices/0000:45:00.0";
  ln.target = "../../../devices/pci0000:40/0000:40:01.1/0000:45:00.0";
  ln.ret = static_cast<int64_t>(ln.target.size());
  v.push_back(ln);

  Module m;
  m.pid = 7;
  m.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04";
  m.build_id = "7e9c286f";
  m.base = 0x7f0000000000;
  m.lo = 0x7f0000000000;
  m.hi = 0x7f0006000000;

  std::string path = temp_path("v2.jsonl");
  {
    auto w = TraceWriter::create(path);
    ASSERT_TRUE(w) << w.error().message();
    Header h = sample_header();
    h.stacks = true;
    h.env = "/proc/driver/nvidia*,/dev/nvidia*";
    ASSERT_TRUE((*w)->write_header(h).ok());
    ASSERT_TRUE((*w)->write_module(m).ok());
    for (const auto& e : v) ASSERT_TRUE((*w)->write_event(e).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  std::string text = slurp(path);
  EXPECT_NE(text.find("{\"module\":{\"pid\":7,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"stack\":[\"0x7f0000001234\""), std::string::npos) << text;
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)->header().format_version, kFormatVersion);
  EXPECT_TRUE((*r)->header().stacks);
  EXPECT_EQ((*r)->header().env, "/proc/driver/nvidia*,/dev/nvidia*");
  Event e;
  for (const auto& want : v) {
    ASSERT_TRUE((*r)->next(e));
    expect_same(e, want);
  }
  EXPECT_FALSE((*r)->next(e));
  ASSERT_EQ((*r)->modules().size(), 1u);
  const Module& got = (*r)->modules()[0];
  EXPECT_EQ(got.path, m.path);
  EXPECT_EQ(got.build_id, m.build_id);
  EXPECT_EQ(got.base, m.base);
  EXPECT_EQ(got.hi, m.hi);
  EXPECT_TRUE((*r)->diagnostics().empty());
  std::remove(path.c_str());
}

// A version 1 trace (as cudatool wrote before version 2) reads with none of the v2 members.
TEST(TraceReader, ReadsVersion1Traces) {
  auto r = TraceReader::from_memory(
      "{\"cudatool_trace\":1,\"argv\":[\"x\"],\"mode\":\"ptrace\"}\n"
      "{\"seq\":0,\"t\":1,\"pid\":1,\"tid\":1,\"sys\":\"open\",\"path\":\"/dev/nvidiactl\","
      "\"flags\":\"0x2\",\"ret\":3}\n",
      "v1.jsonl");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)->header().format_version, 1);
  EXPECT_FALSE((*r)->header().stacks);
  Event e;
  ASSERT_TRUE((*r)->next(e));
  EXPECT_EQ(e.sys, Sys::kOpen);
  EXPECT_TRUE(e.stack.empty());
  EXPECT_TRUE(e.unrecorded.empty());
  EXPECT_TRUE((*r)->modules().empty());
}

// Keys the event reader takes into Event fields are exactly is_event_member's: any other key is
// kept as an extra, and an imported capture line whose unknown key is a member name (here every
// member name, with a value of the wrong type for most) is renamed capture.<key>, so the line
// written reads back as the same event (the capture fuzzer found "size" and the other v2 names).
TEST(TraceJson, EventMembersAndExtrasDoNotOverlap) {
  std::vector<std::string> keys = {
      "seq",  "sys",   "stack",   "stack_error", "size",   "t",        "tid",  "target",
      "dur",  "pid",   "path",    "prot",        "fd",     "flags",    "req",  "ret",
      "rdev", "errno", "entries", "arg",         "addr",   "len",      "mode", "unrecorded",
      "off",  "op",    "child",   "content",     "nested", "stack_ref"};
  for (const std::string& k : keys) EXPECT_TRUE(is_event_member(k)) << k;
  for (const char* k : {"uid", "gid", "sizes", "st", "capture.size", "stat", "modes", "x"}) {
    EXPECT_FALSE(is_event_member(k)) << k;
    Event e;
    std::string line = std::string("{\"seq\":1,\"sys\":\"stat\",\"") + k + "\":\"v\"}";
    ASSERT_TRUE(parse_event_line(line, 0, e).ok()) << line;
    ASSERT_EQ(e.extra.size(), 1u) << line;
    EXPECT_EQ(e.extra[0].key, k);
  }
  for (const std::string& k : keys) {
    if (k == "seq" || k == "sys" || k == "tid" || k == "pid" || k == "fd" || k == "prot" ||
        k == "len" || k == "path" || k == "flags" || k == "addr" || k == "off" || k == "req" ||
        k == "ret") {
      continue;  // keys of the capture format itself
    }
    for (const char* v : {"\"v\"", "7", "[1,2]", "{\"a\":1}"}) {
      std::string line = "{\"seq\":3,\"sys\":\"ioctl\",\"fd\":4,\"req\":1,\"" + k + "\":" + v + "}";
      Event ev, back;
      ASSERT_TRUE(parse_capture_line(line, 0, ev).ok()) << line;
      ASSERT_EQ(ev.extra.size(), 1u) << line;
      EXPECT_EQ(ev.extra[0].key, "capture." + k);
      std::string out;
      append_event_line(out, ev);
      ASSERT_TRUE(parse_event_line(std::string_view(out).substr(0, out.size() - 1), 0, back).ok())
          << out;
      ASSERT_EQ(back.extra.size(), 1u) << out;
      EXPECT_EQ(back.extra[0].key, "capture." + k) << out;
      EXPECT_EQ(back.extra[0].json, v) << out;
      EXPECT_EQ(back.seq, 3u);
    }
  }
}

// An error is reported under the last member read. When that member's key had escapes and the
// next key has escapes too but no ':' after it, reading the next key reused the buffer the first
// was decoded into before failing: the error named freed memory (function_events_fuzzer, under
// ASan). Both keys are longer than a short string, so that the second one reallocates.
TEST(TraceJson, AnErrorAfterAnEscapedKeyNamesThatKey) {
  // As JSON text (an escaped backslash in each), and the first as the reader decodes it.
  const std::string first = R"(first_member_with_an_escape_\\_in_its_long_name)";
  const std::string second = R"(second_member_with_an_escape_\\_and_a_longer_name_than_the_first)";
  const std::string first_decoded = R"(first_member_with_an_escape_\_in_its_long_name)";
  Header h;
  Status st =
      parse_header_line(R"({"cudatool_trace":4,")" + first + R"(":1,")" + second + R"("})", 0, h);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().field, first_decoded) << st.error().message();
  EXPECT_EQ(st.error().reason, "expected ':' after object key");
  Event e;
  st =
      parse_event_line(R"({"seq":1,"sys":"ioctl",")" + first + R"(":2,")" + second + R"("})", 0, e);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().field, first_decoded) << st.error().message();
}

TEST(TraceReader, DamagedModuleLineIsReportedAndSkipped) {
  auto r = TraceReader::from_memory(
      "{\"cudatool_trace\":2,\"argv\":[]}\n"
      "{\"module\":{\"pid\":1,\"path\":\"/x\",\"lo\":\"0x2000\",\"hi\":\"0x1000\"}}\n"
      "{\"module\":{\"pid\":\"zz\"}}\n"
      "{\"seq\":0,\"sys\":\"exit\",\"ret\":0}\n",
      "m.jsonl");
  ASSERT_TRUE(r) << r.error().message();
  Event e;
  ASSERT_TRUE((*r)->next(e));
  EXPECT_EQ(e.sys, Sys::kExit);
  EXPECT_TRUE((*r)->modules().empty());
  EXPECT_EQ((*r)->diagnostics().items().size(), 2u);
}

// Version 3: a writer told to use stack records writes each distinct stack once, before the first
// event that names it; the reader gives every event its frames back; nlohmann sees the lines the
// format says.
TEST(TraceFile, StackRecordsWrittenOnceAndResolved) {
  std::vector<Event> v;
  const std::vector<std::vector<uint64_t>> stacks = {{0x7f0000001000, 0x555500002000},
                                                     {0x7f0000001000, 0x555500002000},
                                                     {0x7f0000003000},
                                                     {},
                                                     {0x7f0000001000, 0x555500002000}};
  for (size_t i = 0; i < stacks.size(); ++i) {
    Event e;
    e.seq = i;
    e.pid = e.tid = 9;
    e.sys = Sys::kExit;
    e.sys_raw = "exit";
    e.stack = stacks[i];
    if (i == 2) e.stack_error = "frame limit 32";
    v.push_back(e);
  }
  std::string p = temp_path("stackrec.jsonl");
  {
    auto w = TraceWriter::create(p);
    ASSERT_TRUE(w) << w.error().message();
    (*w)->use_stack_records();
    ASSERT_TRUE((*w)->write_header(sample_header()).ok());
    for (const Event& e : v) ASSERT_TRUE((*w)->write_event(e).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  std::istringstream in(slurp(p));
  std::string line;
  std::vector<json> lines;
  while (std::getline(in, line)) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 1 + 2 + v.size());  // header, two records, the events
  EXPECT_EQ(lines[1]["stack_record"]["id"], 1);
  EXPECT_EQ(lines[1]["stack_record"]["stack"], json({"0x7f0000001000", "0x555500002000"}));
  EXPECT_EQ(lines[2]["seq"], 0);
  EXPECT_EQ(lines[2]["stack_ref"], 1);
  EXPECT_FALSE(lines[2].contains("stack"));
  EXPECT_EQ(lines[3]["stack_ref"], 1);
  EXPECT_EQ(lines[4]["stack_record"]["id"], 2);
  EXPECT_EQ(lines[5]["stack_ref"], 2);
  EXPECT_EQ(lines[5]["stack_error"], "frame limit 32");
  EXPECT_FALSE(lines[6].contains("stack_ref"));
  EXPECT_EQ(lines[7]["stack_ref"], 1);
  auto r = TraceReader::open(p);
  ASSERT_TRUE(r) << r.error().message();
  Event e;
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_TRUE((*r)->next(e)) << i;
    EXPECT_EQ(e.stack, v[i].stack) << i;
    EXPECT_EQ(e.stack_error, v[i].stack_error) << i;
    // Written again, the stack goes inline: the records are not carried along.
    std::string again;
    append_event_line(again, e);
    EXPECT_EQ(again.find("stack_ref"), std::string::npos) << again;
  }
  EXPECT_FALSE((*r)->next(e));
  EXPECT_TRUE((*r)->diagnostics().empty());
  std::remove(p.c_str());
}

TEST(TraceReader, BadStackRecordsAndReferencesAreReported) {
  auto r = TraceReader::from_memory(
      "{\"cudatool_trace\":3,\"argv\":[]}\n"
      "{\"seq\":0,\"sys\":\"exit\",\"ret\":0,\"stack_ref\":5}\n"  // before its record
      "{\"stack_record\":{\"id\":5,\"stack\":[\"0x10\",\"0x20\"]}}\n"
      "{\"stack_record\":{\"id\":5,\"stack\":[\"0x30\"]}}\n"           // same id, other frames
      "{\"stack_record\":{\"id\":5,\"stack\":[\"0x10\",\"0x20\"]}}\n"  // same again: harmless
      "{\"stack_record\":{\"id\":0,\"stack\":[\"0x10\"]}}\n"
      "{\"stack_record\":{\"id\":6,\"stack\":[]}}\n"
      "{\"stack_record\":{\"id\":7,\"stack\":[\"zz\"]}}\n"
      "{\"seq\":1,\"sys\":\"exit\",\"ret\":0,\"stack_ref\":5}\n"
      "{\"seq\":2,\"sys\":\"exit\",\"ret\":0,\"stack\":[\"0x40\"],\"stack_ref\":5}\n"
      "{\"seq\":3,\"sys\":\"exit\",\"ret\":0,\"stack_ref\":0}\n"
      "{\"seq\":4,\"sys\":\"exit\",\"ret\":0,\"stack_ref\":6}\n",
      "refs.jsonl");
  ASSERT_TRUE(r) << r.error().message();
  Event e;
  ASSERT_TRUE((*r)->next(e));
  EXPECT_EQ(e.seq, 0u);
  EXPECT_TRUE(e.stack.empty());
  EXPECT_EQ(e.stack_error, "stack record 5 is not in the trace before this event");
  ASSERT_TRUE((*r)->next(e));
  EXPECT_EQ(e.seq, 1u);
  EXPECT_EQ(e.stack, (std::vector<uint64_t>{0x10, 0x20}));
  EXPECT_TRUE(e.stack_error.empty());
  ASSERT_TRUE((*r)->next(e));
  EXPECT_EQ(e.seq, 2u);
  EXPECT_EQ(e.stack, std::vector<uint64_t>{0x40});  // the inline stack wins, and is reported
  ASSERT_TRUE((*r)->next(e));                       // stack_ref 0 is a bad line: skipped
  EXPECT_EQ(e.seq, 4u);
  EXPECT_TRUE(e.stack.empty());
  EXPECT_NE(e.stack_error.find("stack record 6"), std::string::npos);
  EXPECT_FALSE((*r)->next(e));
  std::vector<std::string> why;
  for (const auto& d : (*r)->diagnostics().items()) why.push_back(d.message());
  ASSERT_EQ(why.size(), 8u) << ::testing::PrintToString(why);
  auto has = [&](size_t i, const char* s) {
    EXPECT_NE(why[i].find(s), std::string::npos) << i << ": " << why[i];
  };
  has(0, "line 2");
  has(0, "stack record 5 is not in the trace");
  has(1, "a second stack record 5 with other frames");
  has(2, "without an id");
  has(3, "without frames");
  has(4, "line 8");
  has(5, "both a stack and stack_ref 5");
  has(6, "stack_ref 0");
  has(7, "stack record 6 is not in the trace");
}

// A trace whose header names no driver version (recorded without /proc/driver/nvidia) takes the
// version of the libcuda its module records name: from the mapped name, or from the name of the
// file a versionless name (libcuda.so.1) resolves to here; a versioned header, a trace without
// module records, or a libcuda whose names carry no version give nothing.
TEST(LoadedLibcuda, TheModuleRecordsNameTheLibcudaAndItsVersion) {
  auto trace_with = [](const std::string& lib, bool versioned, bool stacks) {
    Header h;
    h.mode = "ptrace";
    h.stacks = stacks;
    if (versioned) h.driver_version = "555.58.02";
    std::string out;
    append_header_line(out, h);
    Event open;
    open.pid = open.tid = 10;
    open.sys = Sys::kOpen;
    open.path = "/dev/nvidiactl";
    open.ret = 3;
    append_event_line(out, open);
    Module m;
    m.pid = 10;
    m.path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    m.lo = 0x1000;
    m.hi = 0x2000;
    append_module_line(out, m);
    m.path = lib;
    m.lo = 0x3000;
    m.hi = 0x4000;
    append_module_line(out, m);
    Event ioctl = open;
    ioctl.seq = 1;
    ioctl.sys = Sys::kIoctl;
    ioctl.fd = 3;
    append_event_line(out, ioctl);
    return out;
  };
  auto got = loaded_libcuda_if_unversioned(
      trace_with("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", false, true), "t");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->version, "580.159.04");
  EXPECT_EQ(got->path, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04");
  // The same from a file.
  std::string file = temp_path("libcuda-named.jsonl");
  { std::ofstream(file) << trace_with("/opt/x/libcuda.so.550.163.01", false, true); }
  auto from_file = loaded_libcuda_if_unversioned(file);
  ASSERT_TRUE(from_file);
  EXPECT_EQ(from_file->version, "550.163.01");
  std::remove(file.c_str());
  // libcuda.so.1 → libcuda.so.535.261.03 on this machine.
  std::string dir = temp_path("libdir");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  { std::ofstream(dir + "/libcuda.so.535.261.03") << "x"; }
  std::filesystem::create_symlink("libcuda.so.535.261.03", dir + "/libcuda.so.1");
  auto linked = loaded_libcuda_if_unversioned(trace_with(dir + "/libcuda.so.1", false, true), "t");
  ASSERT_TRUE(linked);
  EXPECT_EQ(linked->version, "535.261.03");
  EXPECT_EQ(linked->path, dir + "/libcuda.so.1");
  std::filesystem::remove_all(dir);
  // Nothing: a versioned header, no module records, a name without a version that resolves to
  // nothing here.
  EXPECT_FALSE(loaded_libcuda_if_unversioned(
      trace_with("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", true, true), "t"));
  EXPECT_FALSE(loaded_libcuda_if_unversioned(
      trace_with("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", false, false), "t"));
  EXPECT_FALSE(loaded_libcuda_if_unversioned(trace_with(dir + "/libcuda.so.1", false, true), "t"));
  EXPECT_FALSE(loaded_libcuda_if_unversioned("not a trace\n", "t"));
}

TEST(TraceReader, RefusesWhatIsNotATrace) {
  auto r = TraceReader::from_memory("{\"seq\":0,\"t_us\":1.0,\"sys\":\"open\"}\n", "cap.jsonl");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("cudatool import"), std::string::npos);
  EXPECT_FALSE(TraceReader::from_memory("", "empty"));
  EXPECT_FALSE(TraceReader::from_memory("{\"cudatool_trace\":\"1\"}\n", "bad-version"));
}

TEST(TraceReader, OneErrorPerBadLineAndTheRestIsRead) {
  std::string text =
      "{\"cudatool_trace\":1}\n"
      "{\"seq\":0,\"sys\":\"open\",\"path\":\"/dev/nvidiactl\",\"ret\":3}\n"
      "{\"seq\":1,\"sys\":\"ioctl\",\"arg\":{\"pre\":\"abc\"}}\n"
      "garbage\n"
      "{\"seq\":\"zz\",\"sys\":\"close\"}\n"
      "{\"seq\":4}\n"
      "{\"seq\":5,\"sys\":\"close\",\"fd\":3}\n"
      "{\"seq\":6,\"sys\":\"ioc";
  auto r = TraceReader::from_memory(text, "t.jsonl");
  ASSERT_TRUE(r);
  Event e;
  std::vector<uint64_t> seqs;
  while ((*r)->next(e)) seqs.push_back(e.seq);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 5}));
  const auto& d = (*r)->diagnostics().items();
  ASSERT_EQ(d.size(), 5u);
  EXPECT_NE(d[0].message().find("t.jsonl line 3: arg.pre: expected hex digits in pairs"),
            std::string::npos)
      << d[0].message();
  EXPECT_NE(d[1].message().find("line 4"), std::string::npos);
  EXPECT_NE(d[2].message().find("line 5: seq"), std::string::npos) << d[2].message();
  EXPECT_NE(d[3].message().find("line 6: sys"), std::string::npos) << d[3].message();
  EXPECT_NE(d[4].message().find("last line is incomplete"), std::string::npos);
  EXPECT_TRUE((*r)->truncated());
  for (const auto& x : d) EXPECT_TRUE(x.offset.has_value());
}

// The reader parses a plain file's event lines where they stand and finds each line's end by
// parsing it. An object that would be whole only across a line break is still two bad lines, a
// line with something after its object is one, and a good line after them is read; the same
// text compressed (read line by line, the general path) gives the same events and reports.
TEST(TraceReader, EachLineIsReadAloneWhereverItsEndIsFound) {
  std::string text =
      "{\"cudatool_trace\":1}\n"
      "{\"seq\":0,\"sys\":\"close\",\n"
      "\"fd\":3}\n"
      "{\"seq\":1,\"sys\":\"close\",\"fd\":4} \n"
      "{\"seq\":2,\"sys\":\"close\",\"fd\":5}x\n"
      "{\"seq\":3,\"sys\":\"close\",\"path\":\"a\nb\",\"fd\":6}\n"
      "{\"seq\":4,\"sys\":\"close\",\"fd\":7}\r\n"
      "{\"seq\":5,\"sys\":\"ioctl\",\"arg\":{\"role\":\"arg\",\"pre\":\"00\n\"}}\n"
      "{\"seq\":6,\"sys\":\"close\",\"fd\":8}\n"
      "{\"seq\":7,\"sys\":\"close\",\"fd\":9}";
  auto read = [](const std::string& bytes, const std::string& name) {
    auto r = TraceReader::from_memory(bytes, name);
    EXPECT_TRUE(r);
    std::vector<std::pair<uint64_t, int>> events;
    Event e;
    while ((*r)->next(e)) events.emplace_back(e.seq, e.fd);
    std::vector<std::string> reports;
    for (const auto& d : (*r)->diagnostics().items()) reports.push_back(d.message());
    return std::pair{events, reports};
  };
  auto [events, reports] = read(text, "t.jsonl");
  // seq 1 (a space before the newline) and seq 4 (CRLF) are whole lines that the general path
  // reads; seq 7, a whole object that ends the file without a newline, too. The newlines inside
  // seq 3's path and seq 5's buffer end those lines.
  EXPECT_EQ(events, (std::vector<std::pair<uint64_t, int>>{{1, 4}, {4, 7}, {6, 8}, {7, 9}}));
  ASSERT_EQ(reports.size(), 7u) << ::testing::PrintToString(reports);
  EXPECT_NE(reports[0].find("line 2"), std::string::npos) << reports[0];
  EXPECT_NE(reports[1].find("line 3"), std::string::npos) << reports[1];
  EXPECT_NE(reports[2].find("line 5"), std::string::npos) << reports[2];
  std::string packed(ZSTD_compressBound(text.size()), '\0');
  packed.resize(ZSTD_compress(packed.data(), packed.size(), text.data(), text.size(), 1));
  auto zstd = read(packed, "t.jsonl.zst");
  EXPECT_EQ(zstd.first, events);
  EXPECT_EQ(zstd.second.size(), reports.size());
  for (size_t i = 0; i < reports.size() && i < zstd.second.size(); ++i) {
    EXPECT_EQ(zstd.second[i].substr(zstd.second[i].find("line")),
              reports[i].substr(reports[i].find("line")));
  }
}

TEST(TraceReader, PreallocatedNulSpaceIsReportedNotFatal) {
  std::string text = "{\"cudatool_trace\":1}\n{\"seq\":0,\"sys\":\"close\",\"fd\":3}\n";
  text += std::string(5, '\0') + "\n";  // a line whose writer died before filling it
  text += "{\"seq\":1,\"sys\":\"close\",\"fd\":4}\n{\"seq\":2,\"sys\":\"clo";
  text += std::string(3, '\0') + "{\"seq\":3,\"sys\":\"close\",\"fd\":5}\n";
  text += std::string(4096, '\0');  // preallocated tail of a preload trace
  auto r = TraceReader::from_memory(text, "pre.jsonl");
  ASSERT_TRUE(r);
  Event e;
  std::vector<uint64_t> seqs;
  while ((*r)->next(e)) seqs.push_back(e.seq);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 1, 3}));
  size_t nul_reports = 0;
  for (const auto& d : (*r)->diagnostics().items()) {
    if (d.reason.find("NUL bytes") != std::string::npos) ++nul_reports;
  }
  EXPECT_EQ(nul_reports, 3u);
}

TEST(TraceReader, ZstdCutByAKillKeepsWhatWasFlushed) {
  auto events = sample_events();
  std::string p = temp_path("cut.jsonl.zst");
  {
    auto w = TraceWriter::create(p);
    ASSERT_TRUE(w);
    ASSERT_TRUE((*w)->write_header(sample_header()).ok());
    for (const auto& e : events) ASSERT_TRUE((*w)->write_event(e).ok());
    // No close(): the frame is never ended, as when the recorder is killed.
    std::string bytes = slurp(p);
    auto r = TraceReader::from_memory(bytes, "cut.jsonl.zst");
    ASSERT_TRUE(r) << r.error().message();
    Event ev;
    size_t n = 0;
    while ((*r)->next(ev)) ++n;
    EXPECT_EQ(n, events.size());
    ASSERT_EQ((*r)->diagnostics().count(), 1u);
    EXPECT_NE((*r)->diagnostics().items()[0].reason.find("ends inside a frame"), std::string::npos);
    // And cut in the middle of a block: the lines before it survive.
    auto half = TraceReader::from_memory(bytes.substr(0, bytes.size() - 7), "cut2.jsonl.zst");
    ASSERT_TRUE(half);
    n = 0;
    while ((*half)->next(ev)) ++n;
    EXPECT_LT(n, events.size());
    EXPECT_FALSE((*half)->diagnostics().empty());
  }
  std::remove(p.c_str());
}

}  // namespace
}  // namespace cudatool::trace
