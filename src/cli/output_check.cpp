// usable_output(): what every output option checks before it writes (common.hpp).
#include <fmt/format.h>
#include <strings.h>
#include <sys/stat.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstring>

#include "base/mapped_file.hpp"
#include "cli/common.hpp"
#include "elf/elf_image.hpp"
#include "trace/line_source.hpp"
#include "trace/trace_json.hpp"

namespace cudatool::cli {
namespace {

std::string_view kind_name(OutputKind k) {
  switch (k) {
    case OutputKind::kTrace:
      return "a cudatool trace";
    case OutputKind::kSqlite:
      return "an SQLite database";
    case OutputKind::kSymbolFile:
      return "a symbol file";
    case OutputKind::kJson:
      return "a JSON file";
    case OutputKind::kHtml:
      return "an HTML page";
    case OutputKind::kText:
      return "a text file";
  }
  return "?";
}

std::string_view skip_space(std::string_view s) {
  size_t i = s.find_first_not_of(" \t\r\n");
  return i == std::string_view::npos ? std::string_view() : s.substr(i);
}

bool starts_nocase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && strncasecmp(s.data(), prefix.data(), prefix.size()) == 0;
}

bool is_trace(const std::string& path) {
  auto src = trace::LineSource::open(path, 1 << 20);
  if (!src) return false;
  std::string_view line;
  uint64_t off = 0;
  bool complete = true;
  while ((*src)->next(line, off, complete)) {
    if (!skip_space(line).empty()) return trace::classify_line(line) == trace::LineKind::kHeader;
  }
  return false;
}

// A separate debug or symbol file: an ELF whose .text has no bytes in the file (symbolize
// writes every allocated section as SHT_NOBITS, as objcopy --only-keep-debug does).
bool is_symbol_file(ByteView bytes) {
  auto elf = elf::ElfImage::parse(bytes);
  if (!elf) return false;
  const elf::SectionHeader* text = elf->section(".text");
  return text != nullptr && !text->has_file_bytes();
}

bool is_kind(OutputKind kind, const std::string& path, ByteView bytes) {
  std::string_view head(reinterpret_cast<const char*>(bytes.data()),
                        std::min<size_t>(bytes.size(), 4096));
  std::string_view text = skip_space(head);
  switch (kind) {
    case OutputKind::kTrace:
      return is_trace(path);
    case OutputKind::kSqlite:
      return head.starts_with(std::string_view("SQLite format 3\0", 16));
    case OutputKind::kSymbolFile:
      return is_symbol_file(bytes);
    case OutputKind::kJson:
      return text.starts_with('{') || text.starts_with('[');
    case OutputKind::kHtml:
      return starts_nocase(text, "<!doctype html") || starts_nocase(text, "<html");
    case OutputKind::kText:
      return std::memchr(head.data(), '\0', head.size()) == nullptr;
  }
  return false;
}

// What an existing file is, for the message: "an ELF file", "a cudatool trace", …
std::string what_it_is(const std::string& path, ByteView bytes) {
  std::string_view head(reinterpret_cast<const char*>(bytes.data()),
                        std::min<size_t>(bytes.size(), 64));
  std::string size = human_size(bytes.size());
  if (head.starts_with("\x7f"
                       "ELF")) {
    return fmt::format("an ELF file of {}", size);
  }
  for (OutputKind k : {OutputKind::kSqlite, OutputKind::kTrace, OutputKind::kHtml,
                       OutputKind::kJson, OutputKind::kText}) {
    if (is_kind(k, path, bytes)) return fmt::format("{} of {}", kind_name(k), size);
  }
  return fmt::format("a file of {}", size);
}

bool directory_exists_for(std::string_view option, const std::string& output) {
  std::string dir = output.substr(0, output.find_last_of('/') + 1);
  if (dir.empty()) dir = ".";
  struct stat d {};
  if (::stat(dir.c_str(), &d) != 0 || !S_ISDIR(d.st_mode)) {
    print_error(fmt::format("{} {}: cannot write: no directory {}", option, output, dir));
    return false;
  }
  return true;
}

}  // namespace

bool usable_output(std::string_view option, const std::string& output,
                   std::initializer_list<std::string_view> inputs, OutputKind kind, bool force) {
  if (output == "-") return true;
  if (output.empty()) {
    print_error(fmt::format("{}: an empty path", option));
    return false;
  }
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return directory_exists_for(option, output);
  if (S_ISDIR(out.st_mode)) {
    print_error(fmt::format("{} {}: is a directory; name a file", option, output));
    return false;
  }
  for (std::string_view in : inputs) {
    struct stat i {};
    if (in.empty() || ::stat(std::string(in).c_str(), &i) != 0) continue;
    if (i.st_dev == out.st_dev && i.st_ino == out.st_ino) {
      print_error(
          fmt::format("{} {}: is the input {} (writing it would destroy it); write "
                      "elsewhere",
                      option, output, in));
      return false;
    }
  }
  if (force || !S_ISREG(out.st_mode) || out.st_size == 0) return true;
  auto f = MappedFile::open(output);
  if (!f || is_kind(kind, output, f->bytes())) return true;  // unreadable: the write will say
  print_error(
      fmt::format("{} {}: exists and is {}, not {}; pass --force to replace it, or write "
                  "elsewhere",
                  option, output, what_it_is(output, f->bytes()), kind_name(kind)));
  return false;
}

void add_force_flag(CLI::App* cmd, bool& force) {
  cmd->add_flag("--force", force,
                "replace an existing output file even when it is not of the kind this command "
                "writes (a trace, an SQLite index, …)");
}

}  // namespace cudatool::cli
