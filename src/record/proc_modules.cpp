#include "record/proc_modules.hpp"

#include <sys/stat.h>

#include <charconv>

#include "base/mapped_file.hpp"
#include "elf/elf_image.hpp"
#include "elf/notes.hpp"

namespace cudatool::record {
namespace {

constexpr uint64_t kPage = 4096;

bool hex_field(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// The next space-separated field of `line` from `pos`.
std::string_view field(std::string_view line, size_t& pos) {
  while (pos < line.size() && line[pos] == ' ') ++pos;
  size_t start = pos;
  while (pos < line.size() && line[pos] != ' ') ++pos;
  return line.substr(start, pos - start);
}

}  // namespace

const ModuleFile& ModuleFiles::get(const std::string& path, const std::string& dev_inode) {
  std::string key = dev_inode + " " + path;
  auto it = files_.find(key);
  if (it != files_.end()) return it->second;
  ModuleFile f;
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    if (auto mf = MappedFile::open(path)) {
      if (auto elf = elf::ElfImage::parse(mf->bytes())) {
        f.elf = true;
        for (const auto& ph : elf->segments()) {
          if (ph.p_type == PT_LOAD) {
            f.loads.emplace_back(ph.p_offset & ~(kPage - 1), ph.p_vaddr & ~(kPage - 1));
          }
        }
        if (auto id = elf::gnu_build_id(*elf, nullptr)) f.build_id = *id;
      }
    }
  }
  return files_.emplace(std::move(key), std::move(f)).first->second;
}

std::vector<MapsLine> parse_maps(std::string_view text) {
  std::vector<MapsLine> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    size_t pos = 0;
    std::string_view range = field(line, pos), perms = field(line, pos), off = field(line, pos),
                     dev = field(line, pos), inode = field(line, pos);
    size_t dash = range.find('-');
    MapsLine m;
    if (dash == std::string_view::npos || !hex_field(range.substr(0, dash), m.lo) ||
        !hex_field(range.substr(dash + 1), m.hi) || m.hi <= m.lo || perms.size() < 4 ||
        !hex_field(off, m.offset) || inode.empty()) {
      continue;
    }
    m.exec = perms[2] == 'x';
    m.dev_inode = std::string(dev) + " " + std::string(inode);
    while (pos < line.size() && line[pos] == ' ') ++pos;
    m.path = std::string(line.substr(pos));
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<trace::Module> modules_from_maps(const std::vector<MapsLine>& maps, int32_t pid,
                                             ModuleFiles* files) {
  std::vector<trace::Module> out;
  for (size_t i = 0; i < maps.size();) {
    const MapsLine& first = maps[i];
    size_t j = i + 1;
    bool exec = first.exec;
    // Consecutive mappings of one file are one object (its segments, and the gaps between them),
    // in ascending order as the kernel lists them (text that is not: separate objects).
    while (j < maps.size() && maps[j].path == first.path && maps[j].dev_inode == first.dev_inode &&
           maps[j].lo >= maps[j - 1].hi) {
      exec |= maps[j].exec;
      ++j;
    }
    if (first.path.empty() || first.path[0] != '/' || !exec) {
      i = j;
      continue;
    }
    trace::Module m;
    m.pid = pid;
    m.path = first.path;
    m.lo = first.lo;
    m.hi = maps[j - 1].hi;
    m.base = first.lo - first.offset;  // GNU ld's layout: p_vaddr - p_offset is 0 per page
    if (files != nullptr) {
      const ModuleFile& f = files->get(first.path, first.dev_inode);
      m.build_id = f.build_id;
      for (const auto& [offset, vaddr] : f.loads) {
        if (offset == (first.offset & ~(kPage - 1))) {
          m.base = (first.lo & ~(kPage - 1)) - vaddr;
          break;
        }
      }
    }
    out.push_back(std::move(m));
    i = j;
  }
  return out;
}

}  // namespace cudatool::record
