#include "trace/decode_env.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <string_view>

#include "base/hex.hpp"

namespace cudatool::trace::detail {

using rm::Field;
using rm::ValueKind;
namespace {

constexpr size_t kPreviewBytes = 48;  // of a file's content in the text line
constexpr size_t kPreviewNames = 4;   // of a directory's names

Field text_field(std::string_view name, std::string_view text) {
  Field f;
  f.name = name;
  f.kind = ValueKind::kString;
  f.text = text;
  return f;
}

Field num_field(std::string_view name, ValueKind kind, uint64_t v) {
  Field f;
  f.name = name;
  f.kind = kind;
  f.value = v;
  return f;
}

std::string octal(uint64_t v, int width) {
  char buf[32];
  snprintf(buf, sizeof buf, "%0*llo", width, static_cast<unsigned long long>(v));
  return buf;
}

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool is_device_type(uint64_t mode) {
  return S_ISCHR(mode) || S_ISBLK(mode);
}

// The members and the text of a node: type, permission bits, device numbers.
void add_node(Decoded& d, std::string& text, uint64_t mode, uint64_t rdev, bool device_numbers) {
  d.args.push_back(num_field("mode", ValueKind::kHex, mode));
  std::string type = file_type_name(mode);
  d.args.push_back(text_field("type", type));
  d.args.push_back(text_field("perms", octal(mode & 07777, 4)));
  text += type;
  if (device_numbers) {
    d.args.push_back(num_field("major", ValueKind::kDec, major(rdev)));
    d.args.push_back(num_field("minor", ValueKind::kDec, minor(rdev)));
    text += ' ' + std::to_string(major(rdev)) + ':' + std::to_string(minor(rdev));
  }
  text += ' ' + octal(mode & 07777, 4);
}

// A file's bytes as JSON text when they are text (procfs and most sysfs files), else as hex.
bool printable(const std::vector<uint8_t>& b) {
  for (uint8_t c : b) {
    if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c >= 0x7f) return false;
  }
  return true;
}

void append_preview(std::string& text, const std::vector<uint8_t>& b) {
  size_t n = std::min(b.size(), kPreviewBytes);
  if (printable(b)) {
    text += " \"";
    for (size_t i = 0; i < n; ++i) {
      char c = static_cast<char>(b[i]);
      if (c == '\n') {
        text += "\\n";
      } else if (c == '\t') {
        text += "\\t";
      } else if (c == '\r') {
        text += "\\r";
      } else if (c == '"' || c == '\\') {
        text += '\\';
        text += c;
      } else {
        text += c;
      }
    }
    text += n < b.size() ? "\"…" : "\"";
    return;
  }
  text += ' ';
  append_hex(text, ByteView(b.data(), n));
  if (n < b.size()) text += "…";
}

const std::string* extra_member(const Event& ev, std::string_view key) {
  for (const ExtraField& x : ev.extra) {
    if (x.key == key) return &x.json;
  }
  return nullptr;
}

void decode_file(const Event& ev, Decoded& d, std::string& text) {
  d.args.push_back(num_field("flags", ValueKind::kHex, ev.open_flags));
  if (ev.has_stat) {
    text += " →";
    std::string node;
    add_node(d, node, ev.mode, ev.rdev, is_device_type(ev.mode));
    text += ' ' + node;
    if (S_ISREG(ev.mode)) d.args.push_back(num_field("size", ValueKind::kDec, ev.st_size));
  }
  if (ev.content) {
    const Buffer& b = *ev.content;
    if (!b.after_error.empty() && b.after.empty()) {
      d.args.push_back(text_field("content_error", b.after_error));
      text += ", unreadable: " + b.after_error;
    } else {
      d.args.push_back(num_field("content_size", ValueKind::kDec, b.after.size()));
      Field c;
      c.name = "content";
      if (printable(b.after)) {
        c.kind = ValueKind::kString;
        c.text.assign(b.after.begin(), b.after.end());
      } else {
        c.kind = ValueKind::kBytes;
        append_hex(c.text, ByteView(b.after.data(), b.after.size()));
      }
      c.total = b.after.size();
      d.args.push_back(std::move(c));
      d.args.push_back(num_field("bounded", ValueKind::kDec, b.bounded ? 1 : 0));
      text += ", " + std::to_string(b.after.size()) + " bytes";
      if (b.bounded) text += " (bounded: the file is longer)";
      append_preview(text, b.after);
    }
  }
  if (ev.has_entries) {
    Field list;
    list.name = "entries";
    list.kind = ValueKind::kList;
    list.total = ev.entries.size();
    for (const std::string& e : ev.entries) list.items.push_back(text_field("", e));
    d.args.push_back(std::move(list));
    text += ", " + std::to_string(ev.entries.size()) + " entries [";
    for (size_t i = 0; i < ev.entries.size() && i < kPreviewNames; ++i) {
      if (i > 0) text += ", ";
      text += ev.entries[i];
    }
    text += ev.entries.size() > kPreviewNames ? ", …]" : "]";
  }
}

}  // namespace

std::string file_type_name(uint64_t m) {
  if (S_ISCHR(m)) return "char";
  if (S_ISDIR(m)) return "dir";
  if (S_ISREG(m)) return "file";
  if (S_ISLNK(m)) return "link";
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISBLK(m)) return "block";
  return hex(m & S_IFMT) + "?";
}

std::string access_mode_name(uint64_t amode) {
  if (amode == 0) return "F_OK";
  std::string s;
  for (auto [bit, name] : {std::pair<uint64_t, const char*>{4, "R_OK"}, {2, "W_OK"}, {1, "X_OK"}}) {
    if ((amode & bit) == 0) continue;
    if (!s.empty()) s += '|';
    s += name;
  }
  if ((amode & ~uint64_t{7}) != 0) s += (s.empty() ? "" : "|") + hex(amode & ~uint64_t{7}) + "?";
  return s;
}

void decode_environment(const Event& ev, Decoded& d) {
  d.args.push_back(text_field("op", ev.op));
  d.args.push_back(text_field("path", ev.path));
  std::string& text = d.summary;
  text = ev.path;
  bool access = ev.op.find("access") != std::string::npos;
  bool ok = ev.err == 0;
  switch (ev.sys) {
    case Sys::kStat:
      if (ev.open_flags != 0) d.args.push_back(num_field("flags", ValueKind::kHex, ev.open_flags));
      if (access) {
        std::string m = access_mode_name(ev.mode);
        d.args.push_back(text_field("amode", m));
        text += " access " + m;
      } else if (ev.has_stat) {
        text += " → ";
        add_node(d, text, ev.mode, ev.rdev, is_device_type(ev.mode));
        d.args.push_back(num_field("size", ValueKind::kDec, ev.st_size));
        if (S_ISREG(ev.mode)) text += ", " + std::to_string(ev.st_size) + " bytes";
      }
      break;
    case Sys::kFile:
      decode_file(ev, d, text);
      break;
    case Sys::kMknod: {
      std::string node;
      add_node(d, node, ev.mode, ev.rdev, !S_ISDIR(ev.mode) && !S_ISFIFO(ev.mode));
      text += ' ' + node;
      break;
    }
    case Sys::kSymlink:
      d.args.push_back(text_field("target", ev.target));
      text += " → " + ev.target;
      break;
    case Sys::kReadlink:
      if (ok) {
        d.args.push_back(text_field("target", ev.target));
        text += " → " + ev.target;
      }
      break;
    case Sys::kChmod:
      if (ev.open_flags != 0) d.args.push_back(num_field("flags", ValueKind::kHex, ev.open_flags));
      if (ev.op.find("chown") != std::string::npos) {
        const std::string* uid = extra_member(ev, "uid");
        const std::string* gid = extra_member(ev, "gid");
        std::string u = uid ? *uid : "?", g = gid ? *gid : "?";
        d.args.push_back(text_field("owner", u + ":" + g));
        text += " owner " + u + ":" + g;
      } else {
        d.args.push_back(num_field("mode", ValueKind::kHex, ev.mode));
        d.args.push_back(text_field("perms", octal(ev.mode & 07777, 4)));
        text += ' ' + octal(ev.mode & 07777, 4);
      }
      break;
    case Sys::kUnlink:
      if (ev.open_flags != 0) d.args.push_back(num_field("flags", ValueKind::kHex, ev.open_flags));
      break;
    default:
      break;
  }
  text += " (" + ev.op + ")";
  // What could not be recorded (names past the bound) is in Decoded::unrecorded, as for ioctls.
}

}  // namespace cudatool::trace::detail
