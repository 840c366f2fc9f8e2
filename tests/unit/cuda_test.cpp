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

// The form libcuda 580.159.04 writes (readelf -n): compact JSON, lower-case keys but for
// "CUDA version", a NUL at the end. Values here are made up.
TEST(FwdCompat, ParsesNvidiaForm) {
  std::string desc =
      "{\"format\":1,\"CUDA version\":\"13.1\",\"driver\":[535,580],\"device\":[9,10]}";
  desc.push_back('\0');
  auto n = cuda::parse_fwd_compat_json(desc);
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n->format, 1);
  EXPECT_EQ(*n->cuda_version, "13.1");
  EXPECT_EQ(n->driver_branches, (std::vector<int64_t>{535, 580}));
  EXPECT_EQ(n->device_generations, (std::vector<int64_t>{9, 10}));
  EXPECT_TRUE(n->other_keys.empty());
  EXPECT_TRUE(n->missing_keys.empty());
  EXPECT_EQ(n->raw_json.back(), '}');
}

// Keys are matched as NVIDIA writes them: the capitalised guesses an earlier parser expected are
// other keys, and the real ones they stand for are missing.
// A number past a double's range (what the fuzzer found: "1111…" of 400 digits) is bad input
// with a reason, not an exception out of the parser.
TEST(FwdCompat, NumbersOutOfRangeAreAnError) {
  std::string desc = "{\"format\":" + std::string(400, '1') + "}";
  auto n = cuda::parse_fwd_compat_json(desc);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message().find("not valid JSON"), std::string::npos) << n.error().message();
  auto bare = cuda::parse_fwd_compat_json(std::string(400, '1'));
  EXPECT_FALSE(bare.ok());
}

TEST(FwdCompat, OtherAndMissingKeysAreListed) {
  auto n = cuda::parse_fwd_compat_json(
      "{\"Format\": 1, \"CUDA Version\": \"13.1\", \"Driver\": [535], \"device\": [9], "
      "\"New\": true}\0\0");
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_FALSE(n->format);
  EXPECT_FALSE(n->cuda_version);
  EXPECT_TRUE(n->driver_branches.empty());
  EXPECT_EQ(n->device_generations, std::vector<int64_t>{9});
  EXPECT_EQ(n->other_keys, (std::vector<std::string>{"CUDA Version", "Driver", "Format", "New"}));
  EXPECT_EQ(n->missing_keys, (std::vector<std::string>{"format", "CUDA version", "driver"}));
  auto empty = cuda::parse_fwd_compat_json("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->missing_keys.size(), 4u);
}

TEST(FwdCompat, RangesAndTextLists) {
  auto n = cuda::parse_fwd_compat_json(
      "{\"driver\":[535,\"550\",\" 570 .. 572 \"],\"device\":\"1, 2, 7..14\","
      "\"CUDA version\":13.0}");
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(n->driver_branches, (std::vector<int64_t>{535, 550, 570, 571, 572}));
  EXPECT_EQ(n->device_generations, (std::vector<int64_t>{1, 2, 7, 8, 9, 10, 11, 12, 13, 14}));
  EXPECT_EQ(*n->cuda_version, "13.0");
  auto one = cuda::parse_fwd_compat_json("{\"device\":[\"7..7\"]}");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->device_generations, std::vector<int64_t>{7});
}

TEST(FwdCompat, RejectsBadShapesNamingTheField) {
  struct Case {
    const char* json;
    const char* field;
    const char* reason;
  };
  for (const Case& c : {
           Case{"not json", "descriptor", "not valid JSON (byte 2 of 8)"},
           Case{"{\"format\":1,", "descriptor", "not valid JSON"},
           Case{"[1,2]", "descriptor", "not an object"},
           Case{"{\"driver\": 535}", "driver", "neither a list nor a string"},
           Case{"{\"driver\": [535, true]}", "driver[1]", "neither an integer nor a range"},
           Case{"{\"driver\": [1.5]}", "driver[0]", "neither an integer nor a range"},
           Case{"{\"driver\": [18446744073709551615]}", "driver[0]", "does not fit 63 bits"},
           Case{"{\"device\": [\"x\"]}", "device[0]", "neither a number nor a range"},
           Case{"{\"device\": [\"-1\"]}", "device[0]", "neither a number nor a range"},
           Case{"{\"device\": [\"14..7\"]}", "device[0]", "runs backwards"},
           Case{"{\"device\": [\"1..\"]}", "device[0]", "does not have the form a..b"},
           Case{"{\"device\": [\"0..4000000000\"]}", "device[0]", "more than 4096 members"},
           Case{"{\"device\": \"1,,2\"}", "device", "neither a number nor a range"},
           Case{"{\"format\": \"1\"}", "format", "is not an integer"},
           Case{"{\"CUDA version\": [13]}", "CUDA version", "neither a string nor a number"},
       }) {
    SCOPED_TRACE(c.json);
    auto n = cuda::parse_fwd_compat_json(c.json, 0x27c);
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.error().structure, ".note.cuda.fwd_compatibility");
    EXPECT_EQ(n.error().field, c.field);
    EXPECT_NE(n.error().reason.find(c.reason), std::string::npos) << n.error().reason;
    ASSERT_TRUE(n.error().offset);
    EXPECT_GE(*n.error().offset, 0x27cu);
  }
  // A JSON syntax error points at the byte where it was found.
  auto n = cuda::parse_fwd_compat_json("{\"format\":x}", 0x100);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(*n.error().offset, 0x100u + 10);
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
