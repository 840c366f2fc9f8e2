// Fatbin containers (what nvcc / fatbinary embed into host programs and what cuModuleLoadData
// accepts): a 16-byte header {u32 magic 0xBA55ED50, u16 version 1, u16 header size 16, u64 size
// of the entries that follow}, then entries, each
//   0x00 u16 kind (1 PTX, 2 ELF, 4 old cubin)   0x02 u16 entry version (0x0101)
//   0x04 u32 header size                        0x08 u64 payload size (padded)
//   0x10 u32 compressed size (0 when stored)    0x14 u32 (unknown)
//   0x18 u16 minor, u16 major (PTX ISA version for PTX)
//   0x1c u32 SM (80 = sm_80 / compute_80)       0x20 u32 name offset, u32 name size
//   0x28 u64 flags                              0x30 u64 (unknown)
//   0x38 u64 uncompressed size (0 when stored)
// and the payload right after the entry header. Flags seen: 0x1 64-bit, 0x2 debug, 0x10 Linux
// host, 0x2000 compressed (LZ4 block format; `fatbinary --compress-mode=speed`), 0x8000
// compressed with zstd (the CUDA 13 default). The layout was read off containers built here by
// `fatbinary` and agrees with `cuobjdump -lelf -lptx`, which the tests run on the same files.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool::cuda {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;
inline constexpr uint64_t kFatbinHeaderSize = 16;
inline constexpr uint64_t kFatbinEntryMinHeader = 64;

inline constexpr uint16_t kFatbinKindPtx = 1;
inline constexpr uint16_t kFatbinKindElf = 2;
inline constexpr uint16_t kFatbinKindOldCubin = 4;

inline constexpr uint64_t kFatbinFlag64Bit = 0x1;
inline constexpr uint64_t kFatbinFlagDebug = 0x2;
inline constexpr uint64_t kFatbinFlagLinux = 0x10;
inline constexpr uint64_t kFatbinFlagCompressLz4 = 0x2000;
inline constexpr uint64_t kFatbinFlagCompressZstd = 0x8000;

enum class Compression { kNone, kLz4, kZstd };
std::string_view compression_name(Compression c);

// Limits that keep a hostile container from allocating without bound. An entry whose declared
// uncompressed size is above either limit is not decompressed (an error on that entry).
struct DecompressLimits {
  uint64_t max_entry_bytes = 64ull << 20;   // 64 MiB: the largest real cubins are a few MiB
  uint64_t max_ratio = 1024;                // uncompressed / compressed
  uint64_t max_total_bytes = 512ull << 20;  // all entries of one scan together
};

struct FatbinEntry {
  uint32_t index = 0;
  uint64_t offset = 0;  // absolute position of the entry header
  uint16_t kind = 0;
  uint16_t entry_version = 0;
  uint32_t header_size = 0;
  uint64_t payload_offset = 0;  // absolute position of the payload
  uint64_t payload_size = 0;
  uint32_t compressed_size = 0;
  uint16_t version_major = 0;
  uint16_t version_minor = 0;
  uint32_t sm = 0;
  std::string_view name;  // identifier recorded by fatbinary --ident, when any
  uint64_t flags = 0;
  uint64_t uncompressed_size = 0;
  Compression compression = Compression::kNone;
  ByteView stored;  // the payload bytes as stored (compressed_size of them when compressed)
  ByteView data;    // the entry's content: `stored` or the decompressed bytes; empty on error
  std::optional<Error> error;  // why `data` is empty (decompression failed, bomb, …)

  [[nodiscard]] std::string kind_name() const;  // "ptx", "elf", "old-cubin", "0x7?"
};

struct Fatbin {
  uint64_t offset = 0;  // absolute position of the magic
  uint16_t version = 0;
  uint16_t header_size = 0;
  uint64_t fat_size = 0;  // bytes of entries after the header
  uint64_t size = 0;      // header_size + fat_size
  std::vector<FatbinEntry> entries;
};

// Owns decompressed entry contents for as long as the views into them are used; shared by all
// the containers of one scan so that DecompressLimits::max_total_bytes holds across them.
class DecompressedStore {
 public:
  // A fresh buffer of n bytes that lives as long as the store.
  uint8_t* allocate(uint64_t n);
  [[nodiscard]] uint64_t total() const { return total_; }

 private:
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
  uint64_t total_ = 0;
};

// Checks the 16-byte container header at byte 0 of `from_magic`; an error says why these bytes
// are not a container (used to reject magic numbers that are only instruction immediates).
Result<Fatbin> read_fatbin_header(ByteView from_magic);

// Parses a whole container at byte 0 of `from_magic`, decompressing compressed entries into
// `store`. Fails when the header is bad or the entries overrun the container; a single entry
// that cannot be decompressed keeps its error and the others are decoded. Damage that lets the
// walk go on is reported to `diag`.
Result<Fatbin> parse_fatbin(ByteView from_magic, DecompressedStore& store,
                            const DecompressLimits& limits, Diagnostics* diag);

}  // namespace cudatool::cuda
