#include "cli/trace_input.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "base/json_writer.hpp"
#include "cli/common.hpp"
#include "trace/loaded_libcuda.hpp"

namespace cudatool::cli {

std::optional<trace::EventFilter> open_filter(const std::string& expr, const TraceInput& in) {
  auto filter = trace::EventFilter::parse(expr, *in.tables);
  if (!filter) {
    print_error(filter.error());
    return std::nullopt;
  }
  return std::move(*filter);
}

std::string branch_option_help() {
  std::string ids;
  for (const rm::Tables& t : rm::all_branches()) {
    ids += fmt::format("{}{} ({})", ids.empty() ? "" : ", ", t.info().id, t.info().version);
  }
  return "decoder tables to use instead of the branch of the trace's driver version: a branch id, "
         "its release, or a driver version (nearest branch). Branches: " +
         ids;
}

std::unique_ptr<TraceInput> open_trace_input(const std::string& path, const std::string& branch) {
  auto in = std::make_unique<TraceInput>();
  in->path = path;
  auto r = trace::TraceReader::open(path);
  if (!r) {
    print_error(r.error());
    return nullptr;
  }
  in->reader = std::move(*r);
  const std::optional<std::string>& dv = in->reader->header().driver_version;
  if (!branch.empty()) {
    in->tables = rm::find_branch(branch);
    if (in->tables == nullptr) {
      rm::BranchChoice c = rm::choose_branch(branch);
      if (c.driver_major == 0) {
        std::string ids;
        for (const rm::Tables& t : rm::all_branches()) {
          ids += fmt::format("{}{}", ids.empty() ? "" : ", ", t.info().id);
        }
        print_error(
            fmt::format("--branch '{}': not a branch ({}), a release of one, or a driver version",
                        branch, ids));
        return nullptr;
      }
      in->tables = c.tables;
    }
    in->chosen_by = "option";
    in->branch_text = fmt::format("{} (tables of {}), chosen by --branch {}", in->tables->info().id,
                                  in->tables->info().version, branch);
    return in;
  }
  rm::BranchChoice c = rm::choose_branch(dv.value_or(""));
  std::optional<trace::LoadedLibcuda> lib;
  if (!dv) lib = trace::loaded_libcuda_if_unversioned(path);
  if (lib) c = rm::choose_branch(lib->version);
  in->tables = c.tables;
  const rm::BranchInfo& b = c.tables->info();
  if (lib && c.driver_major != 0) {
    in->chosen_by = "libcuda";
    in->branch_text = fmt::format(
        "{} (tables of {}) for libcuda {}{}: the trace names no kernel driver version, its module "
        "records name the libcuda the program loaded ({})",
        b.id, b.version, lib->version, c.exact_major ? "" : ", the nearest major", lib->path);
  } else if (!dv || c.driver_major == 0) {
    in->chosen_by = "newest";
    in->branch_text = fmt::format(
        "{} (tables of {}), the newest: the trace names no driver version (use --branch)", b.id,
        b.version);
  } else if (c.exact_major) {
    in->chosen_by = "driver";
    in->branch_text =
        fmt::format("{} (tables of {}) for driver {}, the same major", b.id, b.version, *dv);
  } else {
    in->chosen_by = "nearest";
    in->branch_text = fmt::format(
        "{} (tables of {}) for driver {}: no {} branch, nearest major (use --branch to choose)",
        b.id, b.version, *dv, c.driver_major);
  }
  return in;
}

void write_branch_json(JsonWriter& w, const TraceInput& in) {
  const trace::Header& h = in.reader->header();
  w.key("driver_version");
  if (h.driver_version) {
    w.value(*h.driver_version);
  } else {
    w.null();
  }
  w.key("branch").begin_object();
  w.kv("id", in.tables->info().id)
      .kv("release", in.tables->info().version)
      .kv("commit", in.tables->info().commit)
      .kv("chosen_by", in.chosen_by);
  w.end_object();
}

void DiagnosticStream::flush(const Diagnostics& d) {
  const auto& items = d.items();
  for (; printed_ < items.size(); ++printed_) {
    print_error(items[printed_]);
  }
  if (d.count() > items.size() && !said_more_) {
    said_more_ = true;
    print_error(
        fmt::format("more than {} bad lines: the rest are counted, not shown", items.size()));
  }
}

void OutBuffer::flush() {
  const char* p = buf_.data();
  size_t n = buf_.size();
  if (n > 0 && fd_ == STDOUT_FILENO) note_stdout_written();
  while (n > 0 && ok_) {
    ssize_t w = ::write(fd_, p, n);
    if (w <= 0) {
      ok_ = false;
      break;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  buf_.clear();
}

}  // namespace cudatool::cli
