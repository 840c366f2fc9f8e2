// cudatool's side of the in-process function recorder (record/funcrec/): the plan file it
// installs, the spool it writes, and turning the spool into the trace's function tables and
// blocks (trace format v4). Layouts: record/funcrec/funcrec_abi.h.
//
//   auto plan = make_patch_plan(img, map, img.facet<XrefIndex>(), globs);
//   write_function_plan(img, plan, dir + "/plan.bin");          // FR_ENV_PLAN
//   create_function_spool(dir + "/spool.bin", kDefaultChunks);   // FR_ENV_SPOOL
//   … run the program (the preload shim installs the plan when libcuda is loaded) …
//   auto spool = read_function_spool(dir + "/spool.bin");        // untrusted: the program wrote it
//   FunctionRecords rec = function_records(*spool, img, plan, t0_ns);
//   for (auto& t : rec.tables) writer.write_function_table(t);  …
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/patch_plan.hpp"
#include "base/bytes.hpp"
#include "base/error.hpp"
#include "trace/event.hpp"

namespace cudatool {
class DriverImage;
}

namespace cudatool::record {

// The plan file: the sites of `plan` with the library's build id. Fails when the library has no
// build id (nothing would tie the plan to the library a process loads) or there are no sites.
Status write_function_plan(DriverImage& img, const PatchPlan& plan, const std::string& path);

inline constexpr uint32_t kSpoolChunkSize = 256u << 10;
inline constexpr uint64_t kDefaultSpoolChunks = 64u << 10;  // 16 GiB of room, sparse

// A new spool file (sparse: only written chunks take disk space).
Status create_function_spool(const std::string& path, uint64_t chunks = kDefaultSpoolChunks,
                             uint32_t chunk_size = kSpoolChunkSize);

struct SpoolTable {
  uint32_t index = 0;
  int32_t pid = 0;
  uint64_t base = 0;
  uint64_t t_ns = 0, install_ns = 0;
  uint32_t patched = 0, skipped = 0;
  std::string path;
};
struct SpoolChunk {
  uint32_t table = 0;
  int32_t pid = 0, tid = 0;
  uint64_t part = 0;
  uint64_t t0_ns = 0;
  bool closed = false;
  std::vector<uint8_t> data;
};
struct FunctionSpool {
  std::vector<SpoolTable> tables;
  std::vector<SpoolChunk> chunks;     // by (pid, tid, t0, part)
  uint64_t handed_out = 0;            // chunks the recorders took
  uint64_t lost = 0;                  // calls not recorded for want of a chunk
  std::string error;                  // why a recorder could not start or install ("" none)
  std::vector<std::string> problems;  // chunks or tables left out, and why
};

// Reads what the recorders wrote. The file is untrusted (a program wrote it): a chunk whose
// header is damaged is left out and said in `problems`; `used` is capped by the chunk.
Result<FunctionSpool> read_function_spool(const std::string& path);
// The same on bytes in memory (`path` names them in errors): the fuzz target's way in.
Result<FunctionSpool> read_function_spool(ByteView bytes, const std::string& path);

// The trace's function records: one table per install (ids from `first_table_id`), one block per
// chunk, times made relative to the trace's t0.
struct FunctionRecords {
  std::vector<trace::FunctionTable> tables;
  std::vector<trace::FunctionBlock> blocks;
  std::vector<std::string> problems;
};
FunctionRecords function_records(const FunctionSpool& spool, DriverImage& img,
                                 const PatchPlan& plan, uint64_t t0_ns,
                                 uint64_t first_table_id = 1);

}  // namespace cudatool::record
