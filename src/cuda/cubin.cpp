#include "cuda/cubin.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace cudatool::cuda {
namespace {

constexpr uint64_t kEhdrSize = 64;
constexpr uint64_t kPhdrSize = 56;
constexpr uint64_t kShdrSize = 64;
constexpr uint64_t kSymSize = 24;
constexpr uint32_t kShtCudaInfo = 0x70000000;

// One attribute value that names a function: {u32 symbol index, u32 value}.
struct SymValue {
  uint32_t sym = 0;
  uint32_t value = 0;
};
std::optional<SymValue> sym_value(const NvInfoAttr& a) {
  if (a.format != kEifmtSval || a.payload.size() < 8) return std::nullopt;
  return SymValue{*a.payload.read<uint32_t>(0), *a.payload.read<uint32_t>(4)};
}

std::optional<std::array<uint32_t, 3>> three_u32(const NvInfoAttr& a) {
  if (a.format != kEifmtSval || a.payload.size() < 12) return std::nullopt;
  return std::array<uint32_t, 3>{*a.payload.read<uint32_t>(0), *a.payload.read<uint32_t>(4),
                                 *a.payload.read<uint32_t>(8)};
}

// Applies one attribute to kernel k. `per_kernel`: the record came from .nv.info.<name>, whose
// single-value records carry no symbol index. Returns false when the attribute is not decoded.
bool apply(Kernel& k, const NvInfoAttr& a, bool per_kernel) {
  auto scalar = [&]() -> std::optional<uint32_t> {
    if (a.format == kEifmtHval || a.format == kEifmtBval) return a.value;
    if (a.format == kEifmtSval && a.payload.size() == 4) return *a.payload.read<uint32_t>(0);
    if (a.format == kEifmtSval && a.payload.size() >= 8) return *a.payload.read<uint32_t>(4);
    return std::nullopt;
  };
  switch (a.attr) {
    case kEiattrRegcount:
      if (auto v = scalar()) {
        k.registers = *v;
        k.registers_source = "EIATTR_REGCOUNT";
        return true;
      }
      return false;
    case kEiattrFrameSize:
      return (k.frame_size = scalar()).has_value();
    case kEiattrMinStackSize:
      return (k.min_stack_size = scalar()).has_value();
    case kEiattrMaxStackSize:
      return (k.max_stack_size = scalar()).has_value();
    case kEiattrCrsStackSize:
      return (k.crs_stack_size = scalar()).has_value();
    case kEiattrMaxregCount:
      return (k.maxreg_count = scalar()).has_value();
    case kEiattrCudaApiVersion:
      return (k.cuda_api_version = scalar()).has_value();
    case kEiattrCbankParamSize:
      return (k.param_size = scalar()).has_value();
    case kEiattrParamCbank:
      if (a.format == kEifmtSval && a.payload.size() >= 8) {
        k.param_cbank_offset = *a.payload.read<uint16_t>(4);
        if (!k.param_size) k.param_size = *a.payload.read<uint16_t>(6);
        return true;
      }
      return false;
    case kEiattrKparamInfo:
    case kEiattrKparamInfoV2:
      if (auto p = decode_kparam(a.payload, a.attr == kEiattrKparamInfoV2)) {
        k.params.push_back(*p);
        return true;
      }
      return false;
    case kEiattrMaxThreads:
      return (k.max_threads = three_u32(a)).has_value();
    case kEiattrReqntid:
      return (k.reqntid = three_u32(a)).has_value();
    default:
      (void)per_kernel;
      return false;
  }
}

// Attributes of the global .nv.info that carry {symbol index, value}.
bool names_a_symbol(uint8_t attr) {
  switch (attr) {
    case kEiattrRegcount:
    case kEiattrFrameSize:
    case kEiattrMinStackSize:
    case kEiattrMaxStackSize:
    case kEiattrCrsStackSize:
      return true;
    default:
      return false;
  }
}

void note_other(std::vector<uint8_t>& v, uint8_t attr) {
  if (std::find(v.begin(), v.end(), attr) == v.end()) v.push_back(attr);
}

}  // namespace

Result<uint64_t> cuda_elf_extent(ByteView f) {
  if (f.size() >= 20) {
    uint16_t machine = *f.read<uint16_t>(18);
    if (machine != kEmCuda) {
      return make_error(
          "ELF header", "e_machine", f.base() + 18,
          fmt::format("{} ({}), not EM_CUDA (190)", machine, elf::machine_name(machine)));
    }
  }
  return elf_extent(f);
}

Result<uint64_t> elf_extent(ByteView f) {
  const uint64_t avail = f.size();
  if (avail < kEhdrSize) {
    return make_error("ELF header", "", f.base(),
                      fmt::format("only {} bytes left before the end of the region (an ELF64 "
                                  "header is 64)",
                                  avail));
  }
  if (std::memcmp(f.data(), ELFMAG, SELFMAG) != 0) {
    return make_error("ELF header", "e_ident", f.base(), "no \\x7fELF magic");
  }
  if (f.data()[EI_CLASS] != ELFCLASS64 || f.data()[EI_DATA] != ELFDATA2LSB) {
    return make_error("ELF header", "EI_CLASS", f.base() + EI_CLASS,
                      fmt::format("class {} / data {}: not a little-endian ELF64 header",
                                  f.data()[EI_CLASS], f.data()[EI_DATA]));
  }
  uint64_t phoff = *f.read<uint64_t>(32);
  uint64_t shoff = *f.read<uint64_t>(40);
  uint16_t phentsize = *f.read<uint16_t>(54);
  uint16_t phnum = *f.read<uint16_t>(56);
  uint16_t shentsize = *f.read<uint16_t>(58);
  uint16_t shnum = *f.read<uint16_t>(60);
  uint64_t end = kEhdrSize;
  auto past = [&](std::string_view what, std::string_view field, uint64_t field_at, uint64_t off,
                  uint64_t len) -> std::optional<Error> {
    if (!f.contains(off, len)) {
      return make_error(std::string(what), std::string(field), f.base() + field_at,
                        fmt::format("{:#x} + {:#x} runs past the {:#x} bytes left in the region",
                                    off, len, avail));
    }
    end = std::max(end, off + len);
    return std::nullopt;
  };
  if (phnum > 0) {
    if (phentsize != kPhdrSize) {
      return make_error("ELF header", "e_phentsize", f.base() + 54,
                        fmt::format("{} (ELF64 program headers are 56 bytes)", phentsize));
    }
    if (auto e = past("program header table", "e_phoff", 32, phoff, phnum * kPhdrSize)) return *e;
    for (uint64_t i = 0; i < phnum; ++i) {
      uint64_t at = phoff + i * kPhdrSize;
      uint64_t off = *f.read<uint64_t>(at + 8);
      uint64_t filesz = *f.read<uint64_t>(at + 32);
      if (filesz == 0) continue;
      if (auto e = past(fmt::format("program header [{}]", i), "p_offset", at + 8, off, filesz))
        return *e;
    }
  }
  if (shoff != 0 && shnum > 0) {
    if (shentsize != kShdrSize) {
      return make_error("ELF header", "e_shentsize", f.base() + 58,
                        fmt::format("{} (ELF64 section headers are 64 bytes)", shentsize));
    }
    if (auto e = past("section header table", "e_shoff", 40, shoff, shnum * kShdrSize)) return *e;
    for (uint64_t i = 0; i < shnum; ++i) {
      uint64_t at = shoff + i * kShdrSize;
      uint32_t type = *f.read<uint32_t>(at + 4);
      uint64_t off = *f.read<uint64_t>(at + 24);
      uint64_t size = *f.read<uint64_t>(at + 32);
      if (type == SHT_NOBITS || type == SHT_NULL || size == 0) continue;
      if (auto e = past(fmt::format("section [{}]", i), "sh_offset", at + 24, off, size)) return *e;
    }
  } else if (shoff != 0 && shnum == 0) {
    // Extended numbering (e_shnum 0, count in section 0's sh_size) is not used by cubins; treat
    // the table as its first entry only.
    if (auto e = past("section header table", "e_shoff", 40, shoff, kShdrSize)) return *e;
  }
  return end;
}

std::string cuda_section_type_name(uint32_t t) {
  switch (t) {
    case 0x70000000:
      return "CUDA_INFO";
    case 0x70000001:
      return "CUDA_CALLGRAPH";
    case 0x70000002:
      return "CUDA_PROTOTYPE";
    case 0x70000003:
      return "CUDA_RESOLVED_RELA";
    case 0x70000004:
      return "CUDA_METADATA";
    case 0x70000006:
      return "CUDA_CONSTANT";
    case 0x70000007:
      return "CUDA_GLOBAL";
    case 0x70000008:
      return "CUDA_GLOBAL_INIT";
    case 0x70000009:
      return "CUDA_LOCAL";
    case 0x7000000a:
      return "CUDA_SHARED";
    case 0x7000000b:
      return "CUDA_RELOCINFO";
    case 0x7000000e:
      return "CUDA_UFT";
    case 0x70000010:
      return "CUDA_UFT_INDEX";
    case 0x70000011:
      return "CUDA_UFT_ENTRY";
    case 0x70000012:
      return "CUDA_UDT";
    case 0x70000014:
      return "CUDA_UDT_ENTRY";
    case 0x70000015:
      return "CUDA_RESERVED_SHARED";
    default:
      if (t >= 0x70000064 && t <= 0x70000075)
        return fmt::format("CUDA_CONSTANT_B{}", t - 0x70000064);
      return elf::section_type_name(t);
  }
}

namespace {

// The symbol table read in place, with its string table.
struct SymbolTable {
  ByteView symbols, names;
  [[nodiscard]] uint64_t count() const { return symbols.size() / kSymSize; }
  [[nodiscard]] std::string_view name(uint32_t index) const {
    if (index >= count()) return {};
    auto n = names.cstring(load_le<uint32_t>(symbols.data() + uint64_t{index} * kSymSize));
    return n ? *n : std::string_view();
  }
};

// Where the kernels are, by symbol index, by text section and by name.
struct KernelIndex {
  std::unordered_map<uint32_t, size_t> by_symbol;  // symbol index -> kernel
  std::unordered_map<uint32_t, size_t> by_shndx;   // text section -> first kernel in it
  std::unordered_map<std::string_view, size_t> by_name;
};

// The image's SHT_SYMTAB and the string table it links, or empty views (damage reported).
SymbolTable find_symbol_table(const Cubin& c, Diagnostics* diag) {
  ByteView symbols, names;
  if (const auto* symtab = c.elf.section_of_type(SHT_SYMTAB);
      symtab != nullptr && symtab->in_file) {
    const auto* strtab = c.elf.section_at(symtab->sh_link);
    if (strtab == nullptr || strtab->sh_type != SHT_STRTAB || !strtab->in_file) {
      if (diag != nullptr) {
        diag->report(make_error(elf::describe(*symtab), "sh_link", std::nullopt,
                                fmt::format("{} does not name a string table", symtab->sh_link)));
      }
    } else if (symtab->sh_entsize != 0 && symtab->sh_entsize != kSymSize) {
      if (diag != nullptr) {
        diag->report(
            make_error(elf::describe(*symtab), "sh_entsize", std::nullopt,
                       fmt::format("{} (ELF64 symbols are 24 bytes)", symtab->sh_entsize)));
      }
    } else {
      // (An empty section may still name an offset past the end: section_bytes says so.)
      auto sb = c.elf.section_bytes(*symtab);
      auto nb = c.elf.section_bytes(*strtab);
      if (sb && nb) {
        symbols = *sb;
        names = *nb;
      } else if (diag != nullptr) {
        diag->report(sb ? nb.error() : sb.error());
      }
    }
  }
  return {symbols, names};
}

// Functions. Only FUNC symbols become records (a large image has thousands of section symbols
// and labels, and building them all was a tenth of a whole libcuda scan); other names are
// looked up when an attribute needs one.
void read_kernels(Cubin& c, const SymbolTable& syms, KernelIndex& ix, Diagnostics* diag) {
  const ByteView& symbols = syms.symbols;
  const ByteView& names = syms.names;
  const uint64_t nsyms = syms.count();
  auto is_function = [&](const uint8_t* p) {
    return (p[4] & 0xf) == STT_FUNC && load_le<uint16_t>(p + 6) != SHN_UNDEF;
  };
  uint64_t nfuncs = 0;
  for (uint64_t i = 0; i < nsyms; ++i) nfuncs += is_function(symbols.data() + i * kSymSize) ? 1 : 0;
  c.kernels.reserve(nfuncs);
  for (uint64_t i = 0; i < nsyms; ++i) {
    const uint8_t* p = symbols.data() + i * kSymSize;
    if (!is_function(p)) continue;
    Kernel k;
    k.symbol_index = static_cast<uint32_t>(i);
    uint32_t st_name = load_le<uint32_t>(p);
    if (auto n = names.cstring(st_name)) {
      k.name = *n;
    } else if (diag != nullptr) {
      diag->report(make_error(fmt::format(".symtab symbol [{}]", i), "st_name",
                              symbols.base() + i * kSymSize,
                              fmt::format("name offset {:#x} is outside the string table (size "
                                          "{:#x}) or unterminated",
                                          st_name, names.size())));
    }
    k.shndx = load_le<uint16_t>(p + 6);
    k.size = load_le<uint64_t>(p + 16);
    k.entry = (p[5] & kStoCudaEntry) != 0;
    k.binding = p[4] >> 4;
    if (const auto* sec = c.elf.section_at(k.shndx)) {
      k.section = sec->name;
      // SHI_REGISTERS: ptxas of CUDA <= 12 keeps the register count in the top byte of a text
      // section's sh_info (the low bits index the function's symbol).
      if (sec->is_exec() && (sec->sh_info >> 24) != 0) {
        k.sh_info_registers = sec->sh_info >> 24;
        k.registers = k.sh_info_registers;
        k.registers_source = "sh_info";
      }
    }
    ix.by_symbol[k.symbol_index] = c.kernels.size();
    ix.by_shndx.emplace(k.shndx, c.kernels.size());
    c.kernels.push_back(std::move(k));
  }
  for (size_t i = 0; i < c.kernels.size(); ++i) ix.by_name.emplace(c.kernels[i].name, i);
}

void read_section_sizes(Cubin& c, const KernelIndex& ix) {
  // .nv.shared.<name> and .nv.constant0.<name>, found through one pass over the sections (an
  // image can have hundreds of functions and sections).
  for (const auto& sh : c.elf.sections()) {
    constexpr std::string_view kShared = ".nv.shared.", kConst0 = ".nv.constant0.";
    bool shared = sh.name.starts_with(kShared);
    if (!shared && !sh.name.starts_with(kConst0)) continue;
    auto it = ix.by_name.find(sh.name.substr(shared ? kShared.size() : kConst0.size()));
    if (it == ix.by_name.end()) continue;
    (shared ? c.kernels[it->second].shared_size : c.kernels[it->second].constant0_size) =
        sh.sh_size;
  }
}

// Attributes (.nv.info sections): to their function, or to the image.
void read_attributes(Cubin& c, const SymbolTable& syms, const KernelIndex& ix, Diagnostics* diag) {
  const uint64_t nsyms = syms.count();
  auto symbol_name = [&](uint32_t index) { return syms.name(index); };
  for (const auto& sh : c.elf.sections()) {
    if (sh.sh_type != kShtCudaInfo || !sh.in_file) continue;
    auto bytes = c.elf.section_bytes(sh);
    if (!bytes) continue;
    // The section name, not describe(sh): formatting a string for each of thousands of sections
    // cost more than reading them.
    auto attrs = read_nv_info(*bytes, sh.name, diag);
    c.nv_info_records += attrs.size();
    // .nv.info.<name> belongs to one function: sh_info names its text section (CUDA 12/13);
    // fall back to the name.
    // The name decides first: a text section can hold more than one function (CUDA 13 puts a
    // kernel's non-inlined callees, "$kernel$callee", into the kernel's own section).
    std::optional<size_t> owner;
    if (sh.name.starts_with(".nv.info.")) {
      if (auto n = ix.by_name.find(sh.name.substr(9)); n != ix.by_name.end()) {
        owner = n->second;
      } else if (auto it = ix.by_shndx.find(sh.sh_info); it != ix.by_shndx.end()) {
        owner = it->second;
      }
    }
    for (const auto& a : attrs) {
      if (!owner && names_a_symbol(a.attr)) {
        if (auto sv = sym_value(a)) {
          if (auto it = ix.by_symbol.find(sv->sym); it != ix.by_symbol.end()) {
            apply(c.kernels[it->second], a, false);
            continue;
          }
          // A symbol that is not a function defined here (ptxas records frame sizes of the
          // external callees of trap handlers, for instance).
          if (sv->sym < nsyms) {
            c.other_symbol_attributes.push_back({symbol_name(sv->sym), a.attr, sv->value});
            continue;
          }
        }
        note_other(c.global_attributes, a.attr);
        continue;
      }
      if (owner) {
        Kernel& k = c.kernels[*owner];
        if (!apply(k, a, true)) note_other(k.other_attributes, a.attr);
      } else {
        note_other(c.global_attributes, a.attr);
      }
    }
  }
}

}  // namespace

Result<Cubin> parse_cubin(ByteView image, Diagnostics* diag) {
  auto elf_or_err = elf::ElfImage::parse(image, diag);
  if (!elf_or_err) return elf_or_err.error();
  Cubin c{std::move(*elf_or_err), {}, {}, 0, {}, {}};
  const auto& h = c.elf.header();
  if (h.e_machine != kEmCuda) {
    return make_error(
        "ELF header", "e_machine", image.base() + 18,
        fmt::format("{} ({}), not EM_CUDA (190)", h.e_machine, elf::machine_name(h.e_machine)));
  }
  c.target = decode_e_flags(h.ei_abiversion, h.e_flags, h.e_version);
  refine_target_from_notes(c.elf, c.target, diag);

  const SymbolTable syms = find_symbol_table(c, diag);
  KernelIndex ix;
  read_kernels(c, syms, ix, diag);
  read_section_sizes(c, ix);
  read_attributes(c, syms, ix, diag);
  for (auto& k : c.kernels) {
    std::stable_sort(
        k.params.begin(), k.params.end(),
        [](const KernelParam& a, const KernelParam& b) { return a.ordinal < b.ordinal; });
  }
  return c;
}

}  // namespace cudatool::cuda
