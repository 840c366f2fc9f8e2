// cudatool symbolize LIB -o OUT: a symbol file for gdb, perf and addr2line; with --format
// uftrace, the .sym files uftrace reads with --with-syms DIR.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <span>

#include "analysis/function_map.hpp"
#include "analysis/symbol_file.hpp"
#include "analysis/uftrace_symbols.hpp"
#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/function_output.hpp"
#include "cli/json_diagnostics.hpp"

namespace cudatool::cli {
namespace {

struct SymbolizeOptions {
  NameOptions names;
  std::string lib;
  std::string out;
  std::string debug_dir;
  std::string format = "elf";
  bool json = false;
  bool force = false;
};

// -o DIR for --format uftrace: made when missing (its parent must exist); a file is refused.
bool usable_symbol_dir(const std::string& dir) {
  struct stat st {};
  if (dir.empty()) {
    print_error("-o: an empty path");
    return false;
  }
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    print_error(
        fmt::format("-o {}: is not a directory; --format uftrace writes several files "
                    "into a directory",
                    dir));
    return false;
  }
  if (::mkdir(dir.c_str(), 0755) != 0) {
    print_error(fmt::format("-o {}: cannot create the directory: {}", dir, std::strerror(errno)));
    return false;
  }
  return true;
}

int run_uftrace(const SymbolizeOptions& o) {
  if (o.out.empty() || !o.debug_dir.empty()) {
    print_error("symbolize --format uftrace: say the directory with -o DIR (no --debug-dir)");
    return kExitBadInput;
  }
  DriverImage* img = open_library_until_exit(o.lib);
  if (!img) return kExitBadInput;
  if (!usable_symbol_dir(o.out)) return kExitBadInput;
  const FunctionMap& map = named_function_map(*img, o.names);
  UftraceSymbols syms = build_uftrace_symbols(*img, map, img->resolved_path());
  std::vector<std::string> written;
  auto bytes = std::span(reinterpret_cast<const uint8_t*>(syms.text.data()), syms.text.size());
  // One file, the other names hard links of it (2 MiB for the 580, six names).
  for (const auto& name : uftrace_symbol_file_names(*img)) {
    std::string path = o.out + "/" + name;
    if (!written.empty() && link_file_atomic(written.front(), path)) {
      written.push_back(path);
      continue;
    }
    if (Status s = write_file_atomic(path, bytes, false); !s) {
      print_error(s.error());
      return kExitBadInput;
    }
    written.push_back(path);
  }
  std::string out;
  const auto& id = img->build_id();
  if (o.json) {
    JsonWriter w(out);
    w.begin_object().kv("schema", "cudatool.symbolize/1").kv("path", img->path());
    w.kv("format", "uftrace");
    w.key("written").begin_array();
    for (const auto& p : written) w.value(p);
    w.end_array();
    if (id)
      w.kv("build_id", *id);
    else
      w.key("build_id").null();
    w.kv("size", syms.text.size()).kv("symbols", syms.symbols).kv("exported", syms.exported);
    w.kv("end_markers", syms.end_markers).kv("plt_skipped", syms.plt_skipped);
    w.kv("duplicates", syms.duplicates).kv("names_cleaned", syms.names_cleaned);
    w.key("diagnostics").begin_array();
    for (const auto& e : img->diagnostics().items()) w.value(e.message());
    w.end_array();
    w.end_object();
    w.finish();
  } else {
    out +=
        fmt::format("wrote one symbol file ({}) into {}, under {} names: {}\n",
                    human_size(syms.text.size()), o.out, written.size(), fmt::join(written, " "));
    out += fmt::format(
        "{} functions ({} exports as T, the rest as t); {} PLT FDEs left to "
        "uftrace{}\n",
        syms.symbols, syms.exported, syms.plt_skipped,
        id ? "" : "; no build id, so no <name>-<id>.sym variants");
    out += fmt::format(
        "uftrace: uftrace record --force -P '.@{}' --with-syms {} PROGRAM …\n"
        "         uftrace report   (reads the copies record keeps in uftrace.data)\n",
        img->dynamic().soname.empty() ? "libcuda.so.1" : std::string(img->dynamic().soname), o.out);
  }
  emit(out);
  return report_diagnostics(img->diagnostics());
}

int run_symbolize(const SymbolizeOptions& o) {
  if (o.format == "uftrace") return run_uftrace(o);
  if (o.out.empty() && o.debug_dir.empty()) {
    print_error("symbolize: say where to write the symbol file: -o FILE and/or --debug-dir DIR");
    return kExitBadInput;
  }
  if (!o.out.empty() && !usable_output("-o", o.out, {o.lib}, OutputKind::kSymbolFile, o.force))
    return kExitBadInput;
  DriverImage* img = open_library_until_exit(o.lib);
  if (!img) return kExitBadInput;
  const FunctionMap& map = named_function_map(*img, o.names);
  SymbolFileStats st;
  auto bytes = build_symbol_file(*img, map, &st);
  if (!bytes) {
    print_error(bytes.error());
    return kExitBadInput;
  }
  std::vector<std::string> written;
  if (!o.out.empty()) {
    if (Status s = write_file_atomic(o.out, *bytes, false); !s) {
      print_error(s.error());
      return kExitBadInput;
    }
    written.push_back(o.out);
  }
  if (!o.debug_dir.empty()) {
    if (!st.build_id) {
      print_error(
          fmt::format("{}: no GNU build id note, so gdb cannot find a symbol file by it "
                      "in --debug-dir; write one with -o and load it with "
                      "add-symbol-file",
                      img->path()));
      return kExitBadInput;
    }
    std::string path = o.debug_dir + "/" + build_id_debug_path(*st.build_id);
    if (Status s = write_file_atomic(path, *bytes, true); !s) {
      print_error(s.error());
      return kExitBadInput;
    }
    written.push_back(path);
  }

  std::string out;
  if (o.json) {
    JsonWriter w(out);
    w.begin_object().kv("schema", "cudatool.symbolize/1").kv("path", img->path());
    w.key("written").begin_array();
    for (const auto& p : written) w.value(p);
    w.end_array();
    if (st.build_id)
      w.kv("build_id", *st.build_id);
    else
      w.key("build_id").null();
    w.kv("size", bytes->size()).kv("sections", st.sections).kv("symbols", st.symbols);
    w.kv("exported", st.exported).kv("other_names", st.other_names).kv("derived", st.derived);
    w.kv("plt_skipped", st.plt_skipped).kv("unplaced", st.unplaced);
    write_diagnostics(w, img->diagnostics());
    w.end_object();
    w.finish();
  } else {
    for (const auto& p : written)
      out += fmt::format("wrote {} ({})\n", p, human_size(bytes->size()));
    out += fmt::format(
        "{} symbols: {} exports under their names, {} functions as fn_<address>{}; {} PLT "
        "FDEs left to the debugger (foo@plt){}\n",
        st.symbols, st.exported, st.derived,
        st.other_names ? fmt::format(", {} other names", st.other_names) : "", st.plt_skipped,
        st.unplaced ? fmt::format(", {} outside every section left out", st.unplaced) : "");
    out += fmt::format("build id {}\n", st.build_id.value_or("none"));
    const std::string& file = written.front();
    out += "\ngdb, either way:\n";
    if (st.build_id) {
      out += fmt::format(
          "  gdb -iex 'set debug-file-directory /usr/lib/debug:DIR' ...   (with the file at "
          "DIR/{})\n",
          build_id_debug_path(*st.build_id));
    }
    out += fmt::format(
        "  (gdb) add-symbol-file {} -o LOAD_ADDRESS   (then nosharedlibrary and "
        "sharedlibrary when the library is already loaded)\n",
        file);
    if (st.build_id) {
      out += fmt::format(
          "perf:  perf report --symfs=ROOT   (with the file at "
          "ROOT/usr/lib/debug/{})\n",
          build_id_debug_path(*st.build_id));
    }
    out += fmt::format("addr2line -f -e {} ADDRESS   (library addresses, as readelf shows them)\n",
                       file);
  }
  emit(out);
  return report_diagnostics(img->diagnostics());
}

}  // namespace

void register_symbolize(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SymbolizeOptions>();
  auto* cmd = app.add_subcommand(
      "symbolize",
      "Write a symbol file (.symtab) that gdb, perf and addr2line use for a stripped "
      "library, or (--format uftrace) the .sym files uftrace reads");
  cmd->add_option("LIB", o->lib, "library to read")->required();
  cmd->add_option("-o,--output", o->out,
                  "write the symbol file here (--format uftrace: into this directory)");
  cmd->add_option("--format", o->format,
                  "elf (a debug file for gdb, perf, addr2line) or uftrace (DIR/<name>.sym for "
                  "uftrace --with-syms DIR, under every name the library is mapped as)")
      ->check(CLI::IsMember({"elf", "uftrace"}))
      ->capture_default_str();
  cmd->add_option("--debug-dir", o->debug_dir,
                  "also (or instead) write it as DIR/.build-id/xx/yyyy.debug, the layout gdb's "
                  "debug-file-directory and perf use");
  add_force_flag(cmd, o->force);
  cmd->add_flag("--json", o->json, "print JSON (schema cudatool.symbolize/1)");
  add_names_option(cmd, o->names);
  cmd->footer(
      "The file carries the library's build id note and its section headers (without bytes) and\n"
      "a .symtab: exports under their names, every other function of `cudatool functions` as\n"
      "fn_<start address>, sized by its FDE.\n"
      "Examples:\n"
      "  cudatool symbolize LIB --debug-dir ~/.cache/cudatool/debug\n"
      "  gdb -iex 'set debug-file-directory /usr/lib/debug:'$HOME/.cache/cudatool/debug --args "
      "./app\n"
      "  cudatool symbolize LIB -o libcuda.sym\n"
      "  (gdb) add-symbol-file libcuda.sym -o 0x7ffff5a00000     # load address of LIB\n"
      "  (gdb) nosharedlibrary\n"
      "  (gdb) sharedlibrary          # so the library's own symbols do not shadow the file's\n"
      "  addr2line -f -e libcuda.sym 0x2a3b47\n"
      "  cudatool symbolize LIB --debug-dir ROOT/usr/lib/debug && perf report --symfs=ROOT\n"
      "  cudatool symbolize LIB --format uftrace -o syms\n"
      "  uftrace record --force -P '.@libcuda.so.1' --with-syms syms ./app && uftrace report\n"
      "Exit status: 0 written, 2 bad input (damaged records are reported; the file is still\n"
      "written with what could be read) or the file cannot be written.");
  cmd->callback([o, exit_code] { *exit_code = run_symbolize(*o); });
}

}  // namespace cudatool::cli
