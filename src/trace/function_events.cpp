#include "trace/function_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>
#include <utility>

namespace cudatool::trace {
namespace {

constexpr std::string_view kKindNames[] = {"?",      "enter",  "tail", "return",
                                           "unwind", "device", "lost", "inherit"};

// LEB128 reads that stop at the end of the data and at numbers over 64 bits.
class Leb {
 public:
  explicit Leb(const std::vector<uint8_t>& d) : d_(d) {}
  bool u(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= d_.size()) return fail("a number cut by the end of the data");
      const uint8_t b = d_[at_++];
      if (shift == 63 && (b & 0x7e) != 0) return fail("a number over 64 bits");
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return fail("a number over 64 bits");
  }
  bool s(int64_t& v) {
    uint64_t z = 0;
    if (!u(z)) return false;
    v = static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
    return true;
  }
  bool byte(uint8_t& b) {
    if (at_ >= d_.size()) return false;
    b = d_[at_++];
    return true;
  }
  [[nodiscard]] size_t at() const { return at_; }
  [[nodiscard]] size_t left() const { return d_.size() - at_; }
  [[nodiscard]] const char* why() const { return why_; }

 private:
  bool fail(const char* why) {
    why_ = why;
    return false;
  }
  const std::vector<uint8_t>& d_;
  size_t at_ = 0;
  const char* why_ = "";
};

}  // namespace

std::string_view function_event_kind_name(FunctionEvent::Kind k) {
  auto i = static_cast<size_t>(k);
  return i < std::size(kKindNames) ? kKindNames[i] : "?";
}

Status decode_function_block(const FunctionBlock& b, std::vector<FunctionEvent>& out) {
  Leb in(b.data);
  uint64_t t = b.t_ns, caller = 0, index = 0;
  auto error = [&](size_t at, std::string reason) {
    return make_error(fmt::format("fn_block pid {} tid {} part {}", b.pid, b.tid, b.part),
                      fmt::format("record {}", index), at, std::move(reason));
  };
  auto dt = [&](uint64_t& v) {
    if (!in.u(v)) return false;
    t = v > ~t ? ~uint64_t{0} : t + v;  // saturates: a hostile dt must not wrap the clock
    return true;
  };
  for (; in.left() > 0; ++index) {
    const size_t at = in.at();
    uint8_t tag = 0;
    in.byte(tag);
    FunctionEvent ev;
    ev.kind = static_cast<FunctionEvent::Kind>(tag);
    uint64_t fn = 0, d = 0;
    int64_t sv = 0;
    bool ok = true;
    switch (tag) {
      case 1:  // ENTER
        ok = in.u(fn) && dt(d) && in.s(sv);
        caller += static_cast<uint64_t>(sv);
        ev.value = caller;
        break;
      case 2:  // TAIL
        ok = in.u(fn) && dt(d);
        break;
      case 3:  // RETURN
        ok = dt(d) && in.s(sv);
        ev.value = static_cast<uint64_t>(sv);
        break;
      case 4:  // UNWIND
      case 5:  // DEVICE
      case 6:  // LOST
        ok = dt(d) && in.u(ev.value);
        break;
      case 7: {  // INHERIT
        uint64_t n = 0;
        if (!in.u(n)) {
          ok = false;
          break;
        }
        if (n > in.left())
          return error(at, fmt::format("INHERIT of {} functions is longer than "
                                       "the block",
                                       n));
        for (uint64_t i = 0; i < n; ++i) {
          if (!in.u(fn)) return error(at, in.why());
          if (fn > UINT32_MAX) return error(at, "a function number over 32 bits");
          out.push_back({.kind = FunctionEvent::Kind::kInherit,
                         .t_ns = t,
                         .function = static_cast<uint32_t>(fn),
                         .value = 0});
        }
        continue;
      }
      default:
        return error(at, fmt::format("unknown record tag {}", tag));
    }
    if (!ok) return error(at, in.why());
    if (fn > UINT32_MAX) return error(at, "a function number over 32 bits");
    ev.function = static_cast<uint32_t>(fn);
    ev.t_ns = t;
    out.push_back(ev);
  }
  return Status::success();
}

void FunctionRecordWriter::u(uint64_t v) {
  while (v >= 0x80) {
    data_.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  data_.push_back(static_cast<uint8_t>(v));
}
void FunctionRecordWriter::s(int64_t v) {
  u((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
void FunctionRecordWriter::dt(uint64_t t) {
  u(t > last_t_ ? t - last_t_ : 0);
  last_t_ = std::max(t, last_t_);
}
void FunctionRecordWriter::enter(uint32_t function, uint64_t t, uint64_t caller) {
  data_.push_back(1);
  u(function);
  dt(t);
  s(static_cast<int64_t>(caller - last_caller_));
  last_caller_ = caller;
  ++records_;
}
void FunctionRecordWriter::tail(uint32_t function, uint64_t t) {
  data_.push_back(2);
  u(function);
  dt(t);
  ++records_;
}
void FunctionRecordWriter::ret(uint64_t t, uint64_t rax) {
  data_.push_back(3);
  dt(t);
  s(static_cast<int64_t>(rax));
  ++records_;
}
void FunctionRecordWriter::unwind(uint64_t t, uint64_t n) {
  data_.push_back(4);
  dt(t);
  u(n);
  ++records_;
}
void FunctionRecordWriter::device(uint64_t t, uint64_t seq) {
  data_.push_back(5);
  dt(t);
  u(seq);
  ++records_;
}
void FunctionRecordWriter::lost(uint64_t t, uint64_t n) {
  data_.push_back(6);
  dt(t);
  u(n);
  ++records_;
}
void FunctionRecordWriter::inherit(const std::vector<uint32_t>& functions) {
  data_.push_back(7);
  u(functions.size());
  for (uint32_t f : functions) u(f);
  ++records_;
}

std::vector<uint8_t> encode_function_starts(const std::vector<uint64_t>& starts) {
  std::vector<uint8_t> out;
  uint64_t prev = 0;
  for (uint64_t s : starts) {
    uint64_t v = s - prev;
    while (v >= 0x80) {
      out.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
    prev = s;
  }
  return out;
}

Status decode_function_starts(const std::vector<uint8_t>& data, std::vector<uint64_t>& out) {
  Leb in(data);
  uint64_t prev = 0;
  while (in.left() > 0) {
    uint64_t d = 0;
    if (!in.u(d)) return make_error("", "", in.at(), in.why());
    if (!out.empty() && d == 0) {
      return make_error("", "", in.at(),
                        fmt::format("start {} repeats the one before it", out.size()));
    }
    if (d > ~prev) return make_error("", "", in.at(), "a start past the end of the address space");
    prev += d;
    out.push_back(prev);
  }
  return Status::success();
}

namespace {

// The data of a block of t0 `t0` holding `evs` (consecutive kInherit events: one INHERIT).
std::vector<uint8_t> encode_events(uint64_t t0, const std::vector<FunctionEvent>& evs) {
  FunctionRecordWriter w(t0);
  std::vector<uint32_t> inherited;
  for (const FunctionEvent& e : evs) {
    if (e.kind == FunctionEvent::Kind::kInherit) {
      inherited.push_back(e.function);
      continue;
    }
    if (!inherited.empty()) w.inherit(std::exchange(inherited, {}));
    switch (e.kind) {
      case FunctionEvent::Kind::kEnter:
        w.enter(e.function, e.t_ns, e.value);
        break;
      case FunctionEvent::Kind::kTail:
        w.tail(e.function, e.t_ns);
        break;
      case FunctionEvent::Kind::kReturn:
        w.ret(e.t_ns, e.value);
        break;
      case FunctionEvent::Kind::kUnwind:
        w.unwind(e.t_ns, e.value);
        break;
      case FunctionEvent::Kind::kDevice:
        w.device(e.t_ns, e.value);
        break;
      case FunctionEvent::Kind::kLost:
        w.lost(e.t_ns, e.value);
        break;
      case FunctionEvent::Kind::kInherit:
        break;
    }
  }
  if (!inherited.empty()) w.inherit(inherited);
  return w.data();
}

}  // namespace

Status remap_device_seqs(FunctionBlock& b,
                         const std::function<std::optional<uint64_t>(uint64_t)>& seq_of) {
  std::vector<FunctionEvent> evs, out;
  Status st = decode_function_block(b, evs);
  for (FunctionEvent& e : evs) {
    if (e.kind == FunctionEvent::Kind::kDevice) {
      std::optional<uint64_t> seq = seq_of(e.value);
      if (!seq) continue;
      e.value = *seq;
    }
    out.push_back(e);
  }
  b.data = encode_events(b.t_ns, out);
  return st;
}

Status place_device_calls(std::vector<FunctionBlock>& blocks, std::vector<TimedDeviceCall> calls) {
  std::sort(calls.begin(), calls.end(), [](const TimedDeviceCall& x, const TimedDeviceCall& y) {
    return std::tie(x.pid, x.tid, x.t_ns, x.seq) < std::tie(y.pid, y.tid, y.t_ns, y.seq);
  });
  // Each thread's blocks in part order.
  std::map<std::pair<int32_t, int32_t>, std::vector<size_t>> threads;
  for (size_t i = 0; i < blocks.size(); ++i) threads[{blocks[i].pid, blocks[i].tid}].push_back(i);
  Status first_error = Status::success();
  for (auto& [who, idx] : threads) {
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t x, size_t y) { return blocks[x].part < blocks[y].part; });
    auto from =
        std::lower_bound(calls.begin(), calls.end(), who,
                         [](const TimedDeviceCall& c, const std::pair<int32_t, int32_t>& w) {
                           return std::pair(c.pid, c.tid) < w;
                         });
    std::vector<std::vector<FunctionEvent>> evs(idx.size());
    std::vector<bool> readable(idx.size(), true);
    for (size_t k = 0; k < idx.size(); ++k) {
      if (Status st = decode_function_block(blocks[idx[k]], evs[k]); !st.ok()) {
        readable[k] = false;
        if (first_error.ok()) first_error = st;
      }
    }
    auto next = from;
    for (size_t k = 0; k < idx.size(); ++k) {
      // This part takes the thread's calls made before the next part's first record; the last
      // part with records takes all the rest (a call timed at the clock's very end included).
      std::optional<uint64_t> until;
      for (size_t j = k + 1; j < idx.size() && !until; ++j) {
        if (!evs[j].empty()) until = evs[j].front().t_ns;
      }
      std::vector<FunctionEvent> merged;
      size_t e = 0;
      for (; next != calls.end() && std::pair(next->pid, next->tid) == who &&
             (!until || next->t_ns < *until);
           ++next) {
        for (; e < evs[k].size() && evs[k][e].t_ns <= next->t_ns; ++e) merged.push_back(evs[k][e]);
        uint64_t t =
            std::max(next->t_ns, merged.empty() ? blocks[idx[k]].t_ns : merged.back().t_ns);
        merged.push_back(
            FunctionEvent{.kind = FunctionEvent::Kind::kDevice, .t_ns = t, .value = next->seq});
      }
      if (!readable[k]) continue;  // left as it was
      for (; e < evs[k].size(); ++e) merged.push_back(evs[k][e]);
      if (merged.size() != evs[k].size())
        blocks[idx[k]].data = encode_events(blocks[idx[k]].t_ns, merged);
    }
  }
  return first_error;
}

}  // namespace cudatool::trace
