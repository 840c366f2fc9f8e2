// The kernel-ABI surface (analysis/abi_surface.hpp; docs/abi.md says what counts as evidence).
#include "analysis/abi_surface.hpp"

#include <algorithm>
#include <tuple>

#include "analysis/function_map.hpp"
#include "analysis/xref_query.hpp"
#include "analysis/xrefs.hpp"
#include "base/x86_length.hpp"

namespace cudatool {

std::string_view abi_kind_name(AbiKind k) {
  switch (k) {
#define CUDATOOL_X(e, n) \
  case AbiKind::e:       \
    return n;
    CUDATOOL_ABI_KINDS(CUDATOOL_X)
#undef CUDATOOL_X
  }
  return "?";
}

bool parse_abi_kind(std::string_view s, AbiKind* out) {
#define CUDATOOL_X(e, n) \
  if (s == (n)) {        \
    *out = AbiKind::e;   \
    return true;         \
  }
  CUDATOOL_ABI_KINDS(CUDATOOL_X)
#undef CUDATOOL_X
  return false;
}

std::string_view abi_confidence_name(AbiConfidence c) {
  switch (c) {
    case AbiConfidence::kHigh:
      return "high";
    case AbiConfidence::kMedium:
      return "medium";
    case AbiConfidence::kLow:
      return "low";
  }
  return "?";
}

bool AbiRequest::reaches() const {
  return std::any_of(uses.begin(), uses.end(), [](const AbiUse& u) { return u.reaches; });
}

size_t AbiRequest::function_count() const {
  std::vector<int32_t> f;
  f.reserve(uses.size());
  for (const AbiUse& u : uses) f.push_back(u.function);
  std::sort(f.begin(), f.end());
  return static_cast<size_t>(std::unique(f.begin(), f.end()) - f.begin());
}

std::string_view abi_request_name(const rm::Tables& t, AbiKind kind, uint32_t value) {
  switch (kind) {
    case AbiKind::kEscape:
      if (const auto* e = t.find_escape(value)) return e->name;
      break;
    case AbiKind::kControl:
      if (const auto* c = t.find_control(value)) return c->name;
      break;
    case AbiKind::kClass:
      if (const auto* c = t.find_class(value)) return c->name;
      break;
    case AbiKind::kUvm:
      if (const auto* u = t.find_uvm(value)) return u->name;
      break;
  }
  return {};
}

void classify_abi_value(const rm::Tables& t, uint64_t v, bool request_arg,
                        std::vector<AbiCandidate>& out) {
  // Zero is every cleared member: no evidence of NV01_ROOT or NV0000_CTRL_CMD_NULL.
  if (v > 0xffffffffu || v == 0) return;
  auto w = static_cast<uint32_t>(v);
  // _IOC(dir, 'F', nr, size): a direction bit set, type 'F' (nv-ioctl-numbers.h NV_IOCTL_MAGIC).
  if (((w >> 8) & 0xff) == 0x46 && (w >> 30) != 0 && t.find_escape(w & 0xff) != nullptr) {
    out.push_back({AbiKind::kEscape, w & 0xff, w});
  }
  if (request_arg) {  // the request of an ioctl: UVM's are plain numbers (uvm_ioctl.h)
    if (t.find_uvm(w) != nullptr) out.push_back({AbiKind::kUvm, w, 0});
    return;
  }
  // A control id the tables do not name but whose interface they know (the GSS-legacy commands
  // RM forwards unpublished, docs/rm-tables.md): a request, of unknown layout. Only for classes
  // from 0x0100 on: below, an interface id is a number any code holds (0x2013c).
  if (t.find_control(w) != nullptr || ((w >> 24) != 0 && t.find_category(w) != nullptr)) {
    out.push_back({AbiKind::kControl, w, 0});
  }
  if (w < 0x10000 && t.find_class(w) != nullptr) out.push_back({AbiKind::kClass, w, 0});
  if (w >= 0x10000 && t.find_uvm(w) != nullptr) out.push_back({AbiKind::kUvm, w, 0});
}

namespace {

struct Found {
  AbiCandidate c;
  AbiUse use;
};

// Where ioctl is called directly: the PLT entries' and GOT slots' addresses, and the functions
// holding such a call.
struct IoctlSinks {
  std::vector<uint64_t> targets;  // PLT entries and GOT slots of ioctl
  std::vector<int32_t> callers;
  uint64_t sites = 0;
};

IoctlSinks find_ioctl_sinks(const XrefIndex& x) {
  IoctlSinks s;
  auto t = resolve_xref_target(x, "ioctl");
  if (!t || t->kind != XrefTarget::Kind::kImport) return s;
  s.targets = t->plt;
  s.targets.insert(s.targets.end(), t->slots.begin(), t->slots.end());
  std::sort(s.targets.begin(), s.targets.end());
  for (const Ref* r : references_to(x, *t)) {
    bool direct = r->kind == RefKind::kCall || r->kind == RefKind::kTailJump ||
                  (r->kind == RefKind::kLoad && (r->flags & Ref::kBranch) != 0);
    if (!direct) continue;
    ++s.sites;
    if (r->from >= 0) s.callers.push_back(r->from);
  }
  std::sort(s.callers.begin(), s.callers.end());
  s.callers.erase(std::unique(s.callers.begin(), s.callers.end()), s.callers.end());
  return s;
}

// Functions from which a chain of direct calls and tail jumps reaches one of `callers`: a
// breadth-first walk over the reversed call graph.
std::vector<char> reaching_functions(const XrefIndex& x, const std::vector<int32_t>& callers) {
  const FunctionMap& map = x.map();
  const size_t n = map.functions().size();
  std::vector<uint32_t> offsets(n + 1, 0);
  std::vector<std::pair<int32_t, int32_t>> edges;  // (callee, caller)
  for (const Ref& r : x.refs()) {
    if (r.kind != RefKind::kCall && r.kind != RefKind::kTailJump) continue;
    if (r.from < 0) continue;
    const Function* f = map.find(r.target);
    if (f == nullptr) continue;
    auto callee = static_cast<int32_t>(f - map.functions().data());
    if (callee != r.from) edges.emplace_back(callee, r.from);
  }
  for (const auto& e : edges) ++offsets[static_cast<size_t>(e.first) + 1];
  for (size_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
  std::vector<int32_t> callers_of(edges.size());
  std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
  for (const auto& e : edges) callers_of[fill[static_cast<size_t>(e.first)]++] = e.second;
  std::vector<char> reach(n, 0);
  std::vector<int32_t> queue;
  for (int32_t c : callers) {
    if (c >= 0 && static_cast<size_t>(c) < n && !reach[static_cast<size_t>(c)]) {
      reach[static_cast<size_t>(c)] = 1;
      queue.push_back(c);
    }
  }
  for (size_t qi = 0; qi < queue.size(); ++qi) {
    auto f = static_cast<size_t>(queue[qi]);
    for (uint32_t i = offsets[f]; i < offsets[f + 1]; ++i) {
      auto c = static_cast<size_t>(callers_of[i]);
      if (!reach[c]) {
        reach[c] = 1;
        queue.push_back(callers_of[i]);
      }
    }
  }
  return reach;
}

// One function's instructions: mov immediates, vector constants from read-only data, and the
// request argument of direct ioctl calls (docs/abi.md, "Evidence").
class FunctionScan {
 public:
  FunctionScan(const XrefIndex& x, const rm::Tables& t, const IoctlSinks& s,
               const std::vector<char>& reach, std::vector<Found>& out, AbiStats& stats)
      : x_(x), t_(t), sinks_(s), reach_(reach), out_(out), stats_(stats) {}

  void run(int32_t fn, bool reaches, uint64_t start, ByteView code) {
    fn_ = fn;
    reaches_ = reaches;
    pending_ = false;
    uint64_t off = 0;
    while (off < code.size()) {
      auto in = x86::decode_length(code.clamp(off, code.size() - off));
      if (!in) {
        ++off;
        continue;
      }
      look_at(*in, start + off, code.clamp(off, in->length));
      off += in->length;
    }
    flush_pending();
  }

 private:
  // How a value is used: a plain constant, ioctl's own request argument, or the request-position
  // argument (%esi) of a call of a function that reaches ioctl.
  enum class Use : uint8_t { kPlain, kIoctlRequest, kCallArg };
  void emit(uint64_t v, uint64_t site, bool table, Use use) {
    ++stats_.immediates;
    cands_.clear();
    classify_abi_value(t_, v, use == Use::kIoctlRequest, cands_);
    if (use == Use::kCallArg) {  // a UVM request handed to a wrapper, as well as a constant
      std::vector<AbiCandidate> req;
      classify_abi_value(t_, v, true, req);
      for (const AbiCandidate& c : req) {
        if (c.kind == AbiKind::kUvm) cands_.push_back(c);
      }
    }
    for (const AbiCandidate& c : cands_) {
      AbiUse u;
      u.function = fn_;
      u.site = site;
      u.table = table;
      u.request_arg = use == Use::kIoctlRequest;
      u.reaches = reaches_ || use != Use::kPlain;
      u.call_arg = use == Use::kCallArg && c.kind == AbiKind::kUvm;
      out_.push_back({c, u});
    }
  }
  void flush_pending() {
    if (pending_) emit(pending_value_, pending_site_, false, Use::kPlain);
    pending_ = false;
  }
  [[nodiscard]] bool reaches_ioctl(uint64_t target) const {
    const Function* f = x_.map().find(target);
    if (f == nullptr || f->start != target) return false;
    return reach_[static_cast<size_t>(f - x_.map().functions().data())] != 0;
  }
  [[nodiscard]] bool is_sink(uint64_t a) const {
    return std::binary_search(sinks_.targets.begin(), sinks_.targets.end(), a);
  }
  void look_at(const x86::Insn& in, uint64_t addr, ByteView insn) {
    const uint64_t next = addr + in.length;
    auto disp = [&] {
      return static_cast<int64_t>(
          static_cast<int32_t>(insn.read<uint32_t>(in.addr_field_offset).value_or(0)));
    };
    if (!in.vex && in.map == 0) {
      const uint8_t op = in.opcode;
      if (op >= 0xb8 && op <= 0xbf && !in.opsize16) {
        uint64_t v = in.length >= 9 ? insn.read<uint64_t>(in.length - 8u).value_or(~0ull)
                                    : insn.read<uint32_t>(in.length - 4u).value_or(0);
        if (op == 0xbe && in.length == 5) {  // mov $imm32, %esi: the ioctl request, maybe
          flush_pending();
          pending_ = true;
          pending_value_ = v;
          pending_site_ = addr;
          return;
        }
        if (in.length >= 9) {  // movabs: two 32-bit members stored at once (0xcba20000c661)
          emit(v & 0xffffffffu, addr, false, Use::kPlain);
          emit(v >> 32, addr, false, Use::kPlain);
          return;
        }
        emit(v, addr, false, Use::kPlain);
        return;
      }
      if (op == 0xc7 && in.has_modrm && ((in.modrm >> 3) & 7) == 0 && !in.opsize16) {
        emit(insn.read<uint32_t>(in.length - 4u).value_or(0), addr, false, Use::kPlain);
        return;
      }
      if (op == 0x8b && in.rip_relative && in.length >= 7) {
        // mov x(%rip), %r32/%r64: a scalar constant (4 bytes; 8 with REX.W just before 8B).
        uint8_t rex = insn.read<uint8_t>(in.length - 7u).value_or(0);
        read_constant(next + static_cast<uint64_t>(disp()), (rex & 0xf8) == 0x48 ? 8 : 4, addr);
        return;
      }
      bool call = op == 0xe8;
      bool branch =
          call || op == 0xe9 || op == 0xeb || (op >= 0x70 && op <= 0x7f) || op == 0xc3 ||
          op == 0xc2 ||
          (op == 0xff && in.has_modrm && ((in.modrm >> 3) & 7) >= 2 && ((in.modrm >> 3) & 7) <= 5);
      if (branch) {
        uint64_t target = 0;
        if ((call || op == 0xe9) && in.addr_field_size == 4) {
          target = next + static_cast<uint64_t>(disp());
        }
        if (op == 0xff && in.rip_relative) target = next + static_cast<uint64_t>(disp());
        if (pending_ && target != 0 && is_sink(target)) {
          emit(pending_value_, pending_site_, false, Use::kIoctlRequest);
          pending_ = false;
        } else if (pending_ && call && target != 0 && reaches_ioctl(target)) {
          emit(pending_value_, pending_site_, false, Use::kCallArg);
          pending_ = false;
        }
        flush_pending();
      }
      return;
    }
    if (in.map == 1 && (in.opcode >= 0x80 && in.opcode <= 0x8f) && !in.vex) {
      flush_pending();  // jcc rel32
      return;
    }
    // movups / movaps / movdqa / movdqu (and their VEX forms) of a RIP-relative constant.
    if (in.map == 1 && in.rip_relative &&
        (in.opcode == 0x10 || in.opcode == 0x28 || in.opcode == 0x6f)) {
      read_constant(next + static_cast<uint64_t>(disp()), 16, addr);
    }
  }
  // The 32-bit words of a `bytes`-long constant at `target` in read-only data.
  void read_constant(uint64_t target, uint32_t bytes, uint64_t site) {
    const elf::MappedSection* s = x_.section_at(target);
    if (s == nullptr || s->exec || s->write) return;
    ByteView words = s->bytes.clamp(target - s->addr, bytes);
    if (words.size() != bytes) return;
    for (uint32_t i = 0; i < bytes / 4; ++i) {
      emit(words.read<uint32_t>(i * 4u).value_or(0), site, true, Use::kPlain);
    }
  }

  const XrefIndex& x_;
  const rm::Tables& t_;
  const IoctlSinks& sinks_;
  const std::vector<char>& reach_;
  std::vector<Found>& out_;
  AbiStats& stats_;
  std::vector<AbiCandidate> cands_;
  int32_t fn_ = -1;
  bool reaches_ = false;
  bool pending_ = false;
  uint64_t pending_value_ = 0, pending_site_ = 0;
};

void judge(AbiRequest& r) {
  if (!r.reaches()) {
    r.confidence = AbiConfidence::kLow;
    r.reason = "no call path to an ioctl";
    return;
  }
  bool request_arg =
      std::any_of(r.uses.begin(), r.uses.end(), [](const AbiUse& u) { return u.request_arg; });
  if (r.kind == AbiKind::kControl && r.name.empty()) {
    r.confidence = AbiConfidence::kMedium;
    r.reason = "not in the branch's tables; its interface is";
  } else if (r.kind == AbiKind::kEscape || request_arg || r.value >= 0x10000) {
    r.confidence = AbiConfidence::kHigh;
  } else if (r.kind == AbiKind::kUvm) {  // only a wrapper's argument
    r.confidence = AbiConfidence::kMedium;
    r.reason = "passed in %esi to a function that reaches ioctl, not to ioctl itself";
  } else if (r.value >= 0x1000) {
    r.confidence = AbiConfidence::kMedium;
    r.reason = "a 16-bit value: also an ordinary integer";
  } else {
    r.confidence = AbiConfidence::kLow;
    r.reason = "a small value (< 0x1000): also an ordinary integer";
  }
}

std::vector<AbiRequest> group(const rm::Tables& t, std::vector<Found>& found) {
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.c.kind, a.c.value, a.use.site) < std::tie(b.c.kind, b.c.value, b.use.site);
  });
  std::vector<AbiRequest> out;
  for (const Found& f : found) {
    if (out.empty() || out.back().kind != f.c.kind || out.back().value != f.c.value) {
      AbiRequest& r = out.emplace_back();
      r.kind = f.c.kind;
      r.value = f.c.value;
      r.name = abi_request_name(t, r.kind, r.value);
    }
    AbiRequest& r = out.back();
    if (f.c.request_code != 0 && std::find(r.request_codes.begin(), r.request_codes.end(),
                                           f.c.request_code) == r.request_codes.end()) {
      r.request_codes.push_back(f.c.request_code);
    }
    if (r.uses.empty() || r.uses.back().site != f.use.site) r.uses.push_back(f.use);
  }
  for (AbiRequest& r : out) {
    std::sort(r.request_codes.begin(), r.request_codes.end());
    judge(r);
  }
  return out;
}

}  // namespace

AbiSurface::AbiSurface(DriverImage& img) {
  version_ = img.driver_version(true).best();
  choice_ = rm::choose_branch(version_.value_or(""));
  const XrefIndex& x = img.facet<XrefIndex>();
  const FunctionMap& map = x.map();
  IoctlSinks sinks = find_ioctl_sinks(x);
  stats_.ioctl_call_sites = sinks.sites;
  stats_.ioctl_callers = sinks.callers.size();
  std::vector<char> reach = reaching_functions(x, sinks.callers);
  stats_.reaching_functions =
      static_cast<uint64_t>(std::count(reach.begin(), reach.end(), char{1}));

  std::vector<Found> found;
  FunctionScan scan(x, *choice_.tables, sinks, reach, found, stats_);
  const auto fns = map.functions();
  const auto& ranges = map.exec_ranges();
  for (size_t i = 0; i < fns.size(); ++i) {
    const Function& f = fns[i];
    auto r = std::find_if(ranges.begin(), ranges.end(), [&](const FunctionMap::ExecRange& e) {
      return f.start >= e.start && f.start < e.end;
    });
    if (r == ranges.end() || r->bytes.empty()) continue;
    uint64_t len = std::min(f.size, r->end - f.start);
    scan.run(static_cast<int32_t>(i), reach[i] != 0, f.start,
             r->bytes.clamp(f.start - r->start, len));
  }
  requests_ = group(*choice_.tables, found);
}

const AbiRequest* AbiSurface::find(AbiKind kind, uint32_t value) const {
  auto it = std::lower_bound(requests_.begin(), requests_.end(), std::make_pair(kind, value),
                             [](const AbiRequest& r, const std::pair<AbiKind, uint32_t>& k) {
                               return std::tie(r.kind, r.value) < std::tie(k.first, k.second);
                             });
  return it != requests_.end() && it->kind == kind && it->value == value ? &*it : nullptr;
}

}  // namespace cudatool
