#include "analysis/xrefs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <system_error>

#include "analysis/relocations.hpp"
#include "base/helper_thread.hpp"
#include "base/prefault.hpp"
#include "base/x86_length.hpp"
#include "elf/relocations.hpp"

namespace cudatool {
namespace {

constexpr std::string_view kKindNames[kRefKinds] = {"call", "tail_jump", "pointer",
                                                    "lea",  "load",      "store"};

// What an instruction with a RIP-relative operand does with the address: takes it (lea), stores
// to it (mov to memory), branches through it (call/jmp *x(%rip)) or reads it (the rest).
struct RipUse {
  RefKind kind = RefKind::kLoad;
  uint8_t flags = 0;
};
RipUse rip_use(const x86::Insn& in) {
  if (in.map != 0 || in.vex) return {};
  const uint8_t reg = (in.modrm >> 3) & 7;
  switch (in.opcode) {
    case 0x8d:
      return {RefKind::kLea, 0};
    case 0x88:
    case 0x89:
      return {RefKind::kStore, 0};
    case 0xc6:
    case 0xc7:
      return {reg == 0 ? RefKind::kStore : RefKind::kLoad, 0};
    case 0xff:
      return {RefKind::kLoad, static_cast<uint8_t>(reg >= 2 && reg <= 5 ? Ref::kBranch : 0)};
    default:
      return {};
  }
}

// A direct branch: call rel32, jmp rel32/rel8, jcc rel8/rel32, loop/loopcc/jrcxz (E0-E3, which
// jump as a jcc does), with its displacement.
struct Branch {
  int64_t rel = 0;
  bool call = false;
  uint8_t flags = 0;  // Ref::kConditional for jcc
  bool loop = false;  // E0-E3: only a jump inside the function is kept (never a tail jump)
};
std::optional<Branch> relative_branch(const x86::Insn& in, ByteView insn) {
  if (in.vex) return std::nullopt;
  // The decoder checked that the instruction lies inside the view: reads in it cannot fail.
  auto rel32 = [&] {
    return int64_t{static_cast<int32_t>(insn.read<uint32_t>(in.addr_field_offset).value_or(0))};
  };
  if (in.map == 0) {
    if ((in.opcode == 0xe8 || in.opcode == 0xe9) && in.addr_field_size == 4)
      return Branch{rel32(), in.opcode == 0xe8, 0};
    if (in.opcode == 0xeb || (in.opcode >= 0x70 && in.opcode <= 0x7f)) {
      auto rel8 = static_cast<int8_t>(insn.read<uint8_t>(in.length - 1).value_or(0));
      return Branch{int64_t{rel8}, false,
                    static_cast<uint8_t>(in.opcode == 0xeb ? 0 : Ref::kConditional)};
    }
    if (in.opcode >= 0xe0 && in.opcode <= 0xe3) {
      auto rel8 = static_cast<int8_t>(insn.read<uint8_t>(in.length - 1).value_or(0));
      return Branch{int64_t{rel8}, false, Ref::kConditional, true};
    }
  } else if (in.map == 1 && in.opcode >= 0x80 && in.opcode <= 0x8f && in.addr_field_size == 4) {
    return Branch{rel32(), false, Ref::kConditional};
  }
  return std::nullopt;
}

bool is_plt_section(std::string_view name) {
  return name == ".plt" || name == ".plt.got" || name == ".plt.sec";
}

// Read-only data where C strings live: .rodata and the other SHF_ALLOC PROGBITS sections that are
// neither writable nor executable, except the unwind tables (.eh_frame, .eh_frame_hdr), whose
// bytes are CFI records, never strings a program uses.
bool is_string_section(const elf::MappedSection& s) {
  if (s.sh == nullptr || s.exec || s.write || s.sh->sh_type != SHT_PROGBITS) return false;
  return s.name() != ".eh_frame" && s.name() != ".eh_frame_hdr";
}

bool printable(uint8_t c) {
  return (c >= 0x20 && c <= 0x7e) || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

std::string_view ref_kind_name(RefKind k) {
  auto i = static_cast<size_t>(k);
  return i < kRefKinds ? kKindNames[i] : "?";
}

bool parse_ref_kind(std::string_view s, RefKind* out) {
  for (int i = 0; i < kRefKinds; ++i) {
    if (kKindNames[i] == s) {
      *out = static_cast<RefKind>(i);
      return true;
    }
  }
  return false;
}

std::optional<std::string_view> c_string_at(ByteView bytes) {
  ByteView head = bytes.clamp(0, CString::kMaxLength + 1);
  if (head.size() == 0) return std::nullopt;  // (an empty view's data() may be null)
  const void* nul = std::memchr(head.data(), 0, head.size());
  if (nul == nullptr) return std::nullopt;
  size_t len = static_cast<const uint8_t*>(nul) - head.data();
  if (len == 0) return std::nullopt;
  for (size_t i = 0; i < len; ++i) {
    if (!printable(head.data()[i])) return std::nullopt;
  }
  return std::string_view(reinterpret_cast<const char*>(head.data()), len);
}

// Declared after what its thread uses, so that the thread is joined first.
struct XrefIndex::SecondSweep {
  SweepPart part;
  std::atomic<bool> swept{false};
  std::optional<HelperThread> thread;
};

XrefIndex::XrefIndex(DriverImage& img) : XrefIndex(img, nullptr) {}

XrefIndex::XrefIndex(DriverImage& img, const std::function<void()>& beside) {
  FunctionMap& map = img.facet<FunctionMap>();
  map_ = &map;
  sections_ = &img.facet<Relocations>().sections();
  read_got(img);
  find_plt();
  // One reference per ~45 bytes of code on libcuda: reserving one per 32 (and one per
  // relocation) keeps the vector from growing (each growth copied it and faulted in fresh pages).
  uint64_t code = 0;
  for (const auto& r : map.exec_ranges())
    code += std::min<uint64_t>(r.bytes.size(), r.end - r.start);
  refs_.reserve(std::min<uint64_t>(code / 32, uint64_t{1} << 24) +
                img.facet<Relocations>().index().all().size());
  SecondSweep second;
  const bool beside_there = sweep_all(map.exec_ranges(), second, beside);
  std::sort(entry_targets_.begin(), entry_targets_.end());
  entry_targets_.erase(std::unique(entry_targets_.begin(), entry_targets_.end()),
                       entry_targets_.end());
  add_pointers(img);
  sort_by_target();
  // By function: a counting sort keeps each function's references in site order.
  const size_t nf = map.functions().size();
  from_offsets_.assign(nf + 2, 0);
  for (const auto& r : refs_) {
    if (r.from >= 0) ++from_offsets_[static_cast<size_t>(r.from) + 1];
  }
  for (size_t i = 1; i < from_offsets_.size(); ++i) from_offsets_[i] += from_offsets_[i - 1];
  by_from_.resize(from_offsets_[nf]);
  std::vector<uint32_t> next(from_offsets_.begin(), from_offsets_.end() - 1);
  for (size_t i = 0; i < refs_.size(); ++i) {
    if (refs_[i].from >= 0) by_from_[next[static_cast<size_t>(refs_[i].from)]++] = uint32_t(i);
  }
  find_strings(img);
  for (const auto& r : refs_) ++stats_.by_kind[static_cast<size_t>(r.kind)];
  stats_.plt_entries = plt_.size();
  stats_.strings = strings_.size();
  second.thread.reset();  // joined: `beside` has run there
  if (beside && !beside_there) beside();
}

// By target (then site): what "who refers to X" binary-searches. The references come in site
// order (the sweep walks the ranges upwards, the pointers follow by slot, above the code): then a
// stable LSD radix sort by target alone gives (target, site) order in linear time; std::sort with
// the comparator chasing refs_ was a twentieth of `index` on 580.
void XrefIndex::sort_by_target() {
  const size_t n = refs_.size();
  by_target_.resize(n);
  auto by_comparison = [&] {
    for (size_t i = 0; i < n; ++i) by_target_[i] = static_cast<uint32_t>(i);
    std::sort(by_target_.begin(), by_target_.end(), [&](uint32_t a, uint32_t b) {
      const Ref& x = refs_[a];
      const Ref& y = refs_[b];
      return x.target != y.target ? x.target < y.target : x.site < y.site;
    });
  };
  if (n >= (size_t{1} << 32)) return by_comparison();
  // Each target travels with its index in one word (target above, index below), so that every
  // pass reads one array in order and scatters into one other, and the histograms of all passes
  // come from the one read of refs_ that also checks the order: 10.6 → 6 ms on 580.159.04.
  constexpr unsigned kBits = 11, kPasses = 3;  // 33 bits: a target below 2^32 fits its word
  constexpr uint64_t kMask = (uint64_t{1} << kBits) - 1;
  std::unique_ptr<uint64_t[]> cur(new uint64_t[n]), next(new uint64_t[n]);
  prefault_for_write(cur.get(), n * sizeof(uint64_t));
  prefault_for_write(next.get(), n * sizeof(uint64_t));
  std::vector<uint32_t> count(size_t{kPasses} << kBits, 0);
  bool by_site = true;
  uint64_t max_target = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t t = refs_[i].target;
    if (i > 0 && refs_[i].site < refs_[i - 1].site) by_site = false;
    max_target = std::max(max_target, t);
    cur[i] = t << 32 | i;
    for (unsigned p = 0; p < kPasses; ++p)
      ++count[(size_t{p} << kBits) + ((t >> (p * kBits)) & kMask)];
  }
  if (!by_site || max_target >= (uint64_t{1} << 32)) return by_comparison();
  const unsigned key_bits = 64 - static_cast<unsigned>(__builtin_clzll(max_target | 1));
  for (unsigned p = 0; p * kBits < key_bits; ++p) {
    uint32_t* c = count.data() + (size_t{p} << kBits);
    uint32_t sum = 0;
    for (size_t d = 0; d <= kMask; ++d) {
      const uint32_t k = c[d];
      c[d] = sum;
      sum += k;
    }
    const unsigned shift = 32 + p * kBits;
    for (size_t i = 0; i < n; ++i) next[c[(cur[i] >> shift) & kMask]++] = cur[i];
    cur.swap(next);
  }
  for (size_t i = 0; i < n; ++i) by_target_[i] = static_cast<uint32_t>(cur[i]);
}

void XrefIndex::read_got(DriverImage& img) {
  const auto& syms = img.dynamic_symbols();
  for (const auto& sh : img.elf().sections()) {
    if (sh.sh_type != SHT_RELA || !sh.is_alloc()) continue;
    auto table = elf::RelaTable::from_section(img.elf(), sh);
    if (!table) continue;  // reported by the Relocations facet
    for (uint64_t i = 0; i < table->size(); ++i) {
      elf::Rela r = table->at(i);
      if (r.type != R_X86_64_JUMP_SLOT && r.type != R_X86_64_GLOB_DAT && r.type != R_X86_64_64)
        continue;
      if (r.sym == 0 || r.sym >= syms.size() || syms[r.sym].name.empty()) continue;
      got_.push_back({r.r_offset, syms[r.sym].name, syms[r.sym].defined()});
    }
  }
  std::stable_sort(got_.begin(), got_.end(),
                   [](const GotSlot& a, const GotSlot& b) { return a.address < b.address; });
}

const GotSlot* XrefIndex::got_at(uint64_t addr) const {
  auto it = std::lower_bound(got_.begin(), got_.end(), addr,
                             [](const GotSlot& g, uint64_t a) { return g.address < a; });
  return it != got_.end() && it->address == addr ? &*it : nullptr;
}

void XrefIndex::find_plt() {
  for (const auto& r : map_->exec_ranges()) {
    if (!is_plt_section(r.name) || r.bytes.empty()) continue;
    const uint64_t len = std::min<uint64_t>(r.bytes.size(), r.end - r.start);
    uint64_t off = 0;
    while (off < len) {
      auto in = x86::decode_length(r.bytes.clamp(off, len - off));
      if (!in) {
        ++off;
        continue;
      }
      const ByteView insn = r.bytes.clamp(off, in->length);
      // jmp *disp32(%rip): FF /4 with a RIP-relative operand.
      if (in->map == 0 && !in->vex && in->opcode == 0xff && in->rip_relative &&
          ((in->modrm >> 3) & 7) == 4) {
        auto disp = static_cast<int32_t>(insn.read<uint32_t>(in->addr_field_offset).value_or(0));
        uint64_t slot = r.start + off + in->length + static_cast<uint64_t>(int64_t{disp});
        if (const GotSlot* g = got_at(slot)) {
          uint64_t at = r.start + off;
          // An IBT stub starts with endbr64 (F3 0F 1E FA); callers jump there.
          auto before = off >= 4 ? r.bytes.read<uint32_t>(off - 4) : std::nullopt;
          if (before == 0xfa1e0ff3u) at -= 4;
          plt_.push_back({.address = at, .got_slot = slot, .name = g->name, .section = r.name});
        }
      }
      off += in->length;
    }
  }
  std::sort(plt_.begin(), plt_.end(),
            [](const PltEntry& a, const PltEntry& b) { return a.address < b.address; });
}

const PltEntry* XrefIndex::plt_at(uint64_t addr) const {
  auto it = std::lower_bound(plt_.begin(), plt_.end(), addr,
                             [](const PltEntry& e, uint64_t a) { return e.address < a; });
  return it != plt_.end() && it->address == addr ? &*it : nullptr;
}

// The sweep starts over at every function start (no instruction is decoded across one), so a
// piece of code that begins at a function start decodes exactly as it does in one sweep of its
// section: the largest section is cut at the function start nearest its middle and its second
// half swept on a second thread when the process may run on two CPUs (index of 580.159.04: the
// sweep is a fifth of the time). The parts are joined in address order.
bool XrefIndex::sweep_all(const std::vector<FunctionMap::ExecRange>& ranges,
                          SecondSweep& second_sweep, const std::function<void()>& beside) {
  std::vector<FunctionMap::ExecRange> first(ranges), second;
  size_t big = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    stats_.sections += r.bytes.empty() ? 0 : 1;
    stats_.code_bytes += r.bytes.empty() ? 0 : std::min<uint64_t>(r.bytes.size(), r.end - r.start);
    if (r.bytes.size() > ranges[big].bytes.size()) big = i;
  }
  const bool two_cpus = HelperThread::another_cpu();
  const auto fns = map_->functions();
  if (two_cpus && !ranges.empty() && ranges[big].bytes.size() >= kParallelSweepBytes) {
    const auto& r = ranges[big];
    const uint64_t len = std::min<uint64_t>(r.bytes.size(), r.end - r.start);
    auto mid = std::lower_bound(fns.begin(), fns.end(), r.start + len / 2,
                                [](const Function& f, uint64_t a) { return f.start < a; });
    if (mid != fns.end() && mid->start > r.start && mid->start < r.start + len) {
      const uint64_t cut = mid->start;
      FunctionMap::ExecRange head = r, tail = r;
      head.end = cut;
      head.bytes = r.bytes.clamp(0, cut - r.start);
      tail.start = cut;
      tail.bytes = r.bytes.clamp(cut - r.start, r.bytes.size() - (cut - r.start));
      first.assign(ranges.begin(), ranges.begin() + static_cast<ptrdiff_t>(big));
      first.push_back(head);
      second.push_back(tail);
      second.insert(second.end(), ranges.begin() + static_cast<ptrdiff_t>(big) + 1, ranges.end());
    }
  }
  // The first part is swept straight into refs_ (reserved above), the second appended to it.
  SweepPart a;
  a.refs.swap(refs_);
  SweepPart& b = second_sweep.part;
  auto run = [this](const std::vector<FunctionMap::ExecRange>& rs, SweepPart& out) {
    for (const auto& r : rs) sweep(r, out);
  };
  bool beside_there = false;
  if (!second.empty()) {
    try {
      // The thread's work holds its own copy of the ranges: it outlives this function.
      second_sweep.thread.emplace([this, &second_sweep, &beside, rs = second] {
        for (const auto& r : rs) sweep(r, second_sweep.part);
        second_sweep.swept.store(true, std::memory_order_release);
        second_sweep.swept.notify_one();
        if (beside) beside();
      });
      beside_there = true;
    } catch (const std::system_error&) {
      run(second, b);  // no thread to be had: one after the other
    }
  }
  run(first, a);
  if (beside_there) {
    while (!second_sweep.swept.load(std::memory_order_acquire)) second_sweep.swept.wait(false);
  }
  refs_.swap(a.refs);
  refs_.insert(refs_.end(), b.refs.begin(), b.refs.end());
  for (SweepPart* part : {&a, &b}) {
    entry_targets_.insert(entry_targets_.end(), part->entry_targets.begin(),
                          part->entry_targets.end());
    stats_.instructions += part->instructions;
    stats_.undecodable += part->undecodable;
  }
  return beside_there;
}

void XrefIndex::sweep(const FunctionMap::ExecRange& r, SweepPart& out) const {
  if (r.bytes.empty()) return;
  const auto fns = map_->functions();
  const size_t nf = fns.size();
  const bool nested = map_->overlaps() > 0;
  const uint64_t len = std::min<uint64_t>(r.bytes.size(), r.end - r.start);
  out.refs.reserve(out.refs.size() + len / 32);

  // fi: the next function to start; cur: the last one started (it may have ended already).
  size_t fi = static_cast<size_t>(
      std::lower_bound(fns.begin(), fns.end(), r.start,
                       [](const Function& f, uint64_t a) { return f.start < a; }) -
      fns.begin());
  int64_t cur = -1;
  if (fi > 0 && fns[fi - 1].contains(r.start)) cur = static_cast<int64_t>(fi - 1);
  uint64_t off = 0;
  while (off < len) {
    const uint64_t addr = r.start + off;
    while (fi < nf && fns[fi].start <= addr) cur = static_cast<int64_t>(fi++);
    uint64_t limit = len - off;
    if (fi < nf && fns[fi].start - addr < limit) limit = fns[fi].start - addr;
    auto in = x86::decode_length(r.bytes.clamp(off, limit));
    if (!in) {
      ++out.undecodable;
      ++off;
      continue;
    }
    ++out.instructions;
    // The decoder checked that the instruction lies inside the view: reads in it cannot fail.
    const ByteView insn = r.bytes.clamp(off, in->length);
    auto field32 = [&] {
      return static_cast<int32_t>(insn.read<uint32_t>(in->addr_field_offset).value_or(0));
    };
    const uint64_t next = addr + in->length;
    off += in->length;

    // The function holding the instruction, and the range a jump must leave to be a tail jump
    // (the function, or the gap between functions).
    int32_t from = -1;
    if (cur >= 0 && fns[static_cast<size_t>(cur)].contains(addr)) {
      from = static_cast<int32_t>(cur);
    } else if (nested) {
      if (const Function* f = map_->find(addr)) from = static_cast<int32_t>(f - fns.data());
    }
    auto outside = [&](uint64_t t) {
      if (from >= 0) return !fns[static_cast<size_t>(from)].contains(t);
      uint64_t lo = cur >= 0 ? std::max(r.start, fns[static_cast<size_t>(cur)].end()) : r.start;
      uint64_t hi = fi < nf ? std::min(r.end, fns[fi].start) : r.end;
      return t < lo || t >= hi;
    };
    auto add = [&](uint64_t target, RefKind kind, uint8_t flags) {
      out.refs.push_back({.site = addr,
                          .target = target,
                          .from = from,
                          .kind = kind,
                          .flags = flags,
                          .length = in->length});
    };
    // A jump that stays in its function: kept only when it lands in the function's first bytes.
    auto local = [&](uint64_t target) {
      if (from < 0) return;
      const uint64_t start = fns[static_cast<size_t>(from)].start;
      if (target > start && target - start < kEntryWindow) out.entry_targets.push_back(target);
    };

    if (in->rip_relative) {
      const RipUse use = rip_use(*in);
      add(next + static_cast<uint64_t>(int64_t{field32()}), use.kind, use.flags);
      continue;
    }
    const std::optional<Branch> b = relative_branch(*in, insn);
    if (!b) continue;
    const uint64_t target = next + static_cast<uint64_t>(b->rel);
    if (b->call) {
      add(target, RefKind::kCall, 0);
    } else if (!outside(target)) {
      local(target);
    } else if (!b->loop) {
      add(target, RefKind::kTailJump, b->flags);
    }
  }
}

void XrefIndex::add_pointers(DriverImage& img) {
  const auto& relocs = img.facet<Relocations>().index();
  refs_.reserve(refs_.size() + relocs.all().size());
  pointer_begin_ = refs_.size();
  for (const auto& t : relocs.all())
    refs_.push_back({.site = t.where, .target = t.target, .from = -1, .kind = RefKind::kPointer});
}

void XrefIndex::find_strings(DriverImage& img) {
  const auto& sections = img.facet<Relocations>().sections();
  // Distinct lea / pointer targets, in order (by_target_ is sorted by target).
  uint64_t last = 0;
  bool any = false;
  for (uint32_t i : by_target_) {
    const Ref& r = refs_[i];
    if (r.kind != RefKind::kLea && r.kind != RefKind::kPointer) continue;
    if (any && r.target == last) continue;
    any = true;
    last = r.target;
    const elf::MappedSection* s = sections.at(r.target);
    if (s == nullptr || !is_string_section(*s)) continue;
    auto rest = s->bytes.sub(r.target - s->addr);
    if (!rest) continue;
    if (auto text = c_string_at(*rest)) strings_.push_back({r.target, *text, s->name()});
  }
}

const CString* XrefIndex::string_at(uint64_t addr) const {
  auto it = std::lower_bound(strings_.begin(), strings_.end(), addr,
                             [](const CString& s, uint64_t a) { return s.address < a; });
  return it != strings_.end() && it->address == addr ? &*it : nullptr;
}

std::vector<const Ref*> XrefIndex::refs_to(uint64_t lo, uint64_t hi) const {
  std::vector<const Ref*> out;
  auto it = std::lower_bound(by_target_.begin(), by_target_.end(), lo,
                             [&](uint32_t i, uint64_t a) { return refs_[i].target < a; });
  for (; it != by_target_.end() && refs_[*it].target < hi; ++it) out.push_back(&refs_[*it]);
  return out;
}

std::vector<const Ref*> XrefIndex::refs_from(int32_t index) const {
  std::vector<const Ref*> out;
  if (index < 0 || static_cast<size_t>(index) + 1 >= from_offsets_.size()) return out;
  for (uint32_t k = from_offsets_[static_cast<size_t>(index)];
       k < from_offsets_[static_cast<size_t>(index) + 1]; ++k) {
    out.push_back(&refs_[by_from_[k]]);
  }
  return out;
}

std::span<const Ref> XrefIndex::pointers_in(uint64_t lo, uint64_t hi) const {
  auto all = pointers();
  auto cmp = [](const Ref& r, uint64_t a) { return r.site < a; };
  auto a = std::lower_bound(all.begin(), all.end(), lo, cmp);
  auto b = std::lower_bound(a, all.end(), std::max(lo, hi), cmp);
  return all.subspan(static_cast<size_t>(a - all.begin()), static_cast<size_t>(b - a));
}

uint64_t XrefIndex::next_target_after(uint64_t addr) const {
  auto it = std::upper_bound(by_target_.begin(), by_target_.end(), addr,
                             [&](uint64_t a, uint32_t i) { return a < refs_[i].target; });
  return it == by_target_.end() ? ~uint64_t{0} : refs_[*it].target;
}

}  // namespace cudatool
