// `cudatool cubins` on the device-code fixtures (tests/fixtures/cubins): images built here by
// nvcc and fatbinary (or their committed copies), embedded in a shared library. Expected values
// come from the build (manifest: what each image was built for), from the PTX nvcc made of the
// same source, from cuobjdump and from readelf, all at test time.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cubins_tools.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

struct ManifestRow {
  std::string file, kind, target, compression;
};

std::string blobs_dir() {
  return fixtures_dir() + "/cubins/blobs";
}

std::vector<ManifestRow> manifest() {
  std::vector<ManifestRow> out;
  std::ifstream in(blobs_dir() + "/manifest.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    ManifestRow r;
    ls >> r.file >> r.kind >> r.target >> r.compression;
    out.push_back(r);
  }
  return out;
}

std::string stem(const std::string& file) {
  return file.substr(0, file.rfind('.'));
}

json scan_json(const std::string& lib, std::vector<std::string> extra = {}, int want = 0) {
  std::vector<std::string> argv{cudatool_bin(), "cubins", "--json", lib};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = run(argv);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.status, want) << r.err;
  return json::parse(r.out);
}

const json* top_image_at(const json& doc, uint64_t off) {
  for (const auto& im : doc["images"]) {
    if (im["container"].is_null() && json_hex(im["offset"]) == off) return &im;
  }
  return nullptr;
}

std::vector<const json*> entries_of(const json& doc, const json& container) {
  std::vector<const json*> out;
  for (const auto& im : doc["images"]) {
    if (!im["container"].is_null() && im["container"] == container["index"]) out.push_back(&im);
  }
  return out;
}

const json* kernel_named(const json& elf, const std::string& name) {
  for (const auto& k : elf["kernels"])
    if (k["name"] == name) return &k;
  return nullptr;
}

class CubinFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(cuobjdump_path().empty()) << cuobjdump_missing();
    ASSERT_FALSE(manifest().empty()) << "no " << blobs_dir() << "/manifest.txt: build the tests";
  }
  std::string lib() const { return fixtures_dir() + "/libcuda_cubins.so"; }
  // One extraction per test binary run.
  const json& extracted() {
    static json doc = [this] {
      std::string dir = temp_dir() + "/fixture-extract";
      RunResult r = run({cudatool_bin(), "cubins", lib(), "--extract", dir, "--summary"});
      EXPECT_EQ(r.status, 0) << r.err;
      json j = json::parse(read_file(dir + "/index.json"));
      j["dir"] = dir;
      return j;
    }();
    return doc;
  }
};

// The kernels of one decoded ELF image against the PTX of the same source and cuobjdump.
void expect_kernels_match(const json& elf, const std::vector<PtxFunction>& ptx,
                          const std::string& file, const std::string& what) {
  std::set<std::string> ptx_entries, ours;
  for (const auto& f : ptx) {
    if (!f.entry) {
      // ptxas may rename a device function ("$kernel$callee"); it keeps the PTX name as suffix.
      bool found = false;
      for (const auto& k : elf["kernels"]) {
        std::string n = k["name"];
        found |= !k["entry"].get<bool>() && n.size() >= f.name.size() &&
                 n.compare(n.size() - f.name.size(), f.name.size(), f.name) == 0;
      }
      EXPECT_TRUE(found) << what << ": device function " << f.name;
      continue;
    }
    ptx_entries.insert(f.name);
    const json* k = kernel_named(elf, f.name);
    ASSERT_NE(k, nullptr) << what << ": kernel " << f.name;
    EXPECT_TRUE((*k)["entry"].get<bool>()) << f.name;
    std::vector<uint32_t> sizes;
    for (const auto& p : (*k)["params"]) sizes.push_back(p["size"]);
    EXPECT_EQ(sizes, f.param_sizes) << what << ": parameter sizes of " << f.name;
  }
  for (const auto& k : elf["kernels"])
    if (k["entry"].get<bool>()) ours.insert(k["name"]);
  EXPECT_EQ(ours, ptx_entries) << what;

  CuobjdumpElf c = cuobjdump_elf(file);
  ASSERT_TRUE(c.ok) << file << "\n" << c.raw.substr(0, 400);
  // The comparisons below must have something to compare.
  EXPECT_FALSE(c.sections.empty()) << what;
  EXPECT_FALSE(c.regcount.empty()) << what;
  EXPECT_FALSE(c.params.empty()) << what;
  EXPECT_FALSE(ptx_entries.empty()) << what;
  EXPECT_EQ(c.abi, elf["abi_version"].get<int>()) << what;
  EXPECT_EQ(c.sm, elf["sm"].get<int>()) << what;
  // cuobjdump 12.4 does not know the ABI 8 way of marking sm_90a (it prints sm=90); when it
  // prints a suffix it must be ours.
  if (!c.sm_suffix.empty()) {
    EXPECT_EQ("sm_" + std::to_string(c.sm) + c.sm_suffix, elf["arch"].get<std::string>());
  }
  EXPECT_EQ(c.flags, json_hex(elf["e_flags"])) << what;
  std::vector<std::pair<std::string, uint64_t>> secs;
  for (const auto& s : elf["sections"])
    if (s["index"] != 0) secs.emplace_back(s["name"], s["size"]);
  EXPECT_EQ(secs, c.sections) << what;
  for (const auto& [fn, regs] : c.regcount) {
    const json* k = kernel_named(elf, fn);
    ASSERT_NE(k, nullptr) << what << ": " << fn;
    EXPECT_EQ((*k)["registers"], regs) << what << ": " << fn;
  }
  for (const auto& [fn, v] : c.frame_size) EXPECT_EQ((*kernel_named(elf, fn))["frame_size"], v);
  for (const auto& [fn, v] : c.min_stack_size) {
    EXPECT_EQ((*kernel_named(elf, fn))["min_stack_size"], v);
  }
  for (const auto& [fn, by_ordinal] : c.params) {
    const json* k = kernel_named(elf, fn);
    ASSERT_NE(k, nullptr) << fn;
    std::map<uint32_t, uint32_t> ours_by_ordinal;
    for (const auto& p : (*k)["params"]) ours_by_ordinal[p["ordinal"]] = p["size"];
    EXPECT_EQ(ours_by_ordinal, by_ordinal) << what << ": " << fn;
  }
  for (const auto& [fn, v] : c.cbank_param_size)
    EXPECT_EQ((*kernel_named(elf, fn))["param_size"], v);
  for (const auto& [fn, regs] : cuobjdump_resource_regs(file)) {
    const json* k = kernel_named(elf, fn);
    ASSERT_NE(k, nullptr) << fn;
    // --dump-resource-usage prints SHI_REGISTERS when the text section has it (not in CUDA 13
    // images: there REGCOUNT, compared above, is the only count).
    if (!(*k)["sh_info_registers"].is_null()) {
      EXPECT_EQ((*k)["sh_info_registers"], regs) << fn;
    }
  }
}

TEST_F(CubinFixture, EveryCubinDecodesAsBuilt) {
  const json& doc = extracted();
  auto syms = symbol_file_offsets(lib());
  std::string ptx_text = read_file(blobs_dir() + "/kernels_compute_80.ptx");
  auto ptx = parse_ptx(ptx_text);
  ASSERT_GE(ptx.size(), 3u) << "PTX of kernels.cu not parsed";
  // The toolkit version named in the manifest's nvcc --version lines ("release 13.0, V…").
  std::smatch m;
  std::string man = read_file(blobs_dir() + "/manifest.txt");
  ASSERT_TRUE(std::regex_search(man, m, std::regex(R"(release (\d+\.\d+))")));
  std::string toolkit = m[1];
  int cubins = 0;
  for (const auto& row : manifest()) {
    if (row.kind != "cubin") continue;
    ++cubins;
    SCOPED_TRACE(row.file);
    auto sym = syms.find("fixture_" + stem(row.file));
    ASSERT_NE(sym, syms.end());
    std::string blob = read_file(blobs_dir() + "/" + row.file);
    const json* im = top_image_at(doc, sym->second.first);
    ASSERT_NE(im, nullptr) << "no image at the offset of fixture_" << stem(row.file);
    EXPECT_EQ((*im)["kind"], "cuda-elf");
    EXPECT_EQ((*im)["size"].get<uint64_t>(), blob.size());
    EXPECT_EQ((*im)["size"].get<uint64_t>(), sym->second.second);
    EXPECT_EQ((*im)["section"], ".rodata");
    EXPECT_TRUE((*im)["error"].is_null());
    EXPECT_TRUE((*im)["problems"].empty()) << (*im)["problems"].dump();
    const json& elf = (*im)["elf"];
    EXPECT_EQ((*im)["arch"], row.target) << "decoded architecture";
    EXPECT_EQ(elf["arch"], row.target);
    EXPECT_EQ(elf["toolkit_version"], toolkit);
    std::string evidence = elf["arch_evidence"];
    if (row.target.back() >= 'a' && row.target.back() <= 'z') {
      // CUDA 13 writes the same e_flags for sm_90 and sm_90a: the note must have decided.
      EXPECT_NE(evidence.find(".note.nv.tkinfo"), std::string::npos) << evidence;
    }
    EXPECT_EQ(elf["virtual_arch"], "compute_" + std::to_string(elf["sm"].get<int>()));
    std::string file = doc["dir"].get<std::string>() + "/" + (*im)["file"].get<std::string>();
    EXPECT_EQ(read_file(file), blob) << "extracted bytes differ from the built cubin";
    expect_kernels_match(elf, ptx, file, row.file);
  }
  EXPECT_EQ(cubins, 6);
}

TEST_F(CubinFixture, FatbinsDecodeAndDecompress) {
  const json& doc = extracted();
  auto syms = symbol_file_offsets(lib());
  auto ptx = parse_ptx(read_file(blobs_dir() + "/kernels_compute_80.ptx"));
  int fatbins = 0;
  for (const auto& row : manifest()) {
    if (row.kind != "fatbin") continue;
    ++fatbins;
    SCOPED_TRACE(row.file);
    std::string blob = read_file(blobs_dir() + "/" + row.file);
    auto sym = syms.find("fixture_" + stem(row.file));
    ASSERT_NE(sym, syms.end());
    const json* c = top_image_at(doc, sym->second.first);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ((*c)["kind"], "fatbin");
    EXPECT_EQ((*c)["size"].get<uint64_t>(), blob.size());
    EXPECT_TRUE((*c)["error"].is_null());
    auto entries = entries_of(doc, *c);
    // cuobjdump lists the same entries, ELF and PTX, with the same architectures.
    std::multiset<std::pair<std::string, std::string>> theirs, ours;
    for (const auto& e : cuobjdump_list(sym == syms.end() ? "" : blobs_dir() + "/" + row.file)) {
      theirs.insert(e);
    }
    ASSERT_FALSE(theirs.empty()) << "cuobjdump listed nothing for " << row.file;
    for (const json* e : entries) {
      std::string kind = (*e)["kind"];
      ours.insert({kind == "fatbin-ptx" ? "PTX" : "ELF",
                   (*e)["fatbin_entry"]["sm"].is_null()
                       ? ""
                       : "sm_" + std::to_string((*e)["fatbin_entry"]["sm"].get<int>())});
      EXPECT_EQ((*e)["compression"], row.compression);
      EXPECT_TRUE((*e)["error"].is_null()) << (*e)["error"];
      std::string file = doc["dir"].get<std::string>() + "/" + (*e)["file"].get<std::string>();
      std::string content = read_file(file);
      if (kind == "fatbin-elf") {
        // Decompressed (or stored) entries are the cubins fatbinary was given, byte for byte.
        std::string arch = (*e)["arch"];
        std::string original =
            read_file(blobs_dir() + "/kernels_" + arch.substr(0, 2) + arch.substr(3) + ".cubin");
        EXPECT_EQ(content, original) << "entry " << (*e)["entry_index"] << " (" << arch << ")";
        expect_kernels_match((*e)["elf"], ptx, file, row.file + " " + arch);
      } else {
        // PTX: what `cuobjdump -xptx` extracts from the same container.
        std::string xdir = temp_dir() + "/xptx-" + stem(row.file);
        RunResult x = sh("mkdir -p " + xdir + " && cd " + xdir + " && " + cuobjdump_path() +
                         " -xptx all " + blobs_dir() + "/" + row.file);
        ASSERT_EQ(x.status, 0) << x.err;
        RunResult ls = sh("ls " + xdir + "/*.ptx");
        std::string theirs_ptx = read_file(ls.out.substr(0, ls.out.find('\n')));
        EXPECT_EQ(content, theirs_ptx);
      }
    }
    // cuobjdump names PTX entries by the SM they were built for (compute_80 shows as sm_80).
    std::multiset<std::pair<std::string, std::string>> theirs_norm;
    for (auto [k, a] : theirs)
      theirs_norm.insert({k, a.rfind("compute_", 0) == 0 ? "sm_" + a.substr(8) : a});
    EXPECT_EQ(ours, theirs_norm);
  }
  EXPECT_EQ(fatbins, 3);
}

TEST_F(CubinFixture, IndependentScanFindsTheSameImages) {
  std::string bytes = read_file(lib());
  json doc = scan_json(lib());
  std::set<std::pair<uint64_t, uint64_t>> raw_ours;
  std::set<uint64_t> stored_entries;
  for (const auto& im : doc["images"]) {
    if (im["kind"] == "cuda-elf") raw_ours.insert({json_hex(im["offset"]), im["size"]});
    if (im["kind"] == "fatbin-elf" && im["compression"] == "none") {
      stored_entries.insert(json_hex(im["offset"]));
    }
  }
  std::set<std::pair<uint64_t, uint64_t>> raw_theirs;
  for (const auto& h : independent_cubin_scan(bytes)) {
    if (stored_entries.count(h.offset) != 0) {
      stored_entries.erase(h.offset);  // an ELF stored in a fatbin: reported as its entry
      continue;
    }
    raw_theirs.insert({h.offset, h.size});
  }
  EXPECT_EQ(raw_ours, raw_theirs);
  EXPECT_TRUE(stored_entries.empty());
  // Every magic hit is accounted for.
  auto count = [&](std::string_view needle) {
    uint64_t n = 0;
    for (size_t i = bytes.find(needle); i != std::string::npos; i = bytes.find(needle, i + 1)) ++n;
    return n;
  };
  EXPECT_EQ(doc["elf_magic_hits"].get<uint64_t>(), count(std::string_view("\x7f"
                                                                          "ELF",
                                                                          4)));
  EXPECT_EQ(doc["fatbin_magic_hits"].get<uint64_t>(),
            count(std::string_view("\x50\xed\x55\xba", 4)));
}

TEST_F(CubinFixture, DecoysAreExplained) {
  json doc = scan_json(lib());
  auto syms = symbol_file_offsets(lib());
  uint64_t decoy = syms.at("fixture_decoy_elf32").first;
  bool elf32 = false, immediate = false, header = false;
  for (const auto& r : doc["rejected"]) {
    uint64_t off = json_hex(r["offset"]);
    if (off == decoy) elf32 = r["verdict"] == "not an ELF header" && r["section"] == ".rodata";
    if (r["magic"] == "fatbin" && r["section"] == ".text")
      immediate = r["verdict"] == "instruction bytes";
    if (off == 0) header = r["verdict"] == "library header";
  }
  EXPECT_TRUE(elf32) << doc["rejected"].dump(1);
  EXPECT_TRUE(immediate) << doc["rejected"].dump(1);
  EXPECT_TRUE(header);
}

TEST_F(CubinFixture, TablesPointAtTheImages) {
  json doc = scan_json(lib());
  auto relocs = readelf_relative_relocs(lib());
  std::map<std::string, std::string> target_of;
  for (const auto& row : manifest()) target_of[stem(row.file)] = row.target;
  auto syms = symbol_file_offsets(lib());
  for (const auto& row : manifest()) {
    if (row.kind == "ptx") continue;
    SCOPED_TRACE(row.file);
    const json* im = top_image_at(doc, syms.at("fixture_" + stem(row.file)).first);
    ASSERT_NE(im, nullptr);
    ASSERT_EQ((*im)["references"].size(), 1u) << (*im)["references"].dump();
    const json& ref = (*im)["references"][0];
    EXPECT_EQ(ref["section"], ".data.rel.ro");
    EXPECT_EQ(ref["name_field"], row.target);
    EXPECT_EQ(ref["size_field"], (*im)["size"]);
    if (row.kind == "cubin") {
      // Hidden arrays: readelf shows an R_X86_64_RELATIVE at the slot with the image address.
      EXPECT_EQ(ref["relocation"], "R_X86_64_RELATIVE");
      bool seen = false;
      for (auto [slot, addend] : relocs)
        seen |= slot == json_hex(ref["slot"]) && addend == json_hex((*im)["vaddr"]);
      EXPECT_TRUE(seen);
    } else {
      EXPECT_EQ(ref["relocation"], "R_X86_64_64");
    }
  }
}

TEST_F(CubinFixture, SummaryAndArchFilter) {
  json doc = scan_json(lib());
  json sum = scan_json(lib(), {"--summary"});
  EXPECT_EQ(sum["schema"], "cudatool.cubins-summary/1");
  uint64_t n = 0;
  for (const auto& r : sum["by_arch"]) n += r["images"].get<uint64_t>();
  EXPECT_EQ(n, doc["images"].size());
  EXPECT_EQ(sum["total_bytes"], doc["total_bytes"]);
  json a = scan_json(lib(), {"--arch", "sm_90a"});
  ASSERT_EQ(a["images"].size(), 1u);
  EXPECT_EQ(a["images"][0]["arch"], "sm_90a");
  json b = scan_json(lib(), {"--arch", "sm_90"});
  std::set<std::string> kinds, archs;
  for (const auto& im : b["images"]) {
    kinds.insert(im["kind"]);
    if (!im["arch"].is_null()) archs.insert(im["arch"]);
  }
  EXPECT_EQ(archs, (std::set<std::string>{"sm_90", "sm_90a"}));
  EXPECT_EQ(kinds.count("fatbin"), 1u);  // containers that hold an sm_90 entry
}

TEST_F(CubinFixture, HumanOutputsRender) {
  for (std::vector<std::string> args : {std::vector<std::string>{},
                                        {"--kernels", "--sections", "--rejected"},
                                        {"--summary"},
                                        {"--arch", "compute_80"}}) {
    args.insert(args.begin(), {cudatool_bin(), "cubins", lib()});
    RunResult r = run(args);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    EXPECT_GT(r.out.size(), 200u);
  }
  RunResult h = run({cudatool_bin(), "cubins", "--help"});
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("Examples:"), std::string::npos);
}

// A .cubin or a .fatbin given directly (not embedded in a library) is decoded the same way.
TEST_F(CubinFixture, StandaloneFiles) {
  for (const auto& row : manifest()) {
    if (row.kind == "ptx") continue;
    SCOPED_TRACE(row.file);
    std::string file = blobs_dir() + "/" + row.file;
    json doc = scan_json(file);
    const json* im = top_image_at(doc, 0);
    ASSERT_NE(im, nullptr);
    EXPECT_EQ((*im)["size"].get<uint64_t>(), read_file(file).size());
    EXPECT_TRUE(doc["rejected"].empty()) << doc["rejected"].dump();
    if (row.kind == "cubin") {
      EXPECT_EQ((*im)["arch"], row.target);
    } else {
      std::multiset<std::string> ours, theirs;
      for (const json* e : entries_of(doc, *im)) ours.insert((*e)["arch"].get<std::string>());
      for (const auto& [kind, arch] : cuobjdump_list(file)) {
        theirs.insert(kind == "PTX" ? "compute_" + arch.substr(arch.find('_') + 1) : arch);
      }
      EXPECT_EQ(ours, theirs);
    }
  }
}

// The committed copies (used where there is no nvcc) are what generate.sh makes of the
// committed source: when this build ran nvcc of the same version, the bytes must be equal.
TEST_F(CubinFixture, PrebuiltCopiesAreCurrent) {
  std::string prebuilt = source_dir() + "/tests/fixtures/cubins/prebuilt";
  std::string built = read_file(blobs_dir() + "/manifest.txt");
  std::string committed = read_file(prebuilt + "/manifest.txt");
  ASSERT_FALSE(committed.empty());
  auto rows = [](const std::string& m) {
    std::string out;
    std::istringstream in(m);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') out += line + "\n";
    return out;
  };
  EXPECT_EQ(rows(built), rows(committed)) << "regenerate prebuilt/ (see its README.md)";
  if (built != committed) {
    std::cout << "[ cubins   ] nvcc differs from the one that made prebuilt/; bytes not compared\n";
    return;
  }
  for (const auto& row : manifest()) {
    EXPECT_EQ(read_file(blobs_dir() + "/" + row.file), read_file(prebuilt + "/" + row.file))
        << row.file << ": regenerate prebuilt/ (tests/fixtures/cubins/prebuilt/README.md)";
  }
}

// Damaged images: one error per image, the rest decoded, exit status 2, never a crash.
TEST_F(CubinFixture, HostileImagesFailOneByOne) {
  std::string lib = fixtures_dir() + "/libcuda_cubins_hostile.so";
  json doc = scan_json(lib, {}, 2);
  auto syms = symbol_file_offsets(lib);
  struct Expect {
    std::string name;
    bool in_entry;      // the first entry of the container, not the container itself
    bool is_problem;    // reported under "problems" (decoded otherwise) rather than "error"
    std::string words;  // what the message must say
  };
  const std::vector<Expect> expects = {
      {"shoff_past_end", false, false, "e_shoff"},
      {"shnum_lying", false, false, "section header table"},
      {"section_size_lying", false, false, "sh_offset"},
      {"nv_info_garbage", false, true, "unknown format"},
      {"symtab_bad_link", false, true, "sh_link"},
      {"truncated_header", false, false, "e_ehsize"},
      {"bomb_declared_size", true, false, "decompression bomb"},
      {"bomb_ratio", true, false, "decompression bomb"},
      {"zstd_size_mismatch", true, false, "zstd frame says"},
      {"lz4_corrupt", true, false, "LZ4"},
      {"fatbin_entry_overrun", false, false, "payload_size"},
      {"fatbin_size_lying", false, false, "fat_size"},
  };
  for (const auto& e : expects) {
    SCOPED_TRACE(e.name);
    auto sym = syms.find("fixture_" + e.name);
    ASSERT_NE(sym, syms.end());
    const json* im = top_image_at(doc, sym->second.first);
    ASSERT_NE(im, nullptr);
    if (e.in_entry) {
      auto entries = entries_of(doc, *im);
      ASSERT_FALSE(entries.empty());
      im = entries[0];
    }
    std::string msg = e.is_problem ? (*im)["problems"].dump() : (*im)["error"].dump();
    EXPECT_NE(msg.find(e.words), std::string::npos) << (*im).dump(1).substr(0, 2000);
  }
  const json* intact = top_image_at(doc, syms.at("fixture_intact_sm80").first);
  ASSERT_NE(intact, nullptr);
  EXPECT_TRUE((*intact)["error"].is_null());
  EXPECT_TRUE((*intact)["problems"].empty());
  EXPECT_EQ((*intact)["arch"], "sm_80");
  EXPECT_GE(doc["damaged_images"].get<uint64_t>(), expects.size());
  // Text output and extraction of the same file: exit 2, no crash.
  for (std::vector<std::string> extra :
       {std::vector<std::string>{"--kernels"}, {"--extract", temp_dir() + "/hostile-extract"}}) {
    std::vector<std::string> argv{cudatool_bin(), "cubins", lib};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult r = run(argv);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("decompression bomb"), std::string::npos);
  }
}

}  // namespace
}  // namespace cudatool::test
