#include "analysis/embedded_images.hpp"

#include <fmt/format.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "elf/relocations.hpp"

namespace cudatool {
namespace {

constexpr std::string_view kElfMagic(
    "\x7f"
    "ELF",
    4);
// 0xBA55ED50 little-endian.
constexpr std::string_view kFatbinMagicBytes("\x50\xed\x55\xba", 4);

// The bytes from `off` to the end of the section that holds it (or of the file): an image may
// not run past its section.
struct Region {
  ByteView bytes;
  std::string_view section;
  bool exec = false;
};

Region region_at(ByteView file, const elf::ElfImage* elf, uint64_t off) {
  if (elf != nullptr) {
    if (const auto* s = elf->section_for_offset(off); s != nullptr && s->in_file) {
      uint64_t end = s->sh_offset + s->sh_size;
      return {*file.sub(off, end - off), s->name, s->is_exec()};
    }
  }
  return {*file.sub(off), "", false};
}

std::optional<uint64_t> offset_to_vaddr(const elf::ElfImage* elf, uint64_t off) {
  if (elf == nullptr) return std::nullopt;
  for (const auto& p : elf->segments()) {
    if (p.p_type == PT_LOAD && off >= p.p_offset && off - p.p_offset < p.p_filesz)
      return p.p_vaddr + (off - p.p_offset);
  }
  return std::nullopt;
}

// Every position of the two magic numbers, in one pass over the file: 16 bytes at a time,
// compare with 0x7f (first byte of "\x7fELF") and 0xed (second byte of the fatbin magic, its
// rarest in real libraries), then check the whole magic at each candidate. memmem, once per
// magic, took half of a whole `cubins` run; this is one read of the bytes.
struct MagicHits {
  std::vector<uint64_t> elf;
  std::vector<uint64_t> fatbin;
};

// Positions [begin, end) of b; a magic may run past `end` (up to the end of b).
MagicHits find_magics(ByteView b, uint64_t begin, uint64_t end) {
  MagicHits out;
  const uint8_t* p = b.data();
  const uint64_t n = b.size();
  const uint32_t elf = load_le<uint32_t>(reinterpret_cast<const uint8_t*>(kElfMagic.data()));
  const uint32_t fat =
      load_le<uint32_t>(reinterpret_cast<const uint8_t*>(kFatbinMagicBytes.data()));
  auto check = [&](uint64_t i) {
    // i: position of a 0x7f or 0xed byte.
    if (p[i] == 0x7f && n - i >= 4 && load_le<uint32_t>(p + i) == elf) out.elf.push_back(i);
    if (p[i] == 0xed && i >= 1 && n - (i - 1) >= 4 && load_le<uint32_t>(p + i - 1) == fat) {
      out.fatbin.push_back(i - 1);
    }
  };
  uint64_t i = begin;
#ifdef __SSE2__
  const __m128i k7f = _mm_set1_epi8(0x7f);
  const __m128i ked = _mm_set1_epi8(static_cast<char>(0xed));
  auto hits16 = [&](uint64_t at) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    return static_cast<uint64_t>(static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, k7f), _mm_cmpeq_epi8(v, ked)))));
  };
  // 64 bytes a step: one branch for four compares (a candidate byte every ~500 bytes).
  for (; end - i >= 64; i += 64) {
    uint64_t mask =
        hits16(i) | (hits16(i + 16) << 16) | (hits16(i + 32) << 32) | (hits16(i + 48) << 48);
    while (mask != 0) {
      check(i + static_cast<uint64_t>(__builtin_ctzll(mask)));
      mask &= mask - 1;
    }
  }
  for (; end - i >= 16; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    auto mask = static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, k7f), _mm_cmpeq_epi8(v, ked))));
    while (mask != 0) {
      check(i + static_cast<uint64_t>(__builtin_ctz(mask)));
      mask &= mask - 1;
    }
  }
#endif
  for (; i < end; ++i) {
    if (p[i] == 0x7f || p[i] == 0xed) check(i);
  }
  return out;
}

// Runs f(begin, end) on parts of [0, n), on up to `workers` threads (the caller's included).
// The scan of a 28 MB library is bound by reading (and page-faulting) its bytes, and decoding
// 200+ images is independent per image: the two cores of a small machine halve both.
template <class F>
void split_work(uint64_t n, unsigned workers, F&& f) {
  if (workers <= 1 || n < 2) {
    f(uint64_t{0}, n);
    return;
  }
  uint64_t chunk = (n + workers - 1) / workers;
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < workers && w * chunk < n; ++w) {
    uint64_t b = w * chunk;
    threads.emplace_back([&f, b, chunk, n] { f(b, std::min(n, b + chunk)); });
  }
  f(uint64_t{0}, std::min(n, chunk));
  for (auto& t : threads) t.join();
}

// CPUs this process may run on (taskset, cgroups cpusets), not the machine's: two threads on one
// allowed CPU only add thread start-up and switches.
unsigned usable_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    return static_cast<unsigned>(std::max(CPU_COUNT(&allowed), 1));
  }
  return std::max(std::thread::hardware_concurrency(), 1u);
}

unsigned workers_for(uint64_t work, uint64_t threshold) {
  if (work < threshold) return 1;
  static const unsigned cpus = usable_cpus();
  return std::clamp(cpus, 1u, 4u);
}

MagicHits find_magics(ByteView b) {
  // Below 4 MB one thread is faster than starting another.
  unsigned workers = workers_for(b.size(), 4u << 20);
  std::vector<MagicHits> parts(workers);
  uint64_t chunk = (b.size() + workers - 1) / std::max(workers, 1u);
  split_work(b.size(), workers, [&](uint64_t begin, uint64_t end) {
    parts[chunk == 0 ? 0 : begin / chunk] = find_magics(b, begin, end);
  });
  MagicHits out = std::move(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    out.elf.insert(out.elf.end(), parts[i].elf.begin(), parts[i].elf.end());
    out.fatbin.insert(out.fatbin.end(), parts[i].fatbin.begin(), parts[i].fatbin.end());
  }
  return out;
}

bool printable(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

}  // namespace

std::string_view image_kind_name(ImageKind k) {
  switch (k) {
    case ImageKind::kCudaElf:
      return "cuda-elf";
    case ImageKind::kFatbin:
      return "fatbin";
    case ImageKind::kFatbinElf:
      return "fatbin-elf";
    case ImageKind::kFatbinPtx:
      return "fatbin-ptx";
    case ImageKind::kFatbinOther:
      return "fatbin-other";
  }
  return "?";
}

EmbeddedImages::EmbeddedImages(DriverImage& img) : EmbeddedImages(img, cuda::DecompressLimits{}) {}

EmbeddedImages::EmbeddedImages(DriverImage& img, const cuda::DecompressLimits& limits)
    : limits_(limits) {
  scan(img.bytes(), &img.elf());
  find_refs(img.elf(), &img.dynamic_symbols());
}

EmbeddedImages::EmbeddedImages(ByteView bytes, const elf::ElfImage* elf,
                               const cuda::DecompressLimits& limits)
    : limits_(limits) {
  scan(bytes, elf);
  if (elf != nullptr) find_refs(*elf, nullptr);
}

void EmbeddedImages::reject(uint64_t offset, std::string_view section, std::string_view magic,
                            std::string verdict, std::string reason, std::optional<uint64_t> size) {
  rejected_.push_back({.offset = offset,
                       .section = section,
                       .magic = magic,
                       .verdict = std::move(verdict),
                       .reason = std::move(reason),
                       .size = size});
}

uint64_t EmbeddedImages::damaged() const {
  uint64_t n = 0;
  for (const auto& im : images_) n += (im.error || !im.problems.empty()) ? 1 : 0;
  return n;
}

void EmbeddedImages::scan(ByteView bytes, const elf::ElfImage* elf) {
  // Containers first, so that the ELF files inside stored entries are reported as entries.
  MagicHits hits = find_magics(bytes);
  scan_fatbins(bytes, elf, hits.fatbin);
  scan_elves(bytes, elf, hits.elf);
  order();
  total_bytes_ = 0;
  for (const auto& im : images_) {
    if (im.kind == ImageKind::kCudaElf || im.kind == ImageKind::kFatbin) total_bytes_ += im.size;
  }
}

void EmbeddedImages::decode_elf_content(EmbeddedImage& im) {
  Diagnostics d;
  auto c = cuda::parse_cubin(im.content, &d);
  if (!c) {
    im.error = c.error();
  } else {
    im.arch = c->target.arch;
    im.cubin = std::move(*c);
  }
  im.problems = d.items();
}

void EmbeddedImages::scan_fatbins(ByteView bytes, const elf::ElfImage* elf,
                                  const std::vector<uint64_t>& hits) {
  uint64_t covered_until = 0;
  for (uint64_t off : hits) {
    ++fatbin_hits_;
    if (off < covered_until) continue;
    Region r = region_at(bytes, elf, off);
    auto header = cuda::read_fatbin_header(r.bytes);
    if (!header && header.error().field == "fat_size") {
      // Magic, version and header size are a container's; only its size is wrong (a lying or
      // truncated container): an image that cannot be decoded, not a stray magic number.
      EmbeddedImage c;
      c.index = static_cast<uint32_t>(images_.size());
      c.kind = ImageKind::kFatbin;
      c.offset = off;
      c.vaddr = offset_to_vaddr(elf, off);
      c.size = cuda::kFatbinHeaderSize;
      c.section = r.section;
      c.fatbin_version = 1;
      c.error = header.error();
      images_.push_back(std::move(c));
      covered_until = off + cuda::kFatbinHeaderSize;
      continue;
    }
    if (!header) {
      reject(off, r.section, "fatbin", r.exec ? "instruction bytes" : "not a container",
             header.error().message());
      continue;
    }
    Diagnostics d;
    auto fb = cuda::parse_fatbin(r.bytes, store_, limits_, &d);
    EmbeddedImage c;
    c.index = static_cast<uint32_t>(images_.size());
    c.kind = ImageKind::kFatbin;
    c.offset = off;
    c.vaddr = offset_to_vaddr(elf, off);
    c.size = header->size;
    c.content_size = header->size;
    c.section = r.section;
    c.fatbin_version = header->version;
    c.content = *r.bytes.sub(0, header->size);
    c.problems = d.items();
    covered_until = off + header->size;
    if (!fb) {
      c.error = fb.error();
      images_.push_back(std::move(c));
      continue;
    }
    c.fatbin_entries = static_cast<uint32_t>(fb->entries.size());
    uint32_t container = c.index;
    images_.push_back(std::move(c));
    for (const auto& e : fb->entries) {
      EmbeddedImage im;
      im.index = static_cast<uint32_t>(images_.size());
      im.kind = e.kind == cuda::kFatbinKindElf   ? ImageKind::kFatbinElf
                : e.kind == cuda::kFatbinKindPtx ? ImageKind::kFatbinPtx
                                                 : ImageKind::kFatbinOther;
      im.offset = e.payload_offset;
      im.vaddr = offset_to_vaddr(elf, e.payload_offset);
      im.size = e.stored.size();
      im.section = r.section;
      im.container = container;
      im.entry_index = e.index;
      im.compression = e.compression;
      im.entry_sm = e.sm;
      im.entry_flags = e.flags;
      im.entry_version_major = e.version_major;
      im.entry_version_minor = e.version_minor;
      im.entry_name = e.name;
      im.content = e.data;
      im.content_size = e.error ? e.uncompressed_size : e.data.size();
      im.error = e.error;
      if (im.kind == ImageKind::kFatbinPtx) {
        im.arch = fmt::format("compute_{}", e.sm);
      } else {
        im.arch = fmt::format("sm_{}", e.sm);
      }
      if (im.kind == ImageKind::kFatbinElf && !e.error) decode_elf_content(im);
      images_.push_back(std::move(im));
    }
  }
}

void EmbeddedImages::scan_elves(ByteView bytes, const elf::ElfImage* elf,
                                const std::vector<uint64_t>& hits) {
  // Containers found above, sorted by offset: an ELF magic inside one is one of its entries.
  std::vector<std::pair<uint64_t, uint64_t>> containers;
  for (const auto& im : images_) {
    if (im.kind == ImageKind::kFatbin) containers.emplace_back(im.offset, im.offset + im.size);
  }
  std::sort(containers.begin(), containers.end());
  auto in_container = [&](uint64_t off) {
    auto it =
        std::upper_bound(containers.begin(), containers.end(), std::make_pair(off, UINT64_MAX));
    return it != containers.begin() && off < std::prev(it)->second;
  };
  uint64_t covered_until = 0;
  std::vector<size_t> to_decode;
  for (uint64_t off : hits) {
    ++elf_hits_;
    if (off < covered_until || in_container(off)) continue;
    Region r = region_at(bytes, elf, off);
    // The file's own header, unless the file is itself a CUDA ELF image (a .cubin).
    if (off == 0 && elf != nullptr && elf->header().e_machine != cuda::kEmCuda) {
      reject(off, r.section, "elf", "library header", "offset 0: the library's own ELF header");
      continue;
    }
    const ByteView& b = r.bytes;
    std::string_view not_image = r.exec ? "instruction bytes" : "not an ELF header";
    if (b.size() < 20) {
      reject(off, r.section, "elf", std::string(not_image),
             fmt::format("only {} bytes left in the region", b.size()));
      continue;
    }
    uint8_t cls = b.data()[EI_CLASS], data = b.data()[EI_DATA];
    uint16_t machine = *b.read<uint16_t>(18);
    if (cls != ELFCLASS64 || data != ELFDATA2LSB) {
      reject(off, r.section, "elf", std::string(not_image),
             fmt::format("EI_CLASS {} / EI_DATA {} / e_machine {} is no ELF64 little-endian header",
                         cls, data, machine));
      continue;
    }
    if (machine != cuda::kEmCuda) {
      auto ext = cuda::elf_extent(b);
      uint16_t type = *b.read<uint16_t>(16);
      uint32_t version = *b.read<uint32_t>(20);
      if (ext && version == EV_CURRENT && type >= ET_REL && type <= ET_CORE) {
        rejected_.push_back(
            {off, r.section, "elf", "host ELF",
             fmt::format("a whole {} {} ELF file of {} bytes (per its headers) embedded as data: "
                         "not device code",
                         elf::machine_name(machine), elf::file_type_name(type), *ext),
             *ext});
        covered_until = off + *ext;
      } else {
        reject(off, r.section, "elf", std::string(not_image),
               fmt::format("e_machine {} ({}), e_type {}, e_version {}: {}", machine,
                           elf::machine_name(machine), type, version,
                           ext ? "headers fit, but type/version are not an ELF file's"
                               : ext.error().message()));
      }
      continue;
    }
    EmbeddedImage im;
    im.index = static_cast<uint32_t>(images_.size());
    im.kind = ImageKind::kCudaElf;
    im.offset = off;
    im.vaddr = offset_to_vaddr(elf, off);
    im.section = r.section;
    auto ext = cuda::cuda_elf_extent(b);
    if (!ext) {
      im.error = ext.error();
      im.arch = "sm_?";
    } else {
      im.size = *ext;
      im.content_size = *ext;
      im.content = *b.sub(0, *ext);
      covered_until = off + *ext;
      to_decode.push_back(images_.size());
    }
    images_.push_back(std::move(im));
  }
  // Each image is decoded on its own (nothing shared but the read-only file bytes).
  split_work(to_decode.size(), workers_for(to_decode.size(), 32),
             [&](uint64_t begin, uint64_t end) {
               for (uint64_t i = begin; i < end; ++i) decode_elf_content(images_[to_decode[i]]);
             });
}

void EmbeddedImages::order() {
  // Report in file order: containers with their entries, then raw images, interleaved by offset.
  std::vector<EmbeddedImage> sorted;
  sorted.reserve(images_.size());
  std::vector<size_t> top;
  for (size_t i = 0; i < images_.size(); ++i)
    if (!images_[i].container) top.push_back(i);
  std::stable_sort(top.begin(), top.end(),
                   [&](size_t a, size_t b) { return images_[a].offset < images_[b].offset; });
  std::vector<uint32_t> new_index(images_.size());
  for (size_t t : top) {
    new_index[t] = static_cast<uint32_t>(sorted.size());
    sorted.push_back(std::move(images_[t]));
    if (sorted.back().kind != ImageKind::kFatbin) continue;
    for (size_t i = 0; i < images_.size(); ++i) {
      if (images_[i].container && *images_[i].container == images_[t].index) {
        new_index[i] = static_cast<uint32_t>(sorted.size());
        sorted.push_back(std::move(images_[i]));
      }
    }
  }
  for (auto& im : sorted) {
    if (im.container) im.container = new_index[*im.container];
  }
  for (size_t i = 0; i < sorted.size(); ++i) sorted[i].index = static_cast<uint32_t>(i);
  images_ = std::move(sorted);
  std::sort(rejected_.begin(), rejected_.end(),
            [](const RejectedHit& a, const RejectedHit& b) { return a.offset < b.offset; });
}

void EmbeddedImages::find_refs(const elf::ElfImage& elf, const std::vector<elf::Symbol>* dynsyms) {
  std::unordered_map<uint64_t, size_t> by_vaddr;
  for (size_t i = 0; i < images_.size(); ++i) {
    const auto& im = images_[i];
    if (im.container || !im.vaddr) continue;
    by_vaddr.emplace(*im.vaddr, i);
  }
  if (by_vaddr.empty()) return;
  for (const auto& sh : elf.sections()) {
    if (sh.sh_type != SHT_RELA || !sh.in_file) continue;
    auto table = elf::RelaTable::from_section(elf, sh);
    if (!table) continue;
    for (uint64_t i = 0; i < table->size(); ++i) {
      elf::Rela r = table->at(i);
      // RELATIVE: base + addend (hidden symbols, what libcuda's tables use); 64: S + A against
      // a dynamic symbol (an exported array).
      uint64_t target = 0;
      if (r.type == R_X86_64_RELATIVE) {
        target = static_cast<uint64_t>(r.r_addend);
      } else if (r.type == R_X86_64_64 && dynsyms != nullptr && sh.sh_link != 0 &&
                 r.sym < dynsyms->size() && (*dynsyms)[r.sym].defined()) {
        target = (*dynsyms)[r.sym].st_value + static_cast<uint64_t>(r.r_addend);
      } else {
        continue;
      }
      auto it = by_vaddr.find(target);
      if (it == by_vaddr.end()) continue;
      EmbeddedImage& im = images_[it->second];
      ImageRef ref;
      ref.slot = r.r_offset;
      ref.reloc_type = r.type;
      if (const auto* s = elf.section_for_vaddr(r.r_offset)) ref.section = s->name;
      if (auto next = elf.bytes_at_vaddr(r.r_offset + 8, 8)) {
        uint64_t v = *next->read<uint64_t>(0);
        if (v >= im.size && v - im.size < 64) ref.size_field = v;
      }
      if (r.r_offset >= 8) {
        if (auto prev = elf.bytes_at_vaddr(r.r_offset - 8, 8)) {
          uint64_t p = *prev->read<uint64_t>(0);
          if (auto s = elf.bytes_at_vaddr(p, 1)) {
            auto off = elf.vaddr_to_offset(p);
            if (off) {
              if (auto str = elf.file().cstring(*off); str && printable(*str))
                ref.name_field = *str;
            }
          }
        }
      }
      im.refs.push_back(ref);
    }
  }
  for (auto& im : images_) {
    std::sort(im.refs.begin(), im.refs.end(),
              [](const ImageRef& a, const ImageRef& b) { return a.slot < b.slot; });
  }
}

}  // namespace cudatool
