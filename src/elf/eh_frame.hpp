// .eh_frame: the unwind tables every x86-64 object carries (gABI x86-64 psABI section 4.2.4;
// LSB Core Specification 5.0, "Exception Frames"). A sequence of records, each a CIE (Common
// Information Entry) or an FDE (Frame Description Entry):
//
//   length u32 | 0xffffffff + length u64       (0: a zero terminator)
//   CIE: id 0 (u32, u64 for 64-bit lengths), version, augmentation string, ["eh" pointer],
//        [v4: address size, segment size], code alignment (uleb), data alignment (sleb),
//        return-address register (u8 in v1, else uleb), ['z': uleb length + data for L P R S B G]
//   FDE: CIE pointer (this field's offset minus the CIE's), PC begin and PC range in the CIE's
//        'R' encoding, ['z': uleb length, LSDA pointer in the 'L' encoding], instructions
//
// Only the facts a function map needs are decoded; call-frame instructions are skipped. A
// damaged record is reported to Diagnostics and the walk goes on with the next record when the
// record's length can still be trusted; when it cannot (a length that runs past the end), the
// walk resumes at the next record start the caller knows of (the FDE addresses of
// .eh_frame_hdr's search table), so one broken record does not hide the rest of the map.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "elf/eh_pointer.hpp"

namespace cudatool::elf {

struct EhCie {
  uint64_t offset = 0;  // section offset of the record's length field (as readelf prints it)
  uint64_t size = 0;    // of the whole record, length field included
  bool dwarf64 = false;
  uint8_t version = 0;
  std::string_view augmentation;
  uint64_t code_alignment = 0;
  int64_t data_alignment = 0;
  uint64_t return_address_register = 0;
  uint8_t fde_encoding = kDwEhPeAbsptr;  // 'R'; absptr when absent
  uint8_t lsda_encoding = kDwEhPeOmit;   // 'L'
  uint8_t personality_encoding = kDwEhPeOmit;
  std::optional<uint64_t> personality;  // 'P' (the address, or of its GOT slot when indirect)
  bool has_z = false;                   // augmentation data with a length ('z')
  bool signal_frame = false;            // 'S'
  char unknown_augmentation = 0;        // first character that is not understood (after 'z')
};

struct EhFde {
  uint64_t offset = 0;  // section offset of the length field
  uint64_t pc_begin = 0;
  uint64_t pc_range = 0;
  uint32_t size = 0;  // of the whole record (a longer one is reported as damaged)
  uint32_t cie = 0;   // index into EhFrame::cies()
  bool dwarf64 = false;
  bool resynced = false;  // found by resuming after a break, not by the plain walk
  bool has_lsda = false;  // a non-null language-specific data area (C++ exception tables)
};

struct EhFrameOptions {
  uint64_t text_base = 0;  // DW_EH_PE_textrel base
  uint64_t data_base = 0;  // DW_EH_PE_datarel base
  // True when the section's size is unknown (found through .eh_frame_hdr without section
  // headers): the first zero terminator ends the walk, as libgcc's linear search does.
  bool stop_at_terminator = false;
  std::string_view name = ".eh_frame";
  // How many FDEs to expect (from .eh_frame_hdr), to allocate once; capped by the size.
  uint64_t expected_fdes = 0;
};

class EhFrame {
 public:
  // Section offsets known to start records (any order), asked for only when the walk breaks.
  using ResyncPoints = std::function<std::vector<uint64_t>()>;

  // Walks every record of `bytes` (the section contents; base() = file offset) at virtual
  // address `vaddr`. After a record whose length cannot be trusted the walk resumes at the
  // first of `resync`'s offsets past the damage. Damage goes to `diag`; nothing here fails as
  // a whole.
  // Receives each FDE in section order instead of fdes() (a consumer that keeps its own copy
  // saves holding two).
  using FdeSink = std::function<void(const EhFde&)>;

  static EhFrame read(ByteView bytes, uint64_t vaddr, const EhFrameOptions& options,
                      const ResyncPoints& resync, Diagnostics* diag, const FdeSink& sink = nullptr);

  [[nodiscard]] const std::vector<EhCie>& cies() const { return cies_; }
  // In section order (ascending offset); empty when they went to a sink.
  [[nodiscard]] const std::vector<EhFde>& fdes() const { return fdes_; }
  // FDEs read (kept or given to the sink).
  [[nodiscard]] uint64_t fde_count() const { return fde_count_; }
  // Section offsets of zero terminators met by the walk.
  [[nodiscard]] const std::vector<uint64_t>& terminators() const { return terminators_; }
  // Records reported as damaged (CIEs and FDEs that could not be used, breaks of the walk).
  [[nodiscard]] uint64_t damaged() const { return damaged_; }
  // Bytes of the section that no walk covered (skipped between a break and a resync point).
  [[nodiscard]] uint64_t skipped_bytes() const { return skipped_bytes_; }
  [[nodiscard]] uint64_t vaddr() const { return vaddr_; }
  [[nodiscard]] ByteView bytes() const { return bytes_; }
  // Index in fdes() of the FDE whose record starts at section offset `offset`.
  [[nodiscard]] std::optional<size_t> fde_at(uint64_t offset) const;

 private:
  struct CieSlot {
    int64_t index = -1;  // into cies_, or -1 when the record there is not a usable CIE
    std::string reason;  // why not
  };
  struct Record {
    uint64_t offset = 0;
    uint64_t content = 0;  // offset of the CIE id / CIE pointer field
    uint64_t end = 0;      // offset one past the record
    uint64_t id = 0;
    bool dwarf64 = false;
    bool terminator = false;
    bool too_short = false;  // length too small for the id field
  };

  // Reads the length and id of the record at `off`; an error when they cannot be trusted.
  Result<Record> read_header(uint64_t off) const;
  Status parse_cie(const Record& r, EhCie* out) const;
  // The usable CIE at section offset `off`, parsing it on demand when no walk reached it.
  const CieSlot& cie_at(uint64_t off);
  void parse_fde(const Record& r, uint64_t index, bool resynced, Diagnostics* diag);
  void emit(const EhFde& f) {
    ++fde_count_;
    if (sink_ != nullptr && *sink_)
      (*sink_)(f);
    else
      fdes_.push_back(f);
  }
  [[nodiscard]] bool in_walked_range(uint64_t off) const;
  [[nodiscard]] std::string where(std::string_view kind, uint64_t index, uint64_t off) const;

  ByteView bytes_;
  uint64_t vaddr_ = 0;
  EhFrameOptions options_;
  std::vector<EhCie> cies_;
  std::vector<EhFde> fdes_;
  std::vector<uint64_t> terminators_;
  std::vector<uint64_t> fdes_before_terminator_;  // fde_count_ when each terminator was met
  const FdeSink* sink_ = nullptr;                 // during read() only
  uint64_t fde_count_ = 0;
  std::unordered_map<uint64_t, CieSlot> cie_slots_;
  std::vector<std::pair<uint64_t, uint64_t>> walked_;  // [start, end) ranges the walk covered
  const CieSlot* last_cie_ = nullptr;                  // the CIE the previous FDE used
  uint64_t last_cie_off_ = 0;
  uint64_t damaged_ = 0;
  uint64_t skipped_bytes_ = 0;
};

}  // namespace cudatool::elf
