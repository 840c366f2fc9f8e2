// `cudatool cubins` on the four real Debian libcuda builds. Every figure is checked against a
// source computed at test time: an independent scan for the ELF magic written in this file's
// helper (cubins_tools.cpp, no cudatool parser), cuobjdump on every extracted image, and
// readelf for the relocations and for the embedded host ELF file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cubins_tools.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

class RealCubins : public ::testing::TestWithParam<DriverBuild> {
 protected:
  void SetUp() override { CUDATOOL_REQUIRE_BUILD(GetParam()); }
  std::string lib() const { return GetParam().lib_path; }
  json scan(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{cudatool_bin(), "cubins", "--json", lib()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult r = run(argv, 300);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.status, 0) << r.err.substr(0, 2000);
    EXPECT_TRUE(r.err.empty()) << r.err.substr(0, 2000);
    return json::parse(r.out);
  }
};

TEST_P(RealCubins, SameImagesAsAnIndependentScan) {
  json doc = scan();
  std::string bytes = read_file(lib());
  auto theirs = independent_cubin_scan(bytes);
  ASSERT_GT(theirs.size(), 100u) << "the independent scan found almost nothing";
  std::set<std::pair<uint64_t, uint64_t>> a, b;
  uint64_t their_bytes = 0;
  for (const auto& h : theirs) {
    a.insert({h.offset, h.size});
    their_bytes += h.size;
  }
  std::map<std::string, uint64_t> per_arch;
  for (const auto& im : doc["images"]) {
    EXPECT_EQ(im["kind"], "cuda-elf");  // these builds carry raw images only
    b.insert({json_hex(im["offset"]), im["size"].get<uint64_t>()});
    EXPECT_TRUE(im["error"].is_null()) << im["offset"] << ": " << im["error"];
    EXPECT_TRUE(im["problems"].empty()) << im["offset"] << ": " << im["problems"].dump();
    ASSERT_FALSE(im["elf"].is_null());
    EXPECT_NE(im["arch"], "sm_?");
    EXPECT_EQ(im["offset"], im["vaddr"]) << "libcuda's .rodata has vaddr == offset";
    ++per_arch[im["arch"]];
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(doc["image_count"].get<uint64_t>(), theirs.size());
  EXPECT_EQ(doc["total_bytes"].get<uint64_t>(), their_bytes);
  EXPECT_EQ(doc["damaged_images"].get<uint64_t>(), 0u);
  // The figures the issue asks to report, in the test log.
  std::cout << "[ cubins   ] " << GetParam().version << ": " << doc["image_count"] << " images, "
            << doc["total_bytes"] << " bytes;";
  for (const auto& [arch, n] : per_arch) std::cout << " " << arch << ":" << n;
  std::cout << "\n";
  // The summary partitions the same images and bytes.
  json sum = scan({"--summary"});
  uint64_t n = 0, bytes_sum = 0;
  for (const auto& r : sum["by_arch"]) {
    n += r["images"].get<uint64_t>();
    bytes_sum += r["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(n, theirs.size());
  EXPECT_EQ(bytes_sum, their_bytes);
}

TEST_P(RealCubins, EveryImageAgreesWithCuobjdump) {
  ASSERT_FALSE(cuobjdump_path().empty()) << cuobjdump_missing();
  std::string dir = temp_dir() + "/real-" + GetParam().version;
  RunResult x = run({cudatool_bin(), "cubins", lib(), "--extract", dir, "--summary"}, 300);
  ASSERT_EQ(x.status, 0) << x.err;
  json doc = json::parse(read_file(dir + "/index.json"));
  std::vector<std::string> files;
  for (const auto& im : doc["images"]) {
    ASSERT_FALSE(im["file"].is_null());
    files.push_back(dir + "/" + im["file"].get<std::string>());
  }
  auto elfs = cuobjdump_elf_each(files);
  auto resources = cuobjdump_resource_regs_each(files);
  uint64_t images = 0, functions = 0, regs_checked = 0, params_checked = 0, suffix_unseen = 0;
  for (const auto& im : doc["images"]) {
    SCOPED_TRACE(im["offset"].get<std::string>());
    std::string file = dir + "/" + im["file"].get<std::string>();
    const json& elf = im["elf"];
    const CuobjdumpElf& c = elfs[file];
    ASSERT_TRUE(c.ok) << c.raw.substr(0, 300);
    ++images;
    EXPECT_EQ(c.abi, elf["abi_version"].get<int>());
    EXPECT_EQ(c.sm, elf["sm"].get<int>());
    // cuobjdump decodes the ABI 7 "a" bit itself (sm=90a): the whole name must agree. For ABI 8
    // CUDA 13 writes the same e_flags for sm_100 and sm_100a; only the ptxas options in the
    // tkinfo note tell them apart, and the cached cuobjdump (12.4) prints sm=100 for both (580:
    // sm_100a, sm_103a, sm_110a). Then the number must agree here and the suffix is checked
    // against readelf's dump of the note (NoteFactsMatchReadelf).
    std::string arch = elf["arch"];
    bool suffix_from_note =
        elf["abi_version"] == 8 && c.sm_suffix.empty() &&
        elf["arch_evidence"].get<std::string>().rfind(".note.nv.tkinfo", 0) == 0;
    if (suffix_from_note) {
      EXPECT_EQ("sm_" + std::to_string(c.sm), arch.substr(0, arch.size() - 1));
      ++suffix_unseen;
    } else {
      EXPECT_EQ("sm_" + std::to_string(c.sm) + c.sm_suffix, arch);
    }
    EXPECT_EQ(c.flags, json_hex(elf["e_flags"]));
    std::vector<std::pair<std::string, uint64_t>> secs;
    for (const auto& s : elf["sections"])
      if (s["index"] != 0) secs.emplace_back(s["name"], s["size"]);
    EXPECT_EQ(secs, c.sections);
    std::map<std::string, const json*> by_name;
    for (const auto& k : elf["kernels"]) by_name[k["name"]] = &k;
    // A value of a function defined here, or of another symbol (an undefined callee).
    auto ours_attr = [&](const std::string& fn, const char* key, const char* attr) -> json {
      if (by_name.count(fn) != 0) return (*by_name[fn])[key];
      for (const auto& a : elf["other_symbol_attributes"]) {
        if (a["symbol"] == fn && a["attribute"] == attr) return a["value"];
      }
      return nullptr;
    };
    for (const auto& [fn, regs] : c.regcount) {
      EXPECT_EQ(ours_attr(fn, "registers", "EIATTR_REGCOUNT"), regs) << fn;
      ++regs_checked;
    }
    for (const auto& [fn, v] : c.frame_size) {
      EXPECT_EQ(ours_attr(fn, "frame_size", "EIATTR_FRAME_SIZE"), v) << fn;
    }
    for (const auto& [fn, v] : c.min_stack_size) {
      EXPECT_EQ(ours_attr(fn, "min_stack_size", "EIATTR_MIN_STACK_SIZE"), v) << fn;
    }
    for (const auto& [fn, by_ordinal] : c.params) {
      ASSERT_EQ(by_name.count(fn), 1u) << fn;
      std::map<uint32_t, uint32_t> ours;
      for (const auto& p : (*by_name[fn])["params"]) ours[p["ordinal"]] = p["size"];
      EXPECT_EQ(ours, by_ordinal) << fn;
      params_checked += by_ordinal.size();
    }
    for (const auto& [fn, v] : c.cbank_param_size) {
      EXPECT_EQ((*by_name.at(fn))["param_size"], v) << fn;
    }
    // --dump-resource-usage prints the text section's SHI_REGISTERS (our sh_info_registers);
    // REGCOUNT is compared above with cuobjdump's .nv.info dump.
    for (const auto& [fn, regs] : resources[file]) {
      ASSERT_EQ(by_name.count(fn), 1u) << fn;
      const json& k = *by_name[fn];
      if (k["sh_info_registers"].is_null()) continue;
      EXPECT_EQ(k["sh_info_registers"], regs) << fn;
      ++functions;
    }
  }
  EXPECT_EQ(images, doc["images"].size());
  EXPECT_GT(regs_checked, 100u);
  EXPECT_GT(params_checked, 100u);
  std::cout << "[ cubins   ] " << GetParam().version << ": cuobjdump agrees on " << images
            << " images, " << functions << " SHI_REGISTERS, " << regs_checked << " REGCOUNTs, "
            << params_checked << " parameters; " << suffix_unseen
            << " arch suffixes it cannot see (ABI 8, tkinfo note)\n";
}

// The toolkit version of every image, from what readelf shows of it: e_version for ABI 7 (124 is
// CUDA 12.4); for ABI 8 the note of type 0x3e8 when it is version 2 ({u16 2, u16 virtual SM, u16
// toolkit}), else the "release X.Y" in the tool version of the type 0x7d0 note (580.159.04 has
// ABI 8 images whose type 0x3e8 note is version 1, in .note.nv.cuver, and holds no toolkit). And
// for ABI 8 the architecture with its suffix, from the "-arch sm_100a" of that tool note's
// options (cuobjdump 12.4 cannot tell sm_100 from sm_100a).
TEST_P(RealCubins, NoteFactsMatchReadelf) {
  std::string dir = temp_dir() + "/toolkit-" + GetParam().version;
  RunResult x = run({cudatool_bin(), "cubins", lib(), "--extract", dir, "--summary"}, 300);
  ASSERT_EQ(x.status, 0) << x.err;
  json doc = json::parse(read_file(dir + "/index.json"));
  RunResult re =
      sh("cd '" + dir + "' && for f in *.cubin; do echo \"== $f\"; readelf -h -n -W \"$f\"; done",
         600);
  ASSERT_EQ(re.status, 0) << re.err.substr(0, 500);
  // file -> readelf's text for it
  std::map<std::string, std::string> by_file;
  std::string current;
  std::istringstream in(re.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("== ", 0) == 0) {
      current = line.substr(3);
      continue;
    }
    by_file[current] += line + "\n";
  }
  auto desc_of = [](const std::string& text, const std::string& type) {
    std::string bytes;
    auto at = text.find("Unknown note type: (" + type + ")");
    if (at == std::string::npos) return bytes;
    auto d = text.find("description data:", at);
    if (d == std::string::npos) return bytes;
    std::istringstream hex(text.substr(d + 17, text.find('\n', d) - d - 17));
    for (std::string tok; hex >> tok;)
      bytes.push_back(static_cast<char>(std::stoi(tok, nullptr, 16)));
    return bytes;
  };
  std::map<std::string, uint64_t> by_source;
  for (const auto& im : doc["images"]) {
    if (im["kind"] != "cuda-elf") continue;
    std::string file = im["file"];
    SCOPED_TRACE(file);
    ASSERT_EQ(by_file.count(file), 1u);
    const std::string& text = by_file[file];
    json expected;
    std::string source;
    if (im["elf"]["abi_version"] == 7) {
      std::smatch m;
      ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\n\s+Version:\s+0x([0-9a-f]+)\n)")));
      uint32_t v = std::stoul(m[1], nullptr, 16);
      expected = std::to_string(v / 10) + "." + std::to_string(v % 10);
      source = "e_version";
    } else {
      std::string cu = desc_of(text, "0x000003e8");
      std::string tk = desc_of(text, "0x000007d0");
      std::smatch arch;
      if (std::regex_search(tk, arch, std::regex(R"(-arch sm_(\d+)([a-z]?) )"))) {
        EXPECT_EQ(im["arch"], "sm_" + arch[1].str() + arch[2].str());
        ++by_source["arch from tkinfo"];
      }
      if (cu.size() >= 6 && static_cast<uint8_t>(cu[0]) == 2 && cu[1] == 0) {
        uint32_t v = static_cast<uint8_t>(cu[4]) | (static_cast<uint8_t>(cu[5]) << 8);
        expected = std::to_string(v / 10) + "." + std::to_string(v % 10);
        source = "note 0x3e8 v2";
      } else {
        std::smatch m;
        if (std::regex_search(tk, m, std::regex(R"(release (\d+)\.(\d),)"))) {
          expected = m[1].str() + "." + m[2].str();
          source = "tkinfo release";
        } else {
          source = "none";
        }
      }
    }
    ++by_source[source];
    EXPECT_EQ(im["elf"]["toolkit_version"], expected) << source;
  }
  std::cout << "[ cubins   ] " << GetParam().version << ": toolkit versions checked by source:";
  for (const auto& [k, n] : by_source) std::cout << " " << k << " " << n << ";";
  std::cout << "\n";
}

TEST_P(RealCubins, TableReferencesMatchReadelf) {
  json doc = scan();
  std::map<uint64_t, std::set<uint64_t>> expected;  // image vaddr -> relocated slots
  std::set<uint64_t> starts;
  for (const auto& im : doc["images"]) starts.insert(json_hex(im["vaddr"]));
  for (auto [slot, addend] : readelf_relative_relocs(lib())) {
    if (starts.count(addend) != 0) expected[addend].insert(slot);
  }
  uint64_t refs = 0;
  for (const auto& im : doc["images"]) {
    std::set<uint64_t> ours;
    for (const auto& r : im["references"]) {
      ours.insert(json_hex(r["slot"]));
      EXPECT_EQ(r["relocation"], "R_X86_64_RELATIVE");
      ++refs;
    }
    EXPECT_EQ(ours, expected[json_hex(im["vaddr"])]) << im["offset"];
  }
  EXPECT_GT(refs, 0u);
}

TEST_P(RealCubins, EveryMagicHitIsExplained) {
  json doc = scan();
  std::string bytes = read_file(lib());
  uint64_t hits = 0;
  for (size_t i = bytes.find("\x7f"
                             "ELF");
       i != std::string::npos; i = bytes.find("\x7f"
                                              "ELF",
                                              i + 1))
    ++hits;
  uint64_t rejected_elf = 0, rejected_fatbin = 0, containers = 0;
  for (const auto& im : doc["images"]) containers += im["kind"] == "fatbin" ? 1 : 0;
  for (const auto& r : doc["rejected"]) {
    std::string verdict = r["verdict"];
    if (r["magic"] == "fatbin") {
      ++rejected_fatbin;
      continue;
    }
    ++rejected_elf;
    if (r["section"] == ".text") {
      EXPECT_EQ(verdict, "instruction bytes") << r["offset"];
    }
    if (verdict == "host ELF") {
      // The embedded host executable, carved out and read by readelf.
      uint64_t off = json_hex(r["offset"]), size = r["size"];
      std::string carved = write_temp("host-elf-" + GetParam().version, bytes.substr(off, size));
      RunResult h = run({"readelf", "-h", "-l", "-W", carved});
      EXPECT_EQ(h.status, 0);
      EXPECT_NE(h.out.find("ELF64"), std::string::npos);
      EXPECT_NE(h.out.find("X86-64"), std::string::npos) << h.out;
      EXPECT_TRUE(h.err.empty()) << h.err;
    }
  }
  EXPECT_EQ(doc["elf_magic_hits"].get<uint64_t>(), hits);
  EXPECT_EQ(hits, doc["image_count"].get<uint64_t>() + rejected_elf);
  EXPECT_EQ(doc["fatbin_magic_hits"].get<uint64_t>(), containers + rejected_fatbin);
}

INSTANTIATE_TEST_SUITE_P(Debian, RealCubins, ::testing::ValuesIn(driver_builds()),
                         driver_test_name);
// libcuda 580.159.04 from the shared test data (skipped, saying how to get it, when absent).
INSTANTIATE_TEST_SUITE_P(SharedData, RealCubins, ::testing::ValuesIn(shared_builds()),
                         driver_test_name);

}  // namespace
}  // namespace cudatool::test
