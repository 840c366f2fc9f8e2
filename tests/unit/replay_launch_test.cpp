// The replay's compute launches (src/replay/shim/launch.c), copy engine (copy_engine.c) and video
// memory (vidmem.c), on fixtures: GPU memory here is a CPU-visible "sysmem" buffer and a
// video-memory range backed by vidmem, the way the fake GPU sees a real program's. The QMDs and
// constant buffers are written into GPU memory with the compute class's inline-to-memory methods,
// as libcuda 580 writes them on Hopper, then launched and completed.
//
// QMD fields are set here through the generated layout (gpu_compute.h), so these tests check
// what is done with a launch, not where NVIDIA's headers put its fields: that is checked by
// gpu_compute.committed (tools/gpu_methods/check_gpu_compute.py, against another repository's
// headers) and by the real libcuda's launch of work.c (ReplayReal.*: grid, block and parameters
// as the program passed them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "replay/generated/gpu_compute.h"
#include "replay/generated/gpu_methods.h"
#include "replay/shim/copy_engine.h"
#include "replay/shim/launch.h"
#include "replay/shim/vidmem.h"

namespace {

constexpr uint64_t kSysVa = 0xff00000000;  // CPU-visible (below 2^40: QMD 03_00 release addresses)
constexpr uint64_t kVidVa = 0x200000000;   // video memory: no CPU mapping
constexpr uint64_t kVidLen = 64ull << 20;

// GPU memory of a test: kSysVa .. + 1 MiB readable by the CPU, kVidVa .. + 64 MiB video memory.
struct Gpu {
  std::vector<uint8_t> sys = std::vector<uint8_t>(1 << 20);
  vidmem vm{};
  std::vector<uint8_t> table;
  int chunks_alive = 0;
  fg_mem mem{};
  fg_stats stats{};
  std::vector<fg_launch> launched;
  std::vector<std::vector<uint8_t>> cb0_seen;  // the constant buffer as each launch saw it
  fg_sink sink{};

  explicit Gpu(uint64_t cap = 16ull << 20) {
    static const vm_ops ops = {nullptr,
                               [](void* ctx, uint64_t n) -> void* {
                                 ++static_cast<Gpu*>(ctx)->chunks_alive;
                                 return calloc(1, n);
                               },
                               [](void* ctx, void* p, uint64_t) {
                                 --static_cast<Gpu*>(ctx)->chunks_alive;
                                 free(p);
                               }};
    vm_ops mine = ops;
    mine.ctx = this;
    table.resize(vm_table_bytes(cap));
    vm_init(&vm, &mine, cap, table.data());
    EXPECT_EQ(vm_add(&vm, kVidVa, kVidLen), 0);
    mem = {this, &Gpu::read, &Gpu::write, [](void*) -> uint64_t { return 0x1122334455667788; }};
    sink = {this, [](void* ctx, const fg_compute*, const fg_launch* l) {
              auto* g = static_cast<Gpu*>(ctx);
              g->launched.push_back(*l);
              std::vector<uint8_t> cb(l->cb_size[0]);
              EXPECT_EQ(g->mem.read(g, l->cb_va[0], cb.data(), cb.size()), cb.size());
              g->cb0_seen.push_back(cb);
            }};
  }
  ~Gpu() {
    vm_remove(&vm, 0, ~0ull);
    EXPECT_EQ(chunks_alive, 0);
  }
  static uint64_t read(void* ctx, uint64_t va, void* dst, uint64_t n) {
    auto* g = static_cast<Gpu*>(ctx);
    if (va >= kSysVa && va - kSysVa <= g->sys.size() && n <= g->sys.size() - (va - kSysVa)) {
      memcpy(dst, g->sys.data() + (va - kSysVa), n);
      return n;
    }
    return vm_read(&g->vm, va, dst, n);
  }
  static uint64_t write(void* ctx, uint64_t va, const void* src, uint64_t n) {
    auto* g = static_cast<Gpu*>(ctx);
    if (va >= kSysVa && va - kSysVa <= g->sys.size() && n <= g->sys.size() - (va - kSysVa)) {
      memcpy(g->sys.data() + (va - kSysVa), src, n);
      return n;
    }
    return vm_write(&g->vm, va, src, n);
  }
  uint32_t sys32(uint64_t va) const {
    uint32_t v;
    memcpy(&v, sys.data() + (va - kSysVa), 4);
    return v;
  }
  fg_env env(int complete = 1) { return {&mem, &sink, &stats, complete}; }
};

// A QMD image written field by field (bit ranges counted from its first byte).
struct Qmd {
  uint8_t b[FG_QMD_MAX] = {};
  void set(uint32_t hi, uint32_t lo, uint64_t v) {
    for (uint32_t bit = lo; bit <= hi; ++bit, v >>= 1) {
      if (v & 1) b[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
    }
  }
  std::vector<uint32_t> words(uint32_t bytes) const {
    std::vector<uint32_t> w(bytes / 4);
    memcpy(w.data(), b, bytes);
    return w;
  }
};
#define SET(q, name, v) (q).set(RPG_##name##_HI, RPG_##name##_LO, (v))
#define SETI(q, name, i, v) (q).set(RPG_##name##_HI(i), RPG_##name##_LO(i), (v))

// A Hopper (04_00) QMD of a grid: grid x block, the program, constant buffer 0, release 0 (one
// word), and dependent 0 (address and action) when given.
Qmd hopper_qmd(uint32_t grid, uint32_t block, uint64_t program, uint64_t cb0, uint32_t cb0_size,
               uint64_t sem, uint32_t payload, uint64_t dep = 0, uint32_t dep_action = 0) {
  Qmd q;
  SET(q, NVCBC0_QMDV04_00_QMD_MAJOR_VERSION, 4);
  SET(q, NVCBC0_QMDV04_00_QMD_TYPE, RPG_NVCBC0_QMDV04_00_QMD_TYPE_GRID_CTA);
  SET(q, NVCBC0_QMDV04_00_GRID_WIDTH, grid);
  SET(q, NVCBC0_QMDV04_00_GRID_HEIGHT, 1);
  SET(q, NVCBC0_QMDV04_00_GRID_DEPTH, 1);
  SET(q, NVCBC0_QMDV04_00_CTA_THREAD_DIMENSION0, block);
  SET(q, NVCBC0_QMDV04_00_CTA_THREAD_DIMENSION1, 1);
  SET(q, NVCBC0_QMDV04_00_CTA_THREAD_DIMENSION2, 1);
  SET(q, NVCBC0_QMDV04_00_REGISTER_COUNT, 16);
  SET(q, NVCBC0_QMDV04_00_PROGRAM_ADDRESS_LOWER, program & 0xffffffff);
  SET(q, NVCBC0_QMDV04_00_PROGRAM_ADDRESS_UPPER, program >> 32);
  SETI(q, NVCBC0_QMDV04_00_CONSTANT_BUFFER_VALID, 0, 1);
  SETI(q, NVCBC0_QMDV04_00_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6, 0, (cb0 >> 6) & 0xffffffff);
  SETI(q, NVCBC0_QMDV04_00_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6, 0, cb0 >> 38);
  SETI(q, NVCBC0_QMDV04_00_CONSTANT_BUFFER_SIZE_SHIFTED4, 0, cb0_size >> 4);
  if (sem != 0) {
    SETI(q, NVCBC0_QMDV04_00_RELEASE_ENABLE, 0, 1);
    SETI(q, NVCBC0_QMDV04_00_RELEASE_STRUCTURE_SIZE, 0,
         RPG_NVCBC0_QMDV04_00_RELEASE_STRUCTURE_SIZE_SEMAPHORE_ONE_WORD);
    SET(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE0_ADDR_LOWER, sem & 0xffffffff);
    SET(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE0_ADDR_UPPER, sem >> 32);
    SET(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE0_PAYLOAD_LOWER, payload);
  }
  if (dep != 0) {
    SETI(q, NVCBC0_QMDV04_00_DEPENDENT_QMD_ENABLE, 0, 1);
    SETI(q, NVCBC0_QMDV04_00_DEPENDENT_QMD_ACTION, 0, dep_action);
    SET(q, NVCBC0_QMDV04_00_DEPENDENT_QMD0_POINTER, dep >> 8);
  }
  return q;
}

// The method stream of one channel's compute subchannel (what the pushbuffer walker hands on).
struct Stream {
  fg_compute c{};
  std::vector<int> results;
  explicit Stream(uint32_t cls = 0xcbc0) { c.cls = cls; }
  int m(Gpu& g, uint32_t method, uint32_t value, int complete = 1) {
    fg_env e = g.env(complete);
    int r = fg_compute_method(&c, &e, method, value);
    results.push_back(r);
    return r;
  }
  // Inline to memory, as libcuda 580 writes QMDs and constant buffers on Hopper: OFFSET_OUT,
  // LINE_LENGTH_IN, LINE_COUNT 1, LAUNCH_DMA (pitch), then the data dword by dword.
  void i2m(Gpu& g, uint64_t va, const void* data, uint32_t bytes) {
    m(g, RPG_NVCBC0_OFFSET_OUT_UPPER, static_cast<uint32_t>(va >> 32));
    m(g, RPG_NVCBC0_OFFSET_OUT, static_cast<uint32_t>(va));
    m(g, RPG_NVCBC0_LINE_LENGTH_IN, bytes);
    m(g, RPG_NVCBC0_LINE_COUNT, 1);
    m(g, RPG_NVCBC0_LAUNCH_DMA, RPG_NVCBC0_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH);
    for (uint32_t i = 0; i < (bytes + 3) / 4; ++i) {
      uint32_t w = 0;
      memcpy(&w, static_cast<const uint8_t*>(data) + 4 * i, bytes - 4 * i < 4 ? bytes - 4 * i : 4);
      m(g, RPG_NVCBC0_LOAD_INLINE_DATA, w);
    }
  }
  int launch(Gpu& g, uint64_t qmd, uint32_t action, int complete = 1) {
    m(g, RPG_NVCBC0_SEND_PCAS_A, static_cast<uint32_t>(qmd >> 8));
    return m(g, RPG_NVCBC0_SEND_SIGNALING_PCAS2_B, action, complete);
  }
};

constexpr uint32_t kSchedule = RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_SCHEDULE;
constexpr uint32_t kInvalidatePrefetchCopySchedule =
    RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_PREFETCH_COPY_SCHEDULE;

// work.c's launch as libcuda 580 makes it on Hopper: the constant buffer (the kernel's two
// parameters at 0x210) and the QMD written into video memory by inline-to-memory, a completion
// node (a null grid that waits for two decrements) scheduled first, then the kernel's QMD,
// whose completion releases the semaphore another channel waits for and decrements the node;
// then a report-semaphore release of the compute class.
TEST(ReplayLaunch, APushbufferWithALaunchAndASemaphoreRelease) {
  Gpu g;
  Stream s;
  const uint64_t cb0 = kVidVa + 0x10000, qmd = kVidVa + 0x20000, node = kVidVa + 0x20400,
                 code = kVidVa + 0x30000, sem = kSysVa + 0x100, report = kSysVa + 0x200;
  std::vector<uint8_t> cbank(0x21c, 0);
  const uint64_t dptr = 0x7f12e5e00000;
  const uint32_t n = 262144;
  memcpy(cbank.data() + 0x210, &dptr, 8);
  memcpy(cbank.data() + 0x218, &n, 4);
  s.i2m(g, cb0, cbank.data(), static_cast<uint32_t>(cbank.size()));
  Qmd null_node;
  SET(null_node, NVCBC0_QMDV04_00_QMD_MAJOR_VERSION, 4);
  SET(null_node, NVCBC0_QMDV04_00_QMD_TYPE, RPG_NVCBC0_QMDV04_00_QMD_TYPE_GRID_NULL);
  SET(null_node, NVCBC0_QMDV04_00_DEPENDENCE_COUNTER, 2);
  s.i2m(g, node, null_node.b, RPG_NVCBC0_QMDV04_00_SIZE_BYTES);
  EXPECT_EQ(s.launch(g, node, kInvalidatePrefetchCopySchedule), FG_DONE);
  Qmd k = hopper_qmd(1024, 256, code, cb0, 0x220, sem, 6, node,
                     RPG_NVCBC0_QMDV04_00_DEPENDENT_QMD_ACTION_QMD_DECREMENT_DEPENDENCE);
  s.i2m(g, qmd, k.b, RPG_NVCBC0_QMDV04_00_SIZE_BYTES);
  EXPECT_TRUE(g.launched.empty());  // written, not yet launched
  EXPECT_EQ(s.launch(g, qmd, kInvalidatePrefetchCopySchedule), FG_DONE);
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_A, static_cast<uint32_t>(report >> 32));
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_B, static_cast<uint32_t>(report));
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_C, 0x43);
  Qmd d;  // SET_REPORT_SEMAPHORE_D: a one-word release
  d.set(RPG_NVCBC0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE_HI,
        RPG_NVCBC0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE_LO,
        RPG_NVCBC0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE_ONE_WORD);
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_D, d.words(4)[0]);
  for (int r : s.results) EXPECT_EQ(r, FG_DONE);

  ASSERT_EQ(g.launched.size(), 1u);
  const fg_launch& l = g.launched[0];
  EXPECT_EQ(l.qmd_va, qmd);
  EXPECT_EQ(l.major, 4u);
  EXPECT_EQ(l.grid[0], 1024u);
  EXPECT_EQ(l.grid[1], 1u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.registers, 16u);
  EXPECT_EQ(l.program, code);
  EXPECT_EQ(l.cb_valid, 1u);
  EXPECT_EQ(l.cb_va[0], cb0);
  EXPECT_EQ(l.cb_size[0], 0x220u);
  // The parameters as the launch saw them: through video memory, as they were written.
  ASSERT_EQ(g.cb0_seen[0].size(), 0x220u);
  EXPECT_EQ(memcmp(g.cb0_seen[0].data(), cbank.data(), cbank.size()), 0);
  EXPECT_EQ(g.sys32(sem), 6u);        // the kernel's completion
  EXPECT_EQ(g.sys32(report), 0x43u);  // the report semaphore after it
  EXPECT_EQ(g.stats.launches, 1u);
  EXPECT_EQ(g.stats.null_grids, 0u);  // the node still waits for its second decrement
  ASSERT_EQ(s.c.n_waiting, 1u);
  EXPECT_EQ(s.c.waiting[0].va, node);
  EXPECT_EQ(s.c.waiting[0].left, 1u);
  EXPECT_EQ(g.stats.releases, 2u);
  EXPECT_EQ(g.stats.i2m_bytes, 0x21cu + 2 * RPG_NVCBC0_QMDV04_00_SIZE_BYTES);
  EXPECT_EQ(g.stats.lost, 0u);
  // The second decrement runs the node (a null grid: nothing reported as a kernel).
  s.m(g, RPG_NVCBC0_SEND_PCAS_A, static_cast<uint32_t>(node >> 8));
  s.m(g, RPG_NVCBC0_SEND_SIGNALING_PCAS2_B,
      RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_DECREMENT_DEPENDENCE);
  EXPECT_EQ(g.stats.null_grids, 1u);
  EXPECT_EQ(s.c.n_waiting, 0u);
  EXPECT_EQ(g.launched.size(), 1u);
}

TEST(ReplayLaunch, ALaunchThatCannotBeCompletedStopsTheChannelAndSaysWhy) {
  Gpu g;
  // --execute stop: a GPU that never finishes compute work.
  Stream policy;
  Qmd k = hopper_qmd(1, 32, kVidVa, kVidVa + 0x100, 0x10, kSysVa, 1);
  policy.i2m(g, kVidVa + 0x1000, k.b, RPG_NVCBC0_QMDV04_00_SIZE_BYTES);
  EXPECT_EQ(policy.launch(g, kVidVa + 0x1000, kSchedule, 0), FG_STOP);
  EXPECT_EQ(policy.c.stop, static_cast<uint32_t>(FG_STOP_POLICY));
  EXPECT_EQ(policy.c.stop_qmd, kVidVa + 0x1000);
  EXPECT_EQ(g.sys32(kSysVa), 0u);
  // A QMD where no memory is.
  Stream unmapped;
  EXPECT_EQ(unmapped.launch(g, 0x123400, kSchedule), FG_STOP);
  EXPECT_EQ(unmapped.c.stop, static_cast<uint32_t>(FG_STOP_UNREADABLE));
  // A QMD of a version the replay does not read (nothing written there: version 0).
  Stream version;
  EXPECT_EQ(version.launch(g, kVidVa + 0x8000, kSchedule), FG_STOP);
  EXPECT_EQ(version.c.stop, static_cast<uint32_t>(FG_STOP_VERSION));
  EXPECT_TRUE(g.launched.empty());
  // SEND_PCAS_A alone names a QMD; it launches nothing.
  Stream named;
  EXPECT_EQ(named.m(g, RPG_NVCBC0_SEND_PCAS_A, 0x1234), FG_DONE);
  EXPECT_EQ(named.c.qmd_va, 0x123400u);
}

// Version 03_00 (Ampere, Ada, and Hopper's older form): the releases are three fields of their
// own; a dependent QMD is scheduled when the first completes.
TEST(ReplayLaunch, AVersion3QmdAndItsDependentAreCompleted) {
  Gpu g;
  Stream s(0xc6c0);
  Qmd first, second;
  for (Qmd* q : {&first, &second}) {
    SET(*q, NVCBC0_QMDV03_00_QMD_MAJOR_VERSION, 3);
    SET(*q, NVCBC0_QMDV03_00_CTA_RASTER_WIDTH, 8);
    SET(*q, NVCBC0_QMDV03_00_CTA_RASTER_HEIGHT, 2);
    SET(*q, NVCBC0_QMDV03_00_CTA_RASTER_DEPTH, 1);
    SET(*q, NVCBC0_QMDV03_00_CTA_THREAD_DIMENSION0, 64);
    SET(*q, NVCBC0_QMDV03_00_CTA_THREAD_DIMENSION1, 2);
    SET(*q, NVCBC0_QMDV03_00_CTA_THREAD_DIMENSION2, 1);
    SET(*q, NVCBC0_QMDV03_00_SHARED_MEMORY_SIZE, 0x400);
  }
  SET(first, NVCBC0_QMDV03_00_PROGRAM_ADDRESS_LOWER, 0x5000);
  SET(first, NVCBC0_QMDV03_00_PROGRAM_ADDRESS_UPPER, 0x2);
  // Release 1 (not 0): a 64-bit payload in a four-word structure (with the time after it).
  SET(first, NVCBC0_QMDV03_00_RELEASE1_ENABLE, 1);
  SET(first, NVCBC0_QMDV03_00_RELEASE1_ADDRESS_LOWER, (kSysVa + 0x40) & 0xffffffff);
  SET(first, NVCBC0_QMDV03_00_RELEASE1_ADDRESS_UPPER, (kSysVa + 0x40) >> 32);
  SET(first, NVCBC0_QMDV03_00_RELEASE1_PAYLOAD_LOWER, 0x9);
  SET(first, NVCBC0_QMDV03_00_RELEASE1_PAYLOAD_UPPER, 0x1);
  SET(first, NVCBC0_QMDV03_00_RELEASE1_PAYLOAD64B, 1);
  SET(first, NVCBC0_QMDV03_00_DEPENDENT_QMD0_ENABLE, 1);
  SET(first, NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION,
      RPG_NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_SCHEDULE);
  SET(first, NVCBC0_QMDV03_00_DEPENDENT_QMD0_POINTER, (kVidVa + 0x300) >> 8);
  // The dependent: its release 2 increments a counter (a reduction).
  SET(second, NVCBC0_QMDV03_00_RELEASE2_ENABLE, 1);
  SET(second, NVCBC0_QMDV03_00_RELEASE2_ADDRESS_LOWER, (kSysVa + 0x80) & 0xffffffff);
  SET(second, NVCBC0_QMDV03_00_RELEASE2_ADDRESS_UPPER, (kSysVa + 0x80) >> 32);
  SET(second, NVCBC0_QMDV03_00_RELEASE2_PAYLOAD_LOWER, 100);
  SET(second, NVCBC0_QMDV03_00_RELEASE2_STRUCTURE_SIZE,
      RPG_NVCBC0_QMDV03_00_RELEASE2_STRUCTURE_SIZE_SEMAPHORE_ONE_WORD);
  SET(second, NVCBC0_QMDV03_00_RELEASE2_REDUCTION_ENABLE, 1);
  SET(second, NVCBC0_QMDV03_00_RELEASE2_REDUCTION_OP,
      RPG_NVCBC0_QMDV03_00_RELEASE2_REDUCTION_OP_RED_INC);
  g.sys[0x80] = 41;
  s.i2m(g, kVidVa, first.b, RPG_NVCBC0_QMDV03_00_SIZE_BYTES);
  s.i2m(g, kVidVa + 0x300, second.b, RPG_NVCBC0_QMDV03_00_SIZE_BYTES);
  EXPECT_EQ(s.launch(g, kVidVa, kSchedule), FG_DONE);
  ASSERT_EQ(g.launched.size(), 2u);
  EXPECT_EQ(g.launched[0].major, 3u);
  EXPECT_EQ(g.launched[0].grid[0], 8u);
  EXPECT_EQ(g.launched[0].grid[1], 2u);
  EXPECT_EQ(g.launched[0].block[1], 2u);
  EXPECT_EQ(g.launched[0].shared_bytes, 0x400u);
  EXPECT_EQ(g.launched[0].program, 0x200005000u);
  EXPECT_EQ(g.launched[1].qmd_va, kVidVa + 0x300);
  uint64_t wide, stamp;
  memcpy(&wide, g.sys.data() + 0x40, 8);
  memcpy(&stamp, g.sys.data() + 0x48, 8);
  EXPECT_EQ(wide, 0x100000009u);
  EXPECT_EQ(stamp, 0x1122334455667788u);
  EXPECT_EQ(g.sys32(kSysVa + 0x80), 42u);
}

// The inline QMD of Ada and Hopper: the QMD comes in the pushbuffer, is stored at its address
// and scheduled.
TEST(ReplayLaunch, AnInlineQmdIsStoredAndLaunched) {
  Gpu g;
  Stream s;
  const uint64_t at = kVidVa + 0x4000;
  Qmd k = hopper_qmd(3, 128, kVidVa + 0x9000, kVidVa + 0x8000, 0x100, kSysVa + 0x10, 5);
  Qmd a;
  a.set(RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_A_QMD_ADDRESS_SHIFTED8_UPPER_HI,
        RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_A_QMD_ADDRESS_SHIFTED8_UPPER_LO, (at >> 8) >> 32);
  a.set(RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_A_INLINE_SIZE_HI,
        RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_A_INLINE_SIZE_LO,
        RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_A_INLINE_SIZE_INLINE_384);
  s.m(g, RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_A, a.words(4)[0]);
  s.m(g, RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_B, static_cast<uint32_t>(at >> 8));
  std::vector<uint32_t> w = k.words(RPG_NVCBC0_QMDV04_00_SIZE_BYTES);
  for (uint32_t i = 0; i < w.size(); ++i) {
    EXPECT_TRUE(g.launched.empty());
    s.m(g, RPG_NVCBC0_LOAD_INLINE_QMD_DATA(i), w[i]);
  }
  ASSERT_EQ(g.launched.size(), 1u);
  EXPECT_EQ(g.launched[0].qmd_va, at);
  EXPECT_EQ(g.launched[0].grid[0], 3u);
  EXPECT_EQ(g.sys32(kSysVa + 0x10), 5u);
  std::vector<uint8_t> stored(RPG_NVCBC0_QMDV04_00_SIZE_BYTES);
  ASSERT_EQ(vm_read(&g.vm, at, stored.data(), stored.size()), stored.size());
  EXPECT_EQ(memcmp(stored.data(), k.b, stored.size()), 0);
}

// REPORT_SEMAPHORE_EXECUTE (Ada, Hopper): a 64-bit release, and an acquire the channel waits at
// until the value is there.
TEST(ReplayLaunch, TheComputeClassReportSemaphoreReleasesAndWaits) {
  Gpu g;
  Stream s;
  const uint64_t sem = kSysVa + 0x300;
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_ADDRESS_UPPER, static_cast<uint32_t>(sem >> 32));
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_ADDRESS_LOWER, static_cast<uint32_t>(sem));
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_PAYLOAD_LOWER, 0x11);
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_PAYLOAD_UPPER, 0x22);
  Qmd rel;
  rel.set(RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION_HI,
          RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION_LO,
          RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION_RELEASE);
  rel.set(RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE_HI,
          RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE_LO,
          RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE_SEMAPHORE_TWO_WORDS);
  EXPECT_EQ(s.m(g, RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE, rel.words(4)[0]), FG_DONE);
  uint64_t v;
  memcpy(&v, g.sys.data() + 0x300, 8);
  EXPECT_EQ(v, 0x2200000011u);
  // Ampere's class has no such method at that offset: nothing happens there.
  Stream ampere(0xc6c0);
  ampere.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_ADDRESS_LOWER, static_cast<uint32_t>(kSysVa + 0x400));
  ampere.m(g, RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE, rel.words(4)[0]);
  EXPECT_EQ(g.sys32(kSysVa + 0x400), 0u);
  // An acquire of 0x7 (one word): not met, then met.
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_PAYLOAD_LOWER, 0x7);
  s.m(g, RPG_NVCBC0_SET_REPORT_SEMAPHORE_PAYLOAD_UPPER, 0);
  Qmd acq;
  acq.set(RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION_HI,
          RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION_LO,
          RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION_ACQUIRE);
  g.sys[0x300] = 6;
  EXPECT_EQ(s.m(g, RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE, acq.words(4)[0]), FG_RETRY);
  EXPECT_EQ(s.c.acq_va, sem);
  EXPECT_EQ(s.c.acq_want, 7u);
  EXPECT_EQ(s.c.acq_value, 6u);
  g.sys[0x300] = 7;
  EXPECT_EQ(s.m(g, RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE, acq.words(4)[0]), FG_DONE);
}

TEST(ReplayLaunch, ReductionsCombineThePayloadWithTheSemaphore) {
  Gpu g;
  auto run = [&](uint32_t op, uint32_t cur, uint32_t payload) {
    memcpy(g.sys.data(), &cur, 4);
    fg_sem s{kSysVa, payload, 4, 0, 1, static_cast<uint8_t>(op)};
    EXPECT_EQ(fg_sem_release(&g.mem, &s), 1);
    return g.sys32(kSysVa);
  };
  EXPECT_EQ(run(FG_RED_ADD, 5, 3), 8u);
  EXPECT_EQ(run(FG_RED_MIN, 5, 3), 3u);
  EXPECT_EQ(run(FG_RED_MAX, 5, 3), 5u);
  EXPECT_EQ(run(FG_RED_INC, 5, 9), 6u);
  EXPECT_EQ(run(FG_RED_INC, 9, 9), 0u);  // wraps past the payload
  EXPECT_EQ(run(FG_RED_DEC, 5, 9), 4u);
  EXPECT_EQ(run(FG_RED_DEC, 0, 9), 9u);  // wraps below 1
  EXPECT_EQ(run(FG_RED_AND, 6, 3), 2u);
  EXPECT_EQ(run(FG_RED_OR, 6, 3), 7u);
  EXPECT_EQ(run(FG_RED_XOR, 6, 3), 5u);
  fg_sem nowhere{0x1000, 1, 4, 0, 0, 0};
  EXPECT_EQ(fg_sem_release(&g.mem, &nowhere), 0);
}

// The copy engine's methods (Hopper's copy class, as libcuda 580 drives it for cuMemcpyHtoD,
// cuMemcpyDtoH and cuMemsetD32), carried out through the fake GPU's memory view.
struct CopyEngine {
  fg_copy c{};
  fg_copy_stats st{};
  void m(Gpu& g, uint32_t method, uint32_t value) {
    fg_copy_method(&c, &g.mem, &st, method, value);
  }
  static uint32_t dma(uint32_t transfer, uint32_t sem_type, bool multi_line, bool remap,
                      uint32_t reduction = 0, bool reduce = false) {
    return transfer << RPG_NVC8B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_LO |
           sem_type << RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_TYPE_LO |
           uint32_t{multi_line} << RPG_NVC8B5_LAUNCH_DMA_MULTI_LINE_ENABLE_LO |
           uint32_t{remap} << RPG_NVC8B5_LAUNCH_DMA_REMAP_ENABLE_LO |
           reduction << RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_LO |
           uint32_t{reduce} << RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_ENABLE_LO;
  }
  // One line of `bytes` from src to dst, then a one-word release of `payload` at sem.
  void copy(Gpu& g, uint64_t dst, uint64_t src, uint32_t bytes, uint64_t sem, uint32_t payload) {
    m(g, RPG_NVC8B5_OFFSET_IN_UPPER, static_cast<uint32_t>(src >> 32));
    m(g, RPG_NVC8B5_OFFSET_IN_LOWER, static_cast<uint32_t>(src));
    m(g, RPG_NVC8B5_OFFSET_OUT_UPPER, static_cast<uint32_t>(dst >> 32));
    m(g, RPG_NVC8B5_OFFSET_OUT_LOWER, static_cast<uint32_t>(dst));
    m(g, RPG_NVC8B5_LINE_LENGTH_IN, bytes);
    m(g, RPG_NVC8B5_SET_SEMAPHORE_A, static_cast<uint32_t>(sem >> 32));
    m(g, RPG_NVC8B5_SET_SEMAPHORE_B, static_cast<uint32_t>(sem));
    m(g, RPG_NVC8B5_SET_SEMAPHORE_PAYLOAD, payload);
    m(g, RPG_NVC8B5_LAUNCH_DMA,
      dma(2, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE, false, false));
  }
};

// A host-to-device copy followed by a device-to-host copy returns what was sent: from system
// memory into video memory (at an odd offset, across the backing's chunks) and back elsewhere;
// each copy's semaphore is released after it.
TEST(ReplayCopyEngine, AHostToDeviceCopyAndBackReturnsWhatWasSent) {
  Gpu g;
  CopyEngine ce;
  const uint32_t n = 300 * 1024 + 5;
  const uint64_t host = kSysVa + 0x1000, back = kSysVa + 0x80000, dev = kVidVa + VM_CHUNK - 3,
                 sem = kSysVa + 0x100;
  for (uint32_t i = 0; i < n; ++i) g.sys[0x1000 + i] = static_cast<uint8_t>(i * 13 + (i >> 9));
  ce.copy(g, dev, host, n, sem, 1);
  EXPECT_EQ(g.sys32(sem), 1u);
  EXPECT_EQ(g.vm.chunks, 6u);  // 300 KiB + 5 bytes from 3 bytes before a chunk's end
  ce.copy(g, back, dev, n, sem, 2);
  EXPECT_EQ(g.sys32(sem), 2u);
  EXPECT_EQ(memcmp(g.sys.data() + 0x80000, g.sys.data() + 0x1000, n), 0);
  EXPECT_EQ(ce.st.copies, 2u);
  EXPECT_EQ(ce.st.bytes, 2ull * n);
  EXPECT_EQ(ce.st.short_bytes, 0u);
  EXPECT_EQ(ce.st.releases, 2u);
  // From memory the replay cannot see: nothing copied, counted; the release still comes.
  ce.copy(g, dev, 0x1000, 64, sem, 3);
  EXPECT_EQ(ce.st.short_bytes, 64u);
  EXPECT_EQ(g.sys32(sem), 3u);
}

// A fill (remap of CONST_A, 4-byte components) into video memory reads back as the pattern; a
// pitched copy of several lines moves each line; INC reductions wrap past the payload.
TEST(ReplayCopyEngine, FillsPitchedLinesAndReductions) {
  Gpu g;
  CopyEngine ce;
  const uint64_t dev = kVidVa + 0x100000, sem = kSysVa + 0x200;
  ce.m(g, RPG_NVC8B5_OFFSET_OUT_UPPER, static_cast<uint32_t>(dev >> 32));
  ce.m(g, RPG_NVC8B5_OFFSET_OUT_LOWER, static_cast<uint32_t>(dev));
  ce.m(g, RPG_NVC8B5_SET_REMAP_CONST_A, 0xdeadbeef);
  ce.m(g, RPG_NVC8B5_SET_REMAP_COMPONENTS,
       RPG_NVC8B5_SET_REMAP_COMPONENTS_DST_X_CONST_A |
           3u << RPG_NVC8B5_SET_REMAP_COMPONENTS_COMPONENT_SIZE_LO);  // 4 bytes, 1 component
  ce.m(g, RPG_NVC8B5_LINE_LENGTH_IN, 1000);                           // components
  ce.m(g, RPG_NVC8B5_LAUNCH_DMA, CopyEngine::dma(2, 0, false, true));
  EXPECT_EQ(ce.st.fills, 1u);
  std::vector<uint32_t> words(1001);
  ASSERT_EQ(vm_read(&g.vm, dev, words.data(), 4004), 4004u);
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(words[i], 0xdeadbeefu) << i;
  EXPECT_EQ(words[1000], 0u);  // no further
  // Four lines of 100 bytes, 256 apart in the source and 128 apart in the destination.
  for (uint32_t i = 0; i < 1024; ++i) g.sys[0x4000 + i] = static_cast<uint8_t>(i);
  ce.m(g, RPG_NVC8B5_OFFSET_IN_UPPER, static_cast<uint32_t>((kSysVa + 0x4000) >> 32));
  ce.m(g, RPG_NVC8B5_OFFSET_IN_LOWER, static_cast<uint32_t>(kSysVa + 0x4000));
  ce.m(g, RPG_NVC8B5_OFFSET_OUT_LOWER, static_cast<uint32_t>(kSysVa + 0x8000));
  ce.m(g, RPG_NVC8B5_OFFSET_OUT_UPPER, static_cast<uint32_t>((kSysVa + 0x8000) >> 32));
  ce.m(g, RPG_NVC6B5_PITCH_IN, 256);
  ce.m(g, RPG_NVC6B5_PITCH_OUT, 128);
  ce.m(g, RPG_NVC8B5_LINE_LENGTH_IN, 100);
  ce.m(g, RPG_NVC6B5_LINE_COUNT, 4);
  ce.m(g, RPG_NVC8B5_LAUNCH_DMA, CopyEngine::dma(2, 0, true, false));
  for (uint32_t l = 0; l < 4; ++l) {
    EXPECT_EQ(memcmp(g.sys.data() + 0x8000 + 128 * l, g.sys.data() + 0x4000 + 256 * l, 100), 0);
    EXPECT_EQ(g.sys[0x8000 + 128 * l + 100], 0);  // the rest of each pitch is left alone
  }
  EXPECT_EQ(ce.st.bytes, 4000u + 400u);
  // A semaphore alone (no transfer), incremented: 0, 1, 2, then back to 0 past the payload 2.
  ce.m(g, RPG_NVC8B5_SET_SEMAPHORE_A, static_cast<uint32_t>(sem >> 32));
  ce.m(g, RPG_NVC8B5_SET_SEMAPHORE_B, static_cast<uint32_t>(sem));
  ce.m(g, RPG_NVC8B5_SET_SEMAPHORE_PAYLOAD, 2);
  const uint32_t inc =
      CopyEngine::dma(0, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE, false,
                      false, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_INC, true);
  std::vector<uint32_t> seen;
  for (int i = 0; i < 3; ++i) {
    ce.m(g, RPG_NVC8B5_LAUNCH_DMA, inc);
    seen.push_back(g.sys32(sem));
  }
  EXPECT_EQ(seen, (std::vector<uint32_t>{1, 2, 0}));
  EXPECT_EQ(ce.st.copies, 1u);  // the semaphore-only launches moved nothing
}

// A host-to-device copy followed by a device-to-host copy returns what was sent: across chunk
// boundaries, at an odd offset; what was never written reads as zeros and costs nothing.
TEST(ReplayVidmem, WhatIsWrittenIsReadBack) {
  Gpu g;
  std::vector<uint8_t> sent(1 << 20);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint8_t>(i * 7 + (i >> 12));
  const uint64_t at = kVidVa + VM_CHUNK - 3;
  EXPECT_EQ(vm_write(&g.vm, at, sent.data(), sent.size()), sent.size());
  std::vector<uint8_t> back(sent.size());
  EXPECT_EQ(vm_read(&g.vm, at, back.data(), back.size()), back.size());
  EXPECT_EQ(back, sent);
  EXPECT_EQ(g.vm.chunks, 17u);  // 1 MiB + 3 bytes over 64 KiB chunks, the first one partly
  EXPECT_EQ(g.chunks_alive, 17);
  std::vector<uint8_t> zeros(4096, 0xee);
  EXPECT_EQ(vm_read(&g.vm, kVidVa + (32ull << 20), zeros.data(), zeros.size()), zeros.size());
  EXPECT_EQ(zeros, std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(g.vm.chunks, 17u);  // reading made nothing
  // Outside every range: nothing read or written.
  EXPECT_EQ(vm_write(&g.vm, kVidVa + kVidLen - 2, sent.data(), 4), 0u);
  EXPECT_EQ(vm_read(&g.vm, 0x1000, back.data(), 4), 0u);
  EXPECT_FALSE(vm_covers(&g.vm, kVidVa - 1, 2));
  // A semaphore in place: a pointer into one chunk, none across two.
  uint8_t* p = vm_span(&g.vm, kVidVa + 0x100, 8, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(vm_span(&g.vm, kVidVa + VM_CHUNK - 4, 8, 1), nullptr);
  // The range freed: its chunks go back.
  vm_remove(&g.vm, kVidVa, kVidLen);
  EXPECT_EQ(g.vm.chunks, 0u);
  EXPECT_EQ(g.chunks_alive, 0);
  EXPECT_EQ(vm_read(&g.vm, at, back.data(), 4), 0u);
}

// Clearing memory never written makes no backing (libcuda 580 clears tens of MiB of video memory
// it never uses during context creation): zeros bound for a chunk that does not exist are taken
// as written; a chunk that exists is cleared.
TEST(ReplayVidmem, ZerosMakeNoBacking) {
  Gpu g;
  std::vector<uint8_t> zeros(3 * VM_CHUNK, 0);
  EXPECT_EQ(vm_write(&g.vm, kVidVa, zeros.data(), zeros.size()), zeros.size());
  EXPECT_EQ(g.vm.chunks, 0u);
  uint8_t one = 0x77;
  EXPECT_EQ(vm_write(&g.vm, kVidVa + VM_CHUNK + 5, &one, 1), 1u);
  EXPECT_EQ(g.vm.chunks, 1u);
  EXPECT_EQ(vm_write(&g.vm, kVidVa, zeros.data(), zeros.size()), zeros.size());
  EXPECT_EQ(g.vm.chunks, 1u);
  uint8_t back = 0xee;
  EXPECT_EQ(vm_read(&g.vm, kVidVa + VM_CHUNK + 5, &back, 1), 1u);
  EXPECT_EQ(back, 0);  // the existing chunk was cleared
  EXPECT_EQ(g.vm.dropped_writes, 0u);
}

TEST(ReplayVidmem, PastTheCapWritesAreDroppedAndCounted) {
  Gpu g(4 * VM_CHUNK);
  std::vector<uint8_t> data(6 * VM_CHUNK, 0x5a);
  EXPECT_EQ(vm_write(&g.vm, kVidVa, data.data(), data.size()), 4 * VM_CHUNK);
  EXPECT_EQ(g.vm.chunks, 4u);
  EXPECT_EQ(g.vm.dropped_bytes, 2 * VM_CHUNK);
  EXPECT_EQ(g.vm.dropped_writes, 1u);
  EXPECT_EQ(vm_backed_bytes(&g.vm), 4 * VM_CHUNK);
  // What was kept reads back; what was dropped reads as zeros.
  uint8_t b[2];
  vm_read(&g.vm, kVidVa + 4 * VM_CHUNK - 1, b, 2);
  EXPECT_EQ(b[0], 0x5a);
  EXPECT_EQ(b[1], 0);
  EXPECT_EQ(vm_span(&g.vm, kVidVa + 5 * VM_CHUNK, 4, 1), nullptr);
  EXPECT_EQ(g.vm.dropped_writes, 2u);
}

}  // namespace
