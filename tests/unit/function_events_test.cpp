// Function events (trace format v4): records written and read back, the table and block lines
// through the trace writer and reader, and the call walk on well-formed and hostile records.
#include <gtest/gtest.h>

#include <map>

#include "trace/function_calls.hpp"
#include "trace/function_events.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_json.hpp"

namespace cudatool::trace {
namespace {

FunctionTable table(uint64_t id, size_t n) {
  FunctionTable t;
  t.id = id;
  t.pid = 10;
  t.path = "/lib/libx.so";
  t.build_id = "abcd";
  t.base = 0x7f0000000000;
  for (size_t i = 0; i < n; ++i) t.starts.push_back(0x1000 + 0x40 * i);
  t.globs = "*";
  return t;
}

FunctionBlock block(const FunctionRecordWriter& w, uint64_t part = 0, int32_t tid = 11) {
  FunctionBlock b;
  b.table = 1;
  b.pid = 10;
  b.tid = tid;
  b.part = part;
  b.t_ns = 1000;
  b.data = w.data();
  return b;
}

TEST(FunctionEvents, RecordsReadBackAsWritten) {
  FunctionRecordWriter w(1000);
  w.enter(3, 1010, 0x7f0000001234);
  w.tail(4, 1020);
  w.device(1030, 77);
  w.ret(1040, static_cast<uint64_t>(-5));
  w.ret(1040, static_cast<uint64_t>(-5));
  w.enter(2, 1100, 0x7f0000001200);
  w.unwind(1200, 1);
  w.lost(1300, 9);
  w.inherit({1, 2});
  std::vector<FunctionEvent> ev;
  ASSERT_TRUE(decode_function_block(block(w), ev).ok());
  ASSERT_EQ(ev.size(), 10u);
  EXPECT_EQ(ev[0].kind, FunctionEvent::Kind::kEnter);
  EXPECT_EQ(ev[0].function, 3u);
  EXPECT_EQ(ev[0].t_ns, 1010u);
  EXPECT_EQ(ev[0].value, 0x7f0000001234u);
  EXPECT_EQ(ev[1].kind, FunctionEvent::Kind::kTail);
  EXPECT_EQ(ev[2].value, 77u);
  EXPECT_EQ(static_cast<int64_t>(ev[3].value), -5);
  EXPECT_EQ(ev[5].value, 0x7f0000001200u);  // a caller below the previous one
  EXPECT_EQ(ev[6].kind, FunctionEvent::Kind::kUnwind);
  EXPECT_EQ(ev[7].value, 9u);
  EXPECT_EQ(ev[8].kind, FunctionEvent::Kind::kInherit);
  EXPECT_EQ(ev[9].function, 2u);
  EXPECT_EQ(ev[9].t_ns, 1300u);
}

TEST(FunctionEvents, TablesAndBlocksGoThroughTheTraceFile) {
  FunctionRecordWriter w(1000);
  w.enter(1, 1001, 0x1234);
  w.ret(1002, 0);
  std::string text;
  Header h;
  h.mode = "preload";
  h.functions = "cu*";
  append_header_line(text, h);
  append_function_table_line(text, table(1, 3));
  FunctionBlock b = block(w);
  b.closed = true;
  append_function_block_line(text, b);
  auto r = TraceReader::from_memory(text, "mem");
  ASSERT_TRUE(static_cast<bool>(r));
  Event ev;
  EXPECT_FALSE((*r)->next(ev));
  EXPECT_TRUE((*r)->diagnostics().items().empty()) << (*r)->diagnostics().items()[0].message();
  EXPECT_EQ((*r)->header().functions, "cu*");
  ASSERT_EQ((*r)->function_tables().size(), 1u);
  EXPECT_EQ((*r)->function_tables()[0].starts, table(1, 3).starts);
  EXPECT_EQ((*r)->function_tables()[0].base, 0x7f0000000000u);
  ASSERT_EQ((*r)->function_blocks().size(), 1u);
  EXPECT_EQ((*r)->function_blocks()[0].data, w.data());
  EXPECT_TRUE((*r)->function_blocks()[0].closed);
}

TEST(FunctionEvents, DamagedLinesAreReportedAndLeftOut) {
  std::string text;
  append_header_line(text, Header{});
  text += "{\"fn_table\":{\"id\":0,\"starts_leb128\":\"\"}}\n";
  text += "{\"fn_table\":{\"id\":2,\"functions\":5,\"starts_leb128\":\"0102\"}}\n";
  text += "{\"fn_table\":{\"id\":3,\"starts_leb128\":\"0100\"}}\n";  // a start repeated
  text += "{\"fn_block\":{\"table\":1,\"data\":\"0g\"}}\n";
  text += "{\"fn_block\":{\"pid\":1}}\n";
  auto r = TraceReader::from_memory(text, "mem");
  ASSERT_TRUE(static_cast<bool>(r));
  Event ev;
  EXPECT_FALSE((*r)->next(ev));
  EXPECT_EQ((*r)->diagnostics().items().size(), 5u);
  EXPECT_TRUE((*r)->function_tables().empty());
  EXPECT_TRUE((*r)->function_blocks().empty());
}

TEST(FunctionEvents, UndecodableRecordsStopTheBlockWithWhere) {
  FunctionBlock b;
  b.data = {1, 0x80};  // ENTER whose function number is cut
  std::vector<FunctionEvent> ev;
  Status st = decode_function_block(b, ev);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("record 0"), std::string::npos) << st.error().message();
  b.data = {3, 0, 0, 9};  // RETURN, then an unknown tag
  ev.clear();
  st = decode_function_block(b, ev);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(ev.size(), 1u);
  EXPECT_NE(st.error().message().find("unknown record tag 9"), std::string::npos);
  b.data = {7, 100, 1};  // INHERIT of 100 functions in 1 byte
  ev.clear();
  EXPECT_FALSE(decode_function_block(b, ev).ok());
  b.data = {3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0};  // dt over 64 bits
  ev.clear();
  EXPECT_FALSE(decode_function_block(b, ev).ok());
}

TEST(FunctionCalls, NestingReturnsAndDeviceCalls) {
  FunctionRecordWriter w(1000);
  w.enter(0, 1001, 0x10);
  w.enter(1, 1002, 0x20);
  w.device(1003, 5);
  w.ret(1004, 7);
  w.tail(2, 1005);
  w.ret(1006, 8);
  w.ret(1006, 8);
  std::vector<FunctionTable> tables{table(1, 3)};
  auto threads = build_function_calls(tables, {block(w)});
  ASSERT_EQ(threads.size(), 1u);
  const auto& t = threads[0];
  EXPECT_TRUE(t.notes.empty());
  ASSERT_EQ(t.calls.size(), 3u);
  EXPECT_EQ(t.calls[1].parent, 0);
  EXPECT_EQ(t.calls[1].ret, 7u);
  EXPECT_TRUE(t.calls[2].tail);
  EXPECT_EQ(t.calls[2].parent, 0);
  EXPECT_EQ(t.calls[0].ret, 8u);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].call, 1);
  EXPECT_EQ(t.max_depth, 2u);
}

// The outermost call around each device call (what names the API call without stacks): through
// nesting and a tail call, in two threads; a device call outside every call has none.
TEST(FunctionCalls, OutermostCallOfEachDeviceCall) {
  FunctionRecordWriter a(1000), b(1000);
  a.device(1001, 1);  // before any call
  a.enter(0, 1002, 0x10);
  a.enter(1, 1003, 0x20);
  a.tail(2, 1004);
  a.device(1005, 2);
  a.ret(1006, 0);  // a tail call is a call of its own: it returns, then the two it came from
  a.ret(1006, 0);
  a.ret(1007, 0);
  a.enter(1, 1008, 0x30);
  a.device(1009, 3);
  a.ret(1010, 0);
  b.enter(2, 1001, 0x40);
  b.device(1002, 4);
  b.ret(1003, 0);
  std::vector<FunctionTable> tables{table(1, 3)};
  auto threads = build_function_calls(tables, {block(a), block(b, 0, 12)});
  auto outer = outermost_calls(threads);
  ASSERT_EQ(outer.size(), 3u);
  EXPECT_EQ(outer.count(1), 0u);
  EXPECT_EQ(outer.at(2).call->function, 0u);  // inside 0 → 1 → (tail) 2
  EXPECT_EQ(outer.at(2).thread->tid, 11);
  EXPECT_EQ(outer.at(3).call->function, 1u);  // 1 entered at depth 0 this time
  EXPECT_EQ(outer.at(4).call->function, 2u);
  EXPECT_EQ(outer.at(4).thread->tid, 12);
}

// Device calls seen from outside (ptrace mode) placed among the records by time: into the right
// thread, the right part, between the right records; a thread without blocks gets none.
TEST(FunctionCalls, DeviceCallsArePlacedByTime) {
  FunctionRecordWriter a0(1000), a1(2000), b0(1000);
  a0.enter(0, 1010, 0x10);
  a0.enter(1, 1020, 0x20);  // the device call at 1025 is inside 1
  a0.ret(1030, 5);
  a1.enter(2, 2010, 0x30);  // part 1's first record: the call at 1500 goes to part 0's end,
  a1.ret(2020, 6);          // inside 0, which returns only here in part 1
  a1.ret(2030, 7);
  b0.enter(1, 1005, 0x40);
  b0.ret(1050, 8);
  std::vector<FunctionBlock> blocks{block(a0, 0, 11), block(a1, 1, 11), block(b0, 0, 12)};
  blocks[1].t_ns = 2000;
  std::vector<TimedDeviceCall> calls{{10, 11, 2015, 3},
                                     {10, 11, 1025, 1},
                                     {10, 11, 1500, 2},
                                     {10, 12, 1040, 4},
                                     {10, 13, 1040, 5}};
  ASSERT_TRUE(place_device_calls(blocks, calls).ok());
  std::vector<FunctionTable> tables{table(1, 3)};
  auto threads = build_function_calls(tables, blocks);
  ASSERT_EQ(threads.size(), 2u);
  std::map<uint64_t, std::pair<int32_t, uint32_t>> at;  // seq -> (tid, function of its call)
  for (const auto& t : threads) {
    EXPECT_TRUE(t.notes.empty()) << t.notes.front();
    for (const auto& d : t.devices) {
      ASSERT_GE(d.call, 0) << d.seq;
      at[d.seq] = {t.tid, t.calls[d.call].function};
    }
  }
  ASSERT_EQ(at.size(), 4u);  // seq 5: thread 13 recorded no calls
  EXPECT_EQ(at[1], std::make_pair(11, 1u));
  EXPECT_EQ(at[2], std::make_pair(11, 0u));  // after 1 returned, 0 still open
  EXPECT_EQ(at[3], std::make_pair(11, 2u));
  EXPECT_EQ(at[4], std::make_pair(12, 1u));
}

// A call timed at the clock's last nanosecond still lands in the last part (found by
// function_events_fuzzer: it was dropped when "no next part" was that same time).
TEST(FunctionCalls, DeviceCallAtTheClocksEndIsPlaced) {
  FunctionRecordWriter w(1000);
  w.enter(0, 1010, 0x10);
  std::vector<FunctionBlock> blocks{block(w, 0, 11)};
  std::vector<TimedDeviceCall> calls{{10, 11, ~uint64_t{0}, 7}, {10, 11, 1020, 6}};
  ASSERT_TRUE(place_device_calls(blocks, calls).ok());
  std::vector<FunctionEvent> ev;
  ASSERT_TRUE(decode_function_block(blocks[0], ev).ok());
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[1].kind, FunctionEvent::Kind::kDevice);
  EXPECT_EQ(ev[1].value, 6u);
  EXPECT_EQ(ev[2].kind, FunctionEvent::Kind::kDevice);
  EXPECT_EQ(ev[2].value, 7u);
  EXPECT_EQ(ev[2].t_ns, ~uint64_t{0});
}

TEST(FunctionCalls, HostileRecordsGiveNotesNotCrashes) {
  FunctionRecordWriter w(0);
  w.ret(1, 0);                                     // a return with nothing open
  w.enter(99, 2, 0);                               // outside the table
  w.unwind(3, 1000);                               // more than are open
  for (int i = 0; i < 100; ++i) w.enter(0, 4, 0);  // deeper than the limit below
  FunctionRecordWriter later(0);
  later.ret(5, 0);
  std::vector<FunctionTable> tables{table(1, 3)};
  CallLimits lim;
  lim.max_depth = 10;
  auto threads = build_function_calls(tables, {block(w, 0), block(later, 3)}, lim);
  ASSERT_EQ(threads.size(), 1u);
  const auto& t = threads[0];
  EXPECT_EQ(t.calls.size(), 11u);  // the bad one, and 10 of the deep ones
  EXPECT_TRUE(t.calls[0].unknown_function);
  EXPECT_EQ(t.calls[0].end, FunctionCall::End::kUnwound);
  EXPECT_EQ(t.not_kept, 90u);
  EXPECT_EQ(t.max_depth, 100u);
  std::string notes;
  for (const auto& n : t.notes) notes += n + "\n";
  EXPECT_NE(notes.find("outside table 1"), std::string::npos) << notes;
  EXPECT_NE(notes.find("UNWIND of 1000"), std::string::npos) << notes;
  EXPECT_NE(notes.find("deeper than 10"), std::string::npos) << notes;
  EXPECT_NE(notes.find("blocks 1..2 are missing"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 returns with no open call"), std::string::npos) << notes;
  // An unknown table, a thread that starts past part 0.
  auto none = build_function_calls({}, {block(w, 2, 12)});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].table_ptr, nullptr);
  EXPECT_GE(none[0].notes.size(), 2u);
}

TEST(FunctionCalls, ACallBudgetKeepsMemoryBounded) {
  FunctionRecordWriter w(0);
  for (int i = 0; i < 50; ++i) {
    w.enter(0, 1, 0);
    w.ret(2, 0);
  }
  CallLimits lim;
  lim.max_calls = 20;
  auto threads = build_function_calls({table(1, 1)}, {block(w)}, lim);
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0].calls.size(), 20u);
  EXPECT_EQ(threads[0].not_kept, 30u);
}

}  // namespace
}  // namespace cudatool::trace

namespace cudatool::trace {
namespace {

// A replay renumbers its trace's events: the DEVICE records follow, the other records are
// written back unchanged, a seq with no event loses its record.
TEST(FunctionEvents, DeviceSeqsAreRenumberedAndTheRestKept) {
  FunctionRecordWriter w(1000);
  w.inherit({2, 5});
  w.enter(3, 1010, 0x7f0000001234);
  w.device(1020, 40);
  w.enter(4, 1030, 0x7f0000001300);
  w.device(1040, 41);
  w.ret(1050, static_cast<uint64_t>(-1));
  w.device(1060, 99);
  w.unwind(1070, 1);
  w.lost(1080, 2);
  FunctionBlock b = block(w);
  std::vector<FunctionEvent> before;
  ASSERT_TRUE(decode_function_block(b, before).ok());
  ASSERT_TRUE(remap_device_seqs(b, [](uint64_t s) -> std::optional<uint64_t> {
                if (s == 99) return std::nullopt;
                return s - 30;
              }).ok());
  std::vector<FunctionEvent> after;
  ASSERT_TRUE(decode_function_block(b, after).ok());
  ASSERT_EQ(after.size(), before.size() - 1);
  size_t j = 0;
  for (const FunctionEvent& e : before) {
    if (e.kind == FunctionEvent::Kind::kDevice && e.value == 99) continue;
    const FunctionEvent& a = after[j++];
    EXPECT_EQ(a.kind, e.kind);
    EXPECT_EQ(a.t_ns, e.t_ns);
    EXPECT_EQ(a.function, e.function);
    EXPECT_EQ(a.value, e.kind == FunctionEvent::Kind::kDevice ? e.value - 30 : e.value);
  }
}

// A block cut inside a record: the error, and the records before it kept.
TEST(FunctionEvents, RenumberingACutBlockKeepsWhatCameBefore) {
  FunctionRecordWriter w(1000);
  w.enter(3, 1010, 0x1234);
  w.device(1020, 7);
  FunctionBlock b = block(w);
  b.data.push_back(1);  // an ENTER with nothing after its tag
  Status st = remap_device_seqs(b, [](uint64_t s) { return std::optional<uint64_t>(s + 1); });
  EXPECT_FALSE(st.ok());
  std::vector<FunctionEvent> evs;
  ASSERT_TRUE(decode_function_block(b, evs).ok());
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[1].value, 8u);
}

}  // namespace
}  // namespace cudatool::trace
