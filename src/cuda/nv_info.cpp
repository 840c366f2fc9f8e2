#include "cuda/nv_info.hpp"

#include <fmt/format.h>

#include <array>
#include <optional>

namespace cudatool::cuda {
namespace {

// EIATTR_* by number, 0x00 … 0x5a. One list; the number is the index.
constexpr std::array<std::string_view, 0x5b> kEiattrNames = {
    "EIATTR_ERROR",
    "EIATTR_PAD",
    "EIATTR_IMAGE_SLOT",
    "EIATTR_JUMPTABLE_RELOCS",
    "EIATTR_CTAIDZ_USED",
    "EIATTR_MAX_THREADS",
    "EIATTR_IMAGE_OFFSET",
    "EIATTR_IMAGE_SIZE",
    "EIATTR_TEXTURE_NORMALIZED",
    "EIATTR_SAMPLER_INIT",
    "EIATTR_PARAM_CBANK",
    "EIATTR_SMEM_PARAM_OFFSETS",
    "EIATTR_CBANK_PARAM_OFFSETS",
    "EIATTR_SYNC_STACK",
    "EIATTR_TEXID_SAMPID_MAP",
    "EIATTR_EXTERNS",
    "EIATTR_REQNTID",
    "EIATTR_FRAME_SIZE",
    "EIATTR_MIN_STACK_SIZE",
    "EIATTR_SAMPLER_FORCE_UNNORMALIZED",
    "EIATTR_BINDLESS_IMAGE_OFFSETS",
    "EIATTR_BINDLESS_TEXTURE_BANK",
    "EIATTR_BINDLESS_SURFACE_BANK",
    "EIATTR_KPARAM_INFO",
    "EIATTR_SMEM_PARAM_SIZE",
    "EIATTR_CBANK_PARAM_SIZE",
    "EIATTR_QUERY_NUMATTRIB",
    "EIATTR_MAXREG_COUNT",
    "EIATTR_EXIT_INSTR_OFFSETS",
    "EIATTR_S2RCTAID_INSTR_OFFSETS",
    "EIATTR_CRS_STACK_SIZE",
    "EIATTR_NEED_CNP_WRAPPER",
    "EIATTR_NEED_CNP_PATCH",
    "EIATTR_EXPLICIT_CACHING",
    "EIATTR_ISTYPEP_USED",
    "EIATTR_MAX_STACK_SIZE",
    "EIATTR_SUQ_USED",
    "EIATTR_LD_CACHEMOD_INSTR_OFFSETS",
    "EIATTR_LOAD_CACHE_REQUEST",
    "EIATTR_ATOM_SYS_INSTR_OFFSETS",
    "EIATTR_COOP_GROUP_INSTR_OFFSETS",
    "EIATTR_COOP_GROUP_MASK_REGIDS",
    "EIATTR_SW1850030_WAR",
    "EIATTR_WMMA_USED",
    "EIATTR_HAS_PRE_V10_OBJECT",
    "EIATTR_ATOMF16_EMUL_INSTR_OFFSETS",
    "EIATTR_ATOM16_EMUL_INSTR_REG_MAP",
    "EIATTR_REGCOUNT",
    "EIATTR_SW2393858_WAR",
    "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS",
    "EIATTR_SHARED_SCRATCH",
    "EIATTR_STATISTICS",
    "EIATTR_INDIRECT_BRANCH_TARGETS",
    "EIATTR_SW2861232_WAR",
    "EIATTR_SW_WAR",
    "EIATTR_CUDA_API_VERSION",
    "EIATTR_NUM_MBARRIERS",
    "EIATTR_MBARRIER_INSTR_OFFSETS",
    "EIATTR_COROUTINE_RESUME_ID_OFFSETS",
    "EIATTR_SAM_REGION_STACK_SIZE",
    "EIATTR_PER_REG_TARGET_PERF_STATS",
    "EIATTR_CTA_PER_CLUSTER",
    "EIATTR_EXPLICIT_CLUSTER",
    "EIATTR_MAX_CLUSTER_RANK",
    "EIATTR_INSTR_REG_MAP",
    "EIATTR_RESERVED_SMEM_USED",
    "EIATTR_RESERVED_SMEM_0_SIZE",
    "EIATTR_UCODE_SECTION_DATA",
    "EIATTR_UNUSED_LOAD_BYTE_OFFSET",
    "EIATTR_KPARAM_INFO_V2",
    "EIATTR_SYSCALL_OFFSETS",
    "EIATTR_SW_WAR_MEMBAR_SYS_INSTR_OFFSETS",
    "EIATTR_GRAPHICS_GLOBAL_CBANK",
    "EIATTR_SHADER_TYPE",
    "EIATTR_VRC_CTA_INIT_COUNT",
    "EIATTR_TOOLS_PATCH_FUNC",
    "EIATTR_NUM_BARRIERS",
    "EIATTR_TEXMODE_INDEPENDENT",
    "EIATTR_PERF_STATISTICS",
    "EIATTR_AT_ENTRY_FRAGMENTS",
    "EIATTR_SPARSE_MMA_MASK",
    "EIATTR_TCGEN05_1CTA_USED",
    "EIATTR_TCGEN05_2CTA_USED",
    "EIATTR_GEN_ERRBAR_AT_EXIT",
    "EIATTR_REG_RECONFIG",
    "EIATTR_ANNOTATIONS",
    "EIATTR_SANITIZE",
    "EIATTR_STACK_CANARY_TRAP_OFFSETS",
    "EIATTR_STUB_FUNCTION_KIND",
    "EIATTR_LOCAL_CTA_ASYNC_STORE_OFFSETS",
    "EIATTR_MERCURY_FINALIZER_OPTIONS",
};

}  // namespace

std::string eiattr_name(uint8_t attr) {
  if (attr < kEiattrNames.size()) return std::string(kEiattrNames[attr]);
  return fmt::format("EIATTR_{:#x}?", attr);
}

std::string eifmt_name(uint8_t format) {
  switch (format) {
    case kEifmtNval:
      return "EIFMT_NVAL";
    case kEifmtBval:
      return "EIFMT_BVAL";
    case kEifmtHval:
      return "EIFMT_HVAL";
    case kEifmtSval:
      return "EIFMT_SVAL";
    default:
      return fmt::format("EIFMT_{:#x}?", format);
  }
}

std::vector<NvInfoAttr> read_nv_info(ByteView section, std::string_view where, Diagnostics* diag) {
  std::vector<NvInfoAttr> out;
  out.reserve(section.size() / 12);  // typical record: 4-byte header + 8-byte payload
  Cursor c(section);
  while (!c.at_end()) {
    uint64_t at = c.pos();
    NvInfoAttr a;
    a.offset = section.base() + at;
    a.format = c.u8();
    a.attr = c.u8();
    switch (a.format) {
      case kEifmtNval:
        c.skip(2);
        break;
      case kEifmtBval:
        a.value = c.u8();
        c.skip(1);
        break;
      case kEifmtHval:
        a.value = c.u16();
        break;
      case kEifmtSval: {
        uint16_t n = c.u16();
        a.payload = c.bytes(n);
        // Records are 4-byte aligned; a payload size that is not a multiple of 4 is followed by
        // padding (not seen in practice, tolerated).
        uint64_t pad = (4 - (c.pos() % 4)) % 4;
        if (pad != 0 && c.remaining() >= pad) c.skip(pad);
        break;
      }
      default:
        if (diag != nullptr) {
          diag->report(make_error(fmt::format("{} record #{}", where, out.size()), "format",
                                  section.base() + at,
                                  fmt::format("unknown format {:#x} (attribute {}); the rest of "
                                              "the section cannot be framed",
                                              a.format, eiattr_name(a.attr))));
        }
        return out;
    }
    if (!c.ok()) {
      if (diag != nullptr) {
        diag->report(make_error(fmt::format("{} record #{}", where, out.size()),
                                eiattr_name(a.attr), section.base() + at,
                                fmt::format("{} record runs past the end of the section ({} "
                                            "bytes left)",
                                            eifmt_name(a.format), section.size() - at)));
      }
      return out;
    }
    out.push_back(a);
  }
  return out;
}

std::optional<KernelParam> decode_kparam(ByteView payload, bool v2) {
  if (payload.size() < 12) return std::nullopt;
  KernelParam p;
  p.ordinal = *payload.read<uint16_t>(4);
  p.offset = *payload.read<uint16_t>(6);
  if (v2) {
    p.size = *payload.read<uint16_t>(8);
    uint16_t attrs = *payload.read<uint16_t>(10);
    p.in_cbank = true;
    p.space = (attrs >> 8) & 0xf;
    return p;
  }
  uint32_t packed = *payload.read<uint32_t>(8);
  p.log_alignment = packed & 0xff;
  p.space = (packed >> 8) & 0xf;
  p.cbank = (packed >> 12) & 0x1f;
  p.in_cbank = ((packed >> 17) & 1) == 0;
  p.size = packed >> 18;
  return p;
}

}  // namespace cudatool::cuda
