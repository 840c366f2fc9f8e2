// The replay names a launch's kernel by its code (src/replay/kernels.cpp) and cuts its
// parameters from the constant buffer by the kernel's layout. On work.c's kernel built for sm_90
// (kern_sm90.cubin, tests/fixtures/replay): the code is .text.add1 as readelf dumps it, the
// layout is what cuobjdump prints (EIATTR_PARAM_CBANK, EIATTR_KPARAM_INFO).
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <sstream>

#include "cubins_tools.hpp"
#include "harness.hpp"
#include "replay/kernels.hpp"
#include "replay_support.hpp"

namespace cudatool::test {
namespace {

std::string kern() {
  return fixtures_dir() + "/kern_sm90.cubin";
}

// `readelf -x SECTION FILE`: the section's bytes, from readelf's hex dump.
std::vector<uint8_t> readelf_section(const std::string& file, const std::string& section) {
  RunResult r = run({"readelf", "-x", section, file});
  std::vector<uint8_t> out;
  std::istringstream in(r.out);
  std::string line;
  std::regex row(R"(^\s*0x[0-9a-f]+ ((?:[0-9a-f]{2,8} ){1,4}))");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    std::istringstream words(m[1].str());
    std::string w;
    while (words >> w) {
      for (size_t i = 0; i + 1 < w.size(); i += 2) {
        out.push_back(static_cast<uint8_t>(std::stoul(w.substr(i, 2), nullptr, 16)));
      }
    }
  }
  return out;
}

// cuobjdump's .nv.info.<kernel>: the PARAM_CBANK offset (low 16 bits of its second word) and
// each KPARAM_INFO's ordinal -> (offset, size).
struct Layout {
  uint32_t base = 0;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> params;
};
Layout cuobjdump_layout(const std::string& raw, const std::string& kernel) {
  Layout l;
  size_t at = raw.find("\n.nv.info." + kernel + "\n");  // the heading, not the table row
  std::string info = at == std::string::npos ? "" : raw.substr(at, raw.find("\n\n", at) - at);
  std::smatch m;
  if (std::regex_search(
          info, m,
          std::regex(
              R"(EIATTR_PARAM_CBANK\s+Format:\s+\S+\s+Value:\s+0x[0-9a-f]+ (0x[0-9a-f]+))"))) {
    l.base = static_cast<uint32_t>(std::stoul(m[1].str(), nullptr, 16) & 0xffff);
  }
  std::regex kp(R"(Ordinal : (0x[0-9a-f]+)\s+Offset\s+: (0x[0-9a-f]+)\s+Size\s+: (0x[0-9a-f]+))");
  for (auto it = std::sregex_iterator(info.begin(), info.end(), kp); it != std::sregex_iterator();
       ++it) {
    l.params[std::stoul((*it)[1].str(), nullptr, 16)] = {std::stoul((*it)[2].str(), nullptr, 16),
                                                         std::stoul((*it)[3].str(), nullptr, 16)};
  }
  return l;
}

TEST(ReplayKernels, ALaunchIsNamedByItsCodeAndItsParametersCutByTheLayout) {
  std::vector<uint8_t> text = readelf_section(kern(), ".text.add1");
  ASSERT_GE(text.size(), 64u) << "readelf -x .text.add1 " << kern();
  replay::KernelIndex index;
  ASSERT_TRUE(index.add_file(kern()));
  EXPECT_EQ(index.kernels(), 1u);
  // As libcuda uploads it: the code, then padding up to the upload's size.
  std::vector<uint8_t> uploaded = text;
  uploaded.resize(text.size() + 128, 0);
  auto k = index.match(ByteView(uploaded.data(), uploaded.size()));
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->name, "add1");
  EXPECT_EQ(k->image, kern());
  EXPECT_TRUE(k->also.empty());
  // Another instruction in the middle: not this kernel.
  uploaded[text.size() / 2] ^= 0x40;
  EXPECT_FALSE(index.match(ByteView(uploaded.data(), uploaded.size())).has_value());
  // Too little code to tell.
  EXPECT_FALSE(index.match(ByteView(text.data(), 8)).has_value());

  ASSERT_FALSE(cuobjdump_path().empty()) << cuobjdump_missing();
  Layout layout = cuobjdump_layout(cuobjdump_elf(kern()).raw, "add1");
  ASSERT_EQ(layout.params.size(), 2u) << cuobjdump_elf(kern()).raw;
  ASSERT_NE(layout.base, 0u);
  EXPECT_EQ(k->param_base, layout.base);
  // c[0] as work.c's launch fills it: the device pointer and N at their places.
  std::vector<uint8_t> cb0(layout.base + 16, 0xcc);
  const uint64_t dptr = 0x7f12e5e00000;
  const uint32_t n = 262144;
  memcpy(cb0.data() + layout.base + layout.params[0].first, &dptr, 8);
  memcpy(cb0.data() + layout.base + layout.params[1].first, &n, 4);
  auto params = replay::decode_params(*k, ByteView(cb0.data(), cb0.size()));
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].ordinal, 0u);
  EXPECT_EQ(params[0].size, layout.params[0].second);
  EXPECT_EQ(params[0].value, dptr);
  EXPECT_EQ(params[1].size, layout.params[1].second);
  EXPECT_EQ(params[1].value, n);
  // A constant buffer cut short: the bytes there are, no value.
  auto cut = replay::decode_params(*k, ByteView(cb0.data(), layout.base + 4));
  EXPECT_EQ(cut[0].bytes.size(), 4u);
  EXPECT_FALSE(cut[0].value.has_value());
  EXPECT_TRUE(cut[1].bytes.empty());
}

TEST(ReplayKernels, FilesWithoutCudaImagesAddNothing) {
  replay::KernelIndex index;
  // A real ELF program without a .nv_fatbin: read, and nothing added.
  ASSERT_EQ(access(cuda_probe_bin().c_str(), R_OK), 0) << cuda_probe_bin();
  EXPECT_FALSE(index.add_file(cuda_probe_bin()));
  EXPECT_FALSE(index.add_file(temp_dir() + "/no-such-file"));
  EXPECT_EQ(index.kernels(), 0u);
}

}  // namespace
}  // namespace cudatool::test
