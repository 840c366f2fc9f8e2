// What the `cudatool cubins` tests compare against, computed at test time: NVIDIA's cuobjdump
// (from /usr/local/cuda or Debian's nvidia-cuda-toolkit, cached by tools/fetch-cuda-tools.sh),
// the PTX that nvcc made from the fixture source, readelf, and a plain scan for the ELF magic
// written here without any of cudatool's parsers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace cudatool::test {

// $CUDATOOL_CUOBJDUMP, /usr/local/cuda/bin/cuobjdump, cuobjdump on PATH, or the copy that
// tools/fetch-cuda-tools.sh caches; "" when there is none.
std::string cuobjdump_path();
// The failure message for a missing cuobjdump.
std::string cuobjdump_missing();

// `cuobjdump -elf FILE` of one CUDA ELF image.
struct CuobjdumpElf {
  bool ok = false;
  int abi = -1;
  int sm = -1;
  std::string sm_suffix;  // "a" when cuobjdump prints sm=90a
  uint64_t flags = 0;
  std::vector<std::pair<std::string, uint64_t>> sections;      // name, size (index 1…)
  std::map<std::string, uint32_t> regcount;                    // EIATTR_REGCOUNT by function
  std::map<std::string, uint32_t> frame_size;                  // EIATTR_FRAME_SIZE
  std::map<std::string, uint32_t> min_stack_size;              // EIATTR_MIN_STACK_SIZE
  std::map<std::string, std::map<uint32_t, uint32_t>> params;  // .nv.info.<f>: ordinal -> size
  std::map<std::string, uint32_t> cbank_param_size;            // .nv.info.<f>
  std::string raw;
};
CuobjdumpElf cuobjdump_elf(const std::string& file);
CuobjdumpElf parse_cuobjdump_elf(const std::string& text);
// `cuobjdump --dump-resource-usage FILE`: REG by function.
std::map<std::string, uint32_t> cuobjdump_resource_regs(const std::string& file);
std::map<std::string, uint32_t> parse_resource_regs(const std::string& text);
// The same for many files, from one shell loop (hundreds of forks of an ASan test process are
// slow): file -> result.
std::map<std::string, CuobjdumpElf> cuobjdump_elf_each(const std::vector<std::string>& files);
std::map<std::string, std::map<std::string, uint32_t>> cuobjdump_resource_regs_each(
    const std::vector<std::string>& files);
// `cuobjdump -lelf -lptx FATBIN`: ("ELF"|"PTX", "sm_80") per entry, in order.
std::vector<std::pair<std::string, std::string>> cuobjdump_list(const std::string& file);

// Functions of a PTX file: kernels (.entry) and device functions (.func) with the byte size of
// each parameter, from their .param declarations.
struct PtxFunction {
  std::string name;
  bool entry = false;
  std::vector<uint32_t> param_sizes;
};
std::vector<PtxFunction> parse_ptx(const std::string& text);

// The independent scan: every "\x7fELF" whose e_machine is 190, sized from its own headers
// (end of the program and section header tables, of every section with file bytes and of
// every segment). What the Python scan of the shared BASELINES.md does.
struct RawCubin {
  uint64_t offset = 0;
  uint64_t size = 0;
};
std::vector<RawCubin> independent_cubin_scan(const std::string& bytes);

// readelf -sW and -SW: name -> (file offset, st_size) for symbols in sections with file bytes.
std::map<std::string, std::pair<uint64_t, uint64_t>> symbol_file_offsets(const std::string& lib);

// readelf -rW: (r_offset, addend) of every R_X86_64_RELATIVE relocation.
std::vector<std::pair<uint64_t, uint64_t>> readelf_relative_relocs(const std::string& lib);

}  // namespace cudatool::test
