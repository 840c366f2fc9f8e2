#include "elf/eh_frame.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace cudatool::elf {
namespace {

// Lengths 0xfffffff0..0xfffffffe are reserved (DWARF 5, 7.2.2); 0xffffffff escapes to 64 bits.
constexpr uint32_t kDwarf64Escape = 0xffffffff;
constexpr uint32_t kReservedLow = 0xfffffff0;

// A PC range is a length: read in the format of the 'R' encoding, never relative, and taken as
// unsigned of its size (as readelf and eu-readelf print it).
std::optional<uint64_t> read_range(Cursor& c, uint8_t enc) {
  uint64_t v = 0;
  switch (enc & 0x0f) {
    case kDwEhPeAbsptr:
    case kDwEhPeUdata8:
    case kDwEhPeSdata8:
      v = c.u64();
      break;
    case kDwEhPeUdata4:
    case kDwEhPeSdata4:
      v = c.u32();
      break;
    case kDwEhPeUdata2:
    case kDwEhPeSdata2:
      v = c.u16();
      break;
    case kDwEhPeUleb128:
      v = c.uleb128();
      break;
    case kDwEhPeSleb128:
      v = static_cast<uint64_t>(c.sleb128());
      break;
    default:
      c.fail("unknown pointer format");
  }
  if (!c.ok()) return std::nullopt;
  return v;
}

}  // namespace

std::string EhFrame::where(std::string_view kind, uint64_t index, uint64_t off) const {
  return fmt::format("{} {} #{} [{:#x}]", options_.name, kind, index, off);
}

bool EhFrame::in_walked_range(uint64_t off) const {
  // The walk only moves forward: the ranges are disjoint and in order.
  auto it = std::upper_bound(walked_.begin(), walked_.end(), off,
                             [](uint64_t o, const auto& r) { return o < r.first; });
  return it != walked_.begin() && off < std::prev(it)->second;
}

std::optional<size_t> EhFrame::fde_at(uint64_t offset) const {
  auto it = std::lower_bound(fdes_.begin(), fdes_.end(), offset,
                             [](const EhFde& f, uint64_t o) { return f.offset < o; });
  if (it == fdes_.end() || it->offset != offset) return std::nullopt;
  return static_cast<size_t>(it - fdes_.begin());
}

Result<EhFrame::Record> EhFrame::read_header(uint64_t off) const {
  Cursor c(bytes_, off);
  Record r;
  r.offset = off;
  uint32_t len32 = c.u32();
  if (!c.ok()) {
    return make_error(fmt::format("{} record [{:#x}]", options_.name, off), "length",
                      bytes_.base() + off,
                      fmt::format("{} bytes left, too few for a length field",
                                  bytes_.size() - std::min(off, bytes_.size())));
  }
  uint64_t len = len32;
  if (len32 == kDwarf64Escape) {
    r.dwarf64 = true;
    len = c.u64();
    if (!c.ok()) {
      return make_error(fmt::format("{} record [{:#x}]", options_.name, off), "length",
                        bytes_.base() + off, "64-bit length runs past the end of the section");
    }
  } else if (len32 >= kReservedLow) {
    return make_error(fmt::format("{} record [{:#x}]", options_.name, off), "length",
                      bytes_.base() + off,
                      fmt::format("{:#x} is a reserved value (neither a length nor the 64-bit "
                                  "escape)",
                                  len32));
  }
  if (len == 0) {
    r.terminator = true;
    r.content = c.pos();
    r.end = c.pos();
    return r;
  }
  if (len > c.remaining()) {
    return make_error(fmt::format("{} record [{:#x}]", options_.name, off), "length",
                      bytes_.base() + off,
                      fmt::format("{:#x} runs past the end of the section ({:#x} bytes left)", len,
                                  c.remaining()));
  }
  r.content = c.pos();
  r.end = c.pos() + len;
  unsigned id_size = r.dwarf64 ? 8 : 4;
  if (len < id_size) {
    // The length is plausible, so the walk can step over the record; it is still damaged.
    r.too_short = true;
    return r;
  }
  r.id = r.dwarf64 ? c.u64() : c.u32();
  return r;
}

Status EhFrame::parse_cie(const Record& r, EhCie* cie) const {
  auto view = bytes_.sub(0, r.end);  // positions stay section offsets; reads stop at the end
  Cursor c(*view, r.content + (r.dwarf64 ? 8 : 4));
  cie->offset = r.offset;
  cie->size = r.end - r.offset;
  cie->dwarf64 = r.dwarf64;
  auto fail = [&](std::string field, std::string reason) -> Status {
    return make_error(fmt::format("{} CIE [{:#x}]", options_.name, r.offset), std::move(field),
                      bytes_.base() + c.pos(), std::move(reason));
  };
  if (r.end - r.content < (r.dwarf64 ? 8u : 4u)) return fail("length", "too short for a CIE id");
  cie->version = c.u8();
  if (!c.ok()) return fail("version", "record ends before the version");
  if (cie->version != 1 && cie->version != 3 && cie->version != 4) {
    return fail("version", fmt::format("{} (.eh_frame CIEs are version 1, 3 or 4)", cie->version));
  }
  cie->augmentation = c.cstring();
  if (!c.ok()) return fail("augmentation", "string is not terminated inside the record");
  std::string_view aug = cie->augmentation;
  if (aug.starts_with("eh")) {  // GCC 2.x: a pointer-sized EH data field follows
    c.skip(8);
    aug.remove_prefix(2);
  }
  if (cie->version == 4) {
    uint8_t address_size = c.u8();
    c.u8();  // segment selector size
    if (c.ok() && address_size != 8) {
      return fail("address_size", fmt::format("{} (x86-64 addresses are 8 bytes)", address_size));
    }
  }
  cie->code_alignment = c.uleb128();
  cie->data_alignment = c.sleb128();
  cie->return_address_register = cie->version == 1 ? c.u8() : c.uleb128();
  if (!c.ok()) return fail("code/data alignment, return register", c.error_reason());
  if (aug.empty()) return Status::success();
  if (aug[0] != 'z') {
    // Without 'z' nothing says how long the augmentation data are; libgcc refuses such CIEs.
    cie->unknown_augmentation = aug[0];
    return fail("augmentation",
                fmt::format("\"{}\" is not understood and has no 'z' length", cie->augmentation));
  }
  cie->has_z = true;
  uint64_t aug_len = c.uleb128();
  if (!c.ok()) return fail("augmentation data length", c.error_reason());
  if (aug_len > c.remaining()) {
    return fail(
        "augmentation data length",
        fmt::format("{} runs past the end of the record ({} bytes left)", aug_len, c.remaining()));
  }
  const uint64_t aug_end = c.pos() + aug_len;
  auto adata = view->sub(0, aug_end);
  Cursor a(*adata, c.pos());
  EhBases bases{vaddr_, options_.text_base, options_.data_base, 0};
  for (char ch : aug.substr(1)) {
    switch (ch) {
      case 'L':
        cie->lsda_encoding = a.u8();
        if (a.ok() && cie->lsda_encoding != kDwEhPeOmit && !eh_encoding_valid(cie->lsda_encoding))
          return fail("LSDA encoding", fmt::format("{} is not a known DW_EH_PE encoding",
                                                   eh_encoding_name(cie->lsda_encoding)));
        break;
      case 'R':
        cie->fde_encoding = a.u8();
        if (a.ok() && (cie->fde_encoding == kDwEhPeOmit || !eh_encoding_valid(cie->fde_encoding) ||
                       (cie->fde_encoding & kDwEhPeIndirect) != 0)) {
          return fail("FDE encoding", fmt::format("{} cannot encode an FDE's PC begin",
                                                  eh_encoding_name(cie->fde_encoding)));
        }
        break;
      case 'P': {
        cie->personality_encoding = a.u8();
        if (!a.ok()) break;
        if (cie->personality_encoding == kDwEhPeOmit ||
            !eh_encoding_valid(cie->personality_encoding)) {
          return fail("personality encoding",
                      fmt::format("{} is not a known DW_EH_PE encoding",
                                  eh_encoding_name(cie->personality_encoding)));
        }
        auto p = read_eh_pointer(a, cie->personality_encoding, bases);
        if (p) cie->personality = *p;
        break;
      }
      case 'S':
        cie->signal_frame = true;
        break;
      case 'B':  // AArch64 BTI, 'G' AArch64 MTE: no data
      case 'G':
        break;
      default:
        // Unknown, but 'z' gives the length: skip the rest as libgcc does.
        cie->unknown_augmentation = ch;
        return Status::success();
    }
    if (!a.ok()) {
      return fail("augmentation data",
                  fmt::format("'{}' data do not fit in the {} bytes of augmentation data: {}", ch,
                              aug_len, a.error_reason()));
    }
    if (cie->unknown_augmentation != 0) break;
  }
  return Status::success();
}

const EhFrame::CieSlot& EhFrame::cie_at(uint64_t off) {
  auto it = cie_slots_.find(off);
  if (it != cie_slots_.end()) return it->second;
  CieSlot slot;
  if (in_walked_range(off)) {
    // The walk passed here without a record starting at this offset.
    slot.reason = "is not the start of a CIE record";
  } else {
    auto r = read_header(off);
    if (!r) {
      slot.reason = fmt::format("holds no readable record: {}", r.error().reason);
    } else if (r->terminator || r->id != 0) {
      slot.reason = "holds a record that is not a CIE";
    } else {
      EhCie cie;
      Status s = parse_cie(*r, &cie);
      if (s) {
        slot.index = static_cast<int64_t>(cies_.size());
        cies_.push_back(cie);
      } else {
        slot.reason = fmt::format("holds a damaged CIE: {}", s.error().reason);
      }
    }
  }
  return cie_slots_.emplace(off, std::move(slot)).first->second;
}

void EhFrame::parse_fde(const Record& r, uint64_t index, bool resynced, Diagnostics* diag) {
  auto view = bytes_.sub(0, r.end);
  const uint64_t ptr_field = r.content;
  const uint64_t cie_off = ptr_field - r.id;  // r.id is the CIE pointer; checked below
  auto report = [&](std::string field, uint64_t at, std::string reason) {
    ++damaged_;
    if (diag != nullptr) {
      diag->report(make_error(where("FDE", index, r.offset), std::move(field), bytes_.base() + at,
                              std::move(reason)));
    }
  };
  if (r.id > ptr_field) {
    report("CIE pointer", ptr_field,
           fmt::format("{:#x} points before the start of the section (to -{:#x})", r.id,
                       r.id - ptr_field));
    return;
  }
  if (cie_off != last_cie_off_ || last_cie_ == nullptr) {
    last_cie_ = &cie_at(cie_off);  // node-based map: the pointer stays valid
    last_cie_off_ = cie_off;
  }
  const CieSlot& slot = *last_cie_;
  if (slot.index < 0) {
    report(
        "CIE pointer", ptr_field,
        fmt::format("{:#x} points to section offset {:#x}, which {}", r.id, cie_off, slot.reason));
    return;
  }
  const EhCie& cie = cies_[static_cast<size_t>(slot.index)];
  // Fast path for what GCC and Clang emit on x86-64: 'zR' with sdata4|pcrel, no LSDA, a
  // one-byte augmentation length. Anything else (or anything wrong) takes the general path.
  if (cie.fde_encoding == (kDwEhPePcrel | kDwEhPeSdata4) && !r.dwarf64 &&
      cie.lsda_encoding == kDwEhPeOmit && r.end - r.offset <= UINT32_MAX) {
    const uint64_t p = ptr_field + 4;
    const uint64_t need = cie.has_z ? 9 : 8;
    if (r.end - p >= need) {
      const uint8_t* d = bytes_.data() + p;
      const uint8_t aug = cie.has_z ? d[8] : 0;
      if (aug < 0x80 && aug <= r.end - p - need) {
        EhFde f;
        f.offset = r.offset;
        f.size = static_cast<uint32_t>(r.end - r.offset);
        f.resynced = resynced;
        f.cie = static_cast<uint32_t>(slot.index);
        f.pc_begin = vaddr_ + p + static_cast<uint64_t>(static_cast<int64_t>(load_le<int32_t>(d)));
        f.pc_range = load_le<uint32_t>(d + 4);
        emit(f);
        return;
      }
    }
  }
  Cursor c(*view, ptr_field + (r.dwarf64 ? 8 : 4));
  EhBases bases{vaddr_, options_.text_base, options_.data_base, 0};
  if (r.end - r.offset > UINT32_MAX) {
    report("length", r.offset,
           fmt::format("{:#x} bytes: no FDE is longer than 4 GiB", r.end - r.offset));
    return;
  }
  EhFde f;
  f.offset = r.offset;
  f.size = static_cast<uint32_t>(r.end - r.offset);
  f.dwarf64 = r.dwarf64;
  f.resynced = resynced;
  f.cie = static_cast<uint32_t>(slot.index);
  auto begin = read_eh_pointer(c, cie.fde_encoding, bases);
  if (!begin) {
    report("pc_begin", c.pos(),
           fmt::format("cannot read with encoding {}: {}", eh_encoding_name(cie.fde_encoding),
                       c.error_reason()));
    return;
  }
  f.pc_begin = *begin;
  auto range = read_range(c, cie.fde_encoding);
  if (!range) {
    report("pc_range", c.pos(), fmt::format("cannot read: {}", c.error_reason()));
    return;
  }
  f.pc_range = *range;
  if (cie.has_z) {
    uint64_t aug_len = c.uleb128();
    if (!c.ok() || aug_len > c.remaining()) {
      report("augmentation data length", c.pos(),
             c.ok() ? fmt::format("{} runs past the end of the record", aug_len)
                    : std::string(c.error_reason()));
      return;
    }
    if (cie.lsda_encoding != kDwEhPeOmit && aug_len > 0) {
      auto adata = view->sub(0, c.pos() + aug_len);
      Cursor a(*adata, c.pos());
      bases.func = f.pc_begin;
      auto lsda = read_eh_pointer(a, cie.lsda_encoding, bases);
      if (!lsda) {
        report("LSDA pointer", a.pos(),
               fmt::format("cannot read with encoding {}: {}", eh_encoding_name(cie.lsda_encoding),
                           a.error_reason()));
        return;
      }
      f.has_lsda = *lsda != 0;  // GCC emits a null LSDA for some cleanups
    }
  }
  emit(f);
}

EhFrame EhFrame::read(ByteView bytes, uint64_t vaddr, const EhFrameOptions& options,
                      const ResyncPoints& resync_points, Diagnostics* diag, const FdeSink& sink) {
  EhFrame e;
  e.bytes_ = bytes;
  e.vaddr_ = vaddr;
  e.options_ = options;
  e.sink_ = &sink;
  if (!sink) e.fdes_.reserve(std::min<uint64_t>(options.expected_fdes, bytes.size() / 16));
  // Sorted on first use only: an intact section never needs it.
  std::vector<uint64_t> resync;
  bool resync_ready = false;
  size_t next_resync = 0;

  uint64_t off = 0;
  bool after_terminator = false;
  uint64_t cie_count = 0, fde_count = 0;
  bool resynced = false;
  e.walked_.emplace_back(0, 0);
  const uint64_t size = bytes.size();
  while (off < size) {
    Record r;
    // Fast path for the common record: a 32-bit length that fits, and an id.
    if (size - off >= 8) {
      uint32_t len = load_le<uint32_t>(bytes.data() + off);
      if (len >= 4 && len < kReservedLow && len <= size - off - 4) {
        r.offset = off;
        r.content = off + 4;
        r.end = off + 4 + len;
        r.id = load_le<uint32_t>(bytes.data() + off + 4);
        goto have_record;
      }
    }
    if (auto rec = e.read_header(off); rec) {
      r = *rec;
    } else {
      ++e.damaged_;
      if (diag != nullptr) diag->report(rec.error());
      // The length cannot be trusted: resume at the next known record start past this one.
      if (!resync_ready) {
        if (resync_points) resync = resync_points();
        std::sort(resync.begin(), resync.end());
        resync_ready = true;
      }
      while (next_resync < resync.size() && resync[next_resync] <= off) ++next_resync;
      if (next_resync == resync.size()) {
        e.skipped_bytes_ += size - off;
        break;
      }
      uint64_t to = resync[next_resync++];
      if (to >= size) {
        e.skipped_bytes_ += size - off;
        break;
      }
      e.skipped_bytes_ += to - off;
      off = to;
      after_terminator = false;
      resynced = true;
      e.walked_.emplace_back(off, off);
      continue;
    }
  have_record:
    e.walked_.back().second = r.end;
    if (!r.terminator) after_terminator = false;
    if (r.terminator) {
      // A run of zero words (padding after the terminator) counts as one terminator.
      if (!after_terminator) {
        e.terminators_.push_back(off);
        e.fdes_before_terminator_.push_back(e.fde_count_);
      }
      after_terminator = true;
      if (options.stop_at_terminator) break;
      off = r.end;
      continue;
    }
    if (r.too_short) {
      ++e.damaged_;
      if (diag != nullptr) {
        diag->report(make_error(
            fmt::format("{} record [{:#x}]", options.name, off), "length", bytes.base() + off,
            fmt::format("{} is too short to hold a CIE id or CIE pointer", r.end - r.content)));
      }
      off = r.end;
      continue;
    }
    if (r.id == 0) {
      EhCie cie;
      Status s = e.parse_cie(r, &cie);
      CieSlot slot;
      if (s) {
        slot.index = static_cast<int64_t>(e.cies_.size());
        e.cies_.push_back(cie);
      } else {
        ++e.damaged_;
        if (diag != nullptr) {
          Error err = s.error();
          err.structure = e.where("CIE", cie_count, off);
          diag->report(std::move(err));
        }
        slot.reason = fmt::format("holds a damaged CIE: {}", s.error().reason);
      }
      e.cie_slots_.emplace(off, std::move(slot));
      ++cie_count;
    } else {
      e.parse_fde(r, fde_count, resynced, diag);
      ++fde_count;
    }
    off = r.end;
  }
  // A terminator followed by more records: linear-search unwinders (libgcc without
  // .eh_frame_hdr) stop at it and never see what follows.
  if (!options.stop_at_terminator) {
    for (size_t i = 0; i < e.terminators_.size(); ++i) {
      const uint64_t t = e.terminators_[i];
      const uint64_t n = e.fde_count_ - e.fdes_before_terminator_[i];
      if (n == 0) continue;
      ++e.damaged_;
      if (diag != nullptr) {
        diag->report(make_error(
            fmt::format("{} zero terminator [{:#x}]", options.name, t), "", bytes.base() + t,
            fmt::format("{} FDEs follow it; an unwinder searching linearly stops here", n)));
      }
    }
  }
  e.last_cie_ = nullptr;
  e.sink_ = nullptr;
  return e;
}

}  // namespace cudatool::elf
