#include "record/function_recorder.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>

#include "analysis/driver_image.hpp"
#include "analysis/find_library.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"
#include "analysis/xrefs.hpp"
#include "base/clock.hpp"
#include "record/funcrec/funcrec_abi.h"
#include "trace/function_events.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::record {
namespace {

bool regular_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string_view base_name(std::string_view p) {
  size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// A private directory under $TMPDIR (or /tmp) for the plan and the spool; "" when none can be.
std::string make_private_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cudatool-functions-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  return mkdtemp(name.data()) == nullptr ? std::string() : std::string(name.data());
}

}  // namespace

FunctionRecorder::FunctionRecorder(FunctionRecorder&& o) noexcept {
  *this = std::move(o);
}
FunctionRecorder& FunctionRecorder::operator=(FunctionRecorder&& o) noexcept {
  active_ = o.active_;
  globs_ = std::move(o.globs_);
  why_not_ = std::move(o.why_not_);
  library_ = std::move(o.library_);
  plan_path_ = std::move(o.plan_path_);
  spool_path_ = std::move(o.spool_path_);
  own_dir_ = std::exchange(o.own_dir_, std::string());
  img_ = std::move(o.img_);
  plan_ = std::move(o.plan_);
  prepare_ns_ = o.prepare_ns_;
  return *this;
}
FunctionRecorder::~FunctionRecorder() {
  if (own_dir_.empty()) return;
  for (const char* f : {"/plan.bin", "/spool.bin"}) ::unlink((own_dir_ + f).c_str());
  ::rmdir(own_dir_.c_str());
}

std::vector<std::string> function_libraries_for(const std::vector<std::string>& command) {
  std::vector<std::string> out;
  for (size_t i = 1; i < command.size(); ++i) {
    if (base_name(command[i]).starts_with("libcuda.so") && regular_file(command[i]))
      out.push_back(command[i]);
  }
  if (auto sys = find_system_library("libcuda.so.1")) out.push_back(sys->path);
  return out;
}

std::vector<std::string> function_libraries(const std::string& given,
                                            const std::vector<std::string>& command) {
  return given.empty() ? function_libraries_for(command) : std::vector<std::string>{given};
}

bool FunctionRecorder::try_library(const std::string& path, const FunctionRecorderOptions& o,
                                   std::string& why) {
  auto img = DriverImage::open(path);
  if (!img) {
    why = fmt::format("{}: {}", path, img.error().message());
    return false;
  }
  FunctionMap& map = (*img)->facet<FunctionMap>();
  if (!map.has_eh_frame() || map.functions().empty()) {
    why =
        fmt::format("{}: no function map (no unwind data in .eh_frame to find functions by)", path);
    return false;
  }
  add_function_names(**img, map);
  PatchPlan plan = make_patch_plan(**img, map, (*img)->facet<XrefIndex>(), o.globs);
  std::string plan_path = o.dir + "/plan.bin", spool_path = o.dir + "/spool.bin";
  if (Status st = write_function_plan(**img, plan, plan_path); !st.ok()) {
    why = st.error().message();
    return false;
  }
  if (Status st = create_function_spool(spool_path, o.spool_chunks); !st.ok()) {
    why = st.error().message();
    return false;
  }
  img_ = std::move(*img);
  plan_ = std::move(plan);
  library_ = path;
  plan_path_ = plan_path;
  spool_path_ = spool_path;
  return true;
}

FunctionRecorder FunctionRecorder::prepare(const FunctionRecorderOptions& o) {
  FunctionRecorder fr;
  fr.globs_ = o.globs;
  const uint64_t t0 = monotonic_ns();
  if (std::string bad = check_function_globs(o.globs); !bad.empty()) {
    fr.why_not_ = fmt::format("--functions={}: {}", o.globs, bad);
    return fr;
  }
  FunctionRecorderOptions opts = o;
  if (opts.dir.empty()) {
    fr.own_dir_ = make_private_dir();
    if (fr.own_dir_.empty()) {
      fr.why_not_ = "no private directory for the function plan and spool could be made in $TMPDIR";
      return fr;
    }
    opts.dir = fr.own_dir_;
  }
  if (o.libraries.empty()) {
    fr.why_not_ =
        "no libcuda to plan: none named on the command line and no libcuda.so.1 on this system";
  }
  for (const std::string& lib : o.libraries) {
    std::string why;
    if (fr.try_library(lib, opts, why)) {
      fr.active_ = true;
      fr.why_not_.clear();
      break;
    }
    fr.why_not_ += (fr.why_not_.empty() ? "" : "; ") + why;
  }
  fr.prepare_ns_ = monotonic_ns() - t0;
  return fr;
}

std::vector<std::pair<std::string, std::string>> FunctionRecorder::env() const {
  if (!active_) return {};
  return {{FR_ENV_PLAN, plan_path_}, {FR_ENV_SPOOL, spool_path_}};
}

FunctionRecorder::Result FunctionRecorder::finish(uint64_t t0_ns, uint64_t first_table_id) {
  Result out;
  if (!active_) return out;
  auto spool = read_function_spool(spool_path_);
  if (!spool) {
    out.problems.push_back(spool.error().message());
    return out;
  }
  if (!spool->error.empty()) out.problems.push_back("the recorder: " + spool->error);
  FunctionRecords rec = function_records(*spool, *img_, plan_, t0_ns, first_table_id);
  out.tables = std::move(rec.tables);
  out.blocks = std::move(rec.blocks);
  out.problems.insert(out.problems.end(), rec.problems.begin(), rec.problems.end());
  out.lost = spool->lost;
  if (out.tables.empty() && spool->error.empty()) {
    out.problems.push_back(fmt::format("no process loaded {} (build id {}): nothing was recorded",
                                       library_, img_->build_id().value_or("none")));
  }
  return out;
}

FunctionOutcome FunctionRecorder::outcome() const {
  FunctionOutcome out;
  out.globs = globs_;
  out.active = active_;
  out.library = library_;
  out.why_not = why_not_;
  out.planned = active_ ? plan_.sites.size() : 0;
  return out;
}

FunctionOutcome FunctionRecorder::write_into(trace::TraceWriter& w, uint64_t t0_ns,
                                             const SeqMap& seq_of,
                                             const std::vector<trace::TimedDeviceCall>* placed) {
  FunctionOutcome out = outcome();
  if (!active_) return out;
  Result r = finish(t0_ns);
  out.lost = r.lost;
  out.problems = std::move(r.problems);
  if (placed != nullptr) {
    if (Status s = trace::place_device_calls(r.blocks, *placed); !s.ok())
      out.problems.push_back(s.error().message());
  }
  for (const auto& t : r.tables) {
    if (Status s = w.write_function_table(t); !s.ok()) {
      out.problems.push_back(s.error().message());
      return out;
    }
    ++out.tables;
  }
  for (auto& b : r.blocks) {
    if (seq_of) {
      if (Status s = trace::remap_device_seqs(b, seq_of); !s.ok())
        out.problems.push_back(s.error().message());
    }
    if (Status s = w.write_function_block(b); !s.ok()) {
      out.problems.push_back(s.error().message());
      return out;
    }
    ++out.blocks;
    out.records_bytes += b.data.size();
  }
  return out;
}

}  // namespace cudatool::record
