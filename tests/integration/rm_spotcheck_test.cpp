// The generated RM tables against Debian's own copy of NVIDIA's kernel headers
// (nvidia-open-kernel-source, fetched by tools/fetch-kernel-source.sh), for every branch whose
// release Debian packages. The headers are parsed here line by line with their own regular
// expressions, and sizes and offsets are measured by compiling a probe against Debian's files at
// test time: a path independent of tools/rm_tables (other files, other parser).
//
// Debian's package holds only kernel-open/, so this covers status codes, frontend escapes (numbers,
// argument sizes, member offsets), UVM ioctls (numbers, names, parameter sizes, rmStatus
// offsets) and the classes whose headers UVM carries (channel and copy-engine classes). RM
// escapes (nv_escape.h) and control commands are not in Debian's package; the capture test
// checks control sizes against what libcuda passes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "rm/tables.hpp"

namespace cudatool::test {
namespace {

struct KernelSource {
  std::string version;  // upstream version, "550.163.01"
  std::string dir;      // <cache>/<version> with common/inc and nvidia-uvm
};

std::string kernel_source_cache() {
  if (const char* env = getenv("CUDATOOL_KERNEL_SOURCE")) return env;
  const char* home = getenv("HOME");
  return std::string(home ? home : "") + "/.cache/cudatool/kernel-source";
}

std::vector<KernelSource> kernel_sources() {
  std::vector<KernelSource> out;
  std::ifstream in(source_dir() + "/tools/kernel-sources.list");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string pkg, ver;
    if (!(f >> pkg >> ver) || pkg[0] == '#') continue;
    std::string upstream = ver.substr(0, ver.find('-'));
    out.push_back({upstream, kernel_source_cache() + "/" + upstream});
  }
  return out;
}

void PrintTo(const KernelSource& k, std::ostream* os) {
  *os << k.version;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

uint32_t num(const std::string& s) {
  return static_cast<uint32_t>(std::stoul(s, nullptr, 0));
}

// Compiles `body` (printf statements) against Debian's headers and returns its output lines.
std::vector<std::string> probe(const KernelSource& k, const std::string& body) {
  std::string src = write_temp("probe_" + k.version + ".c",
                               "#include <stddef.h>\n#include <stdio.h>\n#include \"nvtypes.h\"\n"
                               "#include \"nv-ioctl.h\"\n#include \"nv-ioctl-numa.h\"\n"
                               "#include \"uvm_linux_ioctl.h\"\n#include \"uvm_ioctl.h\"\n"
                               "int main(void) {\n" +
                                   body + "  return 0;\n}\n");
  std::string exe = src + ".bin";
  RunResult cc =
      run({"gcc", "-w", "-I", k.dir + "/common/inc", "-I", k.dir + "/nvidia-uvm", "-o", exe, src});
  EXPECT_EQ(cc.status, 0) << cc.err.substr(0, 2000);
  RunResult r = run({exe});
  EXPECT_EQ(r.status, 0);
  std::vector<std::string> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::string size_line(std::string_view type) {
  std::string t(type);
  return "  printf(\"S %s %zu\\n\", \"" + t + "\", sizeof(" + t + "));\n";
}
std::string offset_line(std::string_view type, std::string_view member) {
  std::string t(type), m(member);
  return "  printf(\"F %s %s %zu\\n\", \"" + t + "\", \"" + m + "\", offsetof(" + t + ", " + m +
         "));\n";
}

class DebianHeaders : public ::testing::TestWithParam<KernelSource> {
 protected:
  void SetUp() override {
    ASSERT_EQ(access((GetParam().dir + "/.complete").c_str(), R_OK), 0)
        << GetParam().dir
        << " is missing: run tools/fetch-kernel-source.sh (the test command does)";
    tables_ = rm::find_branch(GetParam().version);
    ASSERT_NE(tables_, nullptr) << "no generated branch for release " << GetParam().version
                                << " (tools/rm_tables/gen_rm_tables.py --rev " << GetParam().version
                                << ")";
  }
  const rm::Tables* tables_ = nullptr;
};

TEST_P(DebianHeaders, StatusCodes) {
  std::regex re(
      R"re(^\s*NV_STATUS_CODE\(\s*(\w+)\s*,\s*(0x[0-9A-Fa-f]+)\s*,\s*"(.*)"\s*\)\s*(//.*)?$)re");
  size_t seen = 0;
  for (const std::string& line : lines_of(GetParam().dir + "/common/inc/nvstatuscodes.h")) {
    std::smatch m;
    if (!std::regex_match(line, m, re)) continue;
    ++seen;
    const rm::StatusEntry* s = tables_->find_status(num(m[2]));
    ASSERT_NE(s, nullptr) << line;
    EXPECT_EQ(s->name, m[1].str()) << line;
    EXPECT_EQ(s->message, m[3].str()) << line;
  }
  EXPECT_EQ(seen, tables_->statuses().size());
  std::cout << GetParam().version << ": " << seen << " status codes checked\n";
}

TEST_P(DebianHeaders, FrontendEscapes) {
  const std::string inc = GetParam().dir + "/common/inc/";
  uint32_t base = 0;
  std::regex base_re(R"(^#define\s+NV_IOCTL_BASE\s+(\d+)\s*$)");
  std::regex esc_re(R"(^#define\s+(NV_ESC_\w+)\s+\(NV_IOCTL_BASE\s*\+\s*(\d+)\)\s*$)");
  std::vector<std::pair<std::string, uint32_t>> escapes;
  for (const char* h : {"nv-ioctl-numbers.h", "nv-ioctl-numa.h"}) {
    for (const std::string& line : lines_of(inc + h)) {
      std::smatch m;
      if (std::regex_match(line, m, base_re)) base = num(m[1]);
      if (std::regex_match(line, m, esc_re)) escapes.emplace_back(m[1], num(m[2]));
    }
  }
  ASSERT_NE(base, 0u);
  ASSERT_FALSE(escapes.empty());
  std::string body;
  std::set<std::string_view> types;
  for (const auto& [name, n] : escapes) {
    const rm::EscapeEntry* e = tables_->find_escape(base + n);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->name, name);
    EXPECT_EQ(e->group, rm::EscapeGroup::kFrontend) << name;
    if (!e->type.empty() && e->type != "NvU32" && types.insert(e->type).second) {
      body += size_line(e->type);
      if (const rm::StructEntry* s = tables_->find_struct(e->type)) {
        for (const rm::FieldEntry& f : tables_->fields(*s)) body += offset_line(e->type, f.name);
      }
    }
  }
  size_t sizes = 0, offsets = 0;
  for (const std::string& line : probe(GetParam(), body)) {
    std::istringstream f(line);
    std::string kind, type, member;
    uint64_t v = 0;
    f >> kind >> type;
    if (kind == "S" && f >> v) {
      for (const rm::EscapeEntry& e : tables_->escapes()) {
        if (e.type == type) {
          EXPECT_EQ(static_cast<uint64_t>(e.size), v) << type;
        }
      }
      ++sizes;
    } else if (kind == "F" && f >> member >> v) {
      const rm::StructEntry* s = tables_->find_struct(type);
      const rm::FieldEntry* fe = s ? tables_->find_field(*s, member) : nullptr;
      ASSERT_NE(fe, nullptr);
      EXPECT_EQ(fe->offset, v) << type << "." << member;
      ++offsets;
    }
  }
  EXPECT_EQ(sizes, types.size());
  std::cout << GetParam().version << ": " << escapes.size() << " frontend escapes, " << sizes
            << " argument sizes, " << offsets << " member offsets checked\n";
}

TEST_P(DebianHeaders, UvmIoctls) {
  const std::string uvm = GetParam().dir + "/nvidia-uvm/";
  std::regex base_re(R"(^#define\s+(UVM_\w+)\s+UVM_IOCTL_BASE\((\d+)\)\s*$)");
  std::regex hex_re(R"(^#define\s+(UVM_\w+)\s+(0x3[0-9A-Fa-f]{7})\s*$)");
  std::vector<std::pair<std::string, uint32_t>> ioctls;
  for (const char* h : {"uvm_ioctl.h", "uvm_linux_ioctl.h"}) {
    for (const std::string& line : lines_of(uvm + h)) {
      std::smatch m;
      if (std::regex_match(line, m, base_re) || std::regex_match(line, m, hex_re)) {
        ioctls.emplace_back(m[1], num(m[2]));
      }
    }
  }
  ASSERT_FALSE(ioctls.empty());
  EXPECT_EQ(ioctls.size(), tables_->uvm_ioctls().size());
  std::string body;
  for (const auto& [name, n] : ioctls) {
    const rm::UvmEntry* u = tables_->find_uvm(n);
    ASSERT_NE(u, nullptr) << name;
    EXPECT_EQ(u->name, name);
    if (u->params_size > 0) {
      body += size_line(u->params);
      if (u->rm_status_offset >= 0) body += offset_line(u->params, "rmStatus");
    }
  }
  size_t sizes = 0, offsets = 0;
  for (const std::string& line : probe(GetParam(), body)) {
    std::istringstream f(line);
    std::string kind, type, member;
    uint64_t v = 0;
    f >> kind >> type;
    for (const rm::UvmEntry& u : tables_->uvm_ioctls()) {
      if (u.params != type) continue;
      if (kind == "S" && f >> v) {
        EXPECT_EQ(static_cast<uint64_t>(u.params_size), v) << type;
        ++sizes;
      } else if (kind == "F" && f >> member >> v) {
        EXPECT_EQ(static_cast<uint64_t>(u.rm_status_offset), v) << type;
        ++offsets;
      }
      break;
    }
  }
  EXPECT_GT(sizes, ioctls.size() / 2);
  std::cout << GetParam().version << ": " << ioctls.size() << " UVM ioctls, " << sizes
            << " parameter sizes, " << offsets << " rmStatus offsets checked\n";
}

// The class headers UVM carries (clc86f.h → HOPPER_CHANNEL_GPFIFO_A = 0xc86f, …).
TEST_P(DebianHeaders, UvmClassHeaders) {
  std::regex file_re(R"(^cl([0-9a-f]{4})\.h$)");
  std::regex def_re(R"(^#define\s+(\w+)\s+\((0x[0-9A-Fa-f]+)\)\s*$)");
  size_t checked = 0;
  RunResult ls = run({"ls", GetParam().dir + "/nvidia-uvm"});
  std::istringstream files(ls.out);
  std::string file;
  while (std::getline(files, file)) {
    std::smatch fm;
    if (!std::regex_match(file, fm, file_re)) continue;
    uint32_t id = num("0x" + fm[1].str());
    for (const std::string& line : lines_of(GetParam().dir + "/nvidia-uvm/" + file)) {
      std::smatch m;
      if (!std::regex_match(line, m, def_re) || num(m[2]) != id) continue;
      if (m[1].str().rfind("NV", 0) == 0 && m[1].str().size() > 6 && m[1].str()[6] == '_') {
        continue;  // NVC86F_… method offsets that happen to equal the class number
      }
      const rm::ClassEntry* c = tables_->find_class(id);
      ASSERT_NE(c, nullptr) << file << ": " << line;
      EXPECT_EQ(c->name, m[1].str()) << file;
      ++checked;
    }
  }
  EXPECT_GT(checked, 5u);
  std::cout << GetParam().version << ": " << checked << " classes checked\n";
}

// The compiled tables hold exactly what the generator wrote (src/rm/generated/*.inc, read here
// as text): the C++ side loses, reorders or truncates nothing.
TEST(RmTables, CompiledTablesMatchTheGeneratedFiles) {
  std::regex entry(R"re(^\{(0x[0-9a-f]+), "([^"]*)"(, .*)?\},$)re");
  for (const rm::Tables& t : rm::all_branches()) {
    std::string dir = source_dir() + "/src/rm/generated/" + std::string(t.info().id) + "/";
    auto check = [&](const char* kind, size_t count, auto find) {
      size_t n = 0;
      for (const std::string& line : lines_of(dir + kind + ".inc")) {
        std::smatch m;
        if (!std::regex_match(line, m, entry)) continue;
        ++n;
        std::string_view name = find(num(m[1]));
        EXPECT_EQ(name, m[2].str()) << t.info().id << " " << kind << ": " << line;
      }
      EXPECT_EQ(n, count) << t.info().id << " " << kind;
      EXPECT_GT(n, 0u) << dir << kind << ".inc";
    };
    auto name_of = [](const auto* e) { return e ? e->name : std::string_view("<missing>"); };
    check("status", t.statuses().size(), [&](uint32_t v) { return name_of(t.find_status(v)); });
    check("escapes", t.escapes().size(), [&](uint32_t v) { return name_of(t.find_escape(v)); });
    check("ctrl", t.controls().size(), [&](uint32_t v) { return name_of(t.find_control(v)); });
    check("classes", t.classes().size(), [&](uint32_t v) { return name_of(t.find_class(v)); });
    check("uvm", t.uvm_ioctls().size(), [&](uint32_t v) { return name_of(t.find_uvm(v)); });
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, DebianHeaders, ::testing::ValuesIn(kernel_sources()),
                         [](const auto& info) {
                           std::string s = "v" + info.param.version;
                           for (char& c : s) {
                             if (c == '.') c = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace cudatool::test
