// Symbol files for uftrace (Debian bookworm's uftrace 0.13), which names a library's functions
// from DIR/<file name>.sym when run with `--with-syms DIR` — the text format of its
// utils/symbol.c (save_module_symbol_file / load_module_symbol_file):
//
//   # symbols: 35012
//   # path name: /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
//   # build-id: 7e9c286fc38ae5fefb137b6fd33be02b251d3dff
//   00000000002a3b40 T cuInit
//   00000000002a3c00 t fn_2a3c00
//   00000000002a3c80 ? __func_end        (where a function ends before the next one starts)
//   …
//   000000000512f000 ? __sym_end
//
// Addresses are ELF virtual addresses (uftrace adds the load bias); a symbol's size is where the
// next line starts, so a function followed by a gap gets an end marker. uftrace looks the file up
// by the base name of the path the process mapped, in two places that see different paths: the
// patcher (libmcount, at dlopen) by the name dlopen was given ("libcuda.so.1"), the report by
// /proc/PID/maps (the file the link resolves to, "libcuda.so.580.159.04"). The report, reading the
// copies `record` keeps, also checks "# path name" against the mapped path and on a mismatch
// looks for "<name>-<first 4 hex digits of the build id>.sym" instead. So one content is written
// under every name a program may map the library as, and each name's build-id variant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cudatool {

class DriverImage;
class FunctionMap;

struct UftraceSymbols {
  std::string text;            // the file's content
  uint64_t symbols = 0;        // function lines
  uint64_t exported = 0;       // of them, exports (type T)
  uint64_t end_markers = 0;    // __func_end lines
  uint64_t plt_skipped = 0;    // functions in .plt* sections (uftrace names PLT calls itself)
  uint64_t duplicates = 0;     // FDEs starting where another already did
  uint64_t names_cleaned = 0;  // names whose control bytes were replaced (one name per line)
};

// The .sym text for `map` (one name per function: FunctionMap::display_name, the naming source
// of decode and the stack resolver). `path_name` goes into "# path name".
UftraceSymbols build_uftrace_symbols(DriverImage& img, const FunctionMap& map,
                                     std::string_view path_name);

// The file names to write in DIR: "<name>.sym" for the base name of the path given, of the file it
// resolves to, the DT_SONAME ("libcuda.so.1") and the link name made from it ("libcuda.so"),
// each also as "<name>-<4 hex of build id>.sym" when the library has a build id.
std::vector<std::string> uftrace_symbol_file_names(DriverImage& img);

}  // namespace cudatool
