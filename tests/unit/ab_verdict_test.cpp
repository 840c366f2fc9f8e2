// ab/verdict on a small hand-built conversation that fails the way real runs do: B makes A's first
// calls, one RM control comes back NV_ERR_NOT_SUPPORTED, B frees what it made, closes and exits 1.
// The failing control is paired with A's call of the same request (not with a later call of the
// same command with other inputs), B's early end is one finding, and the API-name seam
// (NormalizeOptions::api_namer) names the call in progress on each side. Layouts come from the
// r580 tables (rm_synth.hpp), not from ab/.
#include <gtest/gtest.h>

#include <algorithm>

#include "ab/verdict.hpp"
#include "base/bytes.hpp"
#include "rm_synth.hpp"

namespace cudatool::ab {
namespace {

using namespace rm::synth;

constexpr uint32_t kClient = 0xc1d00033, kDevice = 0x5c000002;
constexpr int32_t kFd = 9;
constexpr int kControls = 8;  // A's controls after the device: the first two are the same command

struct Conversation {
  std::vector<trace::Event> events;
  void push(trace::Event e) {
    e.seq = events.size();
    e.t_ns = 1000 * events.size();
    e.tid = 540;
    e.path = "/dev/nvidiactl";
    events.push_back(std::move(e));
  }
  void ioctl(uint32_t nr, std::vector<uint8_t> before, std::vector<uint8_t> after,
             std::vector<trace::Buffer> nested = {}) {
    trace::Event e;
    e.sys = trace::Sys::kIoctl;
    e.fd = kFd;
    e.request = rm_request(nr, static_cast<uint32_t>(before.size()));
    trace::Buffer arg;
    arg.role = "arg";
    arg.size = before.size();
    arg.before = std::move(before);
    arg.after = std::move(after);
    e.arg = arg;
    e.nested = std::move(nested);
    push(std::move(e));
  }
};

const rm::CtrlEntry& control(std::string_view name) {
  for (const rm::CtrlEntry& c : tables().controls()) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << name;
  return tables().controls()[0];
}

// The argument of control `c` on the device, with `status`.
std::vector<uint8_t> nvos54(const rm::CtrlEntry& c, uint32_t status) {
  return make("NVOS54_PARAMETERS", {{"hClient", kClient},
                                    {"hObject", kDevice},
                                    {"cmd", c.id},
                                    {"params", 0x7ffe9e9e2dc0},
                                    {"paramsSize", static_cast<uint64_t>(c.params_size)},
                                    {"status", status}});
}

// An RM control on the device whose parameters start with `input` (a 4-byte word), answered
// `status`.
void control_call(Conversation& r, const rm::CtrlEntry& c, uint32_t input, uint32_t status) {
  trace::Buffer p;
  p.role = "params";
  p.addr = 0x7ffe9e9e2dc0;
  p.size = static_cast<uint64_t>(c.params_size);
  p.before.assign(p.size, 0);
  store_le<uint32_t>(p.before.data(), input);
  p.after = p.before;
  if (status == 0 && p.size >= 8) store_le<uint32_t>(p.after.data() + 4, input * 3);
  r.ioctl(escape_nr("NV_ESC_RM_CONTROL"), nvos54(c, 0), nvos54(c, status), {p});
}

// The first calls of both runs: open, client, device.
Conversation start() {
  Conversation r;
  trace::Event open;
  open.sys = trace::Sys::kOpen;
  open.ret = kFd;
  open.open_flags = 2;
  r.push(open);
  uint32_t alloc = escape_nr("NV_ESC_RM_ALLOC");
  uint32_t root = class_id("NV01_ROOT_CLIENT");
  r.ioctl(alloc, make("NVOS21_PARAMETERS", {{"hClass", root}}),
          make("NVOS21_PARAMETERS", {{"hClass", root}, {"hObjectNew", kClient}}));
  auto dev = make("NVOS21_PARAMETERS", {{"hRoot", kClient},
                                        {"hObjectParent", kClient},
                                        {"hObjectNew", kDevice},
                                        {"hClass", class_id("NV01_DEVICE_0")}});
  r.ioctl(alloc, dev, dev);
  return r;
}

void free_device(Conversation& r) {
  auto fr = make("NVOS00_PARAMETERS",
                 {{"hRoot", kClient}, {"hObjectParent", kClient}, {"hObjectOld", kDevice}});
  r.ioctl(escape_nr("NV_ESC_RM_FREE"), fr, fr);
}

// A: the same command twice with other inputs, more controls, the free of the device.
Conversation run_a() {
  Conversation r = start();
  const rm::CtrlEntry& info = control("NV0080_CTRL_CMD_GPU_GET_CLASSLIST");
  control_call(r, info, 1, 0);
  control_call(r, info, 2, 0);
  for (int i = 2; i < kControls; ++i) {
    control_call(r, control("NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES"), 10 + i, 0);
  }
  free_device(r);
  return r;
}

// B: the first control with A's inputs fails; B frees the device, closes and exits 1.
Conversation run_b() {
  Conversation r = start();
  control_call(r, control("NV0080_CTRL_CMD_GPU_GET_CLASSLIST"), 1,
               status_value("NV_ERR_NOT_SUPPORTED"));
  free_device(r);
  trace::Event close;
  close.sys = trace::Sys::kClose;
  close.fd = kFd;
  r.push(close);
  return r;
}

trace::Header ptrace_header() {
  trace::Header h;
  h.driver_version = "580.159.04";
  h.mode = "ptrace";
  h.argv = {"./work"};
  return h;
}

std::unique_ptr<NormalizedTrace> normalized(const Conversation& r, int exit_status,
                                            const NormalizeOptions& o = {}) {
  auto t = normalize_events(ptrace_header(), r.events, o);
  trace::Trailer tr;
  tr.events = r.events.size();
  tr.reason = "exit";
  tr.exit_status = exit_status;
  t->trailer = tr;
  return t;
}

bool has_line(const std::vector<std::string>& lines, const std::string& text) {
  return std::find(lines.begin(), lines.end(), text) != lines.end();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

TEST(AbVerdict, FailingCallIsPairedWithTheSameRequestAndTheEarlyEndIsOneFinding) {
  Conversation a = run_a(), b = run_b();
  auto na = normalized(a, 0);
  auto nb = normalized(b, 1);
  Comparison c = compare(*na, *nb);
  ASSERT_FALSE(c.equivalent());
  const Divergence& f = c.divergences.front();
  // Event 3: the first control, in both runs (not A's event 4, the same command with other
  // inputs).
  EXPECT_EQ(f.kind, Kind::kStatus);
  EXPECT_EQ(f.a, 3u);
  EXPECT_EQ(f.b, 3u);
  for (uint32_t k = 0; k < f.entry; ++k) EXPECT_EQ(c.entries[k].op, Op::kMatch) << k;

  Verdict v = make_verdict(c);
  ASSERT_TRUE(v.early_end.has_value());
  EXPECT_TRUE(v.early_end->b_stopped);
  EXPECT_EQ(v.early_end->after, 3u);
  uint32_t a_after = static_cast<uint32_t>(a.events.size()) - 4;
  EXPECT_EQ(v.early_end->remaining, a_after);
  // B's free of the device is A's last call: made; the other controls were not.
  EXPECT_EQ(v.early_end->not_made, a_after - 1);
  EXPECT_EQ(v.counts[static_cast<size_t>(Kind::kMissing)], a_after - 1);
  EXPECT_EQ(v.shown[static_cast<size_t>(Kind::kMissing)], 0u);
  EXPECT_EQ(v.b.events, 2u);
  EXPECT_TRUE(v.b.teardown);
  ASSERT_EQ(v.b.calls.size(), 2u);
  EXPECT_EQ(v.b.calls[0], (std::pair<std::string, uint32_t>{"NV_ESC_RM_FREE", 1}));
  EXPECT_EQ(v.b.calls[1], (std::pair<std::string, uint32_t>{"close", 1}));
  EXPECT_EQ(v.b.exit_status, 1);
  EXPECT_EQ(v.a.events, a_after);
  EXPECT_FALSE(v.a.teardown);

  std::vector<std::string> lines = verdict_lines(c, v);
  std::string text = joined(lines);
  EXPECT_EQ(lines[0], "first divergence: different status: A #3 / B #3") << text;
  EXPECT_NE(lines[1].find("NV0080_CTRL_CMD_GPU_GET_CLASSLIST"), std::string::npos) << text;
  EXPECT_NE(lines[1].find("→ A: NV_OK  B: NV_ERR_NOT_SUPPORTED"), std::string::npos) << text;
  EXPECT_TRUE(has_line(lines, "then B tore down (1 free, 1 close) and ended after " +
                                  std::to_string(b.events.size()) + " events (exit status 1);"))
      << text;
  EXPECT_TRUE(has_line(lines, "A made " + std::to_string(a_after) + " more calls (exit status 0)."))
      << text;
  EXPECT_TRUE(has_line(lines, "B ends after A #3: " + std::to_string(a_after - 1) +
                                  " of A's remaining " + std::to_string(a_after) +
                                  " calls were not made"))
      << text;
  // B's close has no partner in A (an extra call, counted); A's not-made calls are one finding.
  EXPECT_EQ(count_line(v), "2 divergences: 1 extra_call, 1 different_status; B ended early: " +
                               std::to_string(a_after - 1) + " of A's calls not made");
  EXPECT_EQ(text.find("during"), std::string::npos) << "no API namer, no API names: " << text;
}

// A run that stops later than the first divergence: B answers one early control differently,
// goes on call for call, and stops before A's last calls (a replayed program that ends after
// context creation). The first divergence stays the early control; B's end is one finding after
// the usual line, and only the tail is folded.
TEST(AbVerdict, ARunThatStopsLaterEndsWithOneFindingToo) {
  const rm::CtrlEntry& info = control("NV0080_CTRL_CMD_GPU_GET_CLASSLIST");
  const rm::CtrlEntry& num = control("NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES");
  Conversation a = start(), b = start();
  control_call(a, info, 1, 0);
  control_call(b, info, 1, status_value("NV_ERR_NOT_SUPPORTED"));
  for (int i = 0; i < 10; ++i) {
    control_call(a, num, 10 + i, 0);
    if (i < 6) control_call(b, num, 10 + i, 0);
  }
  free_device(a);
  auto na = normalized(a, 0);
  auto nb = normalized(b, 0);
  Comparison c = compare(*na, *nb);
  ASSERT_FALSE(c.divergences.empty());
  EXPECT_EQ(c.divergences.front().kind, Kind::kStatus);
  EXPECT_EQ(c.divergences.front().a, 3u);
  Verdict v = make_verdict(c);
  ASSERT_TRUE(v.early_end.has_value());
  EXPECT_TRUE(v.early_end->later);
  EXPECT_TRUE(v.early_end->b_stopped);
  EXPECT_EQ(v.early_end->after, 9u);     // A's 6th control after the failing one, B's last call
  EXPECT_EQ(v.early_end->not_made, 5u);  // 4 controls and the free
  EXPECT_EQ(v.early_end->remaining, 5u);
  EXPECT_EQ(v.counts[static_cast<size_t>(Kind::kMissing)], 5u);
  EXPECT_EQ(v.shown[static_cast<size_t>(Kind::kMissing)], 0u);
  std::vector<std::string> lines = verdict_lines(c, v);
  std::string text = joined(lines);
  EXPECT_TRUE(has_line(lines,
                       "after it, A made 11 more calls (exit status 0) and B 6 (exit "
                       "status 0)."))
      << text;
  EXPECT_TRUE(has_line(lines, "B ends after A #9: A's remaining 5 calls were not made")) << text;
  EXPECT_EQ(count_line(v),
            "1 divergence: 1 different_status; B ended early: 5 of A's calls not made");
  size_t folded = 0;
  for (const Divergence& d : c.divergences) folded += not_made(v, d);
  EXPECT_EQ(folded, 5u);
  EXPECT_FALSE(not_made(v, c.divergences.front()));

  // A missing call before the tail stays a divergence of its own.
  Conversation b2 = start();
  control_call(b2, info, 1, status_value("NV_ERR_NOT_SUPPORTED"));
  for (int i = 0; i < 6; ++i) {
    if (i != 2) control_call(b2, num, 10 + i, 0);
  }
  auto nb2 = normalized(b2, 0);
  Comparison c2 = compare(*na, *nb2);
  Verdict v2 = make_verdict(c2);
  ASSERT_TRUE(v2.early_end.has_value());
  EXPECT_EQ(v2.early_end->not_made, 5u);
  EXPECT_EQ(v2.shown[static_cast<size_t>(Kind::kMissing)], 1u);
}

TEST(AbVerdict, AnEqualCallLaterOnIsNotAPartnerEither) {
  // A makes B's failing request twice: the first one, at the same place, is its partner.
  Conversation a = start();
  const rm::CtrlEntry& info = control("NV0080_CTRL_CMD_GPU_GET_CLASSLIST");
  for (int i = 0; i < 6; ++i) control_call(a, info, 1, 0);
  Conversation b = start();
  control_call(b, info, 1, status_value("NV_ERR_NOT_SUPPORTED"));
  auto na = normalized(a, 0);
  auto nb = normalized(b, 1);
  Comparison c = compare(*na, *nb);
  ASSERT_FALSE(c.divergences.empty());
  EXPECT_EQ(c.divergences.front().a, 3u);
  EXPECT_EQ(c.divergences.front().b, 3u);
  EXPECT_EQ(c.divergences.front().kind, Kind::kStatus);
}

TEST(AbVerdict, ApiNamerSeamNamesTheCallInProgressOnEachSide) {
  // A fake namer, as the stack resolver will be: made per trace from its header, asked per event.
  std::vector<std::string> headers_seen;
  auto namer = [&](std::string_view late) {
    return [&headers_seen, late = std::string(late)](const trace::Header& h) -> ApiNamer {
      headers_seen.push_back(h.argv.empty() ? "" : h.argv[0]);
      return [late](const trace::Event& e) -> std::optional<std::string> {
        if (e.sys == trace::Sys::kOpen) return std::nullopt;  // not every event has a stack
        return e.seq < 3 ? std::string("cuInit") : late;
      };
    };
  };
  NormalizeOptions oa, ob;
  oa.api_namer = namer("cuDevicePrimaryCtxRetain");
  ob.api_namer = namer("cuDevicePrimaryCtxRetain");
  auto na = normalized(run_a(), 0, oa);
  auto nb = normalized(run_b(), 1, ob);
  EXPECT_EQ(headers_seen, (std::vector<std::string>{"./work", "./work"}));
  EXPECT_EQ(na->events[0].api, 0u);
  EXPECT_EQ(na->api_names[na->events[1].api], "cuInit");
  Comparison c = compare(*na, *nb);
  Verdict v = make_verdict(c);
  EXPECT_EQ(v.a.api, "cuDevicePrimaryCtxRetain");
  EXPECT_EQ(v.b.api, "cuDevicePrimaryCtxRetain");
  std::vector<std::string> lines = verdict_lines(c, v);
  EXPECT_TRUE(has_line(lines, "  during cuDevicePrimaryCtxRetain")) << joined(lines);

  // Different calls in progress: each side says its own.
  ob.api_namer = namer("cuCtxCreate_v2");
  nb = normalized(run_b(), 1, ob);
  Comparison c2 = compare(*na, *nb);
  std::vector<std::string> lines2 = verdict_lines(c2, make_verdict(c2));
  EXPECT_TRUE(has_line(lines2, "  A: during cuDevicePrimaryCtxRetain; B: during cuCtxCreate_v2"))
      << joined(lines2);
  // The names do not change what is compared.
  EXPECT_EQ(c2.divergences.size(), c.divergences.size());
}

// A floorsweeping query (NV2080_CTRL_CMD_GR_GET_TPC_MASK) for GPC `gpc`, answered `mask`
// (an output member) and `status`.
void tpc_mask(Conversation& r, uint32_t gpc, uint32_t mask, uint32_t status = 0) {
  const rm::CtrlEntry& c = control("NV2080_CTRL_CMD_GR_GET_TPC_MASK");
  trace::Buffer p;
  p.role = "params";
  p.addr = 0x7ffe9e9e2dc0;
  p.size = static_cast<uint64_t>(c.params_size);
  p.before = make("NV2080_CTRL_GR_GET_TPC_MASK_PARAMS", {{"gpcId", gpc}});
  p.after = status == 0
                ? make("NV2080_CTRL_GR_GET_TPC_MASK_PARAMS", {{"gpcId", gpc}, {"tpcMask", mask}})
                : p.before;
  r.ioctl(escape_nr("NV_ESC_RM_CONTROL"), nvos54(c, 0), nvos54(c, status), {p});
}

// A: eight GPCs with 0x1ff each; B: `masks` of its own, and the 7th query failed when `fail`.
Conversation floorswept(const std::vector<uint32_t>& masks, bool fail = false) {
  Conversation r = start();
  for (uint32_t g = 0; g < 8; ++g) {
    tpc_mask(r, g, g < masks.size() ? masks[g] : 0x1ff,
             fail && g == 6 ? status_value("NV_ERR_NOT_SUPPORTED") : 0);
  }
  free_device(r);
  return r;
}

Conversation floorsweeping_a() {
  return floorswept({});
}

// Issue 32: the first divergence is the first with consequences; answers that differed before it
// without visible consequence (the floorsweeping of another board) are listed under it.
TEST(AbVerdict, AnswersWithoutConsequenceAreListedUnderTheFirstWithConsequences) {
  auto na = normalized(floorsweeping_a(), 0);
  // B: GPC 1 and 3 have other TPC masks; GPC 6's query fails.
  auto nb = normalized(floorswept({0x1ff, 0x1df, 0x1ff, 0x1bf}, true), 0);
  Comparison c = compare(*na, *nb);
  ASSERT_EQ(c.divergences.size(), 3u);
  Verdict v = make_verdict(c);
  ASSERT_NE(v.first, nullptr);
  EXPECT_EQ(v.first->kind, Kind::kStatus);
  EXPECT_EQ(v.first->a, 9u);  // open, client, device, then GPC 0 … 6
  ASSERT_EQ(v.quiet.size(), 2u);
  EXPECT_EQ(v.quiet[0]->a, 4u);
  EXPECT_EQ(v.quiet[1]->a, 6u);
  for (const Divergence* d : v.quiet) {
    EXPECT_TRUE(d->answer);
    EXPECT_FALSE(has_consequence(c, v, *d));
  }
  EXPECT_TRUE(has_consequence(c, v, *v.first));
  std::vector<std::string> lines = verdict_lines(c, v);
  std::string text = joined(lines);
  EXPECT_EQ(lines[0], "first divergence: different status: A #9 / B #9") << text;
  EXPECT_TRUE(has_line(lines, "before it, 2 answers differed without visible consequence:"))
      << text;
  EXPECT_TRUE(has_line(lines,
                       "  A #4 / B #4 NV_ESC_RM_CONTROL NV2080_CTRL_CMD_GR_GET_TPC_MASK c0/80#0 on "
                       "/dev/nvidiactl#0: params.tpcMask (out) 0x1ff → 0x1df"))
      << text;
}

TEST(AbVerdict, OnlyAnswersDifferedSoNoDivergenceHasConsequences) {
  auto na = normalized(floorsweeping_a(), 0);
  auto nb = normalized(floorswept({0x1ff, 0x1df, 0x1ff, 0x1bf}), 0);
  Comparison c = compare(*na, *nb);
  EXPECT_FALSE(c.equivalent()) << "answers differ: not equivalent";
  Verdict v = make_verdict(c);
  EXPECT_EQ(v.first, nullptr);
  ASSERT_EQ(v.quiet.size(), 2u);
  EXPECT_FALSE(v.early_end.has_value());
  std::vector<std::string> lines = verdict_lines(c, v);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "no divergence with consequences: the same calls, asked the same, with the same "
            "status and return;");
  EXPECT_EQ(lines[1], "2 answers differed without visible consequence:");
  EXPECT_EQ(count_line(v), "2 divergences: 2 different_parameters");
}

TEST(AbVerdict, AnAnswerWhereTheRunsPartHasConsequences) {
  // B's GPC 2 answer differs and B stops right after it: the runs part there.
  auto na = normalized(floorsweeping_a(), 0);
  Conversation b = start();
  for (uint32_t g = 0; g < 3; ++g) tpc_mask(b, g, g == 2 ? 0x0ff : 0x1ff);
  free_device(b);
  auto nb = normalized(b, 1);
  Comparison c = compare(*na, *nb);
  Verdict v = make_verdict(c);
  ASSERT_NE(v.first, nullptr);
  EXPECT_EQ(v.first->kind, Kind::kParameters);
  EXPECT_EQ(v.first->a, 5u);
  EXPECT_TRUE(v.quiet.empty());
  ASSERT_TRUE(v.early_end.has_value());
  EXPECT_EQ(v.early_end->after, 5u);

  // A query asked differently (another GPC) is a consequence too, not an answer.
  Conversation b2 = start();
  for (uint32_t g = 0; g < 8; ++g) tpc_mask(b2, g == 4 ? 9 : g, 0x1ff);
  free_device(b2);
  auto nb2 = normalized(b2, 0);
  Comparison c2 = compare(*na, *nb2);
  Verdict v2 = make_verdict(c2);
  ASSERT_NE(v2.first, nullptr);
  EXPECT_EQ(v2.first->a, 7u);
  EXPECT_FALSE(v2.first->answer);
}

}  // namespace
}  // namespace cudatool::ab
