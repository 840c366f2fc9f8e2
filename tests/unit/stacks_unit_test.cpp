// Call stacks, the pure parts: the module map (records, forks, execs, replaced ranges), the
// resolver's answers when a module file is absent or another build, "device calls per API call",
// the `api` field of --filter, and the /proc/PID/maps reader of the ptrace recorder.
#include <gtest/gtest.h>

#include "analysis/driver_image.hpp"
#include "record/proc_modules.hpp"
#include "rm/tables.hpp"
#include "trace/api_stats.hpp"
#include "trace/event_filter.hpp"
#include "trace/module_map.hpp"
#include "trace/stack_resolver.hpp"

namespace cudatool::trace {
namespace {

Module mod(int pid, std::string path, uint64_t lo, uint64_t hi, std::string id = "ab") {
  Module m;
  m.pid = pid;
  m.path = std::move(path);
  m.build_id = std::move(id);
  m.base = lo;
  m.lo = lo;
  m.hi = hi;
  return m;
}

Event event(Sys sys, int pid, int child = 0) {
  Event e;
  e.sys = sys;
  e.pid = e.tid = pid;
  e.child_pid = child;
  return e;
}

TEST(ModuleMap, FindsByProcessAndRange) {
  ModuleMap m;
  m.add(mod(10, "/a", 0x1000, 0x2000));
  m.add(mod(10, "/b", 0x3000, 0x4000));
  m.add(mod(11, "/c", 0x1000, 0x2000));
  ASSERT_NE(m.find(10, 0x1000), nullptr);
  EXPECT_EQ(m.find(10, 0x1fff)->path, "/a");
  EXPECT_EQ(m.find(10, 0x2000), nullptr);  // [lo, hi)
  EXPECT_EQ(m.find(10, 0x3500)->path, "/b");
  EXPECT_EQ(m.find(11, 0x1500)->path, "/c");
  EXPECT_EQ(m.find(12, 0x1500), nullptr);
  EXPECT_EQ(m.find(10, 0), nullptr);
  // An empty range holds nothing and is not kept.
  m.add(mod(10, "/empty", 0x5000, 0x5000));
  EXPECT_EQ(m.find(10, 0x5000), nullptr);
}

TEST(ModuleMap, ANewRecordReplacesTheRangesItOverlaps) {
  ModuleMap m;
  m.add(mod(10, "/old1", 0x1000, 0x2000));
  m.add(mod(10, "/old2", 0x2000, 0x3000));
  m.add(mod(10, "/keep", 0x5000, 0x6000));
  m.add(mod(10, "/new", 0x1800, 0x2800));  // a library loaded where two were unloaded
  EXPECT_EQ(m.find(10, 0x1000), nullptr);
  EXPECT_EQ(m.find(10, 0x1800)->path, "/new");
  EXPECT_EQ(m.find(10, 0x2900), nullptr);
  EXPECT_EQ(m.find(10, 0x5000)->path, "/keep");
  EXPECT_EQ(m.of(10).size(), 2u);
}

TEST(ModuleMap, ForkInheritsAndExecStartsAfresh) {
  ModuleMap m;
  m.add(mod(10, "/lib", 0x1000, 0x2000));
  m.observe(event(Sys::kFork, 10, 20));
  EXPECT_EQ(m.find(20, 0x1500)->path, "/lib");
  // The parent's later dlopen is not the child's.
  m.add(mod(10, "/late", 0x8000, 0x9000));
  EXPECT_EQ(m.find(20, 0x8500), nullptr);
  EXPECT_EQ(m.find(10, 0x8500)->path, "/late");
  // exec: the child's old modules are gone; its new image's records follow.
  m.observe(event(Sys::kExecve, 20));
  EXPECT_EQ(m.find(20, 0x1500), nullptr);
  m.add(mod(20, "/new-image", 0x1000, 0x3000));
  EXPECT_EQ(m.find(20, 0x1500)->path, "/new-image");
  EXPECT_EQ(m.find(10, 0x1500)->path, "/lib");
  // A child whose own records came before the fork event keeps them.
  m.add(mod(30, "/own", 0x1000, 0x2000));
  m.observe(event(Sys::kFork, 10, 30));
  EXPECT_EQ(m.find(30, 0x1500)->path, "/own");
}

TEST(ModuleMap, SyncTakesOnlyNewRecords) {
  ModuleMap m;
  std::vector<Module> all{mod(1, "/a", 0x1000, 0x2000)};
  m.sync(all);
  m.sync(all);
  EXPECT_EQ(m.records(), 1u);
  all.push_back(mod(1, "/b", 0x3000, 0x4000));
  m.sync(all);
  EXPECT_EQ(m.records(), 2u);
  EXPECT_EQ(m.find(1, 0x3000)->path, "/b");
}

// A resolver whose files are given by the test: none of them can be opened here.
StackResolver no_files(std::vector<std::string> lib_paths = {}) {
  ResolverOptions o;
  o.lib_paths = std::move(lib_paths);
  o.api_lib = "libcuda.so*";
  o.open = [](const std::string& path) -> Result<std::unique_ptr<DriverImage>> {
    return make_error(path, "", std::nullopt, "No such file or directory");
  };
  return StackResolver(std::move(o));
}

TEST(StackResolver, AbsentFilesGiveModuleOffsetAndSayWhy) {
  ResolverOptions o;
  o.api_lib = "libcuda.so*";
  o.open = [](const std::string& path) -> Result<std::unique_ptr<DriverImage>> {
    return make_error(path, "", std::nullopt, "No such file or directory");
  };
  StackResolver r(std::move(o));
  std::vector<Module> recs{mod(7, "/usr/lib/libcuda.so.1", 0x7f0000000000, 0x7f0000100000, "1234")};
  Event ev = event(Sys::kIoctl, 7);
  ev.stack = {0x7f0000001234, 0x42};
  r.follow(recs, ev);
  std::vector<ResolvedFrame> f;
  r.frames(ev, f);
  ASSERT_EQ(f.size(), 2u);
  ASSERT_NE(f[0].module, nullptr);
  EXPECT_EQ(f[0].offset, 0x1234u);
  EXPECT_TRUE(f[0].function.empty());
  EXPECT_EQ(StackResolver::module_text(f[0]), "libcuda.so.1+0x1234");
  EXPECT_EQ(f[1].module, nullptr);
  EXPECT_EQ(StackResolver::module_text(f[1]), "0x42");
  EXPECT_FALSE(r.api_of(ev).has_value());
  ASSERT_EQ(r.libraries().size(), 1u);
  const Library& lib = *r.libraries()[0];
  EXPECT_TRUE(lib.api);
  EXPECT_FALSE(lib.named());
  EXPECT_NE(lib.why.find("cannot be read here (No such file or directory)"), std::string::npos)
      << lib.why;
  EXPECT_NE(lib.why.find("--lib-path"), std::string::npos) << lib.why;
  EXPECT_EQ(r.take_new_libraries().size(), 1u);
  EXPECT_TRUE(r.take_new_libraries().empty());
}

TEST(StackResolver, EventsWithoutStacksOrModulesNameNothing) {
  StackResolver r = no_files();
  Event ev = event(Sys::kIoctl, 7);
  r.follow({}, ev);
  EXPECT_FALSE(r.api_of(ev).has_value());
  ev.stack = {0x1000};
  EXPECT_FALSE(r.api_of(ev).has_value());
  EXPECT_TRUE(r.libraries().empty());
}

TEST(ApiStats, GroupsDeviceCallsByApi) {
  ApiStatsBuilder b;
  Event io = event(Sys::kIoctl, 1);
  io.stack = {1};
  Event open = event(Sys::kOpen, 1);
  open.stack = {1};
  Event fork = event(Sys::kFork, 1, 2);
  Event bare = event(Sys::kIoctl, 1);
  b.add(io, "cuInit", false, "NV_ESC_RM_ALLOC");
  b.add(io, "cuInit", true, "NV_ESC_RM_CONTROL");
  b.add(io, "cuInit", false, "NV_ESC_RM_CONTROL");
  b.add(open, "cuCtxCreate_v2", false, "open");
  b.add(io, std::nullopt, false, "NV_ESC_RM_FREE");  // a stack, but under no API call
  b.add(bare, std::nullopt, false, "");              // no stack
  b.add(fork, "cuInit", false, "fork");              // not a device call
  ApiStats s = b.finish();
  EXPECT_EQ(s.device_calls, 6u);
  EXPECT_EQ(s.with_stack, 5u);
  EXPECT_EQ(s.attributed, 4u);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].api, "cuInit");
  EXPECT_EQ(s.rows[0].device_calls, 3u);
  EXPECT_EQ(s.rows[0].ioctls, 3u);
  EXPECT_EQ(s.rows[0].failed, 1u);
  ASSERT_EQ(s.rows[0].calls.size(), 2u);
  EXPECT_EQ(s.rows[0].calls[0], (std::pair<std::string, uint64_t>{"NV_ESC_RM_CONTROL", 2}));
  EXPECT_EQ(s.rows[1].api, "cuCtxCreate_v2");
  EXPECT_EQ(s.rows[1].ioctls, 0u);
}

TEST(EventFilterApi, MatchesTheApiTheCallerGives) {
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  Event ev = event(Sys::kIoctl, 1);
  trace::Decoded d;
  trace::decode_event(t, ev, d);
  auto f = trace::EventFilter::parse("api=cuDevicePrimaryCtxRetain", t);
  ASSERT_TRUE(f) << f.error().message();
  EXPECT_TRUE(f->uses_api());
  EXPECT_TRUE(f->matches(ev, d, "cuDevicePrimaryCtxRetain"));
  EXPECT_TRUE(f->matches(ev, d, "CUDEVICEPRIMARYCTXRETAIN"));  // names compare without case
  EXPECT_FALSE(f->matches(ev, d, "cuInit"));
  EXPECT_FALSE(f->matches(ev, d, ""));  // no API call known: false
  EXPECT_FALSE(f->matches(ev, d));
  auto g = trace::EventFilter::parse("api=cuMem* or not api=cuInit", t);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->matches(ev, d, "cuMemAlloc_v2"));
  EXPECT_TRUE(g->matches(ev, d, ""));  // `not api=…` selects events without one
  auto ne = trace::EventFilter::parse("api!=cuInit", t);
  ASSERT_TRUE(ne);
  EXPECT_FALSE(ne->matches(ev, d, ""));  // != on a missing field is false, as for every field
  EXPECT_TRUE(ne->matches(ev, d, "cuCtxCreate"));
  auto plain = trace::EventFilter::parse("sys=ioctl", t);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->uses_api());
  auto bad = trace::EventFilter::parse("api<3", t);
  EXPECT_FALSE(bad);
}

}  // namespace
}  // namespace cudatool::trace

namespace cudatool::record {
namespace {

TEST(ProcMaps, ModulesAreTheFilesWithCode) {
  std::string maps =
      "55d0c0000000-55d0c0001000 r--p 00000000 fd:01 100 /usr/bin/prog\n"
      "55d0c0001000-55d0c0002000 r-xp 00001000 fd:01 100 /usr/bin/prog\n"
      "55d0c0002000-55d0c0004000 rw-p 00002000 fd:01 100 /usr/bin/prog\n"
      "55d0c0004000-55d0c0005000 rw-p 00000000 00:00 0 \n"
      "7f0000000000-7f0000010000 r--p 00000000 fd:01 200 /data/file.bin\n"
      "7f1000000000-7f1000001000 r--p 00000000 fd:01 300 /lib/libx.so\n"
      "7f1000001000-7f1000003000 r-xp 00001000 fd:01 300 /lib/libx.so\n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n"
      "garbage line\n"
      "1-0 r-xp 0 fd:01 5 /backwards\n";
  auto lines = parse_maps(maps);
  EXPECT_EQ(lines.size(), 9u);
  auto mods = modules_from_maps(lines, 42, nullptr);
  ASSERT_EQ(mods.size(), 2u);
  EXPECT_EQ(mods[0].path, "/usr/bin/prog");
  EXPECT_EQ(mods[0].pid, 42);
  EXPECT_EQ(mods[0].lo, 0x55d0c0000000u);
  EXPECT_EQ(mods[0].hi, 0x55d0c0004000u);
  EXPECT_EQ(mods[0].base, 0x55d0c0000000u);
  EXPECT_EQ(mods[1].path, "/lib/libx.so");
  EXPECT_EQ(mods[1].hi, 0x7f1000003000u);
}

// Found by stack_resolver_fuzzer: mappings of one file listed out of order (or empty) made a
// module whose range ended before it began. Every module has lo < hi.
TEST(ProcMaps, OutOfOrderOrEmptyMappingsNeverMakeAnEmptyRange) {
  std::string maps =
      "7f0000002000-7f0000003000 r-xp 00001000 08:01 12 /lib/x.so\n"
      "7f0000000000-7f0000001000 r--p 00000000 08:01 12 /lib/x.so\n"
      "7f0000005000-7f0000005000 r-xp 00000000 08:01 13 /lib/empty.so\n";
  auto lines = parse_maps(maps);
  EXPECT_EQ(lines.size(), 2u);  // the empty mapping is no mapping
  auto mods = modules_from_maps(lines, 1, nullptr);
  ASSERT_EQ(mods.size(), 1u);  // the second piece alone has no code
  EXPECT_EQ(mods[0].lo, 0x7f0000002000u);
  EXPECT_EQ(mods[0].hi, 0x7f0000003000u);
  for (const auto& m : mods) EXPECT_LT(m.lo, m.hi);
}

}  // namespace
}  // namespace cudatool::record
