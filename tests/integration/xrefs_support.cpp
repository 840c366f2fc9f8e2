#include "xrefs_support.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cudatool::test {
namespace {

bool is_prefix_word(const std::string& t) {
  static const std::set<std::string> k = {"bnd",   "notrack", "lock",   "rep",    "repz", "repe",
                                          "repnz", "repne",   "data16", "cs",     "ds",   "es",
                                          "ss",    "fs",      "gs",     "addr32", "rex",  "rex.W"};
  return k.count(t) != 0;
}

bool all_hex(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool printable(unsigned char c) {
  return (c >= 0x20 && c <= 0x7e) || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

ObjdumpXrefs objdump_xrefs(const std::string& lib) {
  ObjdumpXrefs x;
  std::string base = lib.substr(lib.rfind('/') + 1);
  std::string out = temp_dir() + "/objdump-" + base + ".txt";
  RunResult r = sh("objdump -d --no-show-raw-insn -w '" + lib + "' > '" + out + "'", 900);
  EXPECT_EQ(r.status, 0) << "objdump -d " << lib << ": " << r.err;
  std::ifstream in(out);
  std::string line, section;
  while (std::getline(in, line)) {
    ++x.lines;
    if (line.rfind("Disassembly of section ", 0) == 0) {
      section = line.substr(23);
      if (!section.empty() && section.back() == ':') section.pop_back();
      continue;
    }
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    size_t a = i;
    while (i < line.size() && std::isxdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (i == a || i + 1 >= line.size() || line[i] != ':' || line[i + 1] != '\t') continue;
    uint64_t site = std::stoull(line.substr(a, i - a), nullptr, 16);
    std::istringstream ts(line.substr(i + 2));
    std::string mn;
    while (ts >> mn && is_prefix_word(mn)) {
    }
    std::string op;
    ts >> op;
    if (mn == "lea" && line.find("(%rip)") != std::string::npos) {
      size_t h = line.find("# ");
      if (h != std::string::npos) {
        std::string t = line.substr(h + 2);
        t = t.substr(0, t.find(' '));
        if (all_hex(t)) x.rip_leas.emplace_back(site, std::stoull(t, nullptr, 16));
      }
      continue;
    }
    if (mn.empty() || mn[0] != 'j') {
      if (mn != "call" && mn != "callq") continue;
    }
    if (!all_hex(op)) continue;  // indirect (*…) or no operand
    uint64_t target = std::stoull(op, nullptr, 16);
    std::string label;
    ts >> label;
    const bool is_call = mn == "call" || mn == "callq";
    if (label.size() > 6 && label.front() == '<' &&
        label.compare(label.size() - 5, 5, "@plt>") == 0) {
      ++x.plt_branches[label.substr(1, label.size() - 6)];
      ++x.plt_branch_total;
    }
    if (is_call && section == ".text") x.text_calls.emplace(site, target);
  }
  std::remove(out.c_str());
  return x;
}

StringOracle::StringOracle(const std::string& lib)
    : bytes_(read_file(lib)), sections_(readelf_sections(lib)) {}

bool StringOracle::is_string(uint64_t addr) const {
  for (const auto& s : sections_) {
    if (s.flags.find('A') == std::string::npos || s.flags.find('W') != std::string::npos ||
        s.flags.find('X') != std::string::npos || s.type != "PROGBITS" || s.name == ".eh_frame" ||
        s.name == ".eh_frame_hdr") {
      continue;
    }
    if (addr < s.addr || addr - s.addr >= s.size) continue;
    uint64_t off = s.offset + (addr - s.addr), end = s.offset + s.size;
    if (end > bytes_.size()) return false;
    uint64_t n = 0;
    for (uint64_t p = off; p < end; ++p, ++n) {
      auto c = static_cast<unsigned char>(bytes_[p]);
      if (c == 0) return n >= 1 && n <= 4096;
      if (!printable(c) || n >= 4096) return false;
    }
    return false;
  }
  return false;
}

std::string StringOracle::text(uint64_t addr) const {
  for (const auto& s : sections_) {
    if (s.nobits() || addr < s.addr || addr - s.addr >= s.size) continue;
    uint64_t off = s.offset + (addr - s.addr);
    if (off >= bytes_.size()) return {};
    return std::string(bytes_.c_str() + off);
  }
  return {};
}

std::vector<std::pair<uint64_t, uint64_t>> readelf_relative(const std::string& lib) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  RunResult r = run({"readelf", "-r", "-W", lib});
  EXPECT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string off, info, type, addend;
    if (!(ls >> off >> info >> type >> addend) || type != "R_X86_64_RELATIVE") continue;
    if (!all_hex(off) || !all_hex(addend)) continue;
    out.emplace_back(std::stoull(off, nullptr, 16), std::stoull(addend, nullptr, 16));
  }
  return out;
}

std::vector<std::vector<std::string>> sqlite_rows(const std::string& db, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << db << ": " << sqlite3_errmsg(h);
    sqlite3_close(h);
    return rows;
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(h);
    sqlite3_close(h);
    return rows;
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      const unsigned char* t = sqlite3_column_text(st, c);
      row.emplace_back(t != nullptr ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(h);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return rows;
}

std::string build_index(const std::string& lib, const std::string& name) {
  std::string db = temp_dir() + "/" + name + ".sqlite";
  RunResult r = run({cudatool_bin(), "index", lib, "-o", db}, 600);
  EXPECT_EQ(r.status, 0) << "cudatool index " << lib << ": " << r.err << r.out;
  return db;
}

}  // namespace cudatool::test
