#include "trace/function_calls.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "trace/function_events.hpp"

namespace cudatool::trace {
namespace {

// One thread's walk: the open calls (indices in t.calls, or -1 for calls not kept).
class Walker {
 public:
  Walker(ThreadCalls& t, const CallLimits& lim, uint64_t* budget)
      : t_(t), lim_(lim), budget_(budget) {}

  void note(const std::string& what) {
    if (t_.notes.size() < lim_.max_notes) {
      t_.notes.push_back(what);
    } else if (t_.notes.size() == lim_.max_notes) {
      t_.notes.emplace_back("… more notes left out");
    }
  }
  void once(bool& said, const std::string& what) {
    if (!said) note(what);
    said = true;
  }

  void push(uint32_t fn, uint64_t t, uint64_t caller, bool tail, bool inherited) {
    const auto depth = static_cast<uint32_t>(open_.size());
    t_.max_depth = std::max(t_.max_depth, depth + 1);
    const bool too_deep = depth >= lim_.max_depth;
    if (too_deep || *budget_ == 0 || (!open_.empty() && open_.back() < 0)) {
      if (too_deep) {
        once(said_deep_, fmt::format("calls nested deeper than {} are counted, not kept (the tree "
                                     "is cut there)",
                                     lim_.max_depth));
      } else if (*budget_ == 0) {
        once(said_budget_, fmt::format("more than {} calls in the trace: the rest are counted, "
                                       "not kept",
                                       lim_.max_calls));
      }
      ++t_.not_kept;
      open_.push_back(-1);
      return;
    }
    --*budget_;
    FunctionCall c;
    c.function = fn;
    c.depth = depth;
    c.parent = open_.empty() ? -1 : open_.back();
    c.t_enter = c.t_exit = t;
    c.caller = caller;
    c.tail = tail;
    c.inherited = inherited;
    if (t_.table_ptr != nullptr && fn >= t_.table_ptr->starts.size()) {
      c.unknown_function = true;
      once(said_unknown_, fmt::format("function number {} is outside table {} ({} functions)", fn,
                                      t_.table, t_.table_ptr->starts.size()));
    }
    open_.push_back(static_cast<int64_t>(t_.calls.size()));
    t_.calls.push_back(c);
  }

  void pop(uint64_t t, FunctionCall::End end, uint64_t ret) {
    int64_t i = open_.back();
    open_.pop_back();
    if (i < 0) return;
    FunctionCall& c = t_.calls[static_cast<size_t>(i)];
    c.end = end;
    c.t_exit = t;
    c.ret = ret;
  }

  void take(const FunctionEvent& ev) {
    last_t_ = std::max(last_t_, ev.t_ns);
    ++t_.records;
    using K = FunctionEvent::Kind;
    switch (ev.kind) {
      case K::kEnter:
      case K::kTail:
      case K::kInherit:
        push(ev.function, ev.t_ns, ev.kind == K::kEnter ? ev.value : 0, ev.kind == K::kTail,
             ev.kind == K::kInherit);
        break;
      case K::kReturn:
        if (open_.empty()) {
          ++stray_returns_;
        } else {
          pop(ev.t_ns, FunctionCall::End::kReturned, ev.value);
        }
        break;
      case K::kUnwind: {
        uint64_t n = ev.value;
        if (n > open_.size()) {
          once(said_unwind_,
               fmt::format("an UNWIND of {} calls with {} open: all closed", n, open_.size()));
          n = open_.size();
        }
        for (uint64_t k = 0; k < n; ++k) pop(ev.t_ns, FunctionCall::End::kUnwound, 0);
        break;
      }
      case K::kDevice:
        t_.devices.push_back({ev.value, innermost(), ev.t_ns});
        break;
      case K::kLost:
        t_.lost += ev.value;
        break;
    }
  }

  void finish() {
    if (stray_returns_ > 0) {
      note(fmt::format("{} returns with no open call ignored (their calls were not recorded)",
                       stray_returns_));
    }
    for (int64_t i : open_) {
      if (i >= 0) t_.calls[static_cast<size_t>(i)].t_exit = last_t_;
    }
  }

 private:
  int64_t innermost() const {
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
      if (*it >= 0) return *it;
    }
    return -1;
  }

  ThreadCalls& t_;
  const CallLimits& lim_;
  uint64_t* budget_;
  std::vector<int64_t> open_;
  uint64_t last_t_ = 0;
  uint64_t stray_returns_ = 0;
  bool said_deep_ = false, said_budget_ = false, said_unknown_ = false, said_unwind_ = false;
};

// Blocks of each thread, in order: by (pid, tid), then time; a part 0 starts a new thread.
std::vector<std::vector<const FunctionBlock*>> streams_of(
    const std::vector<FunctionBlock>& blocks) {
  std::map<std::pair<int32_t, int32_t>, std::vector<size_t>> by_thread;
  std::vector<std::pair<int32_t, int32_t>> order;
  for (size_t i = 0; i < blocks.size(); ++i) {
    auto key = std::make_pair(blocks[i].pid, blocks[i].tid);
    auto [it, fresh] = by_thread.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(i);
  }
  std::vector<std::vector<const FunctionBlock*>> out;
  for (const auto& key : order) {
    auto& idx = by_thread[key];
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      if (blocks[a].t_ns != blocks[b].t_ns) return blocks[a].t_ns < blocks[b].t_ns;
      return blocks[a].part < blocks[b].part;
    });
    for (size_t i : idx) {
      if (out.empty() || blocks[i].part == 0 || out.back().front()->pid != key.first ||
          out.back().front()->tid != key.second) {
        out.emplace_back();
      }
      out.back().push_back(&blocks[i]);
    }
  }
  return out;
}

}  // namespace

std::string_view call_end_name(FunctionCall::End e) {
  switch (e) {
    case FunctionCall::End::kReturned:
      return "returned";
    case FunctionCall::End::kUnwound:
      return "unwound";
    case FunctionCall::End::kOpen:
      return "open";
  }
  return "?";
}

std::vector<ThreadCalls> build_function_calls(const std::vector<FunctionTable>& tables,
                                              const std::vector<FunctionBlock>& blocks,
                                              const CallLimits& limits) {
  std::unordered_map<uint64_t, const FunctionTable*> by_id;
  for (const auto& t : tables) by_id.try_emplace(t.id, &t);
  uint64_t budget = limits.max_calls;
  std::vector<ThreadCalls> out;
  std::vector<FunctionEvent> events;
  for (const auto& stream : streams_of(blocks)) {
    ThreadCalls& t = out.emplace_back();
    t.pid = stream.front()->pid;
    t.tid = stream.front()->tid;
    t.table = stream.front()->table;
    auto it = by_id.find(t.table);
    t.table_ptr = it == by_id.end() ? nullptr : it->second;
    Walker w(t, limits, &budget);
    if (t.table_ptr == nullptr)
      w.note(fmt::format("table {} is not in the trace: functions cannot be named", t.table));
    uint64_t expect = stream.front()->part;
    if (expect != 0) w.note(fmt::format("the thread's first block is part {}, not 0", expect));
    for (const FunctionBlock* b : stream) {
      if (b->part > expect) {
        w.note(fmt::format("blocks {}..{} are missing: the calls around them may be misplaced",
                           expect, b->part - 1));
      } else if (b->part < expect) {
        w.note(fmt::format("part {} comes again or out of order (read after part {})", b->part,
                           expect - 1));
      }
      expect = std::max(expect, b->part + 1);
      if (b->table != t.table)
        w.note(fmt::format("part {} names table {}, the thread's first {}", b->part, b->table,
                           t.table));
      events.clear();
      Status st = decode_function_block(*b, events);
      for (const auto& ev : events) w.take(ev);
      if (!st.ok()) w.note(st.error().message() + " (the rest of that block left out)");
    }
    w.finish();
  }
  return out;
}

FunctionSummary summarize_functions(const std::vector<FunctionTable>& tables,
                                    const std::vector<FunctionBlock>& blocks) {
  constexpr size_t kFirstNotes = 5;
  FunctionSummary s;
  s.tables = tables.size();
  s.blocks = blocks.size();
  for (const auto& t : tables) {
    if (std::find(s.libraries.begin(), s.libraries.end(), t.path) == s.libraries.end())
      s.libraries.push_back(t.path);
  }
  std::unordered_map<uint64_t, bool> called;  // table << 32 | function
  for (const ThreadCalls& t : build_function_calls(tables, blocks)) {
    ++s.threads;
    s.calls += t.calls.size() + t.not_kept;
    s.not_kept += t.not_kept;
    s.lost += t.lost;
    s.device_marks += t.devices.size();
    s.max_depth = std::max(s.max_depth, t.max_depth);
    for (const FunctionCall& c : t.calls) {
      s.returned += c.end == FunctionCall::End::kReturned;
      s.unwound += c.end == FunctionCall::End::kUnwound;
      s.open += c.end == FunctionCall::End::kOpen;
      called.try_emplace(t.table << 32 | c.function, true);
    }
    s.notes += t.notes.size();
    for (const auto& n : t.notes) {
      if (s.first_notes.size() < kFirstNotes)
        s.first_notes.push_back(fmt::format("pid {} tid {}: {}", t.pid, t.tid, n));
    }
  }
  s.functions_called = called.size();
  return s;
}

std::unordered_map<uint64_t, OutermostCall> outermost_calls(
    const std::vector<ThreadCalls>& threads) {
  std::unordered_map<uint64_t, OutermostCall> out;
  for (const ThreadCalls& t : threads) {
    for (const DeviceMark& d : t.devices) {
      if (d.call < 0 || static_cast<size_t>(d.call) >= t.calls.size()) continue;
      int64_t i = d.call;
      // A parent is entered before its callees: the walk only goes back.
      while (t.calls[i].parent >= 0 && t.calls[i].parent < i) i = t.calls[i].parent;
      out.emplace(d.seq, OutermostCall{&t, &t.calls[i]});
    }
  }
  return out;
}

}  // namespace cudatool::trace
