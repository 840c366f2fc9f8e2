#include "ab_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>

#include "ab/rules.hpp"
#include "base/bytes.hpp"
#include "harness.hpp"
#include "rm/tables.hpp"
#include "trace/decode.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::test {

const AbTrace& ab_capture(const std::string& name) {
  static std::map<std::string, AbTrace> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  AbTrace& t = cache[name];
  std::string capture = captures_dir() + "/" + name;
  if (access(capture.c_str(), R_OK) != 0) {
    ADD_FAILURE() << capture
                  << " is missing: the real captures ship in tests/data/captures (or set "
                  << "CUDATOOL_CAPTURES)";
    return t;
  }
  t.path = temp_dir() + "/ab-import-" + name + ".trace";
  RunResult r =
      run({cudatool_bin(), "import", capture, "-o", t.path, "--driver-version", "580.159.04"});
  if (r.status != 0) {
    ADD_FAILURE() << "cudatool import " << capture << ": " << r.err;
    return t;
  }
  auto reader = trace::TraceReader::open(t.path);
  if (!reader) {
    ADD_FAILURE() << reader.error().message();
    return t;
  }
  t.header = (*reader)->header();
  trace::Event ev;
  while ((*reader)->next(ev)) t.events.push_back(ev);
  EXPECT_TRUE((*reader)->diagnostics().empty());
  return t;
}

std::string ab_write(const std::string& name, const trace::Header& header,
                     const std::vector<trace::Event>& events,
                     const std::optional<trace::Trailer>& trailer) {
  std::string path = temp_dir() + "/" + name;
  auto w = trace::TraceWriter::create(path);
  EXPECT_TRUE(w.ok()) << (w ? "" : w.error().message());
  if (!w) return path;
  EXPECT_TRUE((*w)->write_header(header).ok());
  for (const trace::Event& e : events) EXPECT_TRUE((*w)->write_event(e).ok());
  trace::Trailer tr = trailer.value_or(trace::Trailer{});
  tr.events = events.size();
  if (tr.reason.empty()) tr.reason = "exit";
  EXPECT_TRUE((*w)->write_trailer(tr).ok());
  EXPECT_TRUE((*w)->close().ok());
  return path;
}

namespace {

struct Live {
  uint32_t client, parent, object;
};

// Objects alive after A's first n calls (allocated with NV_OK, not freed), in creation order.
std::vector<Live> live_objects(const std::vector<trace::Decoded>& dec, uint32_t n) {
  std::vector<Live> live;
  for (uint32_t k = 0; k < n; ++k) {
    const trace::Decoded& d = dec[k];
    bool ok = d.status && *d.status == 0;
    if (!ok || !d.h_object) continue;
    if ((d.call == "NV_ESC_RM_ALLOC" || d.call == "NV_ESC_RM_ALLOC_MEMORY") && d.h_parent &&
        *d.h_parent != 0 && d.h_client) {
      live.push_back({*d.h_client, *d.h_parent, *d.h_object});
    } else if (d.call == "NV_ESC_RM_FREE") {
      std::set<uint32_t> gone{*d.h_object};
      std::vector<Live> keep;
      for (const Live& o : live) {  // the object and everything below it, as RM frees them
        if (gone.count(o.object) || gone.count(o.parent)) {
          gone.insert(o.object);
        } else {
          keep.push_back(o);
        }
      }
      live = keep;
    }
  }
  return live;
}

}  // namespace

Teardown teardown_after(const AbTrace& a, uint32_t n, const TeardownPlan& plan) {
  Teardown td;
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  std::vector<trace::Decoded> dec;
  for (const trace::Event& e : a.events) dec.push_back(trace::decode_event(t, e));
  const trace::Event* templ = nullptr;
  for (size_t k = a.events.size(); k-- > 0 && templ == nullptr;) {
    if (dec[k].call == "NV_ESC_RM_FREE" && a.events[k].arg) templ = &a.events[k];
  }
  const rm::StructEntry* nvos00 = t.find_struct("NVOS00_PARAMETERS");
  if (templ == nullptr || nvos00 == nullptr) {
    ADD_FAILURE() << "no NV_ESC_RM_FREE in the capture, or no NVOS00_PARAMETERS in the tables";
    return td;
  }
  auto put = [&](std::vector<uint8_t>& b, std::string_view member, uint32_t v) {
    const rm::FieldEntry* f = t.find_field(*nvos00, member);
    if (f == nullptr || b.size() < f->offset + 4u) {
      ADD_FAILURE() << "NVOS00_PARAMETERS." << member;
      return;
    }
    store_le<uint32_t>(b.data() + f->offset, v);
  };
  std::vector<Live> live = live_objects(dec, n);
  td.live_objects = static_cast<uint32_t>(live.size());
  for (uint32_t i = 0; i < plan.frees && i < live.size(); ++i) {
    const Live& o = live[live.size() - 1 - i];
    trace::Event e = *templ;
    for (auto* side : {&e.arg->before, &e.arg->after}) {
      put(*side, "hRoot", o.client);
      put(*side, "hObjectParent", o.parent);
      put(*side, "hObjectOld", o.object);
      put(*side, "status", 0);
    }
    td.events.push_back(e);
    ++td.frees;
  }
  std::vector<const trace::Event*> opens;
  const trace::Event* uvm = nullptr;
  for (uint32_t k = 0; k < n; ++k) {
    const trace::Event& e = a.events[k];
    if (e.sys != trace::Sys::kOpen || e.ret < 0) continue;
    opens.push_back(&e);
    if (e.path == "/dev/nvidia-uvm") uvm = &e;
  }
  td.open_fds = static_cast<uint32_t>(opens.size());
  if (plan.deinit && uvm != nullptr) {
    trace::Event e;
    e.sys = trace::Sys::kIoctl;
    e.path = uvm->path;
    e.fd = static_cast<int32_t>(uvm->ret);
    for (const rm::UvmEntry& u : t.uvm_ioctls()) {
      if (u.name == "UVM_DEINITIALIZE") e.request = u.nr;
    }
    EXPECT_NE(e.request, 0u) << "UVM_DEINITIALIZE is not in the tables";
    e.arg = trace::Buffer{};
    e.arg->role = "arg";
    td.events.push_back(e);
    td.deinit = true;
  }
  for (uint32_t i = 0; i < plan.closes && i < opens.size(); ++i) {
    const trace::Event& o = *opens[opens.size() - 1 - i];
    trace::Event e;
    e.sys = trace::Sys::kClose;
    e.fd = static_cast<int32_t>(o.ret);
    e.path = o.path;
    td.events.push_back(e);
    ++td.closes;
  }
  if (plan.exit) {
    trace::Event e;
    e.sys = trace::Sys::kExit;
    e.ret = 1;
    td.events.push_back(e);
    td.exit = true;
  }
  uint64_t t_ns = n > 0 ? a.events[n - 1].t_ns : 0;
  for (trace::Event& e : td.events) {
    e.t_ns = (t_ns += 1000);
    e.tid = n > 0 ? a.events[n - 1].tid : 0;
  }
  return td;
}

uint32_t nvos54_status_offset() {
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  const rm::StructEntry* s = t.find_struct("NVOS54_PARAMETERS");
  const rm::FieldEntry* f = s ? t.find_field(*s, "status") : nullptr;
  EXPECT_NE(f, nullptr);
  return f ? f->offset : 0;
}

std::set<std::string> members_named_by_rules(const ab::Comparison& c) {
  std::set<std::string> seen;
  for (const ab::Divergence& d : c.divergences) {
    EXPECT_EQ(d.kind, ab::Kind::kParameters);
    for (const ab::FieldDiff& f : d.fields) {
      bool by_rule = false;
      for (const ab::MaskRule& r : ab::mask_rules()) {
        std::string suffix = "." + std::string(r.member);
        if (f.field.size() >= suffix.size() &&
            f.field.compare(f.field.size() - suffix.size(), suffix.size(), suffix) == 0) {
          by_rule = true;
          seen.insert(std::string(r.structure) + "." + std::string(r.member));
        }
      }
      EXPECT_TRUE(by_rule) << f.field << " differs and no rule names it";
    }
  }
  return seen;
}

}  // namespace cudatool::test
