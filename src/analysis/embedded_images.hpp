// Every GPU program image embedded in a library: raw CUDA ELF images (cubins, e_machine 190,
// which libcuda keeps as byte arrays in .rodata), fatbin containers (magic 0xBA55ED50) and each
// entry inside them (PTX or ELF, stored or compressed). A DriverImage facet:
// `img.facet<EmbeddedImages>()`.
//
// The scan looks at every byte of the file for the two magic numbers and decides for each hit
// what it is. Hits that are not device code are kept with the reason (the library's own header,
// an ELF file of another machine embedded as data, instruction bytes that happen to spell the
// magic), so that a count can be checked against a plain search for the magic bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/driver_image.hpp"
#include "base/error.hpp"
#include "cuda/cubin.hpp"
#include "cuda/fatbin.hpp"
#include "elf/symbols.hpp"

namespace cudatool {

enum class ImageKind { kCudaElf, kFatbin, kFatbinElf, kFatbinPtx, kFatbinOther };
// "cuda-elf", "fatbin", "fatbin-elf", "fatbin-ptx", "fatbin-other".
std::string_view image_kind_name(ImageKind k);

// A pointer to an image's first byte, found as a relocation whose target is the image start.
struct ImageRef {
  uint64_t slot = 0;  // address of the relocated pointer (a table entry)
  std::string_view section;
  uint32_t reloc_type = 0;
  // The 8 bytes after the slot, when they hold a size that covers the image (libcuda's tables
  // are {name, image, size} triples); nullopt otherwise.
  std::optional<uint64_t> size_field;
  // The string the 8 bytes before the slot point to, when they hold the address of a short
  // printable string (libcuda names its images by architecture: "50", "90").
  std::optional<std::string_view> name_field;
};

struct EmbeddedImage {
  uint32_t index = 0;
  ImageKind kind = ImageKind::kCudaElf;
  uint64_t offset = 0;  // file offset (of the stored payload for fatbin entries)
  std::optional<uint64_t> vaddr;
  uint64_t size = 0;         // bytes in the file (stored, possibly compressed)
  std::string_view section;  // section of the library that holds it
  // Fatbin entries: the container's image index, the entry number and header fields.
  std::optional<uint32_t> container;
  std::optional<uint32_t> entry_index;
  cuda::Compression compression = cuda::Compression::kNone;
  uint64_t content_size = 0;  // bytes after decompression
  uint32_t entry_sm = 0;      // the SM number the fatbin entry header names
  uint64_t entry_flags = 0;
  uint16_t entry_version_major = 0, entry_version_minor = 0;
  std::string_view entry_name;
  // Fatbin containers: format version and number of entries.
  uint16_t fatbin_version = 0;
  uint32_t fatbin_entries = 0;
  // The decoded CUDA ELF (raw images and ELF entries), when it could be decoded.
  std::optional<cuda::Cubin> cubin;
  // "sm_90a" for ELF code, "compute_80" for PTX, "" for containers.
  std::string arch;
  ByteView content;             // the image's bytes (decompressed for compressed entries)
  std::optional<Error> error;   // why it could not be decoded
  std::vector<Error> problems;  // damage stepped over while decoding
  std::vector<ImageRef> refs;
};

struct RejectedHit {
  uint64_t offset = 0;
  std::string_view section;  // "" when outside every section
  std::string_view magic;    // "elf" or "fatbin"
  std::string verdict;       // "library header", "host ELF", "not an image"
  std::string reason;
  std::optional<uint64_t> size;  // host ELF files: their size per their own headers
};

class EmbeddedImages {
 public:
  explicit EmbeddedImages(DriverImage& img);
  // With other bounds on decompression (a command-line option).
  EmbeddedImages(DriverImage& img, const cuda::DecompressLimits& limits);
  // Also for bytes that are not a library (a fuzzer input): scans without sections.
  EmbeddedImages(ByteView bytes, const elf::ElfImage* elf,
                 const cuda::DecompressLimits& limits = {});

  [[nodiscard]] const std::vector<EmbeddedImage>& images() const { return images_; }
  [[nodiscard]] const std::vector<RejectedHit>& rejected() const { return rejected_; }
  [[nodiscard]] uint64_t elf_magic_hits() const { return elf_hits_; }
  [[nodiscard]] uint64_t fatbin_magic_hits() const { return fatbin_hits_; }
  // Sum of the sizes of the top-level images (raw CUDA ELF + fatbin containers), which do not
  // overlap: the bytes of the file that are device code.
  [[nodiscard]] uint64_t total_bytes() const { return total_bytes_; }
  // Images with an error or with problems.
  [[nodiscard]] uint64_t damaged() const;

 private:
  void scan(ByteView bytes, const elf::ElfImage* elf);
  void scan_fatbins(ByteView bytes, const elf::ElfImage* elf, const std::vector<uint64_t>& hits);
  void scan_elves(ByteView bytes, const elf::ElfImage* elf, const std::vector<uint64_t>& hits);
  void order();
  void reject(uint64_t offset, std::string_view section, std::string_view magic,
              std::string verdict, std::string reason, std::optional<uint64_t> size = {});
  void find_refs(const elf::ElfImage& elf, const std::vector<elf::Symbol>* dynsyms);
  void decode_elf_content(EmbeddedImage& im);

  cuda::DecompressedStore store_;
  cuda::DecompressLimits limits_;
  std::vector<EmbeddedImage> images_;
  std::vector<RejectedHit> rejected_;
  uint64_t elf_hits_ = 0;
  uint64_t fatbin_hits_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace cudatool
