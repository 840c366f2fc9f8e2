#include "cubins_tools.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>

#include "harness.hpp"

namespace cudatool::test {

std::string cuobjdump_path() {
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("CUDATOOL_CUOBJDUMP"); e != nullptr && *e != '\0') {
    candidates.emplace_back(e);
  }
  candidates.emplace_back("/usr/local/cuda/bin/cuobjdump");
  if (const char* p = std::getenv("PATH")) {
    std::istringstream in(p);
    std::string dir;
    while (std::getline(in, dir, ':')) candidates.push_back(dir + "/cuobjdump");
  }
  std::string cache = std::getenv("CUDATOOL_CUDA_TOOLS") != nullptr
                          ? std::getenv("CUDATOOL_CUDA_TOOLS")
                          : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") +
                                "/.cache/cudatool/cuda-tools";
  candidates.push_back(cache + "/cuobjdump");
  for (const auto& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return "";
}

std::string cuobjdump_missing() {
  return "no cuobjdump (the independent decoder these tests compare with): run "
         "tools/fetch-cuda-tools.sh (tools/test.sh does), install the CUDA toolkit in "
         "/usr/local/cuda, or set CUDATOOL_CUOBJDUMP";
}

namespace {

// Runs `cuobjdump ARGS FILE` for every file from one shell (a fork of an ASan-instrumented test
// process costs far more than the tool itself) and splits the output per file; a file whose
// run failed maps to "".
std::map<std::string, std::string> cuobjdump_each(const std::string& args,
                                                  const std::vector<std::string>& files) {
  std::map<std::string, std::string> out;
  if (files.empty()) return out;
  std::string list = temp_dir() + "/cuobjdump-files.txt";
  std::string names;
  for (const auto& f : files) names += f + "\n";
  write_temp("cuobjdump-files.txt", names);
  const std::string mark = "=== cudatool-test-file ";
  RunResult r =
      sh("while IFS= read -r f; do echo \"" + mark + "$f\"; \"" + cuobjdump_path() + "\" " + args +
             " \"$f\" 2>/dev/null || echo \"" + mark + "FAILED\"; done < " + list,
         600);
  std::string current;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t eol = r.out.find('\n', pos);
    if (eol == std::string::npos) eol = r.out.size();
    std::string_view line(r.out.data() + pos, eol - pos);
    if (line.substr(0, mark.size()) == mark) {
      std::string name(line.substr(mark.size()));
      if (name == "FAILED") {
        out[current].clear();
      } else {
        current = name;
        out[current];
      }
    } else if (!current.empty()) {
      out[current].append(line).push_back('\n');
    }
    pos = eol + 1;
  }
  return out;
}

}  // namespace

CuobjdumpElf cuobjdump_elf(const std::string& file) {
  return parse_cuobjdump_elf(cuobjdump_each("-elf", {file})[file]);
}

std::map<std::string, CuobjdumpElf> cuobjdump_elf_each(const std::vector<std::string>& files) {
  std::map<std::string, CuobjdumpElf> out;
  for (auto& [f, text] : cuobjdump_each("-elf", files)) out[f] = parse_cuobjdump_elf(text);
  return out;
}

std::map<std::string, std::map<std::string, uint32_t>> cuobjdump_resource_regs_each(
    const std::vector<std::string>& files) {
  std::map<std::string, std::map<std::string, uint32_t>> out;
  for (auto& [f, text] : cuobjdump_each("--dump-resource-usage", files)) {
    out[f] = parse_resource_regs(text);
  }
  return out;
}

CuobjdumpElf parse_cuobjdump_elf(const std::string& text) {
  CuobjdumpElf out;
  out.raw = text;
  std::istringstream in(text);
  std::string line, section, attr;
  std::smatch m;
  static const std::regex header(
      R"(abi=(\d+), sm=(\d+)([a-z]?), toolkit=\d+, flags = (0x[0-9a-f]+))");
  static const std::regex sec_row(
      R"(^\s*([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+[0-9a-f]+\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+(\S+)$)");
  static const std::regex fn_value(
      R"(function: (\S+)\(0x[0-9a-f]+\)\s+(register count|frame size|min stack size): (0x[0-9a-f]+|\d+))");
  static const std::regex kparam(
      R"(Ordinal : (0x[0-9a-f]+)\s+Offset\s+: 0x[0-9a-f]+\s+Size\s+: (0x[0-9a-f]+))");
  static const std::regex value(R"(^\s*Value:\s+(0x[0-9a-f]+)\s*$)");
  bool in_sections = false;
  while (std::getline(in, line)) {
    // Each regex runs only on lines that hold its fixed text: cuobjdump -elf writes ~166 MB for
    // the 580 build's images, and a regex on every line was most of the real-cubin tests' time.
    if (line.find("abi=") != std::string::npos && std::regex_search(line, m, header)) {
      out.abi = std::stoi(m[1]);
      out.sm = std::stoi(m[2]);
      out.sm_suffix = m[3];
      out.flags = hex_value(m[4]);
      out.ok = true;
      continue;
    }
    if (line.rfind("Sections:", 0) == 0) {
      in_sections = true;
      continue;
    }
    if (in_sections) {
      if (line.rfind("Index", 0) == 0) continue;
      if (std::regex_match(line, m, sec_row)) {
        out.sections.emplace_back(m[4], hex_value(m[3]));
        continue;
      }
      in_sections = false;
    }
    if (!line.empty() && line[0] == '.') {
      section = line;
      while (!section.empty() && (section.back() == ' ' || section.back() == '\r'))
        section.pop_back();
      continue;
    }
    if (line.find("Attribute:") != std::string::npos) {
      attr = line.substr(line.find(':') + 1);
      attr.erase(0, attr.find_first_not_of(" \t"));
      continue;
    }
    if (line.find("function: ") != std::string::npos && std::regex_search(line, m, fn_value)) {
      uint32_t v = static_cast<uint32_t>(std::stoull(m[3], nullptr, 0));
      std::string what = m[2];
      auto& map = what == "register count" ? out.regcount
                  : what == "frame size"   ? out.frame_size
                                           : out.min_stack_size;
      map[m[1]] = v;
      continue;
    }
    if (section.rfind(".nv.info.", 0) == 0) {
      std::string fn = section.substr(9);
      if (attr == "EIATTR_KPARAM_INFO" && line.find("Ordinal") != std::string::npos &&
          std::regex_search(line, m, kparam)) {
        out.params[fn][static_cast<uint32_t>(hex_value(m[1]))] =
            static_cast<uint32_t>(hex_value(m[2]));
      } else if (attr == "EIATTR_CBANK_PARAM_SIZE" && line.find("Value:") != std::string::npos &&
                 std::regex_search(line, m, value)) {
        out.cbank_param_size[fn] = static_cast<uint32_t>(hex_value(m[1]));
      }
    }
  }
  return out;
}

std::map<std::string, uint32_t> cuobjdump_resource_regs(const std::string& file) {
  return parse_resource_regs(cuobjdump_each("--dump-resource-usage", {file})[file]);
}

std::map<std::string, uint32_t> parse_resource_regs(const std::string& text) {
  std::map<std::string, uint32_t> out;
  static const std::regex fn(R"(Function (\S+):\s*\n\s*REG:(\d+))");
  for (std::sregex_iterator it(text.begin(), text.end(), fn), end; it != end; ++it) {
    out[(*it)[1]] = static_cast<uint32_t>(std::stoul((*it)[2]));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> cuobjdump_list(const std::string& file) {
  std::vector<std::pair<std::string, std::string>> out;
  RunResult r = run({cuobjdump_path(), "-lelf", "-lptx", file});
  static const std::regex row(
      R"((ELF|PTX) file\s+\d+: \S+\.((?:sm|compute)_\d+[a-z]?)\.(?:cubin|ptx))");
  std::istringstream in(r.out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, row)) out.emplace_back(m[1], m[2]);
  }
  return out;
}

namespace {

uint32_t ptx_type_size(const std::string& t) {
  // .u8 .s8 .b8 .u16 … .f64 .pred
  std::smatch m;
  static const std::regex bits(R"([usbf](\d+))");
  if (std::regex_match(t, m, bits)) return static_cast<uint32_t>(std::stoul(m[1]) / 8);
  return 0;
}

}  // namespace

std::vector<PtxFunction> parse_ptx(const std::string& text) {
  std::vector<PtxFunction> out;
  static const std::regex head(
      R"(^(?:\.visible |\.weak |\.extern )?\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)\()");
  static const std::regex param(
      R"(\.param\s+(?:\.align \d+\s+)?(?:\.ptr\s+\S+\s+(?:\.align \d+\s+)?)?\.(\w+)\s+[\w$]+(?:\[(\d+)\])?)");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_search(line, m, head)) continue;
    PtxFunction f;
    f.entry = m[1] == "entry";
    f.name = m[2];
    // Parameters follow, one per line, up to the closing parenthesis.
    std::string rest = line.substr(line.find(f.name + "(") + f.name.size() + 1);
    std::string decl = rest;
    while (decl.find(')') == std::string::npos && std::getline(in, line)) decl += "\n" + line;
    decl = decl.substr(0, decl.find(')'));
    for (std::sregex_iterator it(decl.begin(), decl.end(), param), end; it != end; ++it) {
      uint32_t size = ptx_type_size((*it)[1]);
      if ((*it)[2].matched) size *= static_cast<uint32_t>(std::stoul((*it)[2]));
      f.param_sizes.push_back(size);
    }
    out.push_back(f);
  }
  return out;
}

std::vector<RawCubin> independent_cubin_scan(const std::string& b) {
  auto u16 = [&](size_t o) {
    uint16_t v;
    std::memcpy(&v, b.data() + o, 2);
    return v;
  };
  auto u32 = [&](size_t o) {
    uint32_t v;
    std::memcpy(&v, b.data() + o, 4);
    return v;
  };
  auto u64 = [&](size_t o) {
    uint64_t v;
    std::memcpy(&v, b.data() + o, 8);
    return v;
  };
  std::vector<RawCubin> out;
  size_t i = 0;
  while ((i = b.find("\x7f"
                     "ELF",
                     i)) != std::string::npos) {
    size_t at = i;
    i += 1;
    if (b.size() - at < 64 || u16(at + 18) != 190) continue;
    uint64_t phoff = u64(at + 32), shoff = u64(at + 40);
    uint64_t phnum = u16(at + 56), shnum = u16(at + 60);
    uint64_t end = std::max<uint64_t>(64, std::max(shoff + shnum * 64, phoff + phnum * 56));
    bool fits = end <= b.size() - at;
    for (uint64_t k = 0; fits && k < shnum; ++k) {
      size_t h = at + shoff + k * 64;
      if (u32(h + 4) == 8 /* SHT_NOBITS */) continue;
      end = std::max(end, u64(h + 24) + u64(h + 32));
    }
    for (uint64_t k = 0; fits && k < phnum; ++k) {
      size_t h = at + phoff + k * 56;
      end = std::max(end, u64(h + 8) + u64(h + 32));
    }
    out.push_back({at, end});
  }
  return out;
}

std::map<std::string, std::pair<uint64_t, uint64_t>> symbol_file_offsets(const std::string& lib) {
  // Section index -> (sh_addr, sh_offset) from readelf -S.
  std::map<int, std::pair<uint64_t, uint64_t>> secs;
  RunResult s = run({"readelf", "-S", "-W", lib});
  std::istringstream sin(s.out);
  std::string line;
  std::smatch m;
  static const std::regex row(
      R"(^\s*\[\s*(\d+)\]\s+\S+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+)");
  while (std::getline(sin, line)) {
    if (std::regex_search(line, m, row) && m[2] != "NOBITS") {
      secs[std::stoi(m[1])] = {hex_value(m[3]), hex_value(m[4])};
    }
  }
  std::map<std::string, std::pair<uint64_t, uint64_t>> out;
  RunResult r = run({"readelf", "-s", "-W", lib});
  std::istringstream in(r.out);
  static const std::regex sym(
      R"(^\s*\d+:\s+([0-9a-f]+)\s+(\d+|0x[0-9a-f]+)\s+\S+\s+\S+\s+\S+\s+(\d+)\s+(\S+)$)");
  while (std::getline(in, line)) {
    if (!std::regex_search(line, m, sym)) continue;
    auto it = secs.find(std::stoi(m[3]));
    if (it == secs.end()) continue;
    uint64_t value = hex_value(m[1]);
    out[m[4]] = {value - it->second.first + it->second.second, std::stoull(m[2], nullptr, 0)};
  }
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> readelf_relative_relocs(const std::string& lib) {
  // "<offset> <info> R_X86_64_RELATIVE <addend>": split by hand (tens of thousands of lines;
  // std::regex is slow under the sanitizers).
  std::vector<std::pair<uint64_t, uint64_t>> out;
  RunResult r = run({"readelf", "-r", "-W", lib}, 300);
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" R_X86_64_RELATIVE ") == std::string::npos) continue;
    std::istringstream ls(line);
    std::string offset, info, type, addend;
    ls >> offset >> info >> type >> addend;
    if (type != "R_X86_64_RELATIVE" || addend.empty()) continue;
    out.emplace_back(hex_value(offset), hex_value(addend));
  }
  return out;
}

}  // namespace cudatool::test
