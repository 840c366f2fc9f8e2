#include "base/archive.hpp"

#include <fmt/format.h>

#include <charconv>

namespace cudatool {
namespace {

constexpr std::string_view kArMagic = "!<arch>\n";
constexpr uint64_t kArHeader = 60;
constexpr uint64_t kTarBlock = 512;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

std::optional<uint64_t> decimal(std::string_view s) {
  s = trim(s);
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// tar numeric fields: octal text, or base-256 with the top bit of the first byte set.
std::optional<uint64_t> tar_number(ByteView field) {
  const uint8_t* p = field.data();
  if (field.size() > 0 && (p[0] & 0x80) != 0) {
    uint64_t v = p[0] & 0x7f;
    for (uint64_t i = 1; i < field.size(); ++i) {
      if (v >> 56 != 0) return std::nullopt;
      v = v << 8 | p[i];
    }
    return v;
  }
  std::string_view s = trim(field.chars());
  uint64_t v = 0;
  if (s.empty()) return 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v, 8);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string cstr(ByteView field) {
  std::string_view s = field.chars();
  auto nul = s.find('\0');
  return std::string(nul == std::string_view::npos ? s : s.substr(0, nul));
}

}  // namespace

bool is_ar(ByteView b) {
  return b.size() >= kArMagic.size() && b.chars().substr(0, kArMagic.size()) == kArMagic;
}

Result<std::vector<ArMember>> read_ar(ByteView b) {
  if (!is_ar(b)) return make_error("ar archive", "magic", 0, "not an ar archive (no !<arch>)");
  std::vector<ArMember> out;
  uint64_t off = kArMagic.size();
  while (off < b.size()) {
    auto h = b.sub(off, kArHeader);
    std::string what = fmt::format("ar member #{}", out.size());
    if (!h) return make_error(what, "header", off, "truncated member header");
    if (h->chars().substr(58, 2) != "`\n") {
      return make_error(what, "ar_fmag", off + 58, "bad member header terminator");
    }
    auto size = decimal(h->chars().substr(48, 10));
    if (!size) return make_error(what, "ar_size", off + 48, "size is not a decimal number");
    auto data = b.sub(off + kArHeader, *size);
    if (!data) {
      return make_error(what, "ar_size", off + 48,
                        fmt::format("{} bytes run past the end of the archive", *size));
    }
    ArMember m;
    std::string_view name = trim(h->chars().substr(0, 16));
    if (name.size() > 1 && name.back() == '/') name.remove_suffix(1);
    m.name = std::string(name);
    m.data = *data;
    m.header_offset = off;
    out.push_back(m);
    off += kArHeader + *size + (*size & 1);
  }
  return out;
}

Result<std::vector<TarEntry>> read_tar(ByteView b) {
  std::vector<TarEntry> out;
  std::string long_name, long_link, pax_path, pax_link;
  uint64_t off = 0;
  while (off + kTarBlock <= b.size()) {
    ByteView h = *b.sub(off, kTarBlock);
    std::string what = fmt::format("tar entry #{}", out.size());
    // Two zero blocks end the archive; one is enough to stop.
    bool zero = true;
    for (uint64_t i = 0; i < kTarBlock && zero; ++i) zero = h.data()[i] == 0;
    if (zero) break;
    // Checksum: sum of the header bytes with the checksum field read as spaces.
    auto sum_field = tar_number(*h.sub(148, 8));
    uint64_t sum = 0;
    for (uint64_t i = 0; i < kTarBlock; ++i) sum += (i >= 148 && i < 156) ? ' ' : h.data()[i];
    if (!sum_field || *sum_field != sum) {
      return make_error(what, "chksum", off + 148, "header checksum does not match");
    }
    auto size = tar_number(*h.sub(124, 12));
    if (!size) return make_error(what, "size", off + 124, "size is not a number");
    char type = static_cast<char>(h.data()[156]);
    uint64_t data_off = off + kTarBlock;
    // Regular-file-like entries and metadata records carry data; links and dirs do not.
    bool has_data = type == '0' || type == '\0' || type == '7' || type == 'L' || type == 'K' ||
                    type == 'x' || type == 'g';
    uint64_t dsize = has_data ? *size : 0;
    auto data = b.sub(data_off, dsize);
    if (!data) {
      return make_error(what, "size", off + 124,
                        fmt::format("{} bytes run past the end of the archive", dsize));
    }
    uint64_t next = data_off + ((dsize + kTarBlock - 1) / kTarBlock) * kTarBlock;
    if (type == 'L' || type == 'K') {  // GNU long name / long link for the next entry
      (type == 'L' ? long_name : long_link) = cstr(*data);
      off = next;
      continue;
    }
    if (type == 'x' || type == 'g') {  // pax extended header: "len key=value\n" records
      std::string_view recs = data->chars();
      while (!recs.empty()) {
        auto sp = recs.find(' ');
        if (sp == std::string_view::npos) break;
        auto len = decimal(recs.substr(0, sp));
        if (!len || *len <= sp || *len > recs.size()) break;
        std::string_view kv = recs.substr(sp + 1, *len - sp - 2);
        auto eq = kv.find('=');
        if (type == 'x' && eq != std::string_view::npos) {
          if (kv.substr(0, eq) == "path") pax_path = std::string(kv.substr(eq + 1));
          if (kv.substr(0, eq) == "linkpath") pax_link = std::string(kv.substr(eq + 1));
        }
        recs.remove_prefix(*len);
      }
      off = next;
      continue;
    }
    TarEntry e;
    e.header_offset = off;
    e.type = type == '\0' ? '0' : type;
    std::string prefix = cstr(*h.sub(345, 155));
    std::string name = cstr(*h.sub(0, 100));
    if (h.chars().substr(257, 5) == "ustar" && !prefix.empty()) name = prefix + "/" + name;
    if (!long_name.empty()) name = long_name;
    if (!pax_path.empty()) name = pax_path;
    if (name.rfind("./", 0) == 0) name.erase(0, 2);
    e.name = name;
    e.linkname = !pax_link.empty()    ? pax_link
                 : !long_link.empty() ? long_link
                                      : cstr(*h.sub(157, 100));
    e.data = *data;
    long_name.clear();
    long_link.clear();
    pax_path.clear();
    pax_link.clear();
    out.push_back(std::move(e));
    off = next;
  }
  return out;
}

}  // namespace cudatool
