// Pure logic of the cubin / fatbin readers on small synthetic inputs: e_flags layouts, ptxas
// option parsing, .nv.info framing, KPARAM_INFO packing, fatbin containers (stored, zstd, LZ4)
// and every way a hostile header can lie. Real images are checked against cuobjdump, readelf
// and the CUDA toolchain in tests/integration/cubins_*_test.cpp.
#include <gtest/gtest.h>
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "analysis/embedded_images.hpp"
#include "cuda/cubin.hpp"
#include "cuda/cubin_arch.hpp"
#include "cuda/fatbin.hpp"
#include "cuda/nv_info.hpp"

namespace cudatool {
namespace {

using Bytes = std::vector<uint8_t>;

template <class T>
void put(Bytes& b, size_t off, T v) {
  if (b.size() < off + sizeof(T)) b.resize(off + sizeof(T));
  std::memcpy(b.data() + off, &v, sizeof(T));
}

ByteView view(const Bytes& b, uint64_t base = 0) {
  return ByteView(b.data(), b.size(), base);
}

TEST(CubinArch, Abi7Layout) {
  // sm_90 with bit 11: EF_CUDA_ACCELERATORS, i.e. sm_90a (cuobjdump's reading of libcuda's).
  auto t = cuda::decode_e_flags(7, 0x5a0d5a, 124);
  EXPECT_EQ(t.sm, 90u);
  EXPECT_EQ(t.arch, "sm_90a");
  EXPECT_EQ(t.arch_evidence, "e_flags EF_CUDA_ACCELERATORS");
  EXPECT_EQ(t.virtual_arch, "compute_90");
  EXPECT_EQ(t.address_bits, 64u);
  EXPECT_EQ(t.toolkit_version, 124u);
  EXPECT_EQ(cuda::toolkit_version_string(*t.toolkit_version), "12.4");
  EXPECT_EQ(t.unknown_flag_bits, 0u);
  // The same bit below sm_90 is EF_CUDA_SW_1729687, not an arch suffix.
  auto s = cuda::decode_e_flags(7, 0x320d32, 124);
  EXPECT_EQ(s.arch, "sm_50");
  EXPECT_NE(std::find(s.flag_names.begin(), s.flag_names.end(), "EF_CUDA_SW_1729687"),
            s.flag_names.end());
  // Real and virtual SM differ: sm_72 code for compute_70.
  auto v = cuda::decode_e_flags(7, 0x460548, 124);
  EXPECT_EQ(v.arch, "sm_72");
  EXPECT_EQ(v.virtual_arch, "compute_70");
  // 32-bit addressing, unknown bits named as hex.
  auto w = cuda::decode_e_flags(7, 0x8000001e, 1);
  EXPECT_EQ(w.address_bits, 32u);
  EXPECT_EQ(w.unknown_flag_bits, 0x80000000u);
  EXPECT_EQ(w.flag_names.back(), "0x80000000?");
  EXPECT_FALSE(w.toolkit_version.has_value());
}

TEST(CubinArch, Abi8Layout) {
  auto t = cuda::decode_e_flags(8, 0x06006402, 1);
  EXPECT_EQ(t.sm, 100u);
  EXPECT_EQ(t.arch, "sm_100");
  EXPECT_FALSE(t.virtual_sm.has_value());  // in .note.nv.cuinfo for ABI 8
  EXPECT_FALSE(t.address_bits.has_value());
  auto a = cuda::decode_e_flags(8, 0x06007808, 1);
  EXPECT_EQ(a.arch, "sm_120a");
  EXPECT_EQ(a.arch_evidence, "e_flags EF_CUDA_ACCELERATORS");
}

TEST(CubinArch, PtxasOptions) {
  auto a = cuda::arch_from_options("-arch sm_90a -m 64 ");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->sm, 90u);
  EXPECT_EQ(a->suffix, "a");
  a = cuda::arch_from_options("-O3 -arch=sm_100f");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->sm, 100u);
  EXPECT_EQ(a->suffix, "f");
  a = cuda::arch_from_options("-arch compute_90 -arch sm_75");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->sm, 75u);
  a = cuda::arch_from_options("-typ elf64 -arch SM80 -novliw");  // CUDA 13 library images
  ASSERT_TRUE(a);
  EXPECT_EQ(a->sm, 80u);
  EXPECT_EQ(a->suffix, "");
  EXPECT_FALSE(cuda::arch_from_options("-m 64").has_value());
  EXPECT_FALSE(cuda::arch_from_options("-arch sm_").has_value());
  EXPECT_FALSE(cuda::arch_from_options("-arch").has_value());
}

TEST(CubinArch, ReleaseFromToolVersion) {
  EXPECT_EQ(cuda::release_from_tool_version("Cuda compilation tools, release 13.0, V13.0.0"), 130u);
  EXPECT_EQ(cuda::release_from_tool_version("Cuda compilation tools, release 12.4, V12.4.131"),
            124u);
  EXPECT_FALSE(cuda::release_from_tool_version("Cuda compilation tools, V13.0.0"));
  EXPECT_FALSE(cuda::release_from_tool_version("release 12.10, V12.10"));  // no major*10+minor
  EXPECT_FALSE(cuda::release_from_tool_version("release .4"));
  EXPECT_FALSE(cuda::release_from_tool_version("release 13"));
  EXPECT_FALSE(cuda::release_from_tool_version(""));
}

// Architecture names sort by number: sm_100 after sm_90a (as text it would come before sm_50).
TEST(CubinArch, ArchOrderIsNumeric) {
  std::vector<std::string> v = {"sm_121", "sm_90a", "sm_100",  "sm_50",      "sm_100a", "sm_90",
                                "sm_?",   "-",      "sm_100f", "compute_90", "sm_53"};
  std::sort(v.begin(), v.end(), cuda::ArchLess{});
  EXPECT_EQ(v, (std::vector<std::string>{"-", "compute_90", "sm_50", "sm_53", "sm_90", "sm_90a",
                                         "sm_100", "sm_100a", "sm_100f", "sm_121", "sm_?"}));
  EXPECT_FALSE(cuda::arch_less("sm_90", "sm_90"));
  EXPECT_TRUE(cuda::arch_less("sm_9", "sm_10"));
  // A run of digits longer than a number holds does not overflow; it still orders.
  EXPECT_TRUE(cuda::arch_less("sm_1", "sm_99999999999999999999999"));
}

TEST(NvInfo, FramingAndDamage) {
  Bytes b = {0x04, 0x2f, 0x08, 0x00, 1, 0, 0, 0, 12, 0, 0, 0,  // SVAL REGCOUNT {sym 1, 12}
             0x03, 0x19, 0x60, 0x00,                           // HVAL CBANK_PARAM_SIZE 0x60
             0x02, 0x09, 0x01, 0x00,                           // BVAL
             0x01, 0x04, 0x00, 0x00};                          // NVAL CTAIDZ_USED
  Diagnostics d;
  auto a = cuda::read_nv_info(view(b, 0x100), ".nv.info", &d);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(a[0].attr, cuda::kEiattrRegcount);
  EXPECT_EQ(a[0].payload.size(), 8u);
  EXPECT_EQ(a[0].offset, 0x100u);
  EXPECT_EQ(a[1].value, 0x60u);
  EXPECT_EQ(a[2].value, 1u);
  EXPECT_EQ(cuda::eiattr_name(a[3].attr), "EIATTR_CTAIDZ_USED");
  // An SVAL whose size runs past the end keeps what came before and says where.
  Bytes t = {0x03, 0x19, 0x60, 0x00, 0x04, 0x17, 0xff, 0x00, 1, 2};
  d.clear();
  a = cuda::read_nv_info(view(t, 0x200), ".nv.info.k", &d);
  EXPECT_EQ(a.size(), 1u);
  ASSERT_EQ(d.count(), 1u);
  EXPECT_NE(d.items()[0].message().find("EIATTR_KPARAM_INFO"), std::string::npos);
  EXPECT_EQ(d.items()[0].offset, 0x204u);
  // Unknown format.
  Bytes u = {0x09, 0x01, 0, 0};
  d.clear();
  EXPECT_TRUE(cuda::read_nv_info(view(u), "x", &d).empty());
  EXPECT_EQ(d.count(), 1u);
  EXPECT_EQ(cuda::eiattr_name(0xee), "EIATTR_0xee?");
}

TEST(NvInfo, KparamPacking) {
  // Ordinal 2 at offset 0x58, 8 bytes, cbank 0x1f: the packed word ptxas writes is 0x0021f000.
  Bytes p;
  put<uint32_t>(p, 0, 0);
  put<uint16_t>(p, 4, 2);
  put<uint16_t>(p, 6, 0x58);
  put<uint32_t>(p, 8, 0x0021f000);
  auto k = cuda::decode_kparam(view(p), false);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->ordinal, 2u);
  EXPECT_EQ(k->offset, 0x58u);
  EXPECT_EQ(k->size, 8u);
  EXPECT_EQ(k->cbank, 0x1fu);
  EXPECT_TRUE(k->in_cbank);
  put<uint16_t>(p, 8, 0x1520);  // _V2: plain u16 size
  k = cuda::decode_kparam(view(p), true);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->size, 0x1520u);
  EXPECT_FALSE(cuda::decode_kparam(ByteView(p.data(), 11), false).has_value());
}

// A minimal CUDA ELF64 header (no sections) for the extent checks.
Bytes elf_header(uint16_t machine = 190) {
  Bytes b(64, 0);
  std::memcpy(b.data(),
              "\x7f"
              "ELF",
              4);
  b[EI_CLASS] = ELFCLASS64;
  b[EI_DATA] = ELFDATA2LSB;
  b[EI_VERSION] = 1;
  b[EI_OSABI] = 0x41;
  b[EI_ABIVERSION] = 8;
  put<uint16_t>(b, 16, ET_EXEC);
  put<uint16_t>(b, 18, machine);
  put<uint32_t>(b, 20, 1);
  put<uint32_t>(b, 48, 0x06005a04);
  put<uint16_t>(b, 52, 64);
  return b;
}

TEST(CubinExtent, HeadersThatLie) {
  Bytes b = elf_header();
  auto e = cuda::cuda_elf_extent(view(b));
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(*e, 64u);
  // A section table past the end.
  Bytes s = b;
  put<uint64_t>(s, 40, 0x7fffffff0000);
  put<uint16_t>(s, 58, 64);
  put<uint16_t>(s, 60, 3);
  e = cuda::cuda_elf_extent(view(s));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().field, "e_shoff");
  // A section whose size lies.
  Bytes z = b;
  put<uint64_t>(z, 40, 64);
  put<uint16_t>(z, 58, 64);
  put<uint16_t>(z, 60, 2);
  z.resize(64 + 128, 0);
  put<uint32_t>(z, 64 + 64 + 4, SHT_PROGBITS);
  put<uint64_t>(z, 64 + 64 + 24, 0);
  put<uint64_t>(z, 64 + 64 + 32, UINT64_MAX);
  e = cuda::cuda_elf_extent(view(z));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().structure, "section [1]");
  // Program headers of the wrong size; a segment that lies.
  Bytes p = b;
  put<uint64_t>(p, 32, 64);
  put<uint16_t>(p, 54, 32);
  put<uint16_t>(p, 56, 1);
  EXPECT_EQ(cuda::cuda_elf_extent(view(p)).error().field, "e_phentsize");
  put<uint16_t>(p, 54, 56);
  p.resize(64 + 56, 0);
  put<uint64_t>(p, 64 + 8, 0x100);
  put<uint64_t>(p, 64 + 32, 0x10);
  EXPECT_EQ(cuda::cuda_elf_extent(view(p)).error().field, "p_offset");
  // Not CUDA; truncated.
  EXPECT_EQ(cuda::cuda_elf_extent(view(elf_header(62))).error().field, "e_machine");
  EXPECT_TRUE(cuda::elf_extent(view(elf_header(62))).ok());
  EXPECT_FALSE(cuda::cuda_elf_extent(ByteView(b.data(), 40)).ok());
  // parse_cubin of a header-only image: a target, no kernels, no crash.
  Diagnostics d;
  auto c = cuda::parse_cubin(view(b), &d);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->target.arch, "sm_90");
  EXPECT_TRUE(c->kernels.empty());
}

// Builds a container with one entry of `kind` holding `content`, stored or compressed.
Bytes fatbin(const Bytes& content, uint16_t kind, cuda::Compression comp, uint32_t sm = 80) {
  Bytes payload;
  uint64_t flags = cuda::kFatbinFlag64Bit | cuda::kFatbinFlagLinux;
  uint32_t compressed = 0;
  uint64_t uncompressed = 0;
  if (comp == cuda::Compression::kNone) {
    payload = content;
  } else if (comp == cuda::Compression::kZstd) {
    payload.resize(ZSTD_compressBound(content.size()));
    size_t n = ZSTD_compress(payload.data(), payload.size(), content.data(), content.size(), 3);
    payload.resize(n);
    flags |= cuda::kFatbinFlagCompressZstd;
  } else {
    payload.resize(LZ4_compressBound(static_cast<int>(content.size())));
    int n = LZ4_compress_default(
        reinterpret_cast<const char*>(content.data()), reinterpret_cast<char*>(payload.data()),
        static_cast<int>(content.size()), static_cast<int>(payload.size()));
    payload.resize(static_cast<size_t>(n));
    flags |= cuda::kFatbinFlagCompressLz4;
  }
  if (comp != cuda::Compression::kNone) {
    compressed = static_cast<uint32_t>(payload.size());
    uncompressed = content.size();
    payload.resize((payload.size() + 7) & ~size_t{7}, 0);
  }
  Bytes b;
  put<uint32_t>(b, 0, cuda::kFatbinMagic);
  put<uint16_t>(b, 4, 1);
  put<uint16_t>(b, 6, 16);
  put<uint64_t>(b, 8, 64 + payload.size());
  size_t e = 16;
  put<uint16_t>(b, e + 0, kind);
  put<uint16_t>(b, e + 2, 0x0101);
  put<uint32_t>(b, e + 4, 64);
  put<uint64_t>(b, e + 8, payload.size());
  put<uint32_t>(b, e + 0x10, compressed);
  put<uint16_t>(b, e + 0x18, 8);
  put<uint16_t>(b, e + 0x1a, 1);
  put<uint32_t>(b, e + 0x1c, sm);
  put<uint64_t>(b, e + 0x28, flags);
  put<uint64_t>(b, e + 0x38, uncompressed);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes sample_content() {
  Bytes c = elf_header();
  for (int i = 0; i < 2000; ++i) c.push_back(static_cast<uint8_t>("cubin!"[i % 6]));
  return c;
}

TEST(Fatbin, StoredZstdLz4RoundTrip) {
  Bytes content = sample_content();
  for (auto comp : {cuda::Compression::kNone, cuda::Compression::kZstd, cuda::Compression::kLz4}) {
    Bytes fb = fatbin(content, cuda::kFatbinKindElf, comp);
    cuda::DecompressedStore store;
    Diagnostics d;
    auto f = cuda::parse_fatbin(view(fb, 0x1000), store, {}, &d);
    ASSERT_TRUE(f) << f.error().message();
    ASSERT_EQ(f->entries.size(), 1u);
    const auto& e = f->entries[0];
    EXPECT_EQ(e.compression, comp);
    EXPECT_FALSE(e.error) << e.error->message();
    ASSERT_EQ(e.data.size(), content.size());
    EXPECT_EQ(std::memcmp(e.data.data(), content.data(), content.size()), 0);
    EXPECT_EQ(e.sm, 80u);
    EXPECT_EQ(e.kind_name(), "elf");
    EXPECT_EQ(e.payload_offset, 0x1000u + 16 + 64);
    EXPECT_TRUE(d.empty());
  }
}

TEST(Fatbin, DecompressionBombsAndLies) {
  Bytes content = sample_content();
  cuda::DecompressedStore store;
  auto entry_error = [&](Bytes fb, const cuda::DecompressLimits& lim = {}) {
    auto f = cuda::parse_fatbin(view(fb), store, lim, nullptr);
    EXPECT_TRUE(f);
    if (!f || f->entries.empty() || !f->entries[0].error) return std::string();
    EXPECT_TRUE(f->entries[0].data.empty());
    return f->entries[0].error->message();
  };
  Bytes z = fatbin(content, cuda::kFatbinKindElf, cuda::Compression::kZstd);
  Bytes bomb = z;
  put<uint64_t>(bomb, 16 + 0x38, uint64_t{1} << 40);
  EXPECT_NE(entry_error(bomb).find("decompression bomb"), std::string::npos);
  Bytes ratio = z;
  put<uint64_t>(ratio, 16 + 0x38, uint64_t{*view(z).read<uint32_t>(16 + 0x10)} * 2000);
  EXPECT_NE(entry_error(ratio).find("decompression bomb"), std::string::npos);
  Bytes mismatch = z;
  put<uint64_t>(mismatch, 16 + 0x38, content.size() + 1);
  EXPECT_NE(entry_error(mismatch).find("zstd frame says"), std::string::npos);
  Bytes small_limit = z;
  cuda::DecompressLimits lim;
  lim.max_total_bytes = 100;
  EXPECT_NE(entry_error(small_limit, lim).find("limit on all"), std::string::npos);
  Bytes l = fatbin(content, cuda::kFatbinKindElf, cuda::Compression::kLz4);
  Bytes lbig = l;
  put<uint64_t>(lbig, 16 + 0x38, content.size() + 100);  // LZ4 stops short: a lie
  EXPECT_NE(entry_error(lbig).find("LZ4 produced"), std::string::npos);
  Bytes lbad = l;
  for (size_t i = 16 + 64; i < 16 + 64 + 32; ++i) lbad[i] = 0xff;
  EXPECT_FALSE(entry_error(lbad).empty());
  Bytes csize = z;
  put<uint32_t>(csize, 16 + 0x10, 0xfffffff0);
  EXPECT_NE(entry_error(csize).find("larger than"), std::string::npos);
  Bytes zero = z;
  put<uint64_t>(zero, 16 + 0x38, 0);
  EXPECT_NE(entry_error(zero).find("0 on a compressed entry"), std::string::npos);
}

TEST(Fatbin, ContainerDamage) {
  Bytes fb = fatbin(sample_content(), cuda::kFatbinKindPtx, cuda::Compression::kNone);
  cuda::DecompressedStore store;
  // fat_size past the end: the header is refused, with the field named.
  Bytes big = fb;
  put<uint64_t>(big, 8, uint64_t{1} << 40);
  auto h = cuda::read_fatbin_header(view(big));
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().field, "fat_size");
  // Instruction bytes that only share the magic: version / header size.
  Bytes v = fb;
  put<uint16_t>(v, 4, 0x8b48);
  EXPECT_EQ(cuda::read_fatbin_header(view(v)).error().field, "version");
  Bytes hs = fb;
  put<uint16_t>(hs, 6, 0);
  EXPECT_EQ(cuda::read_fatbin_header(view(hs)).error().field, "header_size");
  EXPECT_FALSE(cuda::read_fatbin_header(ByteView(fb.data(), 10)));
  // An entry whose payload runs past the container.
  Bytes over = fb;
  put<uint64_t>(over, 16 + 8, uint64_t{1} << 40);
  auto f = cuda::parse_fatbin(view(over), store, {}, nullptr);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().field, "payload_size");
  // An entry header that says it is smaller than the fixed part.
  Bytes small = fb;
  put<uint32_t>(small, 16 + 4, 8);
  EXPECT_EQ(cuda::parse_fatbin(view(small), store, {}, nullptr).error().field, "header_size");
  // A name outside the entry header is reported, the entry still read.
  Bytes name = fb;
  put<uint32_t>(name, 16 + 0x20, 0x1000);
  put<uint32_t>(name, 16 + 0x24, 4);
  Diagnostics d;
  f = cuda::parse_fatbin(view(name), store, {}, &d);
  ASSERT_TRUE(f);
  EXPECT_EQ(d.count(), 1u);
  EXPECT_TRUE(f->entries[0].name.empty());
}

TEST(EmbeddedImages, ScanWithoutSections) {
  // Raw bytes: a CUDA ELF header, a stored fatbin holding another, a stray magic, a bomb.
  Bytes b(16, 0xcc);
  Bytes cubin = elf_header();
  b.insert(b.end(), cubin.begin(), cubin.end());
  Bytes fb = fatbin(sample_content(), cuda::kFatbinKindElf, cuda::Compression::kNone);
  size_t fb_at = b.size();
  b.insert(b.end(), fb.begin(), fb.end());
  const char stray[] = "\x50\xed\x55\xba\x0f\x85";
  b.insert(b.end(), stray, stray + 6);
  Bytes bomb = fatbin(sample_content(), cuda::kFatbinKindElf, cuda::Compression::kZstd);
  put<uint64_t>(bomb, 16 + 0x38, uint64_t{1} << 50);
  b.insert(b.end(), bomb.begin(), bomb.end());
  EmbeddedImages scan(view(b), nullptr);
  ASSERT_EQ(scan.images().size(), 5u);  // cubin, container + entry, container + entry
  EXPECT_EQ(scan.images()[0].kind, ImageKind::kCudaElf);
  EXPECT_EQ(scan.images()[0].offset, 16u);
  EXPECT_EQ(scan.images()[1].kind, ImageKind::kFatbin);
  EXPECT_EQ(scan.images()[1].offset, fb_at);
  EXPECT_EQ(scan.images()[2].kind, ImageKind::kFatbinElf);
  EXPECT_EQ(scan.images()[2].container, 1u);
  EXPECT_TRUE(scan.images()[4].error.has_value());
  EXPECT_EQ(scan.damaged(), 1u);
  EXPECT_EQ(scan.elf_magic_hits(), 3u);  // the raw one, the stored entry, the sample inside
  ASSERT_EQ(scan.rejected().size(), 1u);
  EXPECT_EQ(scan.rejected()[0].magic, "fatbin");
}

}  // namespace
}  // namespace cudatool
