#include "record/function_spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "analysis/driver_image.hpp"
#include "analysis/symbol_file.hpp"
#include "base/hex.hpp"
#include "base/mapped_file.hpp"
#include "record/funcrec/funcrec_abi.h"

namespace cudatool::record {
namespace {

template <class T>
void put(std::string& out, size_t off, T v) {
  std::memcpy(out.data() + off, &v, sizeof v);
}

#define FR_FIELD(type, member) offsetof(type, member)

}  // namespace

Status write_function_plan(DriverImage& img, const PatchPlan& plan, const std::string& path) {
  const auto& id_hex = img.build_id();
  auto id = id_hex ? parse_hex_bytes(*id_hex) : std::nullopt;
  if (!id || id->empty() || id->size() > sizeof(fr_plan_header::build_id)) {
    return make_error(img.path(), "NT_GNU_BUILD_ID", std::nullopt,
                      "no usable build id: the function recorder could not tell this library "
                      "from another one a process loads");
  }
  if (plan.sites.empty()) {
    return make_error(img.path(), "", std::nullopt,
                      fmt::format("no function to record: the globs '{}' selected {} functions, "
                                  "none patchable",
                                  plan.globs, plan.selected));
  }
  std::string out(sizeof(fr_plan_header) + plan.sites.size() * sizeof(fr_plan_site), '\0');
  uint64_t lo = ~uint64_t{0}, hi = 0;
  for (const auto& s : plan.sites) {
    lo = std::min(lo, s.start);
    hi = std::max(hi, s.start + s.displaced);
  }
  using H = fr_plan_header;
  put<uint64_t>(out, FR_FIELD(H, magic), FR_PLAN_MAGIC);
  put<uint32_t>(out, FR_FIELD(H, version), FR_ABI_VERSION);
  put<uint32_t>(out, FR_FIELD(H, header_size), sizeof(H));
  put<uint32_t>(out, FR_FIELD(H, site_size), sizeof(fr_plan_site));
  put<uint32_t>(out, FR_FIELD(H, sites), static_cast<uint32_t>(plan.sites.size()));
  put<uint32_t>(out, FR_FIELD(H, build_id_len), static_cast<uint32_t>(id->size()));
  std::memcpy(out.data() + FR_FIELD(H, build_id), id->data(), id->size());
  put<uint64_t>(out, FR_FIELD(H, text_lo), lo);
  put<uint64_t>(out, FR_FIELD(H, text_hi), hi);
  using S = fr_plan_site;
  for (size_t i = 0; i < plan.sites.size(); ++i) {
    const PatchSite& s = plan.sites[i];
    const size_t at = sizeof(H) + i * sizeof(S);
    put<uint64_t>(out, at + FR_FIELD(S, start), s.start);
    put<uint32_t>(out, at + FR_FIELD(S, function), s.function);
    put<uint8_t>(out, at + FR_FIELD(S, displaced), s.displaced);
    put<uint8_t>(out, at + FR_FIELD(S, fixups), s.fixups);
    for (size_t j = 0; j < FR_MAX_FIXUPS; ++j) {
      put<uint8_t>(out, at + FR_FIELD(S, fix_offset) + j, s.fix_offset[j]);
      put<uint8_t>(out, at + FR_FIELD(S, fix_insn_end) + j, s.fix_insn_end[j]);
    }
    std::memcpy(out.data() + at + FR_FIELD(S, bytes), s.bytes.data(), s.displaced);
  }
  auto bytes = std::span(reinterpret_cast<const uint8_t*>(out.data()), out.size());
  return write_file_atomic(path, bytes, false);
}

Status create_function_spool(const std::string& path, uint64_t chunks, uint32_t chunk_size) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return make_error(path, "", std::nullopt,
                      fmt::format("cannot create the function spool: {}", std::strerror(errno)));
  }
  std::string head(FR_SPOOL_HEADER_SIZE, '\0');
  using H = fr_spool_header;
  put<uint64_t>(head, FR_FIELD(H, magic), FR_SPOOL_MAGIC);
  put<uint32_t>(head, FR_FIELD(H, version), FR_ABI_VERSION);
  put<uint32_t>(head, FR_FIELD(H, chunk_size), chunk_size);
  put<uint64_t>(head, FR_FIELD(H, capacity), chunks);
  const uint64_t size = FR_SPOOL_HEADER_SIZE + chunks * uint64_t{chunk_size};
  bool ok = ::pwrite(fd, head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()) &&
            ::ftruncate(fd, static_cast<off_t>(size)) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return make_error(path, "", std::nullopt,
                      fmt::format("cannot size the function spool: {}", std::strerror(err)));
  }
  return Status::success();
}

namespace {

void read_tables(ByteView head, uint64_t count, FunctionSpool& out) {
  using T = fr_spool_table;
  for (uint32_t i = 0; i < count && i < FR_MAX_TABLES; ++i) {
    const uint64_t at = offsetof(fr_spool_header, tables) + i * sizeof(T);
    if (head.read<uint32_t>(at + offsetof(T, ready)).value_or(0) != 1) {
      out.problems.push_back(fmt::format("install {} was not finished", i));
      continue;
    }
    SpoolTable t;
    t.index = i;
    t.pid = static_cast<int32_t>(head.read<uint32_t>(at + offsetof(T, pid)).value_or(0));
    t.base = head.read<uint64_t>(at + offsetof(T, base)).value_or(0);
    t.t_ns = head.read<uint64_t>(at + offsetof(T, t_ns)).value_or(0);
    t.install_ns = head.read<uint64_t>(at + offsetof(T, install_ns)).value_or(0);
    t.patched = head.read<uint32_t>(at + offsetof(T, patched)).value_or(0);
    t.skipped = head.read<uint32_t>(at + offsetof(T, skipped)).value_or(0);
    auto path = head.clamp(at + offsetof(T, path), FR_PATH_MAX);
    t.path = std::string(path.chars().substr(0, path.chars().find('\0')));
    out.tables.push_back(std::move(t));
  }
  if (count > FR_MAX_TABLES)
    out.problems.push_back(fmt::format("{} installs, room for {}", count, FR_MAX_TABLES));
}

}  // namespace

Result<FunctionSpool> read_function_spool(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file) return file.error();
  return read_function_spool(file->bytes(), path);
}

Result<FunctionSpool> read_function_spool(ByteView all, const std::string& path) {
  using H = fr_spool_header;
  auto head = all.sub(0, FR_SPOOL_HEADER_SIZE);
  if (!head || head->read<uint64_t>(offsetof(H, magic)) != FR_SPOOL_MAGIC ||
      head->read<uint32_t>(offsetof(H, version)) != FR_ABI_VERSION) {
    return make_error(path, "magic", 0, "not a function spool of this cudatool");
  }
  FunctionSpool out;
  const uint32_t chunk_size = head->read<uint32_t>(offsetof(H, chunk_size)).value_or(0);
  const uint64_t capacity = head->read<uint64_t>(offsetof(H, capacity)).value_or(0);
  out.handed_out = head->read<uint64_t>(offsetof(H, next_chunk)).value_or(0);
  out.lost = head->read<uint64_t>(offsetof(H, lost)).value_or(0);
  if (head->read<uint32_t>(offsetof(H, error_taken)).value_or(0) == 2) {
    auto e = head->clamp(offsetof(H, error), sizeof(H::error)).chars();
    out.error = std::string(e.substr(0, e.find('\0')));
  }
  if (chunk_size < sizeof(fr_chunk_header) ||
      capacity > (all.size() - FR_SPOOL_HEADER_SIZE) / chunk_size) {
    return make_error(path, "chunk_size", offsetof(H, chunk_size), "chunks do not fit the file");
  }
  read_tables(*head, head->read<uint64_t>(offsetof(H, next_table)).value_or(0), out);
  using C = fr_chunk_header;
  const uint64_t n = std::min(out.handed_out, capacity);
  for (uint64_t i = 0; i < n; ++i) {
    ByteView c = all.clamp(FR_SPOOL_HEADER_SIZE + i * chunk_size, chunk_size);
    if (c.read<uint32_t>(offsetof(C, magic)) != FR_CHUNK_MAGIC) {
      out.problems.push_back(fmt::format("chunk {}: never written (its thread ended first?)", i));
      continue;
    }
    SpoolChunk ch;
    ch.table = c.read<uint32_t>(offsetof(C, table)).value_or(0);
    ch.pid = static_cast<int32_t>(c.read<uint32_t>(offsetof(C, pid)).value_or(0));
    ch.tid = static_cast<int32_t>(c.read<uint32_t>(offsetof(C, tid)).value_or(0));
    ch.part = c.read<uint64_t>(offsetof(C, part)).value_or(0);
    ch.t0_ns = c.read<uint64_t>(offsetof(C, t0_ns)).value_or(0);
    ch.closed = c.read<uint32_t>(offsetof(C, closed)).value_or(0) != 0;
    uint64_t used = c.read<uint64_t>(offsetof(C, used)).value_or(0);
    const uint64_t room = chunk_size - sizeof(C);
    if (used > room) {
      out.problems.push_back(fmt::format("chunk {}: used {} over its room {}: cut", i, used, room));
      used = room;
    }
    auto data = c.clamp(sizeof(C), used);
    ch.data.assign(data.data(), data.data() + data.size());
    out.chunks.push_back(std::move(ch));
  }
  std::stable_sort(out.chunks.begin(), out.chunks.end(),
                   [](const SpoolChunk& a, const SpoolChunk& b) {
                     if (a.pid != b.pid) return a.pid < b.pid;
                     if (a.tid != b.tid) return a.tid < b.tid;
                     if (a.t0_ns != b.t0_ns) return a.t0_ns < b.t0_ns;
                     return a.part < b.part;
                   });
  return out;
}

FunctionRecords function_records(const FunctionSpool& spool, DriverImage& img,
                                 const PatchPlan& plan, uint64_t t0_ns, uint64_t first_table_id) {
  FunctionRecords out;
  out.problems = spool.problems;
  std::vector<uint64_t> starts;
  starts.reserve(plan.sites.size());
  for (const auto& s : plan.sites) starts.push_back(s.start);
  const std::string build_id = img.build_id().value_or("");
  std::vector<uint64_t> id_of(FR_MAX_TABLES, 0);
  for (const SpoolTable& st : spool.tables) {
    trace::FunctionTable t;
    t.id = first_table_id + out.tables.size();
    id_of[st.index] = t.id;
    t.pid = st.pid;
    t.path = st.path;
    t.build_id = build_id;
    t.base = st.base;
    t.starts = starts;
    t.globs = plan.globs;
    t.selected = plan.selected;
    t.not_patchable = plan.refusals.size();
    t.skipped = st.skipped;
    t.install_ns = st.install_ns;
    out.tables.push_back(std::move(t));
  }
  auto rel = [&](uint64_t t) { return t > t0_ns ? t - t0_ns : 0; };
  for (const SpoolChunk& c : spool.chunks) {
    if (c.table >= FR_MAX_TABLES || id_of[c.table] == 0) {
      out.problems.push_back(
          fmt::format("a chunk of pid {} tid {} names install {}, which is not "
                      "in the spool: left out",
                      c.pid, c.tid, c.table));
      continue;
    }
    trace::FunctionBlock b;
    b.table = id_of[c.table];
    b.pid = c.pid;
    b.tid = c.tid;
    b.part = c.part;
    b.t_ns = rel(c.t0_ns);
    b.closed = c.closed;
    b.data = c.data;
    out.blocks.push_back(std::move(b));
  }
  return out;
}

}  // namespace cudatool::record
