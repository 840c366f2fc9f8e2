#include "harness.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

namespace cudatool::test {

RunResult run(const std::vector<std::string>& argv, int timeout_s) {
  RunResult r;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) r.status = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
  return r;
}

RunResult sh(const std::string& command, int timeout_s) {
  return run({"/bin/sh", "-c", command}, timeout_s);
}

std::string cudatool_bin() {
  return CUDATOOL_BIN;
}
std::string fixtures_dir() {
  return CUDATOOL_FIXTURES_DIR;
}
std::string source_dir() {
  return CUDATOOL_SOURCE_DIR;
}

std::string nv_client_bin() {
  return fixtures_dir() + "/nv_client";
}
std::string env_client_bin() {
  return fixtures_dir() + "/env_client";
}
std::string funcrec_lib() {
  return fixtures_dir() + "/funcrec/libfr_fixture.so";
}
std::string funcrec_probe_bin() {
  return fixtures_dir() + "/funcrec/fr_probe";
}

uint64_t hex_value(const std::string& s) {
  return std::stoull(s, nullptr, 16);
}
uint64_t json_hex(const nlohmann::json& v) {
  return hex_value(v.get<std::string>());
}
uint64_t json_uint(const nlohmann::json& v) {
  return v.is_number() ? v.get<uint64_t>() : json_hex(v);
}

std::string drivers_dir() {
  if (const char* e = std::getenv("CUDATOOL_DRIVERS"); e != nullptr && *e != '\0') return e;
  return CUDATOOL_DRIVERS_DIR_DEFAULT;
}

std::vector<DriverBuild> driver_builds() {
  std::vector<DriverBuild> out;
  std::ifstream in(source_dir() + "/tools/drivers.list");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    DriverBuild b;
    std::string ver, suite;
    ls >> b.package >> ver >> suite;
    b.version = ver.substr(0, ver.find('-'));
    b.lib_path = drivers_dir() + "/libcuda.so." + b.version;
    std::string deb_ver = ver;
    // apt-get download writes ':' in epochs as %3a and keeps '~'.
    b.deb_path = drivers_dir() + "/" + b.package + "_" + deb_ver + "_amd64.deb";
    out.push_back(b);
  }
  return out;
}

std::string driver_lib(const std::string& version) {
  for (const auto& b : driver_builds())
    if (b.version == version) return b.lib_path;
  return {};
}

namespace {

bool readable(const std::string& path) {
  return access(path.c_str(), R_OK) == 0;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// <build dir>/real-data: where shared builds are unpacked, once per build tree.
std::string real_data_dir() {
  return std::string(CUDATOOL_BUILD_DIR) + "/real-data";
}

}  // namespace

std::vector<DriverBuild> shared_builds() {
  DriverBuild b;
  b.version = "580.159.04";
  b.xz_name = "libcuda.so." + b.version + ".xz";
  b.lib_path = real_data_dir() + "/libcuda.so." + b.version;
  return {b};
}

std::string shared_data_dir(const std::string& file) {
  // Set, it is the only place looked at (so that a test run can also prove the skip).
  if (const char* e = std::getenv("CUDATOOL_SHARED_DATA"); e != nullptr && *e != '\0') {
    return readable(std::string(e) + "/" + file) ? std::string(e) : std::string();
  }
  for (std::string d : {source_dir() + "/../shared/data", source_dir() + "/../../shared/data"}) {
    if (readable(d + "/" + file)) return d;
  }
  return "";
}

BuildReadiness prepare_build(const DriverBuild& b) {
  BuildReadiness r;
  if (b.xz_name.empty()) {
    r.ready = readable(b.lib_path);
    if (!r.ready)
      r.message = b.lib_path + " is missing: run tools/fetch-drivers.sh (the test command does)";
    return r;
  }
  std::string dir = shared_data_dir(b.xz_name);
  if (dir.empty()) {
    r.skip = true;
    const char* env = std::getenv("CUDATOOL_SHARED_DATA");
    std::string where =
        env != nullptr && *env != '\0'
            ? "$CUDATOOL_SHARED_DATA (" + std::string(env) + ")"
            : source_dir() + "/../shared/data or " + source_dir() + "/../../shared/data";
    r.message = "SKIPPED: " + b.xz_name + " (libcuda " + b.version +
                ", NVIDIA's binary, never in the tree) was not found in " + where +
                "; put it there, or point CUDATOOL_SHARED_DATA at the directory that holds it, to "
                "test this build";
    return r;
  }
  std::string xz = dir + "/" + b.xz_name;
  if (mkdir(real_data_dir().c_str(), 0755) != 0 && errno != EEXIST) {
    r.message = real_data_dir() + ": cannot create (" + std::strerror(errno) + ")";
    return r;
  }
  // One test process unpacks while the others (ctest -j) wait on the lock, then reuse it.
  int lock = open((real_data_dir() + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    r.message = real_data_dir() + "/.lock: " + std::strerror(errno);
    if (lock >= 0) close(lock);
    return r;
  }
  struct stat sx {
  }, sl{};
  bool fresh = stat(xz.c_str(), &sx) == 0 && stat(b.lib_path.c_str(), &sl) == 0 && sl.st_size > 0 &&
               sl.st_mtime >= sx.st_mtime;
  if (!fresh) {
    std::string tmp = b.lib_path + ".tmp." + std::to_string(getpid());
    RunResult x = sh("xz -dc " + shell_quote(xz) + " > " + shell_quote(tmp), 600);
    if (x.status != 0 || std::rename(tmp.c_str(), b.lib_path.c_str()) != 0) {
      r.message = "xz -dc " + xz + " into " + tmp + " failed: " + x.err;
      std::remove(tmp.c_str());
      close(lock);
      return r;
    }
  }
  close(lock);
  r.ready = readable(b.lib_path);
  if (!r.ready) r.message = b.lib_path + ": not readable after unpacking " + xz;
  return r;
}

std::string captures_dir() {
  if (const char* e = std::getenv("CUDATOOL_CAPTURES"); e != nullptr && *e != '\0') return e;
  return source_dir() + "/tests/data/captures";
}

std::string read_capture(const std::string& name) {
  std::string path = captures_dir() + "/" + name;
  RunResult r = run({"xz", "-dc", path});
  if (r.status != 0) {
    ADD_FAILURE() << path << " cannot be read (" << r.err
                  << "): the real captures ship in tests/data/captures (or set CUDATOOL_CAPTURES)";
    return {};
  }
  return r.out;
}

std::string driver_test_name(const ::testing::TestParamInfo<DriverBuild>& info) {
  std::string s = info.param.version;
  for (char& c : s) {
    if (c == '.') c = '_';
  }
  return "v" + s;
}

// The test process's scratch folder, removed when the process that made it exits (not by a forked
// child); CUDATOOL_KEEP_TEST_TMP=1 keeps it for a look after a failure.
namespace {
double rounds_share() {
  static const double share = [] {
    const char* e = std::getenv("CUDATOOL_TEST_ROUNDS");
    if (e == nullptr || *e == '\0') return 1.0;
    char* end = nullptr;
    double v = std::strtod(e, &end);
    return (end != e && v > 0 && v <= 1) ? v : 1.0;
  }();
  return share;
}
}  // namespace

int test_rounds(int n) {
  return std::max(1, static_cast<int>(n * rounds_share() + 0.5));
}

bool test_sample(size_t i) {
  auto every = static_cast<size_t>(1 / rounds_share() + 0.5);
  return every <= 1 || i % every == 0;
}

std::string temp_dir() {
  struct Dir {
    std::string path;
    pid_t owner = getpid();
    Dir() {
      std::string tmpl =
          (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) +
          "/cudatool-test-XXXXXX";
      std::vector<char> buf(tmpl.begin(), tmpl.end());
      buf.push_back('\0');
      if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
      path = buf.data();
    }
    Dir(const Dir&) = delete;
    Dir& operator=(const Dir&) = delete;
    ~Dir() {
      const char* keep = std::getenv("CUDATOOL_KEEP_TEST_TMP");
      if (getpid() != owner || (keep != nullptr && *keep != '\0' && *keep != '0')) return;
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  std::string p = temp_dir() + "/" + name;
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ReadelfNote readelf_note(const std::string& path, const std::string& section) {
  ReadelfNote n;
  RunResult r = run({"readelf", "-n", "-W", path});
  auto at = r.out.find("Displaying notes found in: " + section + "\n");
  if (at == std::string::npos) return n;
  std::istringstream in(r.out.substr(at));
  std::string line;
  std::getline(in, line);  // "Displaying notes found in: …"
  std::getline(in, line);  // "  Owner  Data size  Description"
  std::getline(in, line);
  std::smatch m;
  if (!std::regex_match(line, m, std::regex(R"(^\s+(.+?)\s+(0x[0-9a-f]+)\s+(.*)$)"))) return n;
  n.found = true;
  n.owner = m[1];
  n.data_size = std::stoull(m[2], nullptr, 16);
  std::string desc = m[3];
  if (std::regex_search(desc, m, std::regex(R"(Unknown note type: \((0x[0-9a-f]+)\))")))
    n.type = std::stoll(m[1], nullptr, 16);
  // With -W the bytes follow on the same line; without it, on the next.
  std::string rest =
      line + "\n" +
      std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto d = rest.find("description data:");
  if (d == std::string::npos) return n;
  std::istringstream bytes(rest.substr(d + 17));
  std::string tok;
  while (bytes >> tok && tok.size() == 2 && std::isxdigit(static_cast<unsigned char>(tok[0])) &&
         std::isxdigit(static_cast<unsigned char>(tok[1]))) {
    n.desc.push_back(static_cast<char>(std::stoi(tok, nullptr, 16)));
  }
  return n;
}

std::vector<ReadelfSection> readelf_sections(const std::string& path) {
  std::vector<ReadelfSection> out;
  RunResult r = run({"readelf", "-S", "-W", path});
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    auto lb = line.find('[');
    auto rb = line.find(']');
    if (lb == std::string::npos || rb == std::string::npos || rb < lb) continue;
    ReadelfSection s;
    try {
      s.index = std::stoi(line.substr(lb + 1, rb - lb - 1));
    } catch (...) {
      continue;
    }
    std::istringstream ls(line.substr(rb + 1));
    std::string addr, off, size, es;
    ls >> s.name >> s.type;
    if (s.name == "NULL" || s.type.empty()) continue;
    ls >> addr >> off >> size >> es;
    // Flags may be empty: the next field is then the numeric link.
    std::string rest;
    std::getline(ls, rest);
    std::istringstream rs(rest);
    std::string tok;
    rs >> tok;
    if (!tok.empty() && !std::isdigit(static_cast<unsigned char>(tok[0]))) s.flags = tok;
    s.addr = std::stoull(addr, nullptr, 16);
    s.offset = std::stoull(off, nullptr, 16);
    s.size = std::stoull(size, nullptr, 16);
    out.push_back(s);
  }
  return out;
}

std::map<std::string, uint64_t> readelf_section_sizes(const std::string& path) {
  std::map<std::string, uint64_t> out;
  for (const auto& sec : readelf_sections(path)) out.emplace(sec.name, sec.size);
  return out;
}

}  // namespace cudatool::test
