// .nv.info and .nv.info.<function> sections of a CUDA ELF image (section type SHT_CUDA_INFO,
// 0x70000000): a stream of attribute records, each 4-byte aligned,
//   u8 format (EIFMT_NVAL 1, EIFMT_BVAL 2, EIFMT_HVAL 3, EIFMT_SVAL 4), u8 attribute (EIATTR_*),
//   then NVAL: 2 bytes of padding; BVAL: u8 value + 1 pad; HVAL: u16 value;
//   SVAL: u16 size + that many bytes.
// The attribute names are the EIATTR_* strings of ptxas / cuobjdump; their numbers follow the
// order documented by public decoders and cross-checked with `cuobjdump -elf` at test time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool::cuda {

enum : uint8_t { kEifmtNval = 1, kEifmtBval = 2, kEifmtHval = 3, kEifmtSval = 4 };

enum : uint8_t {
  kEiattrParamCbank = 0x0a,
  kEiattrMaxThreads = 0x05,
  kEiattrReqntid = 0x10,
  kEiattrFrameSize = 0x11,
  kEiattrMinStackSize = 0x12,
  kEiattrKparamInfo = 0x17,
  kEiattrCbankParamSize = 0x19,
  kEiattrMaxregCount = 0x1b,
  kEiattrCrsStackSize = 0x1e,
  kEiattrMaxStackSize = 0x23,
  kEiattrRegcount = 0x2f,
  kEiattrCudaApiVersion = 0x37,
  kEiattrKparamInfoV2 = 0x45,
};

struct NvInfoAttr {
  uint8_t format = 0;
  uint8_t attr = 0;
  uint64_t offset = 0;  // file offset of the record
  // BVAL / HVAL: the value; SVAL: 0.
  uint32_t value = 0;
  ByteView payload;  // SVAL bytes (empty for the other formats)
};

// Reads every record of one section. A record that runs past the end, or an unknown format,
// ends the walk (nothing after it can be framed) and is reported; records before it are kept.
std::vector<NvInfoAttr> read_nv_info(ByteView section, std::string_view where, Diagnostics* diag);

// "EIATTR_REGCOUNT"; "EIATTR_0x5f?" when unknown.
std::string eiattr_name(uint8_t attr);
// "EIFMT_SVAL"; "EIFMT_0x9?" when unknown.
std::string eifmt_name(uint8_t format);

// One kernel parameter from EIATTR_KPARAM_INFO (SVAL, 12 bytes: u32 index, u16 ordinal,
// u16 offset, u32 packed: bits 0-7 log2 of pointee alignment, 8-11 space, 12-16 cbank, 17 set
// when the parameter is not in a constant bank, 18-31 size in bytes).
struct KernelParam {
  uint32_t ordinal = 0;
  uint32_t offset = 0;  // in the parameter constant bank
  uint32_t size = 0;
  uint32_t log_alignment = 0;
  uint32_t space = 0;
  uint32_t cbank = 0;
  bool in_cbank = true;
};
// Decodes an EIATTR_KPARAM_INFO payload; nothing when it is too short. EIATTR_KPARAM_INFO_V2
// (large parameters) keeps index, ordinal and offset but stores the size as a plain u16 at
// byte 8 followed by a u16 of attributes; `v2` selects that layout.
std::optional<KernelParam> decode_kparam(ByteView payload, bool v2);

}  // namespace cudatool::cuda
