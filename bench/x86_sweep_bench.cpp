// The linear sweep behind `cudatool xrefs` / `index`: the project's x86-64 length decoder
// (analysis/x86_length) against Capstone (the disassembler already linked, with and without
// operand details) over the whole .text of a real build — the measurement that decides which
// decoder the sweep uses, and whether another one (Debian's libzydis-dev) could earn its place.
//
//   CUDATOOL_BENCH_LIB=PATH build-bench/bench/x86_sweep_bench
// (default: libcuda.so.550.163.01 in ~/.cache/cudatool/drivers). Reports bytes/s of .text.
#include <benchmark/benchmark.h>
#include <capstone/capstone.h>

#include <cstdlib>
#include <string>

#include "base/mapped_file.hpp"
#include "base/x86_length.hpp"
#include "elf/elf_image.hpp"

namespace {

using namespace cudatool;

struct Text {
  MappedFile file;
  ByteView code;
  uint64_t addr = 0;
};

const Text& text() {
  static Text t = [] {
    Text x;
    const char* e = std::getenv("CUDATOOL_BENCH_LIB");
    std::string path =
        e != nullptr && *e != '\0'
            ? std::string(e)
            : std::string(std::getenv("HOME")) + "/.cache/cudatool/drivers/libcuda.so.550.163.01";
    auto f = MappedFile::open(path);
    if (!f) return x;
    x.file = std::move(*f);
    auto elf = elf::ElfImage::parse(x.file.bytes());
    if (!elf) return x;
    if (const auto* s = elf->section(".text")) {
      if (auto b = elf->section_bytes(*s)) x.code = *b;
      x.addr = s->sh_addr;
    }
    return x;
  }();
  return t;
}

void BM_X86LengthSweep(benchmark::State& state) {
  const Text& t = text();
  if (t.code.empty()) return state.SkipWithError("no .text (set CUDATOOL_BENCH_LIB)");
  for (auto _ : state) {
    uint64_t off = 0, n = 0;
    while (off < t.code.size()) {
      auto in = x86::decode_length(t.code.clamp(off, 15));
      off += in ? in->length : 1;
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * t.code.size()));
}

void capstone_sweep(benchmark::State& state, bool detail) {
  const Text& t = text();
  if (t.code.empty()) return state.SkipWithError("no .text (set CUDATOOL_BENCH_LIB)");
  csh cs;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) return state.SkipWithError("cs_open");
  cs_option(cs, CS_OPT_DETAIL, detail ? CS_OPT_ON : CS_OPT_OFF);
  cs_insn* insn = cs_malloc(cs);
  for (auto _ : state) {
    uint64_t off = 0, n = 0;
    while (off < t.code.size()) {
      const uint8_t* p = t.code.data() + off;
      size_t left = t.code.size() - off;
      uint64_t a = t.addr + off;
      off += cs_disasm_iter(cs, &p, &left, &a, insn) ? insn->size : 1;
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  cs_free(insn, 1);
  cs_close(&cs);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * t.code.size()));
}

void BM_CapstoneSweepDetail(benchmark::State& state) {
  capstone_sweep(state, true);
}
void BM_CapstoneSweep(benchmark::State& state) {
  capstone_sweep(state, false);
}

BENCHMARK(BM_X86LengthSweep)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CapstoneSweepDetail)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CapstoneSweep)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
