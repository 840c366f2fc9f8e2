#include "analysis/function_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "analysis/driver_image.hpp"
#include "base/permute.hpp"
#include "base/prefault.hpp"

namespace cudatool {
namespace {

// x86-64 instructions assemblers and linkers use to fill alignment gaps: NOP (90, 66 90, the
// 0F 1F /0 multi-byte forms with any 66/2E prefixes, Intel SDM vol. 2B "NOP"), INT3 and zero.
// Returns the length of the filler instruction at p, or 0 when it is something else.
size_t filler_length(const uint8_t* p, size_t n) {
  if (p[0] == 0xcc || p[0] == 0x00) return 1;
  size_t i = 0;
  while (i < n && i < 14 && (p[i] == 0x66 || p[i] == 0x2e)) ++i;
  if (i < n && p[i] == 0x90) return i + 1;
  if (n - i < 3 || p[i] != 0x0f || p[i + 1] != 0x1f) return 0;
  uint8_t modrm = p[i + 2];
  if (((modrm >> 3) & 7) != 0) return 0;  // 0F 1F /0 only
  size_t len = i + 3;
  unsigned mod = modrm >> 6, rm = modrm & 7;
  if (mod != 3 && rm == 4) ++len;  // SIB
  if (mod == 1) len += 1;
  if (mod == 2 || (mod == 0 && rm == 5)) len += 4;
  return len <= n ? len : 0;
}

bool is_filler(ByteView b) {
  const uint8_t* p = b.data();
  size_t n = b.size();
  while (n > 0) {
    size_t l = filler_length(p, n);
    if (l == 0) return false;
    p += l;
    n -= l;
  }
  return true;
}

// Indices of `fns` in ascending start order (stable); empty when already in order.
std::vector<uint32_t> sort_by_start(const std::vector<Function>& fns) {
  const size_t n = fns.size();
  uint64_t max_key = 0;
  bool sorted = true;
  for (size_t i = 0; i < n; ++i) {
    max_key = std::max(max_key, fns[i].start);
    if (i > 0 && fns[i].start < fns[i - 1].start) sorted = false;
  }
  if (sorted) return {};
  // LSD radix sort in as few passes of at most 13 bits as the largest start needs (two for a
  // libcuda: .text spans less than 2^26 bytes); 8,192 counters stay in L1.
  constexpr unsigned kMaxBits = 13;
  std::vector<uint32_t> a(n), b(n);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<uint32_t>(i);
  const unsigned key_bits = 64 - static_cast<unsigned>(__builtin_clzll(max_key | 1));
  const unsigned passes = (key_bits + kMaxBits - 1) / kMaxBits;
  const unsigned bits = (key_bits + passes - 1) / passes;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  std::vector<uint32_t> count(size_t{1} << bits);
  for (unsigned shift = 0; shift < key_bits; shift += bits) {
    std::fill(count.begin(), count.end(), 0);
    for (uint32_t i : a) ++count[(fns[i].start >> shift) & mask];
    uint32_t sum = 0;
    for (auto& c : count) {
      uint32_t k = c;
      c = sum;
      sum += k;
    }
    for (uint32_t i : a) b[count[(fns[i].start >> shift) & mask]++] = i;
    a.swap(b);
  }
  return a;
}

}  // namespace

std::string_view gap_kind_name(Gap::Kind k) {
  switch (k) {
    case Gap::Kind::kPadding:
      return "padding";
    case Gap::Kind::kCode:
      return "code";
    case Gap::Kind::kNoBytes:
      return "no bytes";
  }
  return "?";
}

FunctionMap::FunctionMap(DriverImage& img) : FunctionMap(img, img.diagnostics()) {}

FunctionMap::FunctionMap(DriverImage& img, Diagnostics& diag) {
  build(img, diag);
}

bool is_plt_section_name(std::string_view section) {
  return section.starts_with(".plt") || section.starts_with(".iplt");
}

std::string FunctionMap::derived_name(uint64_t start) {
  return fmt::format("fn_{:x}", start);
}

void FunctionMap::build(DriverImage& img, Diagnostics& diag) {
  find_exec_ranges(img.elf());
  Table table = read_hdr_table(img);
  ByteView eh_bytes;
  uint64_t eh_vaddr = 0;
  read_fdes(img, diag, table, eh_bytes, eh_vaddr);
  sort_and_place();
  if (hdr_.has_table) check_against_table(table, eh_vaddr, eh_bytes.size());
  name_exports(img);
}

// Executable ranges: SHF_EXECINSTR sections, or PF_X segments when there are no sections.
void FunctionMap::find_exec_ranges(const elf::ElfImage& elf) {
  for (const auto& s : elf.sections()) {
    if (!s.is_alloc() || !s.is_exec() || s.sh_size == 0) continue;
    ExecRange r{s.sh_addr,
                s.sh_size > ~s.sh_addr ? ~uint64_t{0} : s.sh_addr + s.sh_size,
                s.name.empty() ? std::string_view("?") : s.name,
                {}};
    if (s.has_file_bytes() && s.in_file) {
      if (auto b = elf.section_bytes(s)) r.bytes = *b;
    }
    exec_.push_back(r);
  }
  if (exec_.empty()) {
    for (const auto& p : elf.segments()) {
      if (p.p_type != PT_LOAD || (p.p_flags & PF_X) == 0 || p.p_memsz == 0) continue;
      ExecRange r{p.p_vaddr,
                  p.p_memsz > ~p.p_vaddr ? ~uint64_t{0} : p.p_vaddr + p.p_memsz,
                  "(exec segment)",
                  {}};
      if (p.in_file) {
        if (auto b = elf.segment_bytes(p)) r.bytes = *b;
      }
      exec_.push_back(r);
    }
  }
  std::sort(exec_.begin(), exec_.end(),
            [](const ExecRange& a, const ExecRange& b) { return a.start < b.start; });
}

// .eh_frame_hdr and its search table (entries: initial location, FDE address).
FunctionMap::Table FunctionMap::read_hdr_table(DriverImage& img) {
  const elf::ElfImage& elf = img.elf();
  const auto& hdr = img.eh_frame_hdr();
  Table table;
  if (hdr) {
    hdr_.present = true;
    hdr_.fde_count = hdr->fde_count;
    hdr_.eh_frame_ptr = hdr->eh_frame_ptr;
    if (const auto* sh = elf.section(".eh_frame_hdr")) {
      table.hdr_vaddr = sh->sh_addr;
    } else {
      for (const auto& p : elf.segments())
        if (p.p_type == PT_GNU_EH_FRAME) table.hdr_vaddr = p.p_vaddr;
    }
    if (hdr->fde_count && hdr->table_enc != elf::kDwEhPeOmit) {
      hdr_.has_table = true;
      table.bytes = hdr->table;
      table.enc = hdr->table_enc;
      table.entry_size = 2 * elf::eh_pointer_size(hdr->table_enc);
      table.vaddr = hdr->table_vaddr;
      // read_eh_frame_hdr checked that fde_count entries fit.
      table.count = table.entry_size == 0 ? 0 : table.bytes.size() / table.entry_size;
      hdr_.entries = table.count;
    }
  }
  return table;
}

// .eh_frame: the section, or (without section headers) where the header points, up to the end
// of the segment holding it; its FDEs go straight into the map (one copy, not two).
void FunctionMap::read_fdes(DriverImage& img, Diagnostics& diag, const Table& table,
                            ByteView& eh_bytes, uint64_t& eh_vaddr) {
  const elf::ElfImage& elf = img.elf();
  const auto& hdr = img.eh_frame_hdr();
  elf::EhFrameOptions opts;
  const auto* eh_sec = elf.section(".eh_frame");
  if (eh_sec != nullptr && eh_sec->has_file_bytes() && eh_sec->in_file) {
    if (auto b = elf.section_bytes(*eh_sec)) {
      eh_bytes = *b;
      eh_vaddr = eh_sec->sh_addr;
      eh_frame_found_ = true;
      eh_frame_source_ = elf::describe(*eh_sec);
    }
  } else if (hdr) {
    for (const auto& p : elf.segments()) {
      if (p.p_type != PT_LOAD || !p.in_file) continue;
      if (hdr->eh_frame_ptr < p.p_vaddr || hdr->eh_frame_ptr - p.p_vaddr >= p.p_filesz) continue;
      auto seg = elf.segment_bytes(p);
      if (!seg) continue;
      if (auto b = seg->sub(hdr->eh_frame_ptr - p.p_vaddr)) {
        eh_bytes = *b;
        eh_vaddr = hdr->eh_frame_ptr;
        eh_frame_found_ = true;
        opts.stop_at_terminator = true;
        eh_frame_source_ =
            fmt::format("eh_frame_ptr {:#x} of .eh_frame_hdr ({})", eh_vaddr, elf::describe(p));
      }
      break;
    }
  }
  if (!eh_frame_found_) {
    diag.report(make_error(".eh_frame", "", std::nullopt,
                           eh_sec != nullptr
                               ? "the section has no bytes in the file"
                               : "no .eh_frame section and no .eh_frame_hdr pointing to one: "
                                 "there is no unwind data to build a function map from"));
  }
  if (const auto* text = elf.section(".text")) opts.text_base = text->sh_addr;
  if (const auto* got = elf.section(".got")) opts.data_base = got->sh_addr;
  opts.expected_fdes = table.count;

  // Search-table entries give record starts to resume at, should the walk break.
  auto resync = [&]() {
    std::vector<uint64_t> out;
    out.reserve(table.count);
    for (uint64_t i = 0; i < table.count; ++i) {
      uint64_t fde = table.entry(i).second;
      if (fde >= eh_vaddr && fde - eh_vaddr < eh_bytes.size()) out.push_back(fde - eh_vaddr);
    }
    return out;
  };
  // The FDEs go straight into the map (one copy, not two).
  functions_.reserve(std::min<uint64_t>(table.count, eh_bytes.size() / 16));
  prefault_capacity(functions_);
  auto sink = [this](const elf::EhFde& f) {
    Function fn;
    fn.start = f.pc_begin;
    fn.size = f.pc_range;
    fn.fde = f.offset;
    fn.resynced = f.resynced;
    fn.has_lsda = f.has_lsda;
    functions_.push_back(fn);
  };
  if (eh_frame_found_) {
    eh_frame_ = elf::EhFrame::read(eh_bytes, eh_vaddr, opts, resync, &diag, sink);
  }
}

// FDEs come in link order: ascending runs (one per input file and output section) that
// interleave (each file's .text.unlikely part sits at the start of .text). A stable LSD radix
// sort of indices by start address is linear and keeps equal starts in FDE order; the
// permutation is then applied in place, cycle by cycle. Then overlaps, and FDEs outside the
// executable ranges.
void FunctionMap::sort_and_place() {
  std::vector<uint32_t> order = sort_by_start(functions_);
  permute_in_place(functions_, std::span<uint32_t>(order));
  uint64_t max_end = 0;
  for (const auto& f : functions_) {
    if (f.start < max_end) ++overlaps_;
    max_end = std::max(max_end, f.end());
  }
  if (overlaps_ > 0) {
    max_end_.resize(functions_.size());
    max_end = 0;
    for (size_t i = 0; i < functions_.size(); ++i) {
      max_end = std::max(max_end, functions_[i].end());
      max_end_[i] = max_end;
    }
  }
  // FDEs outside the executable sections (one merge pass over both sorted lists).
  size_t r = 0;
  for (const auto& f : functions_) {
    while (r < exec_.size() && exec_[r].end <= f.start) ++r;
    if (r == exec_.size() || f.start < exec_[r].start || f.end() > exec_[r].end) ++outside_exec_;
  }
}

// Exported functions (defined global dynamic symbols, as DriverImage::exports() selects them;
// read directly, the API-name parsing is not needed here) name the FDE starting at their
// address.
void FunctionMap::name_exports(DriverImage& img) {
  for (const auto& s : img.dynamic_symbols()) {
    if (!DriverImage::is_export(s) || s.name.empty()) continue;
    if (s.type() != STT_FUNC && s.type() != STT_GNU_IFUNC) continue;
    add_name(s.st_value, s.name, kExportSource);
  }
}

std::pair<uint64_t, uint64_t> FunctionMap::Table::entry(uint64_t i) const {
  const uint64_t off = i * entry_size;
  if (enc == (elf::kDwEhPeDatarel | elf::kDwEhPeSdata4)) {
    // What GNU ld and lld write: two signed 32-bit offsets from the header's start.
    auto pc = static_cast<int64_t>(load_le<int32_t>(bytes.data() + off));
    auto fde = static_cast<int64_t>(load_le<int32_t>(bytes.data() + off + 4));
    return {hdr_vaddr + static_cast<uint64_t>(pc), hdr_vaddr + static_cast<uint64_t>(fde)};
  }
  Cursor c(*bytes.sub(0, off + entry_size), off);
  elf::EhBases bases{vaddr, 0, hdr_vaddr, 0};
  auto pc = elf::read_eh_pointer(c, enc, bases);
  auto fde = elf::read_eh_pointer(c, enc, bases);
  return {pc.value_or(0), fde.value_or(0)};
}

void FunctionMap::check_against_table(const Table& table, uint64_t eh_vaddr, uint64_t eh_size) {
  auto disagree = [&](std::string structure, std::string field, std::string reason) {
    ++hdr_.disagreement_count;
    if (hdr_.disagreements.size() < HdrCheck::kMaxKept) {
      hdr_.disagreements.push_back(
          make_error(std::move(structure), std::move(field), std::nullopt, std::move(reason)));
    }
  };
  if (eh_frame_found_ && hdr_.eh_frame_ptr != eh_vaddr) {
    disagree(".eh_frame_hdr", "eh_frame_ptr",
             fmt::format("{:#x}, but .eh_frame is at {:#x}", hdr_.eh_frame_ptr, eh_vaddr));
  }
  if (hdr_.fde_count && *hdr_.fde_count != functions_.size()) {
    disagree(".eh_frame_hdr", "fde_count",
             fmt::format("{}, but .eh_frame holds {} FDEs", *hdr_.fde_count, functions_.size()));
  }
  // Fast path: both lists sorted by address, entry i is function i.
  bool same = table.count == functions_.size();
  for (uint64_t i = 0; same && i < table.count; ++i) {
    auto [pc, fde] = table.entry(i);
    same = pc == functions_[i].start && fde == eh_vaddr + functions_[i].fde;
  }
  if (same) {
    for (auto& f : functions_) f.in_hdr_table = true;
    return;
  }
  // Slow path: say what differs. FDE offset -> function index.
  std::vector<std::pair<uint64_t, uint32_t>> by_fde;
  by_fde.reserve(functions_.size());
  for (size_t i = 0; i < functions_.size(); ++i)
    by_fde.emplace_back(functions_[i].fde, static_cast<uint32_t>(i));
  std::sort(by_fde.begin(), by_fde.end());
  auto fn_at_fde = [&](uint64_t off) -> Function* {
    auto it = std::lower_bound(by_fde.begin(), by_fde.end(), std::make_pair(off, uint32_t{0}));
    if (it == by_fde.end() || it->first != off) return nullptr;
    return &functions_[it->second];
  };
  uint64_t prev_pc = 0;
  for (uint64_t i = 0; i < table.count; ++i) {
    const auto [pc, fde] = table.entry(i);
    std::string entry = fmt::format(".eh_frame_hdr table entry #{}", i);
    if (i > 0 && pc < prev_pc) {
      disagree(entry, "initial_location",
               fmt::format("{:#x} is below the previous entry's {:#x}: the table is not sorted, "
                           "so a binary search misses entries",
                           pc, prev_pc));
    }
    prev_pc = pc;
    if (fde < eh_vaddr || fde - eh_vaddr >= eh_size) {
      disagree(entry, "fde_address",
               fmt::format("{:#x} is outside .eh_frame ({:#x}..{:#x})", fde, eh_vaddr,
                           eh_vaddr + eh_size));
      continue;
    }
    Function* found = fn_at_fde(fde - eh_vaddr);
    if (found == nullptr) {
      disagree(entry, "fde_address",
               fmt::format("{:#x} (section offset {:#x}) is not the start of a readable FDE", fde,
                           fde - eh_vaddr));
      continue;
    }
    Function& f = *found;
    if (f.in_hdr_table) {
      disagree(entry, "fde_address",
               fmt::format("the FDE at section offset {:#x} is listed twice", f.fde));
    }
    f.in_hdr_table = true;
    if (f.start != pc) {
      disagree(entry, "initial_location",
               fmt::format("{:#x}, but the FDE at section offset {:#x} starts at {:#x}", pc, f.fde,
                           f.start));
    }
  }
  for (const auto& f : functions_) {
    if (f.in_hdr_table) continue;
    disagree(fmt::format(".eh_frame FDE [{:#x}]", f.fde), "",
             fmt::format("{:#x}..{:#x} is missing from the .eh_frame_hdr search table", f.start,
                         f.end()));
  }
}

const Function* FunctionMap::find(uint64_t addr) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), addr,
                             [](uint64_t a, const Function& f) { return a < f.start; });
  for (size_t i = static_cast<size_t>(it - functions_.begin()); i > 0; --i) {
    if (reach(i - 1) <= addr) break;  // nothing at or before i-1 reaches addr
    if (functions_[i - 1].contains(addr)) return &functions_[i - 1];
  }
  return nullptr;
}

const Function* FunctionMap::at(uint64_t start) const {
  auto it = std::lower_bound(functions_.begin(), functions_.end(), start,
                             [](const Function& f, uint64_t a) { return f.start < a; });
  if (it == functions_.end() || it->start != start) return nullptr;
  return &*it;
}

std::string_view FunctionMap::exec_section(uint64_t addr) const {
  for (const auto& r : exec_) {
    if (addr >= r.start && addr < r.end) return r.name;
  }
  return {};
}

// The first function with start >= `start`, as at() finds it, searched forward from the last
// one found (doubling steps, then a binary search) when that one starts at or before `start`.
size_t FunctionMap::lower_bound_from_hint(uint64_t start) const {
  auto before = [](const Function& f, uint64_t a) { return f.start < a; };
  const size_t n = functions_.size();
  size_t h = name_hint_;
  if (h >= n || functions_[h].start > start) {
    return static_cast<size_t>(
        std::lower_bound(functions_.begin(), functions_.end(), start, before) - functions_.begin());
  }
  // functions_[h] is a lower bound found before: everything ahead of it starts earlier.
  if (functions_[h].start == start) return h;
  size_t lo = h + 1, step = 1;
  while (lo + step <= n && functions_[lo + step - 1].start < start) {
    lo += step;
    step *= 2;
  }
  auto first = functions_.begin() + static_cast<ptrdiff_t>(lo);
  auto last = functions_.begin() + static_cast<ptrdiff_t>(std::min(n, lo + step));
  return static_cast<size_t>(std::lower_bound(first, last, start, before) - functions_.begin());
}

bool FunctionMap::add_name(uint64_t start, std::string_view name, std::string_view source) {
  // Sources are few: keep one copy of each.
  auto src = std::find(sources_.begin(), sources_.end(), source);
  std::string_view source_v = src != sources_.end() ? *src : sources_.emplace_back(intern(source));
  size_t i = lower_bound_from_hint(start);
  if (i == functions_.size() || functions_[i].start != start) {
    unplaced_.push_back({start, {intern(name), source_v}});
    return false;
  }
  name_hint_ = i;
  Function& f = functions_[i];
  if (f.name_list < 0) {
    f.name_list = static_cast<int32_t>(name_lists_.size());
    name_lists_.push_back({static_cast<uint32_t>(name_store_.size()), 0});
  }
  NameList& list = name_lists_[static_cast<size_t>(f.name_list)];
  for (uint32_t k = 0; k < list.count; ++k) {
    const FunctionName& n = name_store_[list.offset + k];
    if (n.name == name && n.source == source_v) return true;
  }
  if (list.offset + list.count != name_store_.size()) {
    // Not the last run: move it to the end (the old copy stays, unused). The copies below read
    // the store they grow, so make the room first (growing geometrically, as push_back would).
    const size_t need = name_store_.size() + list.count + 1;
    if (need > name_store_.capacity())
      name_store_.reserve(std::max(need, 2 * name_store_.capacity()));
    const auto old = static_cast<size_t>(list.offset);
    list.offset = static_cast<uint32_t>(name_store_.size());
    for (uint32_t k = 0; k < list.count; ++k) name_store_.push_back(name_store_[old + k]);
  }
  name_store_.push_back({intern(name), source_v});
  ++list.count;
  return true;
}

void FunctionMap::expect_names(size_t more) {
  name_store_.reserve(name_store_.size() + more);
  prefault_capacity(name_store_);
}

std::span<const FunctionName> FunctionMap::names(const Function& f) const {
  if (f.name_list < 0 || static_cast<size_t>(f.name_list) >= name_lists_.size()) return {};
  const NameList& list = name_lists_[static_cast<size_t>(f.name_list)];
  return {name_store_.data() + list.offset, list.count};
}

std::vector<std::pair<std::string, uint64_t>> FunctionMap::named_by_source() const {
  // Every name's source is one of sources_ (that very view, add_name() keeps one copy of each):
  // count by position there, each function once per source.
  std::vector<uint64_t> count(sources_.size(), 0);
  std::vector<uint32_t> counted_for(sources_.size(), UINT32_MAX);  // the last list counted
  for (uint32_t l = 0; l < name_lists_.size(); ++l) {
    const NameList& nl = name_lists_[l];
    for (const FunctionName& n :
         std::span<const FunctionName>(name_store_.data() + nl.offset, nl.count)) {
      size_t k = 0;
      while (k < sources_.size() && sources_[k].data() != n.source.data()) ++k;
      if (k == sources_.size() || counted_for[k] == l) continue;
      counted_for[k] = l;
      ++count[k];
    }
  }
  std::vector<std::pair<std::string, uint64_t>> out;
  for (size_t k = 0; k < sources_.size(); ++k)
    if (count[k] > 0) out.emplace_back(std::string(sources_[k]), count[k]);
  std::sort(out.begin(), out.end());
  return out;
}

std::string FunctionMap::display_name(const Function& f) const {
  auto n = names(f);
  if (n.empty()) return derived_name(f.start);
  return std::string(n.front().name);
}

template <class Visit>
void FunctionMap::for_each_gap(Visit&& visit) const {
  for (const auto& r : exec_) {
    // Functions starting at or before the range may reach into it.
    auto it = std::upper_bound(functions_.begin(), functions_.end(), r.start,
                               [](uint64_t a, const Function& f) { return a < f.start; });
    size_t i = static_cast<size_t>(it - functions_.begin());
    uint64_t cursor = r.start;
    if (i > 0) cursor = std::max(cursor, std::min(reach(i - 1), r.end));
    for (; i < functions_.size() && functions_[i].start < r.end; ++i) {
      const Function& f = functions_[i];
      if (f.start > cursor) visit(r, cursor, f.start);
      cursor = std::max(cursor, std::min(f.end(), r.end));
    }
    if (cursor < r.end) visit(r, cursor, r.end);
  }
}

std::vector<Gap> FunctionMap::gaps(bool classify) const {
  std::vector<Gap> out;
  for_each_gap([&](const ExecRange& r, uint64_t b, uint64_t e) {
    Gap g{b, e, r.name, Gap::Kind::kNoBytes};
    if (classify) {
      if (auto bytes = r.bytes.sub(b - r.start, e - b))
        g.kind = is_filler(*bytes) ? Gap::Kind::kPadding : Gap::Kind::kCode;
    }
    out.push_back(g);
  });
  return out;
}

std::pair<uint64_t, uint64_t> FunctionMap::gap_totals() const {
  uint64_t n = 0, bytes = 0;
  for_each_gap([&](const ExecRange&, uint64_t b, uint64_t e) {
    ++n;
    bytes += e - b;
  });
  return {n, bytes};
}

}  // namespace cudatool
