#include "harness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
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

std::string captures_dir() {
  if (const char* e = std::getenv("CUDATOOL_CAPTURES"); e != nullptr && *e != '\0') return e;
  for (std::string d : {source_dir() + "/../shared/data", source_dir() + "/../../shared/data",
                        std::string("/work/shared/data")}) {
    if (access((d + "/trace_a.jsonl.xz").c_str(), R_OK) == 0) return d;
  }
  return source_dir() + "/../shared/data";
}

std::string read_capture(const std::string& name) {
  std::string path = captures_dir() + "/" + name;
  RunResult r = run({"xz", "-dc", path});
  if (r.status != 0) {
    ADD_FAILURE() << path << " cannot be read (" << r.err
                  << "): the real captures live in ../shared/data (or set CUDATOOL_CAPTURES)";
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

std::string temp_dir() {
  static std::string dir = [] {
    std::string tmpl =
        (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) +
        "/cudatool-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    return std::string(buf.data());
  }();
  return dir;
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
