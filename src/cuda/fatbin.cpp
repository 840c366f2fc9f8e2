#include "cuda/fatbin.hpp"

#include <fmt/format.h>
#include <lz4.h>
#include <zstd.h>

#include <limits>

namespace cudatool::cuda {

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kLz4:
      return "lz4";
    case Compression::kZstd:
      return "zstd";
  }
  return "?";
}

std::string FatbinEntry::kind_name() const {
  switch (kind) {
    case kFatbinKindPtx:
      return "ptx";
    case kFatbinKindElf:
      return "elf";
    case kFatbinKindOldCubin:
      return "old-cubin";
    default:
      return fmt::format("{:#x}?", kind);
  }
}

uint8_t* DecompressedStore::allocate(uint64_t n) {
  buffers_.push_back(std::make_unique_for_overwrite<uint8_t[]>(n == 0 ? 1 : n));
  total_ += n;
  return buffers_.back().get();
}

Result<Fatbin> read_fatbin_header(ByteView f) {
  if (f.size() < kFatbinHeaderSize) {
    return make_error("fatbin header", "", f.base(),
                      fmt::format("only {} bytes left (the header is 16)", f.size()));
  }
  Fatbin fb;
  fb.offset = f.base();
  uint32_t magic = *f.read<uint32_t>(0);
  if (magic != kFatbinMagic) {
    return make_error("fatbin header", "magic", f.base(),
                      fmt::format("{:#x}, not {:#x}", magic, kFatbinMagic));
  }
  fb.version = *f.read<uint16_t>(4);
  fb.header_size = *f.read<uint16_t>(6);
  fb.fat_size = *f.read<uint64_t>(8);
  if (fb.version != 1) {
    return make_error("fatbin header", "version", f.base() + 4,
                      fmt::format("{} (containers are version 1)", fb.version));
  }
  if (fb.header_size != kFatbinHeaderSize) {
    return make_error("fatbin header", "header_size", f.base() + 6,
                      fmt::format("{} (containers have a 16-byte header)", fb.header_size));
  }
  if (fb.fat_size < kFatbinEntryMinHeader) {
    return make_error("fatbin header", "fat_size", f.base() + 8,
                      fmt::format("{:#x} cannot hold one 64-byte entry header", fb.fat_size));
  }
  if (fb.fat_size > f.size() - kFatbinHeaderSize) {
    return make_error("fatbin header", "fat_size", f.base() + 8,
                      fmt::format("{:#x} runs past the {:#x} bytes left in the region", fb.fat_size,
                                  f.size() - kFatbinHeaderSize));
  }
  fb.size = kFatbinHeaderSize + fb.fat_size;
  return fb;
}

namespace {

Error entry_error(const FatbinEntry& e, std::string field, std::string reason) {
  return make_error(fmt::format("fatbin entry #{}", e.index), std::move(field), e.offset,
                    std::move(reason));
}

// Decompresses e.stored into the store, bounded by the declared size and the limits.
void decompress(FatbinEntry& e, DecompressedStore& store, const DecompressLimits& limits) {
  uint64_t want = e.uncompressed_size;
  uint64_t have = e.stored.size();
  if (want == 0) {
    e.error = entry_error(e, "uncompressed_size", "0 on a compressed entry");
    return;
  }
  if (want > limits.max_entry_bytes || (have > 0 && want / have > limits.max_ratio) || have == 0) {
    e.error = entry_error(
        e, "uncompressed_size",
        fmt::format("{} bytes declared for {} compressed bytes exceeds the limit ({} x compressed, "
                    "at most {} bytes): refused as a possible decompression bomb",
                    want, have, limits.max_ratio, limits.max_entry_bytes));
    return;
  }
  if (want > limits.max_total_bytes - std::min(store.total(), limits.max_total_bytes)) {
    e.error = entry_error(e, "uncompressed_size",
                          fmt::format("{} more bytes would pass the {}-byte limit on all "
                                      "decompressed entries of one file",
                                      want, limits.max_total_bytes));
    return;
  }
  uint8_t* out = store.allocate(want);
  if (e.compression == Compression::kZstd) {
    unsigned long long frame = ZSTD_getFrameContentSize(e.stored.data(), have);
    if (frame == ZSTD_CONTENTSIZE_ERROR) {
      e.error = entry_error(e, "payload", "not a zstd frame");
      return;
    }
    if (frame != ZSTD_CONTENTSIZE_UNKNOWN && frame != want) {
      e.error = entry_error(e, "uncompressed_size",
                            fmt::format("{} declared, the zstd frame says {}", want, frame));
      return;
    }
    size_t n = ZSTD_decompress(out, want, e.stored.data(), have);
    if (ZSTD_isError(n) != 0u) {
      e.error = entry_error(e, "payload", fmt::format("zstd: {}", ZSTD_getErrorName(n)));
      return;
    }
    if (n != want) {
      e.error = entry_error(e, "uncompressed_size",
                            fmt::format("{} declared, zstd produced {}", want, n));
      return;
    }
  } else {
    if (have > static_cast<uint64_t>(std::numeric_limits<int>::max()) ||
        want > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      e.error = entry_error(e, "compressed_size", "too large for an LZ4 block");
      return;
    }
    int n = LZ4_decompress_safe(reinterpret_cast<const char*>(e.stored.data()),
                                reinterpret_cast<char*>(out), static_cast<int>(have),
                                static_cast<int>(want));
    if (n < 0) {
      e.error = entry_error(e, "payload",
                            "not a valid LZ4 block (or it decodes past the declared "
                            "uncompressed size)");
      return;
    }
    if (static_cast<uint64_t>(n) != want) {
      e.error =
          entry_error(e, "uncompressed_size", fmt::format("{} declared, LZ4 produced {}", want, n));
      return;
    }
  }
  e.data = ByteView(out, want, 0);
}

}  // namespace

Result<Fatbin> parse_fatbin(ByteView f, DecompressedStore& store, const DecompressLimits& limits,
                            Diagnostics* diag) {
  auto fb_or_err = read_fatbin_header(f);
  if (!fb_or_err) return fb_or_err;
  Fatbin fb = std::move(*fb_or_err);
  ByteView entries = *f.sub(kFatbinHeaderSize, fb.fat_size);
  uint64_t pos = 0;
  while (pos < entries.size()) {
    FatbinEntry e;
    e.index = static_cast<uint32_t>(fb.entries.size());
    e.offset = entries.base() + pos;
    if (entries.size() - pos < kFatbinEntryMinHeader) {
      // Trailing bytes too short for an entry: padding when zero, damage otherwise.
      ByteView rest = *entries.sub(pos);
      bool zero = true;
      for (uint64_t i = 0; i < rest.size(); ++i) zero = zero && rest.data()[i] == 0;
      if (!zero && diag != nullptr) {
        diag->report(entry_error(e, "",
                                 fmt::format("{} trailing bytes cannot hold an entry "
                                             "header",
                                             rest.size())));
      }
      break;
    }
    Cursor c(entries, pos);
    e.kind = c.u16();
    e.entry_version = c.u16();
    e.header_size = c.u32();
    e.payload_size = c.u64();
    e.compressed_size = c.u32();
    c.skip(4);
    e.version_minor = c.u16();
    e.version_major = c.u16();
    e.sm = c.u32();
    uint32_t name_off = c.u32();
    uint32_t name_size = c.u32();
    e.flags = c.u64();
    c.skip(8);
    e.uncompressed_size = c.u64();
    if (e.kind == 0 && e.header_size == 0 && e.payload_size == 0) break;  // zero padding
    if (e.header_size < kFatbinEntryMinHeader) {
      return entry_error(e, "header_size",
                         fmt::format("{} (entry headers are at least 64 bytes)", e.header_size));
    }
    if (e.header_size > entries.size() - pos ||
        e.payload_size > entries.size() - pos - e.header_size) {
      return entry_error(e, "payload_size",
                         fmt::format("header {:#x} + payload {:#x} run past the {:#x} bytes left "
                                     "in the container",
                                     e.header_size, e.payload_size, entries.size() - pos));
    }
    if (name_size != 0) {
      if (auto n = entries.sub(pos + name_off, name_size); n && name_off >= kFatbinEntryMinHeader &&
                                                           name_off <= e.header_size &&
                                                           name_size <= e.header_size - name_off) {
        std::string_view s = n->chars();
        e.name = s.substr(0, s.find('\0'));
      } else if (diag != nullptr) {
        diag->report(entry_error(e, "name_offset",
                                 fmt::format("name at {:#x} + {:#x} is outside the {:#x}-byte "
                                             "entry header",
                                             name_off, name_size, e.header_size)));
      }
    }
    e.payload_offset = entries.base() + pos + e.header_size;
    ByteView payload = *entries.sub(pos + e.header_size, e.payload_size);
    if ((e.flags & kFatbinFlagCompressZstd) != 0) {
      e.compression = Compression::kZstd;
    } else if ((e.flags & kFatbinFlagCompressLz4) != 0) {
      e.compression = Compression::kLz4;
    }
    if (e.compression == Compression::kNone) {
      e.stored = payload;
      e.data = payload;
    } else if (e.compressed_size > payload.size()) {
      e.stored = payload;
      e.error = entry_error(e, "compressed_size",
                            fmt::format("{:#x} is larger than the {:#x}-byte payload",
                                        e.compressed_size, payload.size()));
    } else {
      e.stored = *payload.sub(0, e.compressed_size);
      decompress(e, store, limits);
    }
    fb.entries.push_back(e);
    pos += e.header_size + e.payload_size;
  }
  return fb;
}

}  // namespace cudatool::cuda
