// The call-semantics rows (rm/call_semantics.hpp). Facts from NVIDIA's headers: nvos.h (the
// NVOS* structures of the RM escapes and what each call does), nv-ioctl.h and
// nv-unix-nvos-params-wrappers.h (the frontend escapes and the *_with_fd wrappers), uvm_ioctl.h
// (the UVM calls), cl0000.h / cl0001.h / cl0041.h (clients), clXX6f.h and alloc_channel.h
// (channels), ctrl0000system.h (the build version).
//
// To add one: a new escape or UVM call of a generated branch fails
// tests/unit/call_semantics_test.cpp (EveryCallOfEveryBranchHasARowThatFitsItsLayouts) until it has
// a row here — or, when no branch gives it a layout, an entry of kDefaultCalls with the reason.
// Name its members as the branch's structure does (the test checks each exists, with the size
// and display kind its role needs, and that every handle, status and fd member of the structure
// is named), in member order; set `does` from what the header says the call does. A new mapping
// call needs a layout slot in the fake GPU (record/shim_abi/replay_abi.h rp_gpu_layout) before it
// can get a kCallMaps* bit: the test allows one row per mapping kind.
#include "rm/call_semantics.hpp"

#include <vector>

namespace cudatool::rm {
namespace {

using H = HandleKind;
constexpr CallSpace kEsc = CallSpace::kEscape;
constexpr CallSpace kUvm = CallSpace::kUvm;

// A UVM call whose only member of note is its rmStatus.
constexpr CallRow uvm(std::string_view name, std::string_view what, uint32_t does = 0) {
  return CallRow{.space = kUvm, .name = name, .does = does, .status = "rmStatus", .what = what};
}

// clang-format off
constexpr CallRow kCallRows[] = {
    // --- RM escapes (nv_escape.h; arguments: nvos.h, nv-unix-nvos-params-wrappers.h) ----------
    {.space = kEsc, .name = "NV_ESC_RM_ALLOC_MEMORY", .does = kCallCreates, .within = "params",
     .handles = {{{"hRoot", H::kClient}, {"hObjectParent", H::kParent},
                  {"hObjectNew", H::kNewObject}}},
     .status = "status", .cls = "hClass", .fd = "fd",
     .what = "allocates memory of a class (NVOS02) and names it hObjectNew"},
    {.space = kEsc, .name = "NV_ESC_RM_ALLOC_OBJECT", .does = kCallCreates,
     .handles = {{{"hRoot", H::kClient}, {"hObjectParent", H::kParent},
                  {"hObjectNew", H::kNewObject}}},
     .status = "status", .cls = "hClass",
     .what = "allocates an object of a class without parameters (NVOS05)"},
    {.space = kEsc, .name = "NV_ESC_RM_FREE", .does = kCallFrees | kCallFreeLike,
     .handles = {{{"hRoot", H::kClient}, {"hObjectParent", H::kParent},
                  {"hObjectOld", H::kOldObject}}},
     .status = "status",
     .what = "frees an object and every object below it (NVOS00)"},
    {.space = kEsc, .name = "NV_ESC_RM_CONTROL", .does = kCallControl,
     .decoder = CallDecoder::kControl,
     .handles = {{{"hClient", H::kClient}, {"hObject", H::kObject}}},
     .status = "status", .control = "cmd",
     .what = "runs a control command on an object, with the command's parameters (NVOS54)"},
    {.space = kEsc, .name = "NV_ESC_RM_ALLOC", .does = kCallCreates | kCallAlloc,
     .decoder = CallDecoder::kAlloc,
     .handles = {{{"hRoot", H::kClient}, {"hObjectParent", H::kParent},
                  {"hObjectNew", H::kNewObject}}},
     .status = "status", .cls = "hClass",
     .what = "allocates an object of a class with its allocation parameters (NVOS21, NVOS64)"},
    {.space = kEsc, .name = "NV_ESC_RM_DUP_OBJECT", .does = kCallCreates,
     .handles = {{{"hClient", H::kClient}, {"hParent", H::kParent}, {"hObject", H::kNewObject},
                  {"hClientSrc", H::kSourceClient}, {"hObjectSrc", H::kSourceObject}}},
     .status = "status",
     .what = "gives an existing object (of any client) a new handle under hParent (NVOS55)"},
    {.space = kEsc, .name = "NV_ESC_RM_SHARE",
     .handles = {{{"hClient", H::kClient}, {"hObject", H::kObject}}},
     .status = "status",
     .what = "sets who else may use an object (NVOS57, an RS_SHARE_POLICY)"},
    {.space = kEsc, .name = "NV_ESC_RM_I2C_ACCESS",
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}}},
     .status = "status",
     .what = "reads or writes an I2C port of the device (NVOS_I2C_ACCESS_PARAMS)"},
    {.space = kEsc, .name = "NV_ESC_RM_IDLE_CHANNELS",
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}, {"hChannel", H::kChannel}}},
     .status = "status",
     .what = "waits until channels are idle (NVOS30)"},
    {.space = kEsc, .name = "NV_ESC_RM_VID_HEAP_CONTROL",
     .handles = {{{"hRoot", H::kClient}, {"hObjectParent", H::kParent},
                  {"hVASpace", H::kVaSpace}}},
     .status = "status",
     .what = "the legacy video-heap API: allocates, frees or describes video memory (NVOS32)"},
    {.space = kEsc, .name = "NV_ESC_RM_ACCESS_REGISTRY",
     .handles = {{{"hClient", H::kClient}, {"hObject", H::kObject}}},
     .status = "status",
     .what = "reads or writes a driver registry key (NVOS38)"},
    {.space = kEsc, .name = "NV_ESC_RM_MAP_MEMORY", .does = kCallMapsCpu, .within = "params",
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}, {"hMemory", H::kMemory}}},
     .status = "status", .fd = "fd",
     .map = {.memory = "hMemory", .offset = "offset", .length = "length",
             .address = "pLinearAddress"},
     .what = "maps a memory object for the CPU (NVOS33): an mmap of fd follows"},
    {.space = kEsc, .name = "NV_ESC_RM_UNMAP_MEMORY", .does = kCallFreeLike,
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}, {"hMemory", H::kMemory}}},
     .status = "status",
     .what = "undoes NV_ESC_RM_MAP_MEMORY (NVOS34)"},
    {.space = kEsc, .name = "NV_ESC_RM_GET_EVENT_DATA", .status = "status",
     .what = "reads the data of a notified event (NVOS41)"},
    // Creates a context DMA object (hObjectNew); ab and replay do not follow it as a creation
    // (no recorded program has used it), so no kCallCreates.
    {.space = kEsc, .name = "NV_ESC_RM_ALLOC_CONTEXT_DMA2",
     .handles = {{{"hObjectParent", H::kParent}, {"hSubDevice", H::kSubdevice},
                  {"hObjectNew", H::kNewObject}, {"hMemory", H::kMemory}}},
     .status = "status", .cls = "hClass",
     .what = "makes a context DMA object over a memory object (NVOS39)"},
    {.space = kEsc, .name = "NV_ESC_RM_MAP_MEMORY_DMA", .does = kCallMapsGpu,
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}, {"hDma", H::kVaSpace},
                  {"hMemory", H::kMemory}}},
     .status = "status",
     .map = {.memory = "hMemory", .offset = "offset", .length = "length",
             .address = "dmaOffset"},
     .what = "maps a memory object into a GPU virtual address space (NVOS46)"},
    {.space = kEsc, .name = "NV_ESC_RM_UNMAP_MEMORY_DMA", .does = kCallFreeLike,
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}, {"hDma", H::kVaSpace},
                  {"hMemory", H::kMemory}}},
     .status = "status",
     .what = "undoes NV_ESC_RM_MAP_MEMORY_DMA (NVOS47)"},
    {.space = kEsc, .name = "NV_ESC_RM_BIND_CONTEXT_DMA",
     .handles = {{{"hClient", H::kClient}, {"hChannel", H::kChannel},
                  {"hCtxDma", H::kContextDma}}},
     .status = "status",
     .what = "binds a context DMA object to a channel (NVOS49)"},
    {.space = kEsc, .name = "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO",
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}, {"hMemory", H::kMemory}}},
     .status = "status",
     .what = "moves a CPU mapping of a memory object to another address (NVOS56)"},
    {.space = kEsc, .name = "NV_ESC_RM_LOCKLESS_DIAGNOSTIC", .status = "status",
     .what = "lock-free diagnostic queries (NV_LOCKLESS_DIAGNOSTIC_PARAMS)"},
    // --- frontend escapes (nv-ioctl-numbers.h; arguments: nv-ioctl.h) -------------------------
    {.space = kEsc, .name = "NV_ESC_CARD_INFO", .decoder = CallDecoder::kArray,
     .what = "describes every GPU slot: PCI address and ids, minor number (an array)"},
    {.space = kEsc, .name = "NV_ESC_REGISTER_FD", .fd = "ctl_fd",
     .what = "ties a GPU fd to the nvidiactl fd ctl_fd"},
    {.space = kEsc, .name = "NV_ESC_ALLOC_OS_EVENT",
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}}},
     .status = "Status", .fd = "fd",
     .what = "makes an OS event on fd that RM notifications signal"},
    {.space = kEsc, .name = "NV_ESC_FREE_OS_EVENT", .does = kCallFreeLike,
     .handles = {{{"hClient", H::kClient}, {"hDevice", H::kDevice}}},
     .status = "Status", .fd = "fd",
     .what = "undoes NV_ESC_ALLOC_OS_EVENT"},
    {.space = kEsc, .name = "NV_ESC_STATUS_CODE", .status = "status",
     .what = "the status code of the GPU at a PCI address"},
    {.space = kEsc, .name = "NV_ESC_CHECK_VERSION_STR",
     .what = "checks the caller's driver version string against the kernel module's"},
    {.space = kEsc, .name = "NV_ESC_IOCTL_XFER_CMD", .does = kCallWraps,
     .decoder = CallDecoder::kXfer,
     .what = "runs escape cmd with an argument of `size` bytes at ptr (for arguments over the "
             "ioctl size limit)"},
    {.space = kEsc, .name = "NV_ESC_ATTACH_GPUS_TO_FD", .decoder = CallDecoder::kArray,
     .what = "attaches GPUs (an array of ids) to the fd"},
    {.space = kEsc, .name = "NV_ESC_QUERY_DEVICE_INTR", .status = "status",
     .what = "whether the device has a pending interrupt"},
    {.space = kEsc, .name = "NV_ESC_SYS_PARAMS",
     .what = "tells the kernel module the memory block size"},
    // `status` is NV_IOCTL_NUMA_STATUS_*, not an NV_STATUS (nv-ioctl-numa.h).
    {.space = kEsc, .name = "NV_ESC_NUMA_INFO",
     .what = "the GPU's NUMA node and memory state"},
    {.space = kEsc, .name = "NV_ESC_SET_NUMA_STATUS",
     .what = "sets the GPU's NUMA memory state (NV_IOCTL_NUMA_STATUS_*)"},
    {.space = kEsc, .name = "NV_ESC_EXPORT_TO_DMABUF_FD",
     .handles = {{{"hClient", H::kClient}}}, .status = "status", .fd = "fd",
     .what = "exports memory objects as a dma-buf, whose fd it returns"},
    {.space = kEsc, .name = "NV_ESC_WAIT_OPEN_COMPLETE", .status = "adapterStatus",
     .what = "waits for the GPU's open to finish (adapterStatus: its NV_STATUS)"},
    // --- UVM (uvm_ioctl.h) ---------------------------------------------------------------------
    {.space = kUvm, .name = "UVM_DEINITIALIZE", .does = kCallFreeLike,
     .what = "ends the process's UVM session (no parameters)"},
    uvm("UVM_INITIALIZE", "starts the process's UVM session (flags)"),
    {.space = kUvm, .name = "UVM_MM_INITIALIZE", .status = "rmStatus", .fd = "uvmFd",
     .what = "ties a second UVM fd (uvmFd) to the session's address space"},
    uvm("UVM_RESERVE_VA", "reserves a virtual address range"),
    uvm("UVM_RELEASE_VA", "releases a reserved range"),
    uvm("UVM_REGION_COMMIT", "commits a region of reserved memory"),
    uvm("UVM_REGION_DECOMMIT", "decommits a region"),
    uvm("UVM_REGION_SET_STREAM", "associates a region with a stream"),
    uvm("UVM_SET_STREAM_RUNNING", "marks a stream running"),
    uvm("UVM_SET_STREAM_STOPPED", "marks streams stopped"),
    uvm("UVM_RUN_TEST", "runs a kernel-module self test"),
    uvm("UVM_ADD_SESSION", "adds a tools session over another process"),
    uvm("UVM_REMOVE_SESSION", "removes a tools session"),
    uvm("UVM_ENABLE_COUNTERS", "enables counters of a session"),
    uvm("UVM_MAP_COUNTER", "maps a session's counters"),
    uvm("UVM_CREATE_EVENT_QUEUE", "creates an event queue of a session"),
    uvm("UVM_REMOVE_EVENT_QUEUE", "removes an event queue"),
    uvm("UVM_MAP_EVENT_QUEUE", "maps an event queue"),
    uvm("UVM_EVENT_CTRL", "enables or disables events of a queue"),
    uvm("UVM_REGISTER_MPS_SERVER", "registers an MPS server's GPUs"),
    uvm("UVM_REGISTER_MPS_CLIENT", "registers an MPS client"),
    uvm("UVM_GET_GPU_UUID_TABLE", "the UUIDs of the registered GPUs"),
    uvm("UVM_CREATE_RANGE_GROUP", "creates a range group"),
    uvm("UVM_DESTROY_RANGE_GROUP", "destroys a range group", kCallFreeLike),
    {.space = kUvm, .name = "UVM_REGISTER_GPU_VASPACE",
     .handles = {{{"hClient", H::kClient}, {"hVaSpace", H::kVaSpace}}},
     .status = "rmStatus", .fd = "rmCtrlFd",
     .what = "registers an RM VA space (hVaSpace of client hClient on rmCtrlFd) with UVM"},
    uvm("UVM_UNREGISTER_GPU_VASPACE", "undoes UVM_REGISTER_GPU_VASPACE", kCallFreeLike),
    {.space = kUvm, .name = "UVM_REGISTER_CHANNEL",
     .handles = {{{"hClient", H::kClient}, {"hChannel", H::kChannel}}},
     .status = "rmStatus", .fd = "rmCtrlFd",
     .what = "registers an RM channel with UVM, for its faults"},
    {.space = kUvm, .name = "UVM_UNREGISTER_CHANNEL", .does = kCallFreeLike,
     .handles = {{{"hClient", H::kClient}, {"hChannel", H::kChannel}}},
     .status = "rmStatus",
     .what = "undoes UVM_REGISTER_CHANNEL"},
    uvm("UVM_ENABLE_PEER_ACCESS", "enables peer access between two GPUs"),
    uvm("UVM_DISABLE_PEER_ACCESS", "disables it"),
    uvm("UVM_SET_RANGE_GROUP", "puts a range into a range group"),
    {.space = kUvm, .name = "UVM_MAP_EXTERNAL_ALLOCATION", .does = kCallMapsExternal,
     .handles = {{{"hClient", H::kClient}, {"hMemory", H::kMemory}}},
     .status = "rmStatus", .fd = "rmCtrlFd",
     .map = {.memory = "hMemory", .offset = "offset", .length = "length", .address = "base"},
     .what = "maps an RM memory object (hMemory of hClient) at base in UVM's address space"},
    uvm("UVM_FREE", "frees a UVM range", kCallFreeLike),
    uvm("UVM_MEM_MAP", "makes a range UVM-managed"),
    {.space = kUvm, .name = "UVM_REGISTER_GPU",
     .handles = {{{"hClient", H::kClient}, {"hSmcPartRef", H::kPartition}}},
     .status = "rmStatus", .fd = "rmCtrlFd",
     .what = "registers a GPU (by UUID; a partition by hSmcPartRef) with the session"},
    uvm("UVM_UNREGISTER_GPU", "undoes UVM_REGISTER_GPU", kCallFreeLike),
    uvm("UVM_PAGEABLE_MEM_ACCESS", "whether GPUs can access pageable memory"),
    uvm("UVM_PREVENT_MIGRATION_RANGE_GROUPS", "pins range groups"),
    uvm("UVM_ALLOW_MIGRATION_RANGE_GROUPS", "unpins range groups"),
    uvm("UVM_SET_PREFERRED_LOCATION", "sets a range's preferred location"),
    uvm("UVM_UNSET_PREFERRED_LOCATION", "clears it"),
    uvm("UVM_ENABLE_READ_DUPLICATION", "enables read duplication of a range"),
    uvm("UVM_DISABLE_READ_DUPLICATION", "disables it"),
    uvm("UVM_SET_ACCESSED_BY", "maps a range for a processor"),
    uvm("UVM_UNSET_ACCESSED_BY", "clears it"),
    uvm("UVM_MIGRATE", "migrates a range"),
    uvm("UVM_MIGRATE_RANGE_GROUP", "migrates a range group"),
    uvm("UVM_ENABLE_SYSTEM_WIDE_ATOMICS", "enables system-wide atomics on a GPU"),
    uvm("UVM_DISABLE_SYSTEM_WIDE_ATOMICS", "disables them"),
    {.space = kUvm, .name = "UVM_TOOLS_INIT_EVENT_TRACKER", .status = "rmStatus",
     .fd = "uvmFd", .what = "makes a tools fd an event tracker of the session on uvmFd"},
    uvm("UVM_TOOLS_SET_NOTIFICATION_THRESHOLD", "sets a tracker's notification threshold"),
    uvm("UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS", "enables events of a tracker"),
    uvm("UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS", "disables them"),
    uvm("UVM_TOOLS_ENABLE_COUNTERS", "enables counters of a tracker"),
    uvm("UVM_TOOLS_DISABLE_COUNTERS", "disables them"),
    uvm("UVM_TOOLS_READ_PROCESS_MEMORY", "reads memory of the tracked process"),
    uvm("UVM_TOOLS_WRITE_PROCESS_MEMORY", "writes memory of the tracked process"),
    uvm("UVM_TOOLS_GET_PROCESSOR_UUID_TABLE", "the UUIDs of the tracked processors"),
    uvm("UVM_MAP_DYNAMIC_PARALLELISM_REGION", "maps the region for device-side launches"),
    uvm("UVM_UNMAP_EXTERNAL", "undoes UVM_MAP_EXTERNAL_ALLOCATION on a GPU", kCallFreeLike),
    uvm("UVM_TOOLS_FLUSH_EVENTS", "flushes a tracker's events"),
    uvm("UVM_ALLOC_SEMAPHORE_POOL", "allocates a semaphore pool"),
    uvm("UVM_CLEAN_UP_ZOMBIE_RESOURCES", "frees what exited processes left"),
    uvm("UVM_PAGEABLE_MEM_ACCESS_ON_GPU", "whether one GPU can access pageable memory"),
    uvm("UVM_POPULATE_PAGEABLE", "populates pageable memory"),
    uvm("UVM_VALIDATE_VA_RANGE", "checks a VA range"),
    uvm("UVM_CREATE_EXTERNAL_RANGE", "creates a range for external mappings"),
    uvm("UVM_MAP_EXTERNAL_SPARSE", "maps a sparse (unbacked) external range"),
    {.space = kUvm, .name = "UVM_TOOLS_INIT_EVENT_TRACKER_V2", .status = "rmStatus",
     .fd = "uvmFd", .what = "UVM_TOOLS_INIT_EVENT_TRACKER, second version"},
    uvm("UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2",
        "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE, second version"),
    {.space = kUvm, .name = "UVM_ALLOC_DEVICE_P2P",
     .handles = {{{"hClient", H::kClient}, {"hMemory", H::kMemory}}},
     .status = "rmStatus", .fd = "rmCtrlFd",
     .what = "makes an RM memory object available for peer-to-peer DMA"},
    uvm("UVM_CLEAR_ALL_ACCESS_COUNTERS", "clears access counters"),
    uvm("UVM_DISCARD", "discards the contents of a range"),
    uvm("UVM_IS_8_SUPPORTED", "whether the UVM 8 interface is supported"),
    uvm("UVM_DEBUG_ACCESS_MEMORY", "a debugger's read or write of process memory"),
};

constexpr DefaultCall kDefaultCalls[] = {
    {kEsc, "NV_ESC_RM_CONFIG_GET", "the release's handler names no argument structure"},
    {kEsc, "NV_ESC_RM_CONFIG_SET", "the release's handler names no argument structure"},
    {kEsc, "NV_ESC_RM_CONFIG_GET_EX", "the release's handler names no argument structure"},
    {kEsc, "NV_ESC_RM_CONFIG_SET_EX", "the release's handler names no argument structure"},
    {kEsc, "NV_ESC_RM_ADD_VBLANK_CALLBACK", "the release's handler names no argument structure"},
    {kEsc, "NV_ESC_RM_EXPORT_OBJECT_TO_FD", "the release's handler names no argument structure"},
    {kEsc, "NV_ESC_RM_IMPORT_OBJECT_FROM_FD",
     "the release's handler names no argument structure"},
    {kEsc, "NV_ESC_RM_NVLOG_CTRL", "the release's handler names no argument structure"},
    {kUvm, "UVM_REGION_SET_BACKING", "Windows only: no layout on Linux (uvm_ioctl.h)"},
    {kUvm, "UVM_REGION_UNSET_BACKING", "Windows only: no layout on Linux (uvm_ioctl.h)"},
};

constexpr ClassRow kClassRows[] = {
    {.name = "NV01_ROOT", .does = kClassClient, .what = "an RM client (cl0000.h)"},
    {.name = "NV01_ROOT_NON_PRIV", .does = kClassClient,
     .what = "an unprivileged RM client (cl0001.h)"},
    {.name = "NV01_ROOT_CLIENT", .does = kClassClient,
     .what = "an RM client of user space (cl0041.h)"},
    {.alloc_params = "NV_CHANNEL_ALLOC_PARAMS", .does = kClassChannel,
     .channel = {.gpfifo_offset = "gpFifoOffset", .gpfifo_entries = "gpFifoEntries",
                 .userd_memory = "hUserdMemory", .userd_offset = "userdOffset"},
     .what = "a GPFIFO channel (clXX6f.h): the fake GPU runs its pushbuffers"},
};

constexpr ControlRow kControlRows[] = {
    {"NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION", kControlDriverVersion,
     "the kernel module's version strings, which libcuda compares with its own (cuInit fails "
     "with 803 on a mismatch); replay writes them from the trace header when a trace lacks them"},
};
// clang-format on

constexpr std::string_view kHandleKindNames[] = {
#define CUDATOOL_HANDLE_KIND_NAME(e, n) n,
    CUDATOOL_HANDLE_KINDS(CUDATOOL_HANDLE_KIND_NAME)
#undef CUDATOOL_HANDLE_KIND_NAME
};

// The rows of every generated branch's escapes and UVM calls, parallel to its tables.
struct RowIndex {
  std::vector<std::vector<const CallRow*>> escapes, uvm;
  RowIndex() {
    for (const Tables& t : all_branches()) {
      auto& e = escapes.emplace_back();
      for (const EscapeEntry& x : t.escapes()) e.push_back(find_call_row(kEsc, x.name));
      auto& u = uvm.emplace_back();
      for (const UvmEntry& x : t.uvm_ioctls()) u.push_back(find_call_row(kUvm, x.name));
    }
  }
};

const RowIndex& row_index() {
  static const RowIndex index;
  return index;
}

// The branch index of `t` among the generated ones, or -1 (tables built elsewhere: tests).
int branch_index(const Tables& t) {
  auto all = all_branches();
  for (size_t i = 0; i < all.size(); ++i) {
    if (&all[i] == &t) return static_cast<int>(i);
  }
  return -1;
}

template <class Entry>
const CallRow* indexed(const Tables& t, const Entry& x, std::span<const Entry> list,
                       const std::vector<std::vector<const CallRow*>>& rows, CallSpace space) {
  int b = branch_index(t);
  if (b >= 0 && !list.empty() && &x >= list.data() && &x < list.data() + list.size()) {
    return rows[static_cast<size_t>(b)][static_cast<size_t>(&x - list.data())];
  }
  return find_call_row(space, x.name);
}

}  // namespace

std::string_view handle_kind_name(HandleKind k) {
  auto i = static_cast<size_t>(k);
  return i < std::size(kHandleKindNames) ? kHandleKindNames[i] : "?";
}

std::span<const CallRow> call_rows() {
  return kCallRows;
}
std::span<const DefaultCall> default_calls() {
  return kDefaultCalls;
}
std::span<const ClassRow> class_rows() {
  return kClassRows;
}
std::span<const ControlRow> control_rows() {
  return kControlRows;
}

const CallRow* find_call_row(CallSpace space, std::string_view name) {
  for (const CallRow& r : kCallRows) {
    if (r.space == space && r.name == name) return &r;
  }
  return nullptr;
}

const CallRow* row_of(const Tables& t, const EscapeEntry& e) {
  return indexed(t, e, t.escapes(), row_index().escapes, kEsc);
}

const CallRow* row_of(const Tables& t, const UvmEntry& u) {
  return indexed(t, u, t.uvm_ioctls(), row_index().uvm, kUvm);
}

const CallRow* row_doing(uint32_t does) {
  for (const CallRow& r : kCallRows) {
    if ((r.does & does) == does) return &r;
  }
  return nullptr;
}

uint32_t class_does(const Tables& t, uint32_t cls) {
  const ClassEntry* c = t.find_class(cls);
  if (c == nullptr) return 0;
  uint32_t does = 0;
  for (const ClassRow& r : kClassRows) {
    if ((!r.name.empty() && r.name == c->name) ||
        (!r.alloc_params.empty() && r.alloc_params == c->alloc_params)) {
      does |= r.does;
    }
  }
  return does;
}

const ClassRow* class_row_doing(uint32_t does) {
  for (const ClassRow& r : kClassRows) {
    if ((r.does & does) == does) return &r;
  }
  return nullptr;
}

const CtrlEntry* control_doing(const Tables& t, uint32_t does) {
  for (const ControlRow& r : kControlRows) {
    if ((r.does & does) != does) continue;
    for (const CtrlEntry& c : t.controls()) {
      if (c.name == r.name) return &c;
    }
  }
  return nullptr;
}

std::string_view handle_member(const CallRow& row, HandleKind kind) {
  for (const HandleMember& h : row.handles) {
    if (!h.member.empty() && h.kind == kind) return h.member;
  }
  return {};
}

CallIdentity call_identity(const CallRow& row) {
  CallIdentity id;
  id.client = handle_member(row, HandleKind::kClient);
  id.creates = (row.does & kCallCreates) != 0;
  id.frees = (row.does & kCallFrees) != 0;
  if (id.creates || id.frees) {
    id.parent = handle_member(row, HandleKind::kParent);
    id.object = handle_member(row, id.creates ? HandleKind::kNewObject : HandleKind::kOldObject);
  } else {
    id.object = handle_member(row, HandleKind::kObject);
    if (id.object.empty()) id.object = handle_member(row, HandleKind::kMemory);
  }
  return id;
}

CallLayout locate_call(const Tables& t, const CallRow* row, const StructEntry& arg) {
  CallLayout l{&arg, &arg, 0};
  if (row == nullptr || row->within.empty()) return l;
  if (const FieldEntry* f = t.find_field(arg, row->within)) {
    if (const StructEntry* inner = t.find_struct(f->type); inner != nullptr && inner->size > 0) {
      l.rm = inner;
      l.rm_base = f->offset;
    }
  }
  return l;
}

const FieldEntry* rm_member(const Tables& t, const CallLayout& l, std::string_view name) {
  if (l.rm == nullptr || name.empty()) return nullptr;
  return t.find_field(*l.rm, name);
}

}  // namespace cudatool::rm
