#include "ab_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "harness.hpp"
#include "rm/tables.hpp"
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
                     const std::vector<trace::Event>& events) {
  std::string path = temp_dir() + "/" + name;
  auto w = trace::TraceWriter::create(path);
  EXPECT_TRUE(w.ok()) << (w ? "" : w.error().message());
  if (!w) return path;
  EXPECT_TRUE((*w)->write_header(header).ok());
  for (const trace::Event& e : events) EXPECT_TRUE((*w)->write_event(e).ok());
  trace::Trailer tr;
  tr.events = events.size();
  tr.reason = "exit";
  EXPECT_TRUE((*w)->write_trailer(tr).ok());
  EXPECT_TRUE((*w)->close().ok());
  return path;
}

uint32_t nvos54_status_offset() {
  const rm::Tables& t = rm::tables_for_driver("580.159.04");
  const rm::StructEntry* s = t.find_struct("NVOS54_PARAMETERS");
  const rm::FieldEntry* f = s ? t.find_field(*s, "status") : nullptr;
  EXPECT_NE(f, nullptr);
  return f ? f->offset : 0;
}

}  // namespace cudatool::test
