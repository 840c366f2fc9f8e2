// DWARF exception-header pointer encodings (DW_EH_PE_*), as used by .eh_frame and
// .eh_frame_hdr. Layout: LSB Core Specification 5.0, "Exception Frames" (DWARF Exception Header
// Encoding) and ".eh_frame_hdr".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool::elf {

inline constexpr uint8_t kDwEhPeOmit = 0xff;
inline constexpr uint8_t kDwEhPeAbsptr = 0x00;
inline constexpr uint8_t kDwEhPeUleb128 = 0x01;
inline constexpr uint8_t kDwEhPeUdata2 = 0x02;
inline constexpr uint8_t kDwEhPeUdata4 = 0x03;
inline constexpr uint8_t kDwEhPeUdata8 = 0x04;
inline constexpr uint8_t kDwEhPeSleb128 = 0x09;
inline constexpr uint8_t kDwEhPeSdata2 = 0x0a;
inline constexpr uint8_t kDwEhPeSdata4 = 0x0b;
inline constexpr uint8_t kDwEhPeSdata8 = 0x0c;
inline constexpr uint8_t kDwEhPePcrel = 0x10;
inline constexpr uint8_t kDwEhPeTextrel = 0x20;
inline constexpr uint8_t kDwEhPeDatarel = 0x30;
inline constexpr uint8_t kDwEhPeFuncrel = 0x40;
inline constexpr uint8_t kDwEhPeAligned = 0x50;
inline constexpr uint8_t kDwEhPeIndirect = 0x80;

// Bases that relative encodings add. `pc` is filled in by the reader (the address of the
// encoded field itself); the others come from the caller.
struct EhBases {
  uint64_t section_vaddr = 0;  // virtual address of byte 0 of the cursor's view
  uint64_t text = 0;           // DW_EH_PE_textrel base
  uint64_t data = 0;           // DW_EH_PE_datarel base (.eh_frame_hdr start for its table)
  uint64_t func = 0;           // DW_EH_PE_funcrel base
};

// Reads one encoded pointer at the cursor. Nothing (and a cursor failure) when the encoding is
// unknown, the value runs past the end, or the encoding is DW_EH_PE_omit. DW_EH_PE_indirect is
// reported through `indirect` (the caller may resolve it); the value returned is the address.
std::optional<uint64_t> read_eh_pointer(Cursor& c, uint8_t encoding, const EhBases& bases,
                                        bool* indirect = nullptr);
// Size in bytes of a fixed-size encoding; 0 for LEB128 or unknown formats.
unsigned eh_pointer_size(uint8_t encoding);
// "sdata4|datarel" style description for messages; "0x?? ?" when unknown.
std::string eh_encoding_name(uint8_t encoding);
bool eh_encoding_valid(uint8_t encoding);

// .eh_frame_hdr: version 1, eh_frame_ptr_enc, fde_count_enc, table_enc, then eh_frame_ptr,
// fde_count and a sorted table of (initial location, FDE address) pairs.
struct EhFrameHdr {
  uint8_t version = 0;
  uint8_t eh_frame_ptr_enc = 0;
  uint8_t fde_count_enc = 0;
  uint8_t table_enc = 0;
  uint64_t eh_frame_ptr = 0;
  std::optional<uint64_t> fde_count;  // absent when fde_count_enc is omit
  ByteView table;                     // the search table bytes (may be empty)
  uint64_t table_vaddr = 0;
};

// `bytes` are the section contents, `vaddr` its virtual address. The table must hold
// fde_count entries of the table encoding, which is checked against the section size.
Result<EhFrameHdr> read_eh_frame_hdr(ByteView bytes, uint64_t vaddr);

}  // namespace cudatool::elf
