// The module records of a traced process (docs/trace-format.md, "Module records") from the text
// of /proc/PID/maps and the mapped files: every file mapped with an executable mapping is one
// module; its range is the span of its consecutive mappings, its load bias the difference between
// where a mapping starts and the virtual address of the PT_LOAD segment its file offset belongs
// to, its build id the file's NT_GNU_BUILD_ID (read once per file: ModuleFiles caches by device
// and inode).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/event.hpp"

namespace cudatool::record {

// What the modules need of a file: its build id and its PT_LOAD segments (offset, vaddr).
struct ModuleFile {
  bool elf = false;  // an ELF file whose program headers could be read
  std::string build_id;
  std::vector<std::pair<uint64_t, uint64_t>> loads;  // (p_offset, p_vaddr), page-aligned down
};

class ModuleFiles {
 public:
  // The file at `path` (device and inode from the maps line identify it across renames).
  const ModuleFile& get(const std::string& path, const std::string& dev_inode);

 private:
  std::map<std::string, ModuleFile> files_;
};

// One line of /proc/PID/maps.
struct MapsLine {
  uint64_t lo = 0, hi = 0, offset = 0;
  bool exec = false;
  std::string dev_inode;  // "fd:01 1234"
  std::string path;       // "" for anonymous mappings
};
// Parses the text; lines that do not have the kernel's form are skipped.
std::vector<MapsLine> parse_maps(std::string_view text);

// The modules of process `pid`. `files` may be null (no file is read: no build ids, and the load
// bias is taken as if every segment's virtual address equalled its file offset, as in
// position-independent objects linked by GNU ld).
std::vector<trace::Module> modules_from_maps(const std::vector<MapsLine>& maps, int32_t pid,
                                             ModuleFiles* files);

}  // namespace cudatool::record
