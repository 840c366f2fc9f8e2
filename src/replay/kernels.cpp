#include "replay/kernels.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/embedded_images.hpp"
#include "base/mapped_file.hpp"
#include "cuda/cubin.hpp"

namespace cudatool::replay {

// SASS instructions of the architectures with 64-bit QMD program addresses are 16 bytes; a
// relocation patches a field of one, so the whole instruction is left out of the comparison.
constexpr uint64_t kInstruction = 16;
constexpr uint64_t kMinCompared = 16;
constexpr uint32_t kShtRela = 4, kShtRel = 9;

struct KernelIndex::Entry {
  KernelMatch kernel;
  std::vector<uint8_t> text;
  std::vector<uint8_t> patched;  // 1 where a relocation patches the byte
};

KernelIndex::KernelIndex() = default;
KernelIndex::~KernelIndex() = default;
KernelIndex::KernelIndex(KernelIndex&&) noexcept = default;
KernelIndex& KernelIndex::operator=(KernelIndex&&) noexcept = default;

namespace {

// The bytes of `text` (section index shndx) that the image's relocation sections patch.
std::vector<uint8_t> patched_bytes(const elf::ElfImage& elf, uint32_t shndx, uint64_t size) {
  std::vector<uint8_t> patched(size, 0);
  for (const auto& rs : elf.sections()) {
    if ((rs.sh_type != kShtRel && rs.sh_type != kShtRela) || rs.sh_info != shndx) continue;
    uint64_t entsize = rs.sh_entsize != 0 ? rs.sh_entsize : rs.sh_type == kShtRela ? 24 : 16;
    auto bytes = elf.section_bytes(rs);
    if (!bytes || entsize < 8) continue;
    for (uint64_t at = 0; bytes->contains(at, entsize); at += entsize) {
      uint64_t off = *bytes->read<uint64_t>(at) / kInstruction * kInstruction;
      for (uint64_t k = off; k < off + kInstruction && k < size; ++k) patched[k] = 1;
    }
  }
  return patched;
}

std::string where(const std::string& path, const EmbeddedImage& im) {
  if (im.container) return fmt::format("{}: fatbin entry {}", path, im.entry_index.value_or(0));
  if (im.offset == 0) return path;
  return fmt::format("{}: image at 0x{:x}", path, im.offset);
}

bool same_code(ByteView code, const std::vector<uint8_t>& text,
               const std::vector<uint8_t>& patched) {
  uint64_t n = std::min<uint64_t>(code.size(), text.size());
  if (n < kMinCompared) return false;
  for (uint64_t i = 0; i < n; ++i) {
    if (!patched[i] && code.data()[i] != text[i]) return false;
  }
  return true;
}

}  // namespace

bool KernelIndex::add_file(const std::string& path) {
  if (std::find(files_.begin(), files_.end(), path) != files_.end()) return true;
  auto file = MappedFile::open(path);
  if (!file) return false;
  EmbeddedImages images(file->bytes(), nullptr);
  size_t before = entries_.size();
  for (const EmbeddedImage& im : images.images()) {
    if (!im.cubin) continue;
    const cuda::Cubin& cubin = *im.cubin;
    for (const cuda::Kernel& k : cubin.kernels) {
      const elf::SectionHeader* sh = cubin.elf.section_at(k.shndx);
      if (!k.entry || sh == nullptr) continue;
      auto text = cubin.elf.section_bytes(*sh);
      if (!text || text->size() < kMinCompared) continue;
      auto e = std::make_unique<Entry>();
      e->kernel.name = std::string(k.name);
      e->kernel.image = where(path, im);
      e->kernel.param_base = k.param_cbank_offset;
      e->kernel.param_size = k.param_size;
      e->kernel.params = k.params;
      e->text.assign(text->data(), text->data() + text->size());
      e->patched = patched_bytes(cubin.elf, k.shndx, text->size());
      entries_.push_back(std::move(e));
    }
  }
  files_.push_back(path);
  return entries_.size() > before;
}

std::optional<KernelMatch> KernelIndex::match(ByteView code) const {
  std::optional<KernelMatch> found;
  for (const auto& e : entries_) {
    if (!same_code(code, e->text, e->patched)) continue;
    if (!found) {
      found = e->kernel;
    } else if (found->name != e->kernel.name || found->image != e->kernel.image) {
      found->also.push_back(e->kernel.name + " (" + e->kernel.image + ")");
    }
  }
  return found;
}

size_t KernelIndex::kernels() const {
  return entries_.size();
}

std::vector<LaunchParam> decode_params(const KernelMatch& k, ByteView cb0) {
  std::vector<cuda::KernelParam> params = k.params;
  std::sort(params.begin(), params.end(),
            [](const auto& a, const auto& b) { return a.ordinal < b.ordinal; });
  std::vector<LaunchParam> out;
  for (const cuda::KernelParam& p : params) {
    LaunchParam lp{p.ordinal, p.offset, p.size, {}, std::nullopt};
    if (k.param_base) {
      ByteView b = cb0.clamp(uint64_t{*k.param_base} + p.offset, p.size);
      lp.bytes.assign(b.data(), b.data() + b.size());
      if (b.size() == p.size && (p.size == 1 || p.size == 2 || p.size == 4 || p.size == 8)) {
        uint64_t v = 0;
        for (uint32_t i = 0; i < p.size; ++i) v |= uint64_t{b.data()[i]} << (8 * i);
        lp.value = v;
      }
    }
    out.push_back(std::move(lp));
  }
  return out;
}

}  // namespace cudatool::replay
