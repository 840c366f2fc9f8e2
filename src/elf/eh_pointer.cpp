#include "elf/eh_pointer.hpp"

#include <fmt/format.h>

namespace cudatool::elf {

bool eh_encoding_valid(uint8_t enc) {
  if (enc == kDwEhPeOmit) return true;
  switch (enc & 0x0f) {
    case kDwEhPeAbsptr:
    case kDwEhPeUleb128:
    case kDwEhPeUdata2:
    case kDwEhPeUdata4:
    case kDwEhPeUdata8:
    case kDwEhPeSleb128:
    case kDwEhPeSdata2:
    case kDwEhPeSdata4:
    case kDwEhPeSdata8:
      break;
    default:
      return false;
  }
  switch (enc & 0x70) {
    case 0:
    case kDwEhPePcrel:
    case kDwEhPeTextrel:
    case kDwEhPeDatarel:
    case kDwEhPeFuncrel:
    case kDwEhPeAligned:
      return true;
    default:
      return false;
  }
}

unsigned eh_pointer_size(uint8_t enc) {
  switch (enc & 0x0f) {
    case kDwEhPeAbsptr:
      return 8;
    case kDwEhPeUdata2:
    case kDwEhPeSdata2:
      return 2;
    case kDwEhPeUdata4:
    case kDwEhPeSdata4:
      return 4;
    case kDwEhPeUdata8:
    case kDwEhPeSdata8:
      return 8;
    default:
      return 0;
  }
}

std::string eh_encoding_name(uint8_t enc) {
  if (enc == kDwEhPeOmit) return "omit";
  if (!eh_encoding_valid(enc)) return fmt::format("{:#04x}?", enc);
  static const char* const kFormats[16] = {
      "absptr", "uleb128", "udata2", "udata4", "udata8", "", "", "",
      "",       "sleb128", "sdata2", "sdata4", "sdata8", "", "", ""};
  static const char* const kApps[8] = {"",        "pcrel",   "textrel", "datarel",
                                       "funcrel", "aligned", "",        ""};
  std::string s = kFormats[enc & 0x0f];
  if ((enc & 0x70) != 0) s += std::string("|") + kApps[(enc & 0x70) >> 4];
  if ((enc & kDwEhPeIndirect) != 0) s += "|indirect";
  return s;
}

std::optional<uint64_t> read_eh_pointer(Cursor& c, uint8_t enc, const EhBases& bases,
                                        bool* indirect) {
  if (enc == kDwEhPeOmit || !eh_encoding_valid(enc)) {
    c.fail("unknown or omitted pointer encoding");
    return std::nullopt;
  }
  if ((enc & 0x70) == kDwEhPeAligned) {
    uint64_t aligned = (c.pos() + 7) & ~uint64_t{7};
    c.skip(aligned - c.pos());
  }
  const uint64_t field_vaddr = bases.section_vaddr + c.pos();
  uint64_t v = 0;
  switch (enc & 0x0f) {
    case kDwEhPeAbsptr:
      v = c.u64();
      break;
    case kDwEhPeUleb128:
      v = c.uleb128();
      break;
    case kDwEhPeUdata2:
      v = c.u16();
      break;
    case kDwEhPeUdata4:
      v = c.u32();
      break;
    case kDwEhPeUdata8:
      v = c.u64();
      break;
    case kDwEhPeSleb128:
      v = static_cast<uint64_t>(c.sleb128());
      break;
    case kDwEhPeSdata2:
      v = static_cast<uint64_t>(static_cast<int64_t>(c.s16()));
      break;
    case kDwEhPeSdata4:
      v = static_cast<uint64_t>(static_cast<int64_t>(c.s32()));
      break;
    case kDwEhPeSdata8:
      v = static_cast<uint64_t>(c.s64());
      break;
    default:
      break;
  }
  if (!c.ok()) return std::nullopt;
  // Unsigned wrap-around is the intended arithmetic for relative encodings.
  switch (enc & 0x70) {
    case kDwEhPePcrel:
      v += field_vaddr;
      break;
    case kDwEhPeTextrel:
      v += bases.text;
      break;
    case kDwEhPeDatarel:
      v += bases.data;
      break;
    case kDwEhPeFuncrel:
      v += bases.func;
      break;
    default:
      break;
  }
  if (indirect != nullptr) *indirect = (enc & kDwEhPeIndirect) != 0;
  return v;
}

Result<EhFrameHdr> read_eh_frame_hdr(ByteView bytes, uint64_t vaddr) {
  Cursor c(bytes);
  EhFrameHdr h;
  h.version = c.u8();
  h.eh_frame_ptr_enc = c.u8();
  h.fde_count_enc = c.u8();
  h.table_enc = c.u8();
  if (!c.ok()) {
    return make_error(
        ".eh_frame_hdr", "", bytes.base(),
        fmt::format("section of {} bytes is shorter than its 4-byte header", bytes.size()));
  }
  if (h.version != 1) {
    return make_error(".eh_frame_hdr", "version", bytes.base(),
                      fmt::format("{} (only version 1 is defined)", h.version));
  }
  EhBases bases{vaddr, 0, vaddr, 0};
  auto ptr = read_eh_pointer(c, h.eh_frame_ptr_enc, bases);
  if (!ptr) {
    return make_error(".eh_frame_hdr", "eh_frame_ptr", bytes.base() + 4,
                      fmt::format("cannot read with encoding {}: {}",
                                  eh_encoding_name(h.eh_frame_ptr_enc), c.error_reason()));
  }
  h.eh_frame_ptr = *ptr;
  if (h.fde_count_enc == kDwEhPeOmit) return h;
  uint64_t count_at = c.pos();
  auto count = read_eh_pointer(c, h.fde_count_enc, bases);
  if (!count) {
    return make_error(".eh_frame_hdr", "fde_count", bytes.base() + count_at,
                      fmt::format("cannot read with encoding {}: {}",
                                  eh_encoding_name(h.fde_count_enc), c.error_reason()));
  }
  h.fde_count = *count;
  h.table_vaddr = vaddr + c.pos();
  if (h.table_enc == kDwEhPeOmit) return h;
  unsigned esize = eh_pointer_size(h.table_enc);
  if (esize == 0 || !eh_encoding_valid(h.table_enc)) {
    return make_error(".eh_frame_hdr", "table_enc", bytes.base() + 3,
                      fmt::format("{} is not a fixed-size encoding usable for a search table",
                                  eh_encoding_name(h.table_enc)));
  }
  uint64_t room = c.remaining() / (2ULL * esize);
  if (*count > room) {
    return make_error(".eh_frame_hdr", "fde_count", bytes.base() + count_at,
                      fmt::format("{} entries of {} bytes do not fit in the {} bytes left", *count,
                                  2 * esize, c.remaining()));
  }
  h.table = c.bytes(*count * 2 * esize);
  return h;
}

}  // namespace cudatool::elf
