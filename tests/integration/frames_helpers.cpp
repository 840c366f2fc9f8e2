#include "frames_helpers.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "harness.hpp"

namespace cudatool::test {

ReadelfFrames readelf_frames(const std::string& path) {
  ReadelfFrames out;
  RunResult r = run({"readelf", "--debug-dump=frames", path}, 300);
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    uint64_t off = 0, len = 0, id = 0, cie = 0, a = 0, b = 0;
    if (line.find(" FDE cie=") != std::string::npos &&
        std::sscanf(line.c_str(),
                    "%" SCNx64 " %" SCNx64 " %" SCNx64 " FDE cie=%" SCNx64 " pc=%" SCNx64
                    "..%" SCNx64,
                    &off, &len, &id, &cie, &a, &b) == 6) {
      out.fdes.push_back({off, cie, a, b});
    } else if (line.size() > 4 && line.compare(line.size() - 4, 4, " CIE") == 0 &&
               std::sscanf(line.c_str(), "%" SCNx64, &off) == 1) {
      out.cies.push_back(off);
    } else if (line.find("ZERO terminator") != std::string::npos) {
      ++out.terminators;
    }
  }
  return out;
}

std::vector<EuFde> eu_readelf_fdes(const std::string& path) {
  std::vector<EuFde> out;
  RunResult r = run({"eu-readelf", "--debug-dump=frames", path}, 300);
  std::istringstream in(r.out);
  std::string line;
  bool in_eh_frame = false;
  while (std::getline(in, line)) {
    if (line.find("Call frame information section") != std::string::npos)
      in_eh_frame = line.find("'.eh_frame'") != std::string::npos;
    if (!in_eh_frame) continue;
    uint64_t off = 0, v = 0;
    if (line.find("] FDE length=") != std::string::npos &&
        std::sscanf(line.c_str(), " [%" SCNx64 "]", &off) == 1) {
      out.push_back({off, 0, 0});
    } else if (!out.empty() && std::sscanf(line.c_str(), " initial_location: +%" SCNx64, &v) == 1) {
      out.back().start = v;
    } else if (!out.empty() && std::sscanf(line.c_str(), " address_range: %" SCNx64, &v) == 1) {
      out.back().range = v;
    }
  }
  return out;
}

const ReadelfSection* find_section(const std::vector<ReadelfSection>& s, const std::string& name) {
  for (const auto& x : s)
    if (x.name == name) return &x;
  return nullptr;
}

std::vector<ReadelfSymbol> readelf_symbols(const std::string& path, bool dynamic_only) {
  std::vector<ReadelfSymbol> out;
  RunResult r = run({"readelf", dynamic_only ? "--dyn-syms" : "-s", "-W", path});
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string num, value, size, vis;
    ReadelfSymbol s;
    if (!(ls >> num >> value >> size >> s.type >> s.bind >> vis >> s.ndx)) continue;
    if (num.empty() || num.back() != ':') continue;
    ls >> s.name;
    if (auto at = s.name.find('@'); at != std::string::npos) s.name.resize(at);
    try {
      s.value = std::stoull(value, nullptr, 16);
      s.size = std::stoull(size, nullptr, 0);
    } catch (...) {
      continue;
    }
    out.push_back(s);
  }
  return out;
}

JsonRun cudatool_json_run(const std::vector<std::string>& args, int timeout_s) {
  std::vector<std::string> argv{cudatool_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv, timeout_s);
  JsonRun j;
  j.status = r.status;
  j.signal = r.signal;
  j.timed_out = r.timed_out;
  j.err = r.err;
  j.json = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  return j;
}

uint64_t hex_field(const nlohmann::json& j) {
  if (!j.is_string()) return ~uint64_t{0};
  return std::stoull(j.get<std::string>(), nullptr, 16);
}

std::string fmt_hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace cudatool::test
