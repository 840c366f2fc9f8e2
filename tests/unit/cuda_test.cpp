#include <gtest/gtest.h>

#include "analysis/driver_image.hpp"
#include "analysis/find_library.hpp"
#include "cuda/api_name.hpp"
#include "cuda/fwd_compat.hpp"

namespace cudatool {
namespace {

using cuda::parse_api_name;
using cuda::StreamVariant;

TEST(ApiName, Suffixes) {
  auto a = parse_api_name("cuMemcpyAtoHAsync_v2_ptsz");
  EXPECT_EQ(a.base, "cuMemcpyAtoHAsync");
  EXPECT_EQ(a.version, 2u);
  EXPECT_EQ(a.variant, StreamVariant::kPtsz);
  EXPECT_EQ(a.domain, "Memcpy");
  auto b = parse_api_name("cuMemcpyPeer_ptds");
  EXPECT_EQ(b.version, 0u);
  EXPECT_EQ(b.variant, StreamVariant::kPtds);
  auto c = parse_api_name("cuCtxCreate_v3");
  EXPECT_EQ(c.base, "cuCtxCreate");
  EXPECT_EQ(c.version, 3u);
  EXPECT_EQ(c.domain, "Ctx");
  auto d = parse_api_name("_v2");  // no base name: not a suffix split
  EXPECT_EQ(d.base, "_v2");
  auto e = parse_api_name("cuFoo_v99999999999");  // does not fit 32 bits: not a version
  EXPECT_EQ(e.version, 0u);
  EXPECT_EQ(e.base, "cuFoo_v99999999999");
  auto f = parse_api_name("_ptsz");
  EXPECT_EQ(f.variant, StreamVariant::kNone);
}

TEST(ApiName, Domains) {
  EXPECT_EQ(parse_api_name("cuMemcpy3DPeerAsync_ptsz").domain, "Memcpy");
  EXPECT_EQ(parse_api_name("cuArray3DCreate_v2").domain, "Array");
  EXPECT_EQ(parse_api_name("cuMemsetD2D32Async").domain, "Memset");
  EXPECT_EQ(parse_api_name("cuGraphAddKernelNode_v2").domain, "Graph");
  EXPECT_EQ(parse_api_name("cuGraphicsMapResources").domain, "Graphics");
  EXPECT_EQ(parse_api_name("cuDevicePrimaryCtxRelease_v2").domain, "PrimaryCtx");
  EXPECT_EQ(parse_api_name("cuDeviceGetName").domain, "Device");
  EXPECT_EQ(parse_api_name("cuGetErrorString").domain, "Error");
  EXPECT_EQ(parse_api_name("cuImportExternalMemory").domain, "External");
  EXPECT_EQ(parse_api_name("cuInit").domain, "Init");
  EXPECT_EQ(parse_api_name("cuGLMapBufferObject_v2").domain, "GL");
  EXPECT_EQ(parse_api_name("cuEGLStreamConsumerConnect").domain, "EGL");
  EXPECT_EQ(parse_api_name("cuVDPAUGetDevice").domain, "VDPAU");
  EXPECT_EQ(parse_api_name("cuIpcOpenMemHandle_v2").domain, "Ipc");
  EXPECT_EQ(parse_api_name("cudbgApiInit").domain, "cudbg");
  EXPECT_FALSE(parse_api_name("cudbgApiInit").is_driver_api);
  EXPECT_TRUE(parse_api_name("cuInit").is_driver_api);
  EXPECT_EQ(parse_api_name("memcpy").domain, "other");
}

TEST(FwdCompat, ParsesDescriptor) {
  std::string desc =
      "{\"Format\": 1, \"CUDA Version\": \"13.1\", \"Driver\": [535, 580], \"Device\": [9, 10], "
      "\"New\": true}";
  desc.append(2, '\0');  // descriptors are NUL-padded to the note alignment
  auto n = cuda::parse_fwd_compat_json(desc);
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n->format, 1);
  EXPECT_EQ(*n->cuda_version, "13.1");
  EXPECT_EQ(n->driver_branches, (std::vector<int64_t>{535, 580}));
  EXPECT_EQ(n->device_generations, (std::vector<int64_t>{9, 10}));
  EXPECT_EQ(n->other_keys, std::vector<std::string>{"New"});
}

TEST(FwdCompat, RejectsBadShapes) {
  EXPECT_FALSE(cuda::parse_fwd_compat_json("not json").ok());
  EXPECT_FALSE(cuda::parse_fwd_compat_json("[1,2]").ok());
  EXPECT_FALSE(cuda::parse_fwd_compat_json("{\"Driver\": [\"535\"]}").ok());
  EXPECT_FALSE(cuda::parse_fwd_compat_json("{\"Driver\": 535}").ok());
  EXPECT_FALSE(cuda::parse_fwd_compat_json("{\"Format\": \"1\"}").ok());
  EXPECT_TRUE(cuda::parse_fwd_compat_json("{}").ok());
}

TEST(DriverVersion, FromFileName) {
  EXPECT_EQ(version_from_file_name("/usr/lib/libcuda.so.550.163.01"), "550.163.01");
  EXPECT_EQ(version_from_file_name("libcuda.so.470.256.02"), "470.256.02");
  EXPECT_EQ(version_from_file_name("libcuda.so.580.65"), "580.65");
  EXPECT_FALSE(version_from_file_name("libcuda.so.1"));
  EXPECT_FALSE(version_from_file_name("libcuda.so"));
  EXPECT_FALSE(version_from_file_name("libcuda.so.550.163.01.bak"));
}

TEST(DriverVersion, FromStrings) {
  std::string blob = std::string("xx\0Version 555.58.02. Copyright (C) 2024 NVIDIA", 48);
  auto v = version_from_strings(ByteView(blob));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->first, "555.58.02");
  std::string both = blob + "/usr/share/nvidia/nvidia-application-profiles-555.58.02-rc";
  EXPECT_EQ(version_from_strings(ByteView(both))->first, "555.58.02");
  EXPECT_FALSE(version_from_strings(ByteView(std::string_view("Version 5. Copyright"))));
  EXPECT_FALSE(version_from_strings(ByteView(std::string_view("nvidia-application-profiles-"))));
}

TEST(LdCache, ParsesNewFormatAndRejectsDamage) {
  // Build a minimal cache: header (48 bytes), one entry (24 bytes), strings.
  std::string c = "glibc-ld.so.cache1.1";
  auto u32 = [&](uint32_t v) { c.append(reinterpret_cast<const char*>(&v), 4); };
  u32(1);             // nlibs
  u32(0);             // len_strings
  c.append(4, '\0');  // flags + pad
  u32(0);             // extension offset
  c.append(12, '\0');
  ASSERT_EQ(c.size(), 48u);
  u32(0x0303);
  u32(72);
  u32(85);
  u32(0);
  c.append(8, '\0');
  c += std::string("libcuda.so.1\0/x/libcuda.so.1\0", 29);
  auto e = parse_ld_cache(ByteView(c));
  ASSERT_TRUE(e.ok()) << e.error().message();
  ASSERT_EQ(e->size(), 1u);
  EXPECT_EQ((*e)[0].key, "libcuda.so.1");
  EXPECT_EQ((*e)[0].value, "/x/libcuda.so.1");
  std::string bad = c;
  bad[20] = '\x7f';  // nlibs huge
  EXPECT_FALSE(parse_ld_cache(ByteView(bad)).ok());
  EXPECT_FALSE(parse_ld_cache(ByteView(c.substr(0, 60))).ok());
  EXPECT_FALSE(parse_ld_cache(ByteView(std::string_view("garbage"))).ok());
}

}  // namespace
}  // namespace cudatool

namespace cudatool {
namespace {

struct CountingFacet {
  static inline int built = 0;
  explicit CountingFacet(DriverImage& img) : sections(img.elf().sections().size()) { ++built; }
  size_t sections;
};

TEST(DriverImage, FacetIsBuiltOnce) {
  // A minimal ELF64 header with no tables is a valid (empty) image.
  std::vector<uint8_t> b(64, 0);
  b[0] = 0x7f, b[1] = 'E', b[2] = 'L', b[3] = 'F', b[4] = 2, b[5] = 1, b[6] = 1;
  b[52] = 64;
  auto img = DriverImage::from_file(MappedFile::from_buffer(b, "mini"), "mini");
  ASSERT_TRUE(img.ok()) << img.error().message();
  CountingFacet::built = 0;
  EXPECT_EQ((*img)->facet<CountingFacet>().sections, 0u);
  (void)(*img)->facet<CountingFacet>();
  EXPECT_EQ(CountingFacet::built, 1);
}

}  // namespace
}  // namespace cudatool
