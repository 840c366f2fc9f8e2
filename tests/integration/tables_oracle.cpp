#include "tables_oracle.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>

#include "harness.hpp"

namespace cudatool::test {
namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

}  // namespace

ReadelfRelocs readelf_relocs(const std::string& path) {
  ReadelfRelocs out;
  RunResult r = run({"readelf", "-r", "-W", path});
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Relocation section", 0) == 0) {
      auto c = line.find(" contains ");
      if (c != std::string::npos) out.total_entries += std::stoull(line.substr(c + 10));
      continue;
    }
    auto t = line.find(" R_X86_64_RELATIVE ");
    if (t == std::string::npos) continue;
    std::istringstream ls(line);
    std::string off, info, type, addend;
    ls >> off >> info >> type >> addend;
    out.relative[hex_value(off)] = hex_value(addend);
  }
  return out;
}

std::map<std::string, ReadelfDefinedSymbol> readelf_defined_symbols(const std::string& path) {
  std::map<std::string, ReadelfDefinedSymbol> out;
  RunResult r = run({"readelf", "--dyn-syms", "-W", path});
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    ls >> num >> value >> size >> type >> bind >> vis >> ndx >> name;
    if (num.size() < 2 || num.back() != ':' || !std::isdigit(static_cast<unsigned char>(num[0])) ||
        ndx == "UND" || name.empty() || bind == "LOCAL")
      continue;
    name = name.substr(0, name.find('@'));
    out[name] = {hex_value(value), type};
  }
  return out;
}

VaddrReader::VaddrReader(const std::string& path)
    : data_(read_file(path)), sections_(readelf_sections(path)) {}

const ReadelfSection* VaddrReader::section_of(uint64_t vaddr) const {
  for (const auto& s : sections_) {
    if (s.addr != 0 && vaddr >= s.addr && vaddr - s.addr < s.size) return &s;
  }
  return nullptr;
}

std::optional<std::string> VaddrReader::bytes(uint64_t vaddr, uint64_t n) const {
  const auto* s = section_of(vaddr);
  if (s == nullptr || s->nobits() || n > s->size - (vaddr - s->addr)) return std::nullopt;
  uint64_t off = s->offset + (vaddr - s->addr);
  if (off + n > data_.size()) return std::nullopt;
  return data_.substr(off, n);
}

std::optional<uint64_t> VaddrReader::u64(uint64_t vaddr) const {
  auto b = bytes(vaddr, 8);
  if (!b) return std::nullopt;
  uint64_t v = 0;
  std::memcpy(&v, b->data(), 8);
  return v;
}

std::optional<std::string> VaddrReader::cstring(uint64_t vaddr) const {
  const auto* s = section_of(vaddr);
  if (s == nullptr || s->nobits()) return std::nullopt;
  uint64_t off = s->offset + (vaddr - s->addr);
  auto nul = data_.find('\0', off);
  if (nul == std::string::npos) return std::nullopt;
  return data_.substr(off, nul - off);
}

const CudaToolkit& cuda_toolkit() {
  static CudaToolkit tk = [] {
    CudaToolkit t;
    auto find_cudart = [](const std::vector<std::string>& dirs) -> std::string {
      for (const auto& d : dirs) {
        std::string best;
        DIR* dir = opendir(d.c_str());
        if (dir == nullptr) continue;
        while (dirent* e = readdir(dir)) {
          std::string n = e->d_name;
          if (n.rfind("libcudart.so.", 0) != 0) continue;
          // The longest name is the real file (libcudart.so.12.4.127), not the soname link.
          if (best.empty() || n.size() > best.size() - d.size() - 1) best = d + "/" + n;
        }
        closedir(dir);
        if (!best.empty()) return best;
      }
      return {};
    };
    // A toolkit root is either an NVIDIA install (include/, lib64/) or the Debian packages'
    // tree (usr/include/, usr/lib/x86_64-linux-gnu/) that fetch-drivers.sh extracts.
    auto try_root = [&](const std::string& root, const std::string& origin) {
      if (exists(root + "/include/cuda.h")) {
        t.include_dir = root + "/include";
        t.cudart =
            find_cudart({root + "/lib64", root + "/lib", root + "/targets/x86_64-linux/lib"});
      } else if (exists(root + "/usr/include/cuda.h")) {
        t.include_dir = root + "/usr/include";
        t.cudart = find_cudart({root + "/usr/lib/x86_64-linux-gnu"});
      } else {
        return false;
      }
      t.origin = origin + " " + root;
      if (t.cudart.empty())
        t.error =
            root + " has cuda.h but no libcudart.so.*: rerun tools/fetch-drivers.sh --cuda-toolkit";
      return true;
    };
    std::string cache;
    if (const char* e = std::getenv("CUDATOOL_CUDA_CACHE"); e != nullptr && *e != '\0')
      cache = e;
    else
      cache = std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") +
              "/.cache/cudatool/cuda-toolkit";
    if (const char* e = std::getenv("CUDATOOL_CUDA_HOME"); e != nullptr && *e != '\0') {
      if (!try_root(e, "$CUDATOOL_CUDA_HOME"))
        t.error = std::string("$CUDATOOL_CUDA_HOME=") + e +
                  " holds no include/cuda.h nor usr/include/cuda.h";
      return t;
    }
    if (try_root(CUDATOOL_CUDA_HOME_DEFAULT, "CUDA toolkit") ||
        try_root(cache, "Debian CUDA packages cached in"))
      return t;
    t.error =
        std::string("no CUDA toolkit: none at ") + CUDATOOL_CUDA_HOME_DEFAULT +
        " (set $CUDATOOL_CUDA_HOME, or -DCUDATOOL_CUDA_HOME=) and no Debian CUDA packages in " +
        cache + "; run tools/fetch-drivers.sh --cuda-toolkit (tools/test.sh does)";
    return t;
  }();
  return tk;
}

std::map<std::string, uint32_t> cuda_h_errors(const std::string& cuda_h) {
  std::map<std::string, uint32_t> out;
  std::string text = read_file(cuda_h);
  auto start = text.find("typedef enum cudaError_enum");
  auto end = text.find("} CUresult;", start);
  if (start == std::string::npos || end == std::string::npos) return out;
  std::string body = text.substr(start, end - start);
  std::regex re(R"((CUDA_(?:SUCCESS|ERROR_[A-Z0-9_]+))\s*=\s*(\d+))");
  for (std::sregex_iterator it(body.begin(), body.end(), re), e; it != e; ++it)
    out[(*it)[1]] = static_cast<uint32_t>(std::stoul((*it)[2]));
  return out;
}

std::map<std::string, std::set<std::pair<uint32_t, bool>>> pfn_typedefs(
    const std::string& include_dir) {
  std::map<std::string, std::set<std::pair<uint32_t, bool>>> out;
  DIR* dir = opendir(include_dir.c_str());
  if (dir == nullptr) return out;
  std::vector<std::string> files;
  while (dirent* e = readdir(dir)) {
    std::string n = e->d_name;
    if (n.rfind("cuda", 0) == 0 && n.size() > 10 && n.substr(n.size() - 10) == "Typedefs.h")
      files.push_back(include_dir + "/" + n);
  }
  closedir(dir);
  std::regex re(R"(PFN_(cu[A-Za-z0-9_]+?)_v(\d+)(_ptsz|_ptds)?\))");
  for (const auto& f : files) {
    std::string text = read_file(f);
    for (std::sregex_iterator it(text.begin(), text.end(), re), e; it != e; ++it)
      out[(*it)[1]].insert({static_cast<uint32_t>(std::stoul((*it)[2])), (*it)[3].matched});
  }
  return out;
}

std::set<std::array<uint8_t, 16>> cudart_export_table_uuids(const std::string& cudart) {
  std::set<std::array<uint8_t, 16>> out;
  RunResult r = run({"objdump", "-d", "--no-show-raw-insn", "-M", "intel", cudart}, 300);
  std::vector<std::string> ins;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    auto tab = line.find(":\t");
    if (tab != std::string::npos && line.size() > 2 && line[0] == ' ')
      ins.push_back(line.substr(tab + 2));
  }
  VaddrReader reader(cudart);
  std::optional<ReadelfSection> ro;
  for (const auto& s : readelf_sections(cudart))
    if (s.name == ".rodata") ro = s;
  if (!ro) return out;
  std::regex lea_rsi(R"(^lea\s+rsi,\[rip\+0x[0-9a-f]+\]\s+# ([0-9a-f]+))");
  std::regex lea_any(
      R"(^(?:lea|mov)\s+(r\w+),(?:QWORD PTR )?\[rip\+0x[0-9a-f]+\]\s+# ([0-9a-f]+))");
  std::regex call_mem(R"(^call\s+QWORD PTR \[(r\w+)(?:\+0x0)?\]\s*$)");
  std::regex call_rip(R"(^call\s+QWORD PTR \[rip\+0x[0-9a-f]+\]\s+# ([0-9a-f]+))");
  std::regex call_reg(R"(^call\s+(r\w+)\s*$)");
  for (size_t i = 0; i < ins.size(); ++i) {
    std::smatch m;
    if (ins[i].rfind("lea", 0) != 0 || !std::regex_search(ins[i], m, lea_rsi)) continue;
    uint64_t a = hex_value(m[1]);
    if (a < ro->addr || a - ro->addr >= ro->size) continue;
    std::map<std::string, uint64_t> regs;  // register -> address it was loaded from/with
    for (size_t k = i >= 12 ? i - 12 : 0; k < std::min(ins.size(), i + 13); ++k) {
      if (k != i && std::regex_search(ins[k], m, lea_any)) regs[m[1]] = hex_value(m[2]);
    }
    bool indirect = false;
    for (size_t k = i + 1; k < std::min(ins.size(), i + 13) && !indirect; ++k) {
      if (std::regex_search(ins[k], m, call_mem) && regs.count(m[1]))
        indirect = true;
      else if (std::regex_search(ins[k], m, call_rip))
        indirect = true;
      else if (std::regex_search(ins[k], m, call_reg) && regs.count(m[1]))
        indirect = true;
      else if (ins[k].rfind("call", 0) == 0 || ins[k].rfind("lea    rsi", 0) == 0)
        break;
    }
    if (!indirect) continue;
    auto b = reader.bytes(a, 16);
    if (!b) continue;
    std::array<uint8_t, 16> u{};
    std::memcpy(u.data(), b->data(), 16);
    out.insert(u);
  }
  return out;
}

std::string uuid_text(const std::array<uint8_t, 16>& u) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += d[u[i] >> 4];
    s += d[u[i] & 15];
  }
  return s;
}

}  // namespace cudatool::test
