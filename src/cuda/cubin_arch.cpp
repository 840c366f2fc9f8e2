#include "cuda/cubin_arch.hpp"

#include <fmt/format.h>

#include "elf/notes.hpp"

namespace cudatool::cuda {
namespace {

// ABI 7 bits (LLVM BinaryFormat/ELF.h, EF_CUDA_*; cuobjdump's names).
constexpr uint32_t kV7SmMask = 0xff;
constexpr uint32_t kV7VirtualShift = 16;
constexpr uint32_t kV7VirtualMask = 0xff;
constexpr uint32_t kTexmodeUnified = 0x100;
constexpr uint32_t kTexmodeIndependent = 0x200;
constexpr uint32_t kAddress64 = 0x400;
constexpr uint32_t kV7Bit11 = 0x800;  // EF_CUDA_ACCELERATORS (sm_90+) / EF_CUDA_SW_1729687
constexpr uint32_t kSwFlagV2 = 0x1000;
// ABI 8.
constexpr uint32_t kV8SmShift = 8;
constexpr uint32_t kV8SmMask = 0xff;
constexpr uint32_t kV8Accelerators = 0x8;

constexpr uint32_t kNoteTypeCuInfo = 1000;
constexpr uint32_t kNoteTypeTkInfo = 2000;
constexpr std::string_view kNvidiaOwner = "NVIDIA Corp";

void add_unknown(CubinTarget& t, uint32_t bits) {
  t.unknown_flag_bits = bits;
  if (bits != 0) t.flag_names.push_back(fmt::format("{:#x}?", bits));
}

std::string sm_name(uint32_t sm, std::string_view suffix = "") {
  if (sm == 0) return "sm_?";
  return fmt::format("sm_{}{}", sm, suffix);
}

}  // namespace

std::string toolkit_version_string(uint32_t v) {
  return fmt::format("{}.{}", v / 10, v % 10);
}

CubinTarget decode_e_flags(uint8_t abi_version, uint32_t e_flags, uint32_t e_version) {
  CubinTarget t;
  t.abi_version = abi_version;
  t.e_flags = e_flags;
  uint32_t known = 0;
  if (abi_version == kCudaAbiV8) {
    t.sm = (e_flags >> kV8SmShift) & kV8SmMask;
    known |= kV8SmMask << kV8SmShift;
    t.arch = sm_name(t.sm);
    t.arch_evidence = "e_flags";
    if ((e_flags & kV8Accelerators) != 0) {
      t.flag_names.push_back("EF_CUDA_ACCELERATORS");
      t.arch = sm_name(t.sm, "a");
      t.arch_evidence = "e_flags EF_CUDA_ACCELERATORS";
    }
    known |= kV8Accelerators;
    add_unknown(t, e_flags & ~known);
    // e_version is 1 (EV_CURRENT) here; the toolkit version moved to .note.nv.cuinfo.
    return t;
  }
  // ABI 7 and older images that share its layout.
  t.sm = e_flags & kV7SmMask;
  known |= kV7SmMask;
  uint32_t vsm = (e_flags >> kV7VirtualShift) & kV7VirtualMask;
  known |= kV7VirtualMask << kV7VirtualShift;
  if (vsm != 0) {
    t.virtual_sm = vsm;
    t.virtual_arch = fmt::format("compute_{}", vsm);
    t.virtual_evidence = "e_flags";
  }
  if ((e_flags & kTexmodeUnified) != 0) t.flag_names.push_back("EF_CUDA_TEXMODE_UNIFIED");
  if ((e_flags & kTexmodeIndependent) != 0) t.flag_names.push_back("EF_CUDA_TEXMODE_INDEPENDENT");
  t.address_bits = (e_flags & kAddress64) != 0 ? 64 : 32;
  t.address_evidence = "e_flags EF_CUDA_64BIT_ADDRESS";
  if ((e_flags & kAddress64) != 0) t.flag_names.push_back("EF_CUDA_64BIT_ADDRESS");
  t.arch = sm_name(t.sm);
  t.arch_evidence = "e_flags";
  if ((e_flags & kV7Bit11) != 0) {
    if (t.sm >= 90) {
      t.flag_names.push_back("EF_CUDA_ACCELERATORS");
      t.arch = sm_name(t.sm, "a");
      t.arch_evidence = "e_flags EF_CUDA_ACCELERATORS";
    } else {
      t.flag_names.push_back("EF_CUDA_SW_1729687");
    }
  }
  if ((e_flags & kSwFlagV2) != 0) t.flag_names.push_back("EF_CUDA_SW_FLAG_V2");
  known |= kTexmodeUnified | kTexmodeIndependent | kAddress64 | kV7Bit11 | kSwFlagV2;
  add_unknown(t, e_flags & ~known);
  // Before ABI 8 ptxas stored the toolkit version in e_version (124 = CUDA 12.4, as cuobjdump
  // -elf prints "toolkit=124"); 1 means it was not recorded.
  if (e_version > 1) {
    t.toolkit_version = e_version;
    t.toolkit_evidence = "e_version";
  }
  return t;
}

std::optional<ArchOption> arch_from_options(std::string_view options) {
  size_t pos = 0;
  while ((pos = options.find("-arch", pos)) != std::string_view::npos) {
    size_t i = pos + 5;
    pos = i;
    while (i < options.size() && (options[i] == ' ' || options[i] == '=')) ++i;
    // ptxas: "-arch sm_90a"; the assembler behind some CUDA 13 libraries: "-arch SM80".
    if (options.substr(i, 3) == "sm_" || options.substr(i, 3) == "SM_") {
      i += 3;
    } else if (options.substr(i, 2) == "SM") {
      i += 2;
    } else {
      continue;
    }
    uint32_t sm = 0;
    size_t digits = 0;
    while (i < options.size() && options[i] >= '0' && options[i] <= '9' && digits < 4) {
      sm = sm * 10 + static_cast<uint32_t>(options[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0) continue;
    ArchOption a;
    a.sm = sm;
    if (i < options.size() && options[i] >= 'a' && options[i] <= 'z') {
      a.suffix = options[i];
    } else if (i < options.size() && options[i] >= 'A' && options[i] <= 'Z') {
      a.suffix = static_cast<char>(options[i] - 'A' + 'a');
    }
    return a;
  }
  return std::nullopt;
}

std::optional<uint32_t> release_from_tool_version(std::string_view tool_version) {
  auto at = tool_version.find("release ");
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + 8;
  uint32_t major = 0, minor = 0;
  size_t digits = 0;
  while (i < tool_version.size() && tool_version[i] >= '0' && tool_version[i] <= '9' &&
         digits < 3) {
    major = major * 10 + static_cast<uint32_t>(tool_version[i++] - '0');
    ++digits;
  }
  if (digits == 0 || i + 1 >= tool_version.size() || tool_version[i] != '.') return std::nullopt;
  char m = tool_version[i + 1];
  if (m < '0' || m > '9') return std::nullopt;
  minor = static_cast<uint32_t>(m - '0');
  if (i + 2 < tool_version.size() && tool_version[i + 2] >= '0' && tool_version[i + 2] <= '9')
    return std::nullopt;  // a two-digit minor does not fit major*10+minor
  return major * 10 + minor;
}

namespace {

// The toolkit note (.note.nv.tkinfo): a 24-byte header, then the strings it points to.
std::optional<ToolkitNote> read_tkinfo(const elf::SectionHeader& sh, const elf::Note& n,
                                       Diagnostics* diag) {
  constexpr uint64_t kHeader = 24;
  if (n.desc.size() < kHeader) {
    if (diag != nullptr) {
      diag->report(make_error(elf::describe(sh), "descsz", n.offset,
                              fmt::format("tkinfo descriptor of {} bytes (expected at "
                                          "least 24)",
                                          n.desc.size())));
    }
    return std::nullopt;
  }
  ToolkitNote k;
  k.version = *n.desc.read<uint32_t>(0);
  k.offset = n.offset;
  ByteView strings = *n.desc.sub(kHeader);
  std::string_view* fields[] = {&k.object_name, &k.tool_name, &k.tool_version, &k.tool_branch,
                                &k.tool_options};
  for (size_t i = 0; i < 5; ++i) {
    uint32_t off = *n.desc.read<uint32_t>(4 + 4 * i);
    auto s = strings.cstring(off);
    if (!s) {
      if (diag != nullptr) {
        diag->report(make_error(elf::describe(sh), fmt::format("string #{}", i), n.offset,
                                fmt::format("offset {:#x} is outside the {} string bytes "
                                            "or unterminated",
                                            off, strings.size())));
      }
      continue;
    }
    *fields[i] = *s;
  }
  return k;
}

}  // namespace

void refine_target_from_notes(const elf::ElfImage& elf, CubinTarget& t, Diagnostics* diag) {
  for (const auto& sh : elf.sections()) {
    if (sh.sh_type != SHT_NOTE || !sh.in_file) continue;
    if (!sh.name.starts_with(".note.nv.")) continue;
    auto notes = elf::read_section_notes(elf, sh, diag);
    if (!notes) continue;
    for (const auto& n : *notes) {
      if (n.name != kNvidiaOwner) continue;
      if (n.type == kNoteTypeCuInfo) {
        // ptxas writes 8 bytes, other CUDA 13 tools 6 (no padding): the toolkit version is a
        // u16 either way (130 = 13.0).
        if (n.desc.size() < 6) {
          if (diag != nullptr) {
            diag->report(make_error(
                elf::describe(sh), "descsz", n.offset,
                fmt::format("cuinfo descriptor of {} bytes (expected 6 or 8)", n.desc.size())));
          }
          continue;
        }
        CudaInfoNote c;
        c.version = *n.desc.read<uint16_t>(0);
        c.virtual_sm = *n.desc.read<uint16_t>(2);
        // Version 2 holds the toolkit in bytes 4-5. Version 1, which libcuda 580.159.04's images
        // from an internal toolchain branch carry in a section named .note.nv.cuver (12 bytes:
        // {u16 1, u16 virtual SM, u32 1, u32 1}), holds none: its third field is not a toolkit.
        c.toolkit_version = c.version >= 2 ? *n.desc.read<uint16_t>(4) : 0;
        c.offset = n.offset;
        t.cuinfo = c;
      } else if (n.type == kNoteTypeTkInfo) {
        if (auto k = read_tkinfo(sh, n, diag)) t.tkinfo = *k;
      }
    }
  }
  if (t.cuinfo) {
    if (!t.virtual_sm && t.cuinfo->virtual_sm != 0) {
      t.virtual_sm = t.cuinfo->virtual_sm;
      t.virtual_arch = fmt::format("compute_{}", t.cuinfo->virtual_sm);
      t.virtual_evidence = ".note.nv.cuinfo";
    }
    if (!t.toolkit_version && t.cuinfo->toolkit_version != 0) {
      t.toolkit_version = t.cuinfo->toolkit_version;
      t.toolkit_evidence = ".note.nv.cuinfo";
    }
  }
  if (t.tkinfo) {
    if (!t.toolkit_version) {
      if (auto v = release_from_tool_version(t.tkinfo->tool_version)) {
        t.toolkit_version = *v;
        t.toolkit_evidence =
            fmt::format(".note.nv.tkinfo (release {})", toolkit_version_string(*v));
      }
    }
    std::string_view opts = t.tkinfo->tool_options;
    if (auto a = arch_from_options(opts)) {
      if (a->sm != t.sm) {
        if (diag != nullptr) {
          diag->report(make_error(".note.nv.tkinfo", "tool_options", t.tkinfo->offset,
                                  fmt::format("ptxas options say sm_{}{} but e_flags say sm_{}; "
                                              "e_flags kept",
                                              a->sm, a->suffix, t.sm)));
        }
      } else if (!a->suffix.empty() && t.arch != sm_name(t.sm, a->suffix)) {
        t.arch = sm_name(t.sm, a->suffix);
        t.arch_evidence = fmt::format(".note.nv.tkinfo (ptxas -arch sm_{}{})", a->sm, a->suffix);
      } else if (a->suffix.empty() && t.arch_evidence == "e_flags") {
        t.arch_evidence = fmt::format("e_flags, .note.nv.tkinfo agrees (ptxas -arch sm_{})", a->sm);
      }
    }
    if (!t.address_bits) {
      if (opts.find("-m 64") != std::string_view::npos) {
        t.address_bits = 64;
        t.address_evidence = ".note.nv.tkinfo (ptxas -m 64)";
      } else if (opts.find("-m 32") != std::string_view::npos) {
        t.address_bits = 32;
        t.address_evidence = ".note.nv.tkinfo (ptxas -m 32)";
      }
    }
  }
}

bool arch_less(std::string_view a, std::string_view b) {
  struct Key {
    std::string_view prefix;  // up to the first digit
    bool numbered = false;
    uint64_t number = 0;
    std::string_view suffix;  // after the digits
  };
  auto key = [](std::string_view s) {
    Key k;
    size_t i = 0;
    while (i < s.size() && (s[i] < '0' || s[i] > '9')) ++i;
    k.prefix = s.substr(0, i);
    size_t j = i;
    // At most 18 digits, so that the number fits; longer runs go to the suffix.
    while (j < s.size() && j - i < 18 && s[j] >= '0' && s[j] <= '9') {
      k.number = k.number * 10 + static_cast<uint64_t>(s[j] - '0');
      ++j;
    }
    k.numbered = j > i;
    k.suffix = s.substr(j);
    return k;
  };
  Key x = key(a), y = key(b);
  if (x.prefix != y.prefix) return x.prefix < y.prefix;
  if (x.numbered != y.numbered) return x.numbered;
  if (x.number != y.number) return x.number < y.number;
  if (x.suffix != y.suffix) return x.suffix < y.suffix;
  return false;
}

}  // namespace cudatool::cuda
