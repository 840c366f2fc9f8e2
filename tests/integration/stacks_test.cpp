// Call stacks (docs/tracing.md, "Call stacks"; docs/decode.md): `cudatool trace` in both modes
// records the stack of every device call of tests/fixtures/stacks (a library shaped like libcuda,
// dlopen'ed by a program that calls it from two threads, a forked child and a signal handler),
// and `decode`/`stats` name the frames and the API call in progress. What a frame must be called
// comes from `nm` of the unstripped build and from the chain of functions the library says each
// call went through; the stripped copy must give the exports by name and the rest as fn_<addr>,
// the address nm gives for them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "stacks_support.hpp"
#include "trace/stack_resolver.hpp"
#include "trace/trace_file.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// The name the resolver must give a function of the fixture library: the unstripped build names
// all of them (.symtab), the stripped copy only its exports (the others are fn_<start>).
std::string expected_name(const NmFunction& f, bool stripped) {
  if (!stripped || f.global) return f.name;
  return fmt::format("fn_{:x}", f.start);
}

// The fixture's API calls whose device calls are made under no API call: the walk stops before
// their entry point (broken stacks on purpose) or a forged frame pointer leads past it.
bool made_under_no_api(const std::string& api) {
  return api == "fixNoUnwind" || api == "fixGarbageStack" || api == "fixFramePointer";
}

// One recording of the fixture, shared by the tests of a mode and library.
struct Recording {
  std::string trace;
  std::string lib;
  bool stripped = false;
  ClientOutput printed;
  StackTrace t;
  DecodedStacks decoded;
  std::map<uint64_t, size_t> pairs;  // ioctl seq → printed device call
};

class Stacks : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  static std::map<std::string, Recording>& cache() {
    static std::map<std::string, Recording> c;
    return c;
  }
  const Recording& rec() {
    auto [mode, stripped] = GetParam();
    std::string key = mode + (stripped ? "-stripped" : "-unstripped");
    auto it = cache().find(key);
    if (it != cache().end()) return it->second;
    Recording r;
    r.stripped = stripped;
    r.lib = stripped ? stack_fixture().stripped : stack_fixture().lib;
    std::string dev = make_fake_devices("stacks-" + key);
    r.trace = temp_dir() + "/stacks-" + key + ".jsonl";
    r.printed = parse_client_output(record_client(mode, r.lib, dev, r.trace));
    r.t = load_stack_trace(r.trace);
    std::vector<std::string> problems;
    r.pairs = pair_device_calls(r.printed, r.t, problems);
    for (const auto& p : problems) ADD_FAILURE() << key << ": " << p;
    r.decoded = decode_stacks(r.trace);
    EXPECT_EQ(r.decoded.status, 0) << r.decoded.err;
    return cache().emplace(key, std::move(r)).first->second;
  }
  bool ptrace() const { return std::get<0>(GetParam()) == "ptrace"; }
};

// The frames of a decoded event that lie in module `path`, innermost first.
std::vector<json> frames_in(const json& ev, const std::string& path) {
  std::vector<json> out;
  for (const json& f : ev["stack"]) {
    if (f["module"].is_string() && f["module"] == path) out.push_back(f);
  }
  return out;
}

TEST_P(Stacks, HeaderAndModuleRecords) {
  const Recording& r = rec();
  EXPECT_EQ(r.t.header.value("stacks", false), true);
  EXPECT_TRUE(r.t.bad_lines.empty());
  // The dlopen'ed library has a record, with the build id readelf reads from the file, written
  // before the first event whose stack holds an address in it.
  std::string id = readelf_build_id(r.lib);
  ASSERT_FALSE(id.empty());
  std::vector<json> recs;
  for (const json& m : r.t.modules) {
    if (m["path"] == r.lib) recs.push_back(m);
  }
  ASSERT_FALSE(recs.empty()) << "no module record for " << r.lib;
  for (const json& m : recs) {
    EXPECT_EQ(m["build_id"], id);
    EXPECT_LT(json_uint(m["lo"]), json_uint(m["hi"]));
  }
  uint64_t first_use = 0;
  for (const json& e : r.t.events) {
    for (const json& a : e.value("stack", json::array())) {
      uint64_t x = json_uint(a);
      for (const json& m : recs) {
        if (x >= json_uint(m["lo"]) && x < json_uint(m["hi"]) && first_use == 0) {
          first_use = e["_line"].get<uint64_t>();
        }
      }
    }
  }
  ASSERT_NE(first_use, 0u) << "no stack holds an address in the library";
  EXPECT_LT(recs.front()["_line"].get<uint64_t>(), first_use);
  // Every event of the library's calls has a stack; the three threads and the child are there.
  std::set<int> tids, pids;
  for (const auto& [seq, idx] : r.pairs) {
    const json& d = r.printed.device_calls[idx]["device_call"];
    tids.insert(d["tid"].get<int>());
    pids.insert(d["pid"].get<int>());
  }
  EXPECT_GE(tids.size(), 4u);
  EXPECT_EQ(pids.size(), 2u);
}

// v3: a stack the recorder has seen is written once, as a stack record before the first event
// that names it, and never twice; the frames an event gets through its record are checked by the
// other tests (the nlohmann reader here fills "stack" from the record, as cudatool's does).
TEST_P(Stacks, RepeatedStacksAreWrittenOnceBeforeTheirEvents) {
  const Recording& r = rec();
  EXPECT_TRUE(r.t.bad_lines.empty()) << r.t.bad_lines.front();
  ASSERT_FALSE(r.t.stack_records.empty());
  std::set<json> distinct;
  for (const auto& [id, rec] : r.t.stack_records) {
    EXPECT_TRUE(distinct.insert(rec["stack"]).second) << "stack written twice: " << rec.dump();
  }
  std::map<uint64_t, size_t> uses;
  std::map<json, uint64_t> record_of;  // stack → the id of its record
  for (const auto& [id, rec] : r.t.stack_records) record_of[rec["stack"]] = id;
  std::map<uint64_t, std::set<std::pair<int64_t, int64_t>>> users;  // id → (pid, tid) naming it
  std::vector<const json*> inline_events;
  size_t with_stack = 0, by_ref = 0, repeats = 0;
  std::set<json> seen;
  for (const json& e : r.t.events) {
    if (!e.contains("stack")) continue;
    ++with_stack;
    if (!seen.insert(e["stack"]).second) ++repeats;
    if (!e.contains("stack_ref")) {
      if (ptrace()) ADD_FAILURE() << "ptrace mode wrote a stack inline: " << e.dump();
      inline_events.push_back(&e);
      continue;
    }
    ++by_ref;
    uint64_t id = e["stack_ref"].get<uint64_t>();
    const json& rec = r.t.stack_records.at(id);
    EXPECT_LT(rec["_line"].get<uint64_t>(), e["_line"].get<uint64_t>()) << e.dump();
    ++uses[id];
    users[id].insert({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()});
  }
  EXPECT_EQ(uses.size(), r.t.stack_records.size()) << "a record no event names";
  // The fixture repeats its calls: most stacks are named, not written.
  EXPECT_GT(repeats, 0u);
  EXPECT_GT(by_ref, r.t.stack_records.size());
  // A stack is written inline only when the shim found its slot being filled by another thread
  // for longer than it waits (the fixture's two workers make the same calls at the same time):
  // so that stack has a record, named by a thread other than the one that wrote it inline. Were
  // the shim's table to lose a stack (never publish, or publish and not find it), the thread
  // that wrote it would be alone.
  for (const json* e : inline_events) {
    auto rec = record_of.find((*e)["stack"]);
    ASSERT_NE(rec, record_of.end()) << "an inline stack without a record: " << e->dump();
    std::pair<int64_t, int64_t> self{(*e)["pid"].get<int64_t>(), (*e)["tid"].get<int64_t>()};
    bool other = false;
    for (const auto& u : users[rec->second]) other = other || u != self;
    EXPECT_TRUE(other) << "an inline stack no other thread recorded: " << e->dump();
  }
  EXPECT_LT(inline_events.size(), with_stack / 2) << inline_events.size() << " of " << with_stack;
}

TEST_P(Stacks, FramesNameTheFixtureFunctions) {
  const Recording& r = rec();
  auto fns = nm_functions(stack_fixture().lib);  // the unstripped build: the truth for both
  auto client_fns = nm_functions(stack_fixture().client);
  ASSERT_FALSE(fns.empty());
  size_t checked = 0, twin_calls = 0;
  for (const auto& [seq, idx] : r.pairs) {
    const json& said = r.printed.device_calls[idx];
    const json& chain = said["device_call"]["chain"];
    std::string chain_text = chain.dump();
    if (chain_text.find("nocfi") != std::string::npos ||
        chain_text.find("garbage") != std::string::npos || said["in_signal_handler"] == true) {
      continue;  // BadStacksEndWithAReason
    }
    if (chain_text.find("fix_fp_ioctl") != std::string::npos) continue;  // ForgedFramePointer…
    SCOPED_TRACE("seq " + std::to_string(seq) + " " + chain_text);
    const json& ev = r.decoded.events.at(seq);
    EXPECT_TRUE(ev["stack_error"].is_null()) << ev["stack_error"];
    std::vector<json> in_lib = frames_in(ev, r.lib);
    ASSERT_EQ(in_lib.size(), chain.size());
    for (size_t i = 0; i < in_lib.size(); ++i) {
      const json& f = in_lib[i];
      // What the library says (its chain, outermost first) and what nm says of the offset.
      std::string said_name = chain[chain.size() - 1 - i];
      uint64_t off = json_uint(f["offset"]);
      const NmFunction* nm = nm_find(fns, off - 1);
      ASSERT_NE(nm, nullptr) << "offset " << off;
      EXPECT_EQ(nm->name, said_name);
      EXPECT_EQ(f["function"], expected_name(*nm, r.stripped));
      EXPECT_EQ(json_uint(f["function_offset"]), off - nm->start);
    }
    // The frames are contiguous; the first is in libc under ptrace (the syscall instruction of
    // ioctl), the return address into the library under the shim (which replaced ioctl).
    const json& stack = ev["stack"];
    ASSERT_GT(stack.size(), chain.size());
    size_t first_lib = ptrace() ? 1 : 0;
    EXPECT_EQ(stack[first_lib]["module"], r.lib);
    if (ptrace()) {
      EXPECT_NE(stack[0]["module"].get<std::string>().find("libc.so"), std::string::npos);
      EXPECT_EQ(stack[0]["function"], "ioctl");
    }
    // Above the library: the program's own function that called the API (named by its .symtab).
    const json& caller = stack[first_lib + chain.size()];
    ASSERT_EQ(caller["module"], stack_fixture().client);
    const NmFunction* c = nm_find(client_fns, json_uint(caller["offset"]) - 1);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(caller["function"], c->name);
    EXPECT_TRUE(c->name == "create_context" || c->name == "allocate" || c->name == "main" ||
                c->name == "twin_a" || c->name == "twin_b")
        << c->name;
    // The twins' stacks differ in that one return address only (stack_client.c): each call's
    // frame names the twin that made it, not the one before.
    if (said.contains("caller")) {
      EXPECT_EQ(c->name, said["caller"]);
      ++twin_calls;
    }
    // The API call in progress: the outermost export of the chain.
    EXPECT_EQ(ev["api"], said["api"]);
    ++checked;
  }
  // Every device call the library reported but the three with bad stacks (BadStacks…) and the
  // two through a forged frame pointer (ForgedFramePointer…).
  EXPECT_EQ(r.pairs.size(), r.printed.device_calls.size());
  EXPECT_EQ(checked + 5, r.printed.device_calls.size());
  EXPECT_GE(twin_calls, 4u);
}

TEST_P(Stacks, FilterApiSelectsExactlyTheCallsMadeUnderIt) {
  const Recording& r = rec();
  for (std::string api : {"fixCtxCreate", "fixMemAlloc", "fixInit"}) {
    std::set<uint64_t> want;
    for (const auto& [seq, idx] : r.pairs) {
      if (r.printed.device_calls[idx]["api"] == api) want.insert(seq);
    }
    // fixInit also opened the device node: that call is under it too.
    for (const json& e : r.t.events) {
      if (api == "fixInit" && e["sys"] == "open") want.insert(e["seq"].get<uint64_t>());
    }
    ASSERT_FALSE(want.empty()) << api;
    DecodedStacks d = decode_stacks(r.trace, {"--filter", "api=" + api});
    ASSERT_EQ(d.status, 0) << d.err;
    std::set<uint64_t> got;
    for (const auto& [seq, ev] : d.events) got.insert(seq);
    EXPECT_EQ(got, want) << api;
    // export selects the same events, and each slice names its API call.
    std::string out = r.trace + "." + api + ".perfetto.json";
    RunResult x = run({cudatool_bin(), "export", r.trace, "-o", out, "--api-lib", "libstackfix*",
                       "--filter", "api=" + api});
    ASSERT_EQ(x.status, 0) << x.err;
    json slices = json::parse(read_file(out), nullptr, false);
    ASSERT_TRUE(slices.is_object()) << out;
    std::set<uint64_t> exported;
    for (const json& e : slices["traceEvents"]) {
      if (e["ph"] != "X") continue;
      exported.insert(e["args"]["seq"].get<uint64_t>());
      EXPECT_EQ(e["args"]["api"], api) << e.dump();
    }
    EXPECT_EQ(exported, want) << api;
  }
  // A glob, and a call no event was made under.
  DecodedStacks g = decode_stacks(r.trace, {"--filter", "api=fixMem*"});
  DecodedStacks none = decode_stacks(r.trace, {"--filter", "api=cuInit"});
  EXPECT_FALSE(g.events.empty());
  EXPECT_TRUE(none.events.empty());
  EXPECT_EQ(none.status, 0);
  EXPECT_TRUE(none.summary["note"].is_null()) << "the trace has stacks: " << none.summary;
}

TEST_P(Stacks, StatsCountDeviceCallsPerApiCall) {
  const Recording& r = rec();
  // What the program says each API call made (the calls whose stacks are broken on purpose end
  // before their entry point is reached, and are made under no API call; so do the two whose
  // forged frame pointer leads past it).
  std::map<std::string, uint64_t> want;
  uint64_t total = 0;
  for (const json& a : r.printed.api_calls) {
    std::string api = a["api"];
    if (made_under_no_api(api)) continue;
    want[api] += a["device_calls"].get<uint64_t>();
    total += a["device_calls"].get<uint64_t>();
  }
  RunResult s = run({cudatool_bin(), "stats", r.trace, "--json", "--api-lib", "libstackfix*"}, 120);
  ASSERT_EQ(s.status, 0) << s.err;
  json j = json::parse(s.out);
  const json& a = j["api_calls"];
  ASSERT_TRUE(a.is_object()) << s.out.substr(0, 400);
  std::map<std::string, uint64_t> got;
  for (const json& row : a["rows"]) got[row["api"]] = row["device_calls"].get<uint64_t>();
  EXPECT_EQ(got, want);
  EXPECT_EQ(a["attributed"].get<uint64_t>(), total);
  // Every device call of the trace has a stack.
  EXPECT_EQ(a["with_stack"], a["device_calls"]);
  // The text twin says the same.
  RunResult t = run({cudatool_bin(), "stats", r.trace, "--api-lib", "libstackfix*"}, 120);
  EXPECT_NE(t.out.find("device calls per API call (" + std::to_string(want.size()) + ")"),
            std::string::npos)
      << t.out;
}

// fixFramePointer(0), then (1), from one call site: the walk goes through fix_fp_ioctl's forged
// frame (CFA = rbp + 16) to fix_fp_end_a, then to fix_fp_end_b, and ends there. The two stacks
// differ only in the frame %rbp names (stack_nocfi.S): the first one's return address is still
// in place during the second call, so a recorder that reused its first walk without checking
// the frame pointer it depended on would give both calls fix_fp_end_a.
TEST_P(Stacks, ForgedFramePointerStacksFollowTheFramePointer) {
  const Recording& r = rec();
  auto fns = nm_functions(stack_fixture().lib);
  std::vector<std::string> ends;
  for (const auto& [seq, idx] : r.pairs) {  // in seq order
    const json& said = r.printed.device_calls[idx];
    if (said["device_call"]["chain"].dump().find("fix_fp_ioctl") == std::string::npos) continue;
    const json& ev = r.decoded.events.at(seq);
    SCOPED_TRACE("seq " + std::to_string(seq) + " " + ev["stack"].dump());
    EXPECT_TRUE(ev["stack_error"].is_null()) << ev["stack_error"];
    std::vector<json> in_lib = frames_in(ev, r.lib);
    ASSERT_EQ(in_lib.size(), 2u);
    const NmFunction* first = nm_find(fns, json_uint(in_lib[0]["offset"]) - 1);
    const NmFunction* last = nm_find(fns, json_uint(in_lib[1]["offset"]) - 1);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(last, nullptr);
    EXPECT_EQ(first->name, "fix_fp_ioctl");
    EXPECT_EQ(ev["stack"].back(), in_lib[1]) << "the walk ends at the forged frame's end";
    EXPECT_TRUE(ev["api"].is_null());
    ends.push_back(last->name);
  }
  EXPECT_EQ(ends, (std::vector<std::string>{"fix_fp_end_a", "fix_fp_end_b"}));
}

TEST_P(Stacks, BadStacksEndWithAReason) {
  const Recording& r = rec();
  auto fns = nm_functions(stack_fixture().lib);
  auto client_fns = nm_functions(stack_fixture().client);
  int seen = 0;
  for (const auto& [seq, idx] : r.pairs) {
    const json& said = r.printed.device_calls[idx];
    std::string chain = said["device_call"]["chain"].dump();
    const json& ev = r.decoded.events.at(seq);
    std::vector<json> in_lib = frames_in(ev, r.lib);
    SCOPED_TRACE(chain + " " + ev["stack"].dump());
    if (said["in_signal_handler"] == true) {
      // An ioctl of a signal handler: its frames up to the handler and the trampoline, then the
      // stack stops (the interrupted code is not part of this call).
      ++seen;
      EXPECT_EQ(ev["stack_error"], "signal frame");
      EXPECT_EQ(ev["api"], "fixDeviceGet");
      bool handler = false;
      for (const json& f : ev["stack"]) {
        if (f["module"] != stack_fixture().client) continue;
        const NmFunction* c = nm_find(client_fns, json_uint(f["offset"]) - 1);
        handler = handler || (c != nullptr && c->name == "on_usr1");
      }
      EXPECT_TRUE(handler);
    } else if (chain.find("nocfi") != std::string::npos ||
               chain.find("garbage") != std::string::npos) {
      // No unwind information, or a frame whose CFA points into garbage: the walk stops in the
      // assembler function with a reason; nothing crashed (the program went on and said so).
      ++seen;
      ASSERT_TRUE(ev["stack_error"].is_string());
      ASSERT_FALSE(in_lib.empty());
      const NmFunction* f = nm_find(fns, json_uint(in_lib.back()["offset"]) - 1);
      ASSERT_NE(f, nullptr);
      bool nocfi = chain.find("nocfi") != std::string::npos;
      EXPECT_EQ(f->name, nocfi ? "fix_nocfi_ioctl" : "fix_garbage_stack_ioctl");
      EXPECT_TRUE(ev["api"].is_null());
      if (!ptrace() && nocfi) {
        EXPECT_EQ(ev["stack_error"], fmt::format("no unwind information for {}",
                                                 in_lib.back()["addr"].get<std::string>()));
      }
    }
  }
  EXPECT_EQ(seen, 3);
  // The program finished: its last API calls were printed after the bad stacks.
  ASSERT_GE(r.printed.api_calls.size(), 3u);
  const auto& calls = r.printed.api_calls;
  EXPECT_EQ(calls[calls.size() - 3]["api"], "fixGarbageStack");
  EXPECT_EQ(calls.back()["api"], "fixFramePointer");
}

TEST_P(Stacks, DecodeTextShowsTheApiCallAndTheFrames) {
  const Recording& r = rec();
  RunResult d =
      run({cudatool_bin(), "decode", r.trace, "--stacks", "--api-lib", "libstackfix*"}, 120);
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_NE(d.out.find(" during fixCtxCreate\n"), std::string::npos);
  EXPECT_NE(d.out.find("# names for " + r.lib), std::string::npos);
  std::string frame = r.stripped ? "  fixDeviceGet+0x" : "  issue_ioctl+0x";
  EXPECT_NE(d.out.find(frame), std::string::npos) << d.out.substr(0, 3000);
  EXPECT_NE(d.out.find("[stack ends: signal frame]"), std::string::npos);
}

// The seam ab's report uses ("during X"): the same API names as decode, from the C++ API.
TEST_P(Stacks, ApiNamerAgreesWithDecode) {
  const Recording& r = rec();
  auto reader = trace::TraceReader::open(r.trace);
  ASSERT_TRUE(reader) << reader.error().message();
  trace::ResolverOptions o;
  o.api_lib = "libstackfix*";
  auto namer = trace::make_api_namer(**reader, o);
  trace::Event ev;
  size_t named = 0;
  while ((*reader)->next(ev)) {
    std::optional<std::string> api = namer(ev);
    const json& d = r.decoded.events.at(ev.seq);
    if (d["api"].is_null()) {
      EXPECT_FALSE(api.has_value()) << ev.seq;
    } else {
      ASSERT_TRUE(api.has_value()) << ev.seq;
      EXPECT_EQ(*api, d["api"].get<std::string>());
      ++named;
    }
  }
  // As many as the program says its API calls made, but those made under no API call.
  uint64_t want = 0;
  for (const json& a : r.printed.api_calls) {
    if (!made_under_no_api(a["api"])) want += a["device_calls"].get<uint64_t>();
  }
  EXPECT_EQ(named, want);
}

INSTANTIATE_TEST_SUITE_P(ModesAndBuilds, Stacks,
                         ::testing::Combine(::testing::Values("ptrace", "preload"),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, bool>>& i) {
                           return std::get<0>(i.param) +
                                  (std::get<1>(i.param) ? "_stripped" : "_unstripped");
                         });

}  // namespace
}  // namespace cudatool::test
