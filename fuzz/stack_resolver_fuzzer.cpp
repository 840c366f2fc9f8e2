// Fuzzes the module map and the stack resolver (src/trace/module_map.hpp, stack_resolver.hpp):
// module records and event stacks of a trace, resolved against a module file given by the input
// too, and the /proc/PID/maps reader of the ptrace recorder (src/record/proc_modules.hpp).
//
// Input: trace text (header, module lines, events with stacks), optionally followed by a line
// "#ELF" and the bytes every module path opens to. Invariants: a frame's module holds its
// address and its offset is address - base; a function never starts after the frame; an API
// name comes only from an API library; module records survive a write and a read; the maps
// reader yields modules with lo < hi.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/driver_image.hpp"
#include "base/mapped_file.hpp"
#include "fuzz_check.hpp"
#include "record/proc_modules.hpp"
#include "trace/stack_resolver.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  std::string input(reinterpret_cast<const char*>(data), size);
  std::string elf;
  if (size_t at = input.find("\n#ELF\n"); at != std::string::npos) {
    elf = input.substr(at + 6);
    input.resize(at + 1);
  }
  // The maps reader takes any text.
  for (const trace::Module& m : record::modules_from_maps(record::parse_maps(input), 1, nullptr)) {
    FUZZ_CHECK(m.lo < m.hi);
  }
  trace::ResolverOptions o;
  o.api_lib = "*";
  o.open = [&elf](const std::string& path) -> Result<std::unique_ptr<DriverImage>> {
    if (elf.empty()) return make_error(path, "", std::nullopt, "absent");
    std::vector<uint8_t> bytes(elf.begin(), elf.end());
    return DriverImage::from_file(MappedFile::from_buffer(std::move(bytes), path), path);
  };
  trace::StackResolver res(std::move(o));
  auto r = trace::TraceReader::from_memory(std::move(input), "fuzz", 1 << 20);
  if (!r) return 0;
  trace::Event ev;
  std::vector<trace::ResolvedFrame> frames;
  int n = 0;
  size_t checked_modules = 0;
  while ((*r)->next(ev) && n++ < 20000) {
    res.follow((*r)->modules(), ev);
    for (; checked_modules < (*r)->modules().size(); ++checked_modules) {
      const trace::Module& m = (*r)->modules()[checked_modules];
      std::string line;
      trace::append_module_line(line, m);
      trace::Module again;
      FUZZ_CHECK(
          trace::parse_module_line(std::string_view(line).substr(0, line.size() - 1), 0, again)
              .ok());
      FUZZ_CHECK(again.path == m.path && again.build_id == m.build_id && again.base == m.base &&
                 again.lo == m.lo && again.hi == m.hi && again.pid == m.pid);
    }
    res.frames(ev, frames);
    FUZZ_CHECK(frames.size() == ev.stack.size());
    for (const trace::ResolvedFrame& f : frames) {
      if (f.module == nullptr) continue;
      FUZZ_CHECK(f.addr >= f.module->lo && f.addr < f.module->hi);
      FUZZ_CHECK(f.offset == f.addr - f.module->base);
      FUZZ_CHECK(f.library != nullptr);
      if (!f.function.empty()) FUZZ_CHECK(f.function_offset <= f.offset);
      if (!f.api.empty()) FUZZ_CHECK(f.library->api && f.library->named());
    }
    (void)res.api_of(ev);
  }
  for (const auto& lib : res.libraries()) FUZZ_CHECK(lib->named() == lib->why.empty());
  return 0;
}
