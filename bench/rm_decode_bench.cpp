// Speed of the RM/UVM decoders (trace/decode.hpp) on the events of a real capture
// (tests/data/captures/trace_a.jsonl.xz, or $CUDATOOL_CAPTURES), replicated to a large in-memory
// trace: events per second of decode_event alone, with the one-line text rendering, and with the
// JSON rendering. Reading the trace file is not measured here (that is the trace reader's).
//
//   rm_decode_bench [google-benchmark flags]
//   rm_decode_bench --decode-capture FILE.jsonl.xz   whole pipeline (xz, JSON lines, decode,
//                                                    text) for bench/cases/rm_decode.py
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/decompress.hpp"
#include "base/hex.hpp"
#include "base/json_writer.hpp"
#include "base/mapped_file.hpp"
#include "trace/decode.hpp"

namespace {

using namespace cudatool;

std::string xz_file(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return {};
  auto out = decompress(f->bytes(), Compression::kXz, 1ULL << 30, path);
  return out ? std::string(out->begin(), out->end()) : std::string();
}

std::vector<uint8_t> hex_field(const nlohmann::json& j, const char* k) {
  if (!j.contains(k)) return {};
  return parse_hex_bytes(j[k].get<std::string>()).value_or(std::vector<uint8_t>{});
}

// The capture format of tests/data/captures/README.md as trace events (ioctls and mmaps).
std::vector<trace::Event> parse_capture(const std::string& text) {
  std::vector<trace::Event> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    trace::Event ev;
    ev.sys = trace::sys_from_name(j.value("sys", ""));
    ev.path = j.value("path", "");
    if (ev.sys == trace::Sys::kIoctl) {
      ev.request = parse_u64(j.value("req", "0"), false).value_or(0);
      trace::Buffer a;
      a.role = "arg";
      a.before = hex_field(j, "pre");
      a.after = hex_field(j, "post");
      ev.arg = std::move(a);
      if (j.contains("nptr")) {
        trace::Buffer p;
        p.role = "params";
        p.before = hex_field(j, "npre");
        p.after = hex_field(j, "npost");
        ev.nested.push_back(std::move(p));
      }
    } else if (ev.sys == trace::Sys::kMmap) {
      ev.len = j.value("len", 0);
    }
    out.push_back(std::move(ev));
  }
  return out;
}

// The real captures ship in tests/data/captures; $CUDATOOL_CAPTURES overrides.
std::string capture_path() {
  if (const char* env = getenv("CUDATOOL_CAPTURES")) return std::string(env) + "/trace_a.jsonl.xz";
  return std::string(CUDATOOL_SOURCE_DIR) + "/tests/data/captures/trace_a.jsonl.xz";
}

const std::vector<trace::Event>& events() {
  static const std::vector<trace::Event> all = [] {
    std::vector<trace::Event> one = parse_capture(xz_file(capture_path()));
    if (one.empty()) {
      fprintf(stderr, "rm_decode_bench: no capture at %s (set CUDATOOL_CAPTURES)\n",
              capture_path().c_str());
      exit(2);
    }
    std::vector<trace::Event> many;
    while (many.size() < 100000) many.insert(many.end(), one.begin(), one.end());
    return many;
  }();
  return all;
}

const rm::Tables& tables() {
  static const rm::Tables& t = rm::tables_for_driver("580.159.04");  // the captures' driver
  return t;
}

void BM_Decode(benchmark::State& state) {
  const auto& evs = events();
  trace::Decoded d;
  size_t i = 0;
  for (auto _ : state) {
    trace::decode_event(tables(), evs[i], d);
    benchmark::DoNotOptimize(d.call);
    if (++i == evs.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Decode);

void BM_DecodeFormatLine(benchmark::State& state) {
  const auto& evs = events();
  trace::Decoded d;
  size_t i = 0;
  for (auto _ : state) {
    trace::decode_event(tables(), evs[i], d);
    std::string line = trace::format_line(d);
    benchmark::DoNotOptimize(line.data());
    if (++i == evs.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeFormatLine);

void BM_DecodeJson(benchmark::State& state) {
  const auto& evs = events();
  trace::Decoded d;
  std::string out;
  size_t i = 0;
  for (auto _ : state) {
    trace::decode_event(tables(), evs[i], d);
    out.clear();
    JsonWriter w(out, false);
    trace::write_json(w, d);
    benchmark::DoNotOptimize(out.data());
    if (++i == evs.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeJson);

// Whole pipeline for bench/cases/rm_decode.py: decompress, parse, decode, one line per event.
int decode_capture(const char* path) {
  std::vector<trace::Event> evs = parse_capture(xz_file(path));
  if (evs.empty()) {
    fprintf(stderr, "rm_decode_bench: cannot read %s\n", path);
    return 2;
  }
  trace::Decoded d;
  std::string out;
  for (const trace::Event& ev : evs) {
    trace::decode_event(tables(), ev, d);
    out += trace::format_line(d);
    out += '\n';
  }
  fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--decode-capture") return decode_capture(argv[2]);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
