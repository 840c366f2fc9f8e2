// ab/normalize and ab/compare on small hand-built conversations: two runs whose handles, fds,
// pointers, times and thread ids differ are equivalent; a changed status, class or member is
// not, and is named. Layouts (offsets of members) come from the r580 tables, not from ab/.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>

#include <cerrno>
#include <map>

#include "ab/compare.hpp"
#include "ab/rules.hpp"
#include "base/bytes.hpp"
#include "rm/tables.hpp"
#include "rm_synth.hpp"
#include "trace/capture_import.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::ab {
namespace {

using namespace rm::synth;  // tables(), make(), offset_of(), rm_request()

// One run of a small program: open nvidiactl, allocate a client and a device, one control on
// the device with nested parameters, one mmap, free the device. The varying values come from
// `run`: handles, fds, stack and mapping addresses, times, thread ids.
struct RunValues {
  uint32_t client, device;
  int32_t fd;
  uint64_t stack, map;
  int32_t tid;
  uint32_t status = 0;     // of the control
  uint32_t cls = 0x80;     // of the device (NV01_DEVICE_0)
  uint32_t extra_gpu = 0;  // a member of the control's parameters
};

std::vector<trace::Event> program(const RunValues& r) {
  std::vector<trace::Event> ev;
  auto base = [&](trace::Sys sys) {
    trace::Event e;
    e.seq = ev.size();
    e.t_ns = 1000 * ev.size() + r.tid;
    e.tid = r.tid;
    e.sys = sys;
    e.path = "/dev/nvidiactl";
    return e;
  };
  trace::Event open = base(trace::Sys::kOpen);
  open.ret = r.fd;
  open.open_flags = 2;
  ev.push_back(open);
  auto ioctl = [&](uint32_t nr, std::vector<uint8_t> before, std::vector<uint8_t> after) {
    trace::Event e = base(trace::Sys::kIoctl);
    e.fd = r.fd;
    e.request = rm_request(nr, static_cast<uint32_t>(before.size()));
    trace::Buffer arg;
    arg.role = "arg";
    arg.size = before.size();
    arg.before = std::move(before);
    arg.after = std::move(after);
    e.arg = arg;
    return e;
  };
  // NV_ESC_RM_ALLOC of the client: RM returns the handle.
  ev.push_back(ioctl(0x2b, make("NVOS21_PARAMETERS", {{"hClass", 0x41}}),
                     make("NVOS21_PARAMETERS", {{"hClass", 0x41}, {"hObjectNew", r.client}})));
  auto dev = make("NVOS21_PARAMETERS", {{"hRoot", r.client},
                                        {"hObjectParent", r.client},
                                        {"hObjectNew", r.device},
                                        {"hClass", r.cls}});
  ev.push_back(ioctl(0x2b, dev, dev));
  // NV_ESC_RM_CONTROL NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS on the client, params on the stack.
  const rm::CtrlEntry* ctrl = nullptr;
  for (const rm::CtrlEntry& c : tables().controls()) {
    if (c.name == "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS") ctrl = &c;
  }
  EXPECT_NE(ctrl, nullptr);
  auto nvos54 = [&](uint32_t status) {
    return make("NVOS54_PARAMETERS", {{"hClient", r.client},
                                      {"hObject", r.client},
                                      {"cmd", ctrl->id},
                                      {"params", r.stack},
                                      {"paramsSize", static_cast<uint64_t>(ctrl->params_size)},
                                      {"status", status}});
  };
  trace::Event c = ioctl(0x2a, nvos54(0), nvos54(r.status));
  trace::Buffer params;
  params.role = "params";
  params.addr = r.stack;
  params.size = static_cast<uint64_t>(ctrl->params_size);
  params.before.assign(params.size, 0);
  params.after.assign(params.size, 0xff);
  store_le<uint32_t>(params.after.data(), 6);  // gpuIds[0]
  store_le<uint32_t>(params.after.data() + 4, r.extra_gpu ? r.extra_gpu : 0xffffffffu);
  c.nested.push_back(params);
  ev.push_back(c);
  trace::Event m = base(trace::Sys::kMmap);
  m.fd = r.fd;
  m.len = 4096;
  m.prot = 3;
  m.map_flags = 1;
  m.ret = static_cast<int64_t>(r.map);
  ev.push_back(m);
  auto fr = make("NVOS00_PARAMETERS",
                 {{"hRoot", r.client}, {"hObjectParent", r.client}, {"hObjectOld", r.device}});
  ev.push_back(ioctl(0x29, fr, fr));
  return ev;
}

trace::Header import_header() {
  trace::Header h;
  h.driver_version = "580.159.04";
  h.mode = "import";
  return h;
}

trace::Header header_of_mode(std::string mode) {
  trace::Header h = import_header();
  h.mode = std::move(mode);
  return h;
}

// The note of a comparison about `what` ("mode", "environment", "kinds"), or null.
const HeaderNote* note_about(const Comparison& c, std::string_view what) {
  auto it = std::find_if(c.notes.begin(), c.notes.end(),
                         [&](const HeaderNote& n) { return n.what == what; });
  return it == c.notes.end() ? nullptr : &*it;
}

// An equivalent comparison that left out `a` of A's events and `b` of B's, with a note about
// `what` that says `says`.
void expect_left_out(const Comparison& c, uint64_t a, uint64_t b, std::string_view what,
                     std::string_view says) {
  EXPECT_TRUE(c.equivalent()) << c.divergences.size();
  EXPECT_EQ(c.left_out_a, a);
  EXPECT_EQ(c.left_out_b, b);
  const HeaderNote* note = note_about(c, what);
  ASSERT_NE(note, nullptr) << what;
  EXPECT_NE(note->message.find(says), std::string::npos) << note->message;
}

Comparison run_pair(const RunValues& ra, const RunValues& rb, std::unique_ptr<NormalizedTrace>& a,
                    std::unique_ptr<NormalizedTrace>& b) {
  a = normalize_events(import_header(), program(ra));
  b = normalize_events(import_header(), program(rb));
  return compare(*a, *b);
}

const RunValues kA{0xc1d00033, 0x5c000002, 9, 0x7ffe9e9e37a0, 0x7f45165de000, 540};
const RunValues kB{0xc1d00038, 0x5c000007, 12, 0x7ffd11223340, 0x7f0012340000, 777};

TEST(AbNormalize, RunsThatDifferOnlyInHandlesFdsPointersAndTimesAreEquivalent) {
  std::unique_ptr<NormalizedTrace> a, b;
  Comparison c = run_pair(kA, kB, a, b);
  EXPECT_TRUE(c.equivalent());
  for (size_t i = 0; i < a->events.size(); ++i) {
    EXPECT_EQ(a->events[i].full, b->events[i].full) << "event " << i;
  }
  // The names given.
  EXPECT_EQ(a->name(a->events[1].h_object), "c0");
  EXPECT_EQ(a->name(a->events[2].h_object), "c0/80#0");
  EXPECT_EQ(a->name(a->events[0].ret_sym), "/dev/nvidiactl#0");
  EXPECT_EQ(a->name(a->events[4].ret_sym), "map0@/dev/nvidiactl#0");
  // The control's params pointer is the nested buffer: renamed "params".
  const NormEvent& ctl = a->events[3];
  bool found = false;
  for (uint32_t i = 0; i < ctl.buffer_count; ++i) {
    const NormBuffer& nb = a->buffers[ctl.buffer + i];
    for (uint32_t k = 0; k < nb.subst_count; ++k) {
      const Subst& s = a->substs[nb.subst + k];
      if (nb.role == Role::kArg && s.offset == offset_of("NVOS54_PARAMETERS", "params")) {
        EXPECT_EQ(a->describe(s), "params");
        found = true;
      }
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(a->thread_tids, std::vector<int32_t>{540});
  EXPECT_EQ(b->thread_tids, std::vector<int32_t>{777});
}

TEST(AbNormalize, ChangedStatusIsReportedAtItsEvent) {
  std::unique_ptr<NormalizedTrace> a, b;
  RunValues rb = kB;
  rb.status = 0x1f;  // NV_ERR_INVALID_ARGUMENT
  Comparison c = run_pair(kA, rb, a, b);
  ASSERT_EQ(c.divergences.size(), 1u);
  const Divergence& d = c.divergences[0];
  EXPECT_EQ(d.kind, Kind::kStatus);
  EXPECT_EQ(d.a, 3u);
  EXPECT_EQ(d.b, 3u);
  ASSERT_FALSE(d.fields.empty());
  EXPECT_EQ(d.fields[0].field, "arg.status");
  EXPECT_EQ(d.fields[0].side, "out");
  EXPECT_EQ(d.fields[0].a, "NV_OK");
  EXPECT_EQ(d.fields[0].b, "NV_ERR_INVALID_ARGUMENT");
  EXPECT_EQ(status_name(b->events[3]), "NV_ERR_INVALID_ARGUMENT");
}

TEST(AbNormalize, ChangedClassAndParameterAreNamed) {
  std::unique_ptr<NormalizedTrace> a, b;
  RunValues rb = kB;
  rb.cls = 0x2080;  // NV20_SUBDEVICE_0
  rb.extra_gpu = 7;
  Comparison c = run_pair(kA, rb, a, b);
  ASSERT_EQ(c.divergences.size(), 2u);
  EXPECT_EQ(c.divergences[0].kind, Kind::kParameters);
  bool cls = false;
  for (const FieldDiff& f : c.divergences[0].fields) {
    if (f.field == "arg.hClass") {
      cls = true;
      EXPECT_EQ(f.a, "NV01_DEVICE_0");
      EXPECT_EQ(f.b, "NV20_SUBDEVICE_0");
    }
  }
  EXPECT_TRUE(cls);
  // The device keeps its correspondence: the free of it is not a divergence.
  EXPECT_EQ(c.divergences[1].a, 3u);
  ASSERT_FALSE(c.divergences[1].fields.empty());
  EXPECT_EQ(c.divergences[1].fields[0].field, "params.gpuIds[1]");
  EXPECT_EQ(c.divergences[1].fields[0].side, "out");
}

TEST(AbNormalize, MissingAndExtraCalls) {
  std::vector<trace::Event> ea = program(kA), eb = program(kB);
  eb.erase(eb.begin() + 3);    // the control
  trace::Event other = eb[0];  // an open of another device, never used
  other.path = "/dev/nvidia0";
  other.ret = 99;
  eb.insert(eb.begin() + 1, other);
  auto a = normalize_events(import_header(), ea);
  auto b = normalize_events(import_header(), eb);
  Comparison c = compare(*a, *b);
  ASSERT_GE(c.divergences.size(), 2u);
  EXPECT_EQ(c.divergences[0].kind, Kind::kExtra);
  EXPECT_EQ(c.divergences[0].b, 1u);
  EXPECT_EQ(c.divergences[1].kind, Kind::kMissing);
  EXPECT_EQ(c.divergences[1].a, 3u);
}

TEST(AbNormalize, ThreadsAreMatchedByRole) {
  // A: thread 540 runs the program, thread 541 opens nvidiactl twice, interleaved.
  // B: other thread ids, and the second thread's calls land elsewhere in the global order.
  auto two_threads = [](const RunValues& r, int32_t other, std::vector<size_t> where) {
    std::vector<trace::Event> ev = program(r);
    trace::Event o = ev[0];
    o.tid = other;
    o.ret = r.fd + 100;
    for (size_t w : where) ev.insert(ev.begin() + static_cast<long>(w), o);
    return ev;
  };
  auto a = normalize_events(import_header(), two_threads(kA, 541, {2, 4}));
  auto b = normalize_events(import_header(), two_threads(kB, 900, {3, 6}));
  Comparison c = compare(*a, *b);
  EXPECT_TRUE(c.equivalent());
  EXPECT_EQ(a->thread_tids, (std::vector<int32_t>{540, 541}));
  EXPECT_EQ(b->thread_tids, (std::vector<int32_t>{777, 900}));
}

TEST(AbNormalize, RacingThreadsKeepTheRoleOfTheirCreationOrder) {
  // Two workers opening nvidiactl with other flags each (worker 1: 0x2, worker 2: 0x80002). In A
  // worker 2's first call comes first, in B worker 1's: by the order of their first calls they
  // would swap roles; by creation order (tid) they do not. A second process (a forked child,
  // with a thread of its own created before it first calls) comes after the first's threads.
  auto run = [](const RunValues& r, bool second_first) {
    std::vector<trace::Event> ev = program(r);
    for (trace::Event& e : ev) e.pid = r.tid;
    auto open = [&](int32_t pid, int32_t tid, uint64_t flags, int32_t fd) {
      trace::Event o = ev[0];
      o.pid = pid;
      o.tid = tid;
      o.open_flags = flags;
      o.ret = fd;
      return o;
    };
    trace::Event w1 = open(r.tid, r.tid + 1, 0x2, r.fd + 10);
    trace::Event w2 = open(r.tid, r.tid + 2, 0x80002, r.fd + 11);
    ev.insert(ev.begin() + 1, second_first ? w1 : w2);
    ev.insert(ev.begin() + 1, second_first ? w2 : w1);
    ev.push_back(open(r.tid + 20, r.tid + 21, 0x802, 3));  // the child's thread, first
    ev.push_back(open(r.tid + 20, r.tid + 20, 0x2, 4));    // then the child's main thread
    return ev;
  };
  auto a = normalize_events(import_header(), run(kA, true));
  RunValues rb = kB;
  auto b = normalize_events(import_header(), run(rb, false));
  EXPECT_EQ(a->thread_tids, (std::vector<int32_t>{540, 541, 542, 560, 561}));
  EXPECT_EQ(b->thread_tids, (std::vector<int32_t>{777, 778, 779, 797, 798}));
  Comparison c = compare(*a, *b);
  EXPECT_TRUE(c.equivalent()) << c.divergences.size();
  // The roles are what the alignment pairs: worker 1's calls are role 1, worker 2's role 2.
  for (const auto& [t, main_tid] : {std::pair(a.get(), 540), std::pair(b.get(), 777)}) {
    size_t seen = 0;
    for (const NormEvent& e : t->events) {
      if (e.tid == main_tid + 1 || e.tid == main_tid + 2) {
        EXPECT_EQ(e.thread, static_cast<uint32_t>(e.tid - main_tid));
        ++seen;
      }
    }
    EXPECT_EQ(seen, 2u);
  }
}

TEST(AbNormalize, ByteFates) {
  auto a = normalize_events(import_header(), program(kA));
  // NVOS21 members are compared or renamed; nothing past the structure is recorded.
  uint64_t cls = offset_of("NVOS21_PARAMETERS", "hClass");
  uint64_t root = offset_of("NVOS21_PARAMETERS", "hRoot");
  EXPECT_EQ(byte_fate(*a, 2, Role::kArg, true, cls), ByteFate::kCompared);
  EXPECT_EQ(byte_fate(*a, 2, Role::kArg, true, root), ByteFate::kRenamed);
  EXPECT_EQ(byte_fate(*a, 2, Role::kArg, true, 4096), ByteFate::kNotRecorded);
  EXPECT_EQ(byte_fate(*a, 2, Role::kParams, true, 0), ByteFate::kNotRecorded);
  // NVOS00: hRoot, hObjectParent, hObjectOld, status: 16 bytes, no padding.
  EXPECT_EQ(byte_fate(*a, 5, Role::kArg, false, offset_of("NVOS00_PARAMETERS", "status")),
            ByteFate::kCompared);
}

TEST(AbNormalize, EveryRuleNamesAMemberOfTheTables) {
  for (const MaskRule& r : mask_rules()) {
    const rm::StructEntry* s = tables().find_struct(r.structure);
    ASSERT_NE(s, nullptr) << r.structure;
    EXPECT_NE(tables().find_field(*s, r.member), nullptr) << r.structure << "." << r.member;
    EXPECT_FALSE(r.reason.empty());
  }
  // Client classes by name, as the tables have them.
  for (uint32_t id : {0x0u, 0x1u, 0x41u}) {
    const rm::ClassEntry* c = tables().find_class(id);
    ASSERT_NE(c, nullptr);
    EXPECT_NE(c->name.find("ROOT"), std::string_view::npos) << c->name;
    EXPECT_TRUE(is_client_class(tables(), id));
  }
}

// ptrace mode records an exit per thread and process, preload mode the traced command's only
// (docs/trace-format.md): between a ptrace and a preload recording of the same run, the worker
// thread's and the child's exits are not compared (and the note says so); the command's own exit
// still is, and between two ptrace recordings the thread's exit still counts.
TEST(AbNormalize, ExitsPreloadModeCannotRecordAreNotCompared) {
  auto run = [](const RunValues& r, bool all_exits) {
    std::vector<trace::Event> ev = program(r);
    for (trace::Event& e : ev) e.pid = r.tid;
    auto exit_of = [&](int32_t pid, int32_t tid) {
      trace::Event x;
      x.seq = ev.size();
      x.pid = pid;
      x.tid = tid;
      x.sys = trace::Sys::kExit;
      x.ret = 1;
      return x;
    };
    if (all_exits) {
      ev.push_back(exit_of(r.tid + 30, r.tid + 30));  // a forked child
      ev.push_back(exit_of(r.tid, r.tid + 1));        // a worker thread of the command
    }
    ev.push_back(exit_of(r.tid, r.tid));  // the command
    return ev;
  };
  auto a = normalize_events(header_of_mode("ptrace"), run(kA, true));
  auto b = normalize_events(header_of_mode("preload"), run(kB, false));
  Comparison c = compare(*a, *b);
  EXPECT_TRUE(c.equivalent()) << c.divergences.size();
  const HeaderNote* mode_note = note_about(c, "mode");
  ASSERT_NE(mode_note, nullptr);
  EXPECT_NE(mode_note->message.find("A's 2 exits of threads and child processes"),
            std::string::npos)
      << mode_note->message;
  // The same the other way round.
  Comparison back = compare(*b, *a);
  EXPECT_TRUE(back.equivalent()) << back.divergences.size();

  // The command's own exit is compared: preload B without it has a missing call.
  std::vector<trace::Event> no_exit = run(kB, false);
  no_exit.pop_back();
  auto b2 = normalize_events(header_of_mode("preload"), no_exit);
  Comparison c2 = compare(*a, *b2);
  ASSERT_EQ(c2.divergences.size(), 1u);
  EXPECT_EQ(c2.divergences[0].kind, Kind::kMissing);
  EXPECT_EQ(a->events[c2.divergences[0].a].tid, kA.tid);

  // Two ptrace recordings: every exit counts.
  auto b3 = normalize_events(header_of_mode("ptrace"), run(kB, false));
  Comparison c3 = compare(*a, *b3);
  EXPECT_EQ(c3.divergences.size(), 2u);
}

// An imported capture holds opens, mmaps and ioctls (docs/trace-format.md): against one, the
// closes, dups, munmaps, execs and exits of a recording are left out of the alignment (the
// "kinds" note counts them), not reported as extra calls; a kind the import does hold is still
// compared, and between two recordings every kind counts.
TEST(AbNormalize, CallsOfKindsAnImportDoesNotHoldAreNotCompared) {
  auto recorded = [](const RunValues& r) {
    std::vector<trace::Event> ev = program(r);
    auto add = [&](trace::Sys sys) {
      trace::Event x;
      x.seq = ev.size();
      x.tid = r.tid;
      x.sys = sys;
      x.fd = r.fd;
      if (sys == trace::Sys::kExecve) x.path = "/usr/bin/app";
      ev.insert(sys == trace::Sys::kExecve ? ev.begin() : ev.end(), x);
    };
    add(trace::Sys::kExecve);
    add(trace::Sys::kMunmap);
    add(trace::Sys::kClose);
    add(trace::Sys::kExit);
    return ev;
  };
  auto imp = normalize_events(header_of_mode("import"), program(kA));
  auto rec = normalize_events(header_of_mode("ptrace"), recorded(kB));
  expect_left_out(compare(*imp, *rec), 0, 4, "kinds",
                  "B's 4 close, munmap, execve, exit calls are not compared: A is an imported "
                  "capture");
  Comparison back = compare(*rec, *imp);  // the other way round
  EXPECT_TRUE(back.equivalent()) << back.divergences.size();
  EXPECT_EQ(back.left_out_a, 4u);

  // A kind the import holds is compared: the recording's extra mmap is an extra call.
  std::vector<trace::Event> more = recorded(kB);
  auto at = std::find_if(more.begin(), more.end(),
                         [](const trace::Event& e) { return e.sys == trace::Sys::kMmap; });
  ASSERT_NE(at, more.end());
  trace::Event m = *at;  // the mmap of program(), made twice
  m.ret += 0x10000;
  more.insert(at + 1, m);
  for (size_t i = 0; i < more.size(); ++i) more[i].seq = i;
  auto rec2 = normalize_events(header_of_mode("ptrace"), more);
  Comparison c2 = compare(*imp, *rec2);
  ASSERT_EQ(c2.divergences.size(), 1u);
  EXPECT_EQ(c2.divergences[0].kind, Kind::kExtra);

  // Two recordings: the closes and the rest count.
  auto rec_a = normalize_events(header_of_mode("ptrace"), program(kA));
  Comparison c3 = compare(*rec_a, *rec);
  EXPECT_EQ(c3.left_out_b, 0u);
  EXPECT_EQ(c3.divergences.size(), 4u);
}

// A recording holds what an imported capture cannot (docs/ab.md, "What an imported capture does
// not hold"): the parameters of an RM alloc passed with paramsSize 0 (read with the size RM gives
// the class), buffers behind pointer members, and the whole of a UVM argument the capture cut at
// 256 bytes (with the status beyond). Against an import, ab leaves those out of the recording
// (normalize_pair sets capture_view; the "capture" note counts them) and compares the rest.
TEST(AbNormalize, WhatAnImportedCaptureDoesNotHoldIsNotComparedAgainstOne) {
  const rm::UvmEntry* uvm = nullptr;
  for (const rm::UvmEntry& u : tables().uvm_ioctls()) {
    if (u.params_size > 512 && u.rm_status_offset > 256) uvm = &u;
  }
  ASSERT_NE(uvm, nullptr);
  const auto size = static_cast<uint64_t>(uvm->params_size);
  // `recorded`: as cudatool records it; else as the capture format holds it. `mark` goes into
  // the first 256 bytes of the UVM argument, `tail` past them.
  auto run = [&](const RunValues& r, bool recorded, uint8_t mark, uint8_t tail) {
    std::vector<trace::Event> ev = program(r);
    // The device's alloc passes its parameters with paramsSize 0.
    trace::Event& dev = ev[2];
    uint64_t pp = r.stack + 0x100;
    for (std::vector<uint8_t>* side : {&dev.arg->before, &dev.arg->after}) {
      *side = make("NVOS21_PARAMETERS", {{"hRoot", r.client},
                                         {"hObjectParent", r.client},
                                         {"hObjectNew", r.device},
                                         {"hClass", r.cls},
                                         {"pAllocParms", pp}});
    }
    if (recorded) {
      trace::Buffer p;
      p.role = "params";
      p.addr = pp;
      p.size = 16;
      p.sized_by = "class";
      p.before.assign(16, 0);
      p.after.assign(16, static_cast<uint8_t>(r.tid));  // differs between the runs
      dev.nested.push_back(p);
      trace::Buffer list;  // behind a pointer member of the control's parameters
      list.role = "params.pList";
      list.addr = r.stack + 0x200;
      list.size = 8;
      list.before.assign(8, 0);
      list.after.assign(8, static_cast<uint8_t>(r.tid));
      ev[3].nested.push_back(list);
    }
    trace::Event open = ev[0];
    open.path = "/dev/nvidia-uvm";
    open.ret = r.fd + 1;
    trace::Event call = open;
    call.sys = trace::Sys::kIoctl;
    call.fd = r.fd + 1;
    call.ret = 0;
    call.request = uvm->nr;
    trace::Buffer arg;
    arg.role = "arg";
    arg.addr = recorded ? r.stack + 0x400 : 0;
    arg.size = recorded ? size : trace::kCaptureUvmBytes;
    arg.bounded = !recorded;
    arg.before.assign(size, 0);
    arg.before[8] = mark;
    arg.before[300] = tail;
    arg.after = arg.before;
    store_le<uint32_t>(arg.after.data() + uvm->rm_status_offset, tail == 0 ? 0 : 0x1f);
    if (!recorded) {
      arg.before.resize(trace::kCaptureUvmBytes);
      arg.after.resize(trace::kCaptureUvmBytes);
    }
    call.arg = arg;
    ev.push_back(open);
    ev.push_back(call);
    for (size_t i = 0; i < ev.size(); ++i) ev[i].seq = i;
    return ev;
  };
  auto imp = normalize_events(header_of_mode("import"), run(kA, false, 1, 0));
  NormalizeOptions view;
  view.capture_view = true;
  // The recording's bytes past 256 differ (and its status there is an error): not compared.
  auto rec = normalize_events(header_of_mode("ptrace"), run(kB, true, 1, 7), view);
  Comparison c = compare(*imp, *rec);
  EXPECT_TRUE(c.equivalent()) << c.divergences.size();
  const HeaderNote* note = note_about(c, "capture");
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->message,
            "not compared in B: the parameters of 1 allocation with paramsSize 0, 1 buffer "
            "behind pointer members and the bytes past 256 of 1 UVM argument (A is an imported "
            "capture, whose format holds none of them)");
  EXPECT_TRUE(compare(*rec, *imp).equivalent());  // the other way round

  // What the capture holds is still compared: a byte in the first 256 of the UVM argument.
  auto changed = normalize_events(header_of_mode("ptrace"), run(kB, true, 2, 7), view);
  Comparison c2 = compare(*imp, *changed);
  ASSERT_EQ(c2.divergences.size(), 1u);
  EXPECT_EQ(c2.divergences[0].kind, Kind::kParameters);

  // Without the view the recording's extra buffers and bytes are divergences.
  auto plain = normalize_events(header_of_mode("ptrace"), run(kB, true, 1, 7));
  Comparison c3 = compare(*imp, *plain);
  EXPECT_FALSE(c3.equivalent());
  EXPECT_EQ(note_about(c3, "capture"), nullptr);

  // normalize_pair chooses the view from the headers: on for the recording against an import,
  // off between two recordings (whose class-sized parameters then count).
  std::string dir = ::testing::TempDir() + "/cudatool-ab-capture-" + std::to_string(getpid());
  auto write = [&](const std::string& name, const trace::Header& h,
                   const std::vector<trace::Event>& ev) {
    std::string path = dir + "-" + name;
    auto w = trace::TraceWriter::create(path);
    EXPECT_TRUE(w) << w.error().message();
    EXPECT_TRUE((*w)->write_header(h).ok());
    for (const trace::Event& e : ev) EXPECT_TRUE((*w)->write_event(e).ok());
    EXPECT_TRUE((*w)->close().ok());
    return path;
  };
  std::string pa = write("a", header_of_mode("import"), run(kA, false, 1, 0));
  std::string pb = write("b", header_of_mode("ptrace"), run(kB, true, 1, 7));
  std::string pc = write("c", header_of_mode("ptrace"), run(kA, true, 1, 7));
  NormalizedPair ab = normalize_pair(pa, pb);
  ASSERT_TRUE(ab.a && ab.b);
  EXPECT_TRUE(compare(**ab.a, **ab.b).equivalent());
  EXPECT_EQ((*ab.b)->masks.capture_params, 1u);
  EXPECT_EQ((*ab.a)->masks.capture_params, 0u);
  NormalizedPair cb = normalize_pair(pc, pb);
  ASSERT_TRUE(cb.a && cb.b);
  Comparison two = compare(**cb.a, **cb.b);
  EXPECT_FALSE(two.equivalent());  // the runs' alloc parameters and lists differ
  EXPECT_EQ(note_about(two, "capture"), nullptr);
  NormalizedPair bad = normalize_pair(pa, dir + "-absent");
  EXPECT_TRUE(bad.a);
  EXPECT_FALSE(bad.b);
  for (const char* n : {"a", "b", "c"}) ::unlink((dir + "-" + n).c_str());
}

// Environment events are compared where the other trace's recording covered their paths (its
// header's env globs): against a replayed run or an import (no env globs) they are left out, and
// so are those outside the other's globs; the notes say how many.
TEST(AbNormalize, EnvironmentEventsTheOtherDidNotRecordAreNotCompared) {
  auto run = [](const RunValues& r, std::vector<std::string> env_paths) {
    std::vector<trace::Event> ev = program(r);
    for (trace::Event& e : ev) e.pid = r.tid;
    for (const std::string& p : env_paths) {
      trace::Event x;
      x.pid = x.tid = r.tid;
      x.sys = trace::Sys::kStat;
      x.op = "stat";
      x.path = p;
      x.ret = -1;
      x.err = ENOENT;
      ev.insert(ev.begin() + 1, x);
    }
    for (size_t i = 0; i < ev.size(); ++i) ev[i].seq = i;
    return ev;
  };
  auto with = [](std::string mode, std::string env) {
    trace::Header h = import_header();
    h.mode = std::move(mode);
    h.env = std::move(env);
    return h;
  };
  const std::vector<std::string> paths = {"/proc/driver/nvidia/params",
                                          "/sys/module/nvidia/initstate"};
  auto a =
      normalize_events(with("ptrace", "/proc/driver/nvidia*,/sys/module/nvidia*"), run(kA, paths));
  // A replayed run: no env globs, no environment events.
  auto replayed = normalize_events(with("replay", ""), run(kB, {}));
  Comparison c = compare(*a, *replayed);
  expect_left_out(c, 2, 0, "environment", "A's 2 environment events are not compared");
  // Globs that cover one of the two paths: the other is compared, and missing.
  auto narrow = normalize_events(with("ptrace", "/sys/module/nvidia*"), run(kB, {}));
  Comparison c2 = compare(*a, *narrow);
  EXPECT_EQ(c2.left_out_a, 1u);
  ASSERT_EQ(c2.divergences.size(), 1u);
  EXPECT_EQ(c2.divergences[0].kind, Kind::kMissing);
  EXPECT_EQ(a->events[c2.divergences[0].a].sys, trace::Sys::kStat);
  // The same globs on both sides: every environment event is compared.
  auto same = normalize_events(with("ptrace", "/proc/driver/nvidia*,/sys/module/nvidia*"),
                               run(kB, {paths[0]}));
  Comparison c3 = compare(*a, *same);
  EXPECT_EQ(c3.left_out_a + c3.left_out_b, 0u);
  EXPECT_EQ(c3.divergences.size(), 1u);
}

}  // namespace
}  // namespace cudatool::ab
