// What each call of the NVIDIA kernel ABI does, one row per call: one per escape (NV_ESC_*) and
// per UVM ioctl, and a few for the RM classes and controls that carry meaning of their own. A row
// says whether the call creates, frees or undoes something, what it maps (CPU memory, GPU memory,
// an external allocation), which members hold the RM handles and of which kind, the fd, the
// NV_STATUS, the class and control command, and which decoder reads it.
//
// The generated tables (rm/tables.hpp) say how a call is laid out in each branch; this table says
// what it means, for every branch at once (members are named, never placed). Decode
// (trace/decode.cpp), ab's normalisation (ab/normalize_ioctl.cpp), replay's answer layouts and the
// flags its shim and fake GPU read (replay/answer_layouts.cpp) and `abi` read these rows instead
// of knowing calls by name. tests/unit/call_semantics_test.cpp holds every row against every
// branch's layouts, gVisor-style: every escape and UVM call of every branch has a row or is on the
// default list with a reason, and every member a row names exists with a plausible size and kind.
// docs/call-semantics.md says what a row holds and who reads it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "rm/tables.hpp"

namespace cudatool::rm {

enum class CallSpace : uint8_t {
  kEscape,  // an 'F' ioctl on /dev/nvidiactl or /dev/nvidiaN: NV_ESC_* (nv-ioctl-numbers.h,
            // nv_escape.h)
  kUvm,     // an ioctl on /dev/nvidia-uvm: UVM_* (uvm_ioctl.h)
};

// CallRow::does: what the call does (bits).
inline constexpr uint32_t kCallCreates = 1u << 0;   // creates the RM object its kNewObject member
                                                    // names, under its kParent member
inline constexpr uint32_t kCallFrees = 1u << 1;     // frees the object its kOldObject member names
                                                    // (and, RM-side, every object below it)
inline constexpr uint32_t kCallFreeLike = 1u << 2;  // undoes something (frees, unmaps,
                                                    // unregisters): replay lets an unrecorded one
                                                    // succeed
inline constexpr uint32_t kCallMapsCpu = 1u << 3;   // maps memory for the CPU: an mmap of `fd`
                                                    // follows (`map` names the range)
inline constexpr uint32_t kCallMapsGpu = 1u << 4;   // maps memory into a GPU virtual address
                                                    // space (DMA; `map` names the range)
inline constexpr uint32_t kCallMapsExternal = 1u << 5;  // maps an RM allocation into UVM's
                                                        // address space (`map` names the range)
inline constexpr uint32_t kCallControl = 1u << 6;  // an RM control: its parameters are those of
                                                   // the command in `control`
inline constexpr uint32_t kCallAlloc = 1u << 7;    // an RM alloc: its parameters are the
                                                   // allocation parameters of the class in `cls`
inline constexpr uint32_t kCallWraps = 1u << 8;    // wraps another escape (NV_ESC_IOCTL_XFER_CMD):
                                                   // the wrapped escape's row describes the call

// The decoder of a call (trace/decode.cpp dispatches on it).
enum class CallDecoder : uint8_t {
  kStruct,   // the argument by its layout (the hex of the request's size without one)
  kControl,  // + the command's parameter structure (the "params" buffer) and pointer members
  kAlloc,    // + the class's allocation parameters (the "params" buffer) and pointer members
  kArray,    // the argument is an array of the escape's structure (EscapeEntry::array)
  kXfer,     // the argument names another escape whose argument is in the "xfer" buffer
};

// The kind of RM object a handle member names. X(enumerator, name)
#define CUDATOOL_HANDLE_KINDS(X)                                                     \
  X(kClient, "client")              /* hRoot, hClient: the RM client */              \
  X(kParent, "parent")              /* the parent of an object created */            \
  X(kDevice, "device")              /* a device (or subdevice) object */             \
  X(kSubdevice, "subdevice")        /* a subdevice, beside another parent */         \
  X(kObject, "object")              /* the object the call is about */               \
  X(kNewObject, "new object")       /* the handle the call gives an object */        \
  X(kOldObject, "freed object")     /* the object the call frees */                  \
  X(kMemory, "memory")              /* a memory object */                            \
  X(kChannel, "channel")            /* a channel */                                  \
  X(kVaSpace, "VA space")           /* a GPU virtual address space or DMA context */ \
  X(kContextDma, "context DMA")     /* a context DMA object */                       \
  X(kPartition, "partition")        /* an SMC partition reference */                 \
  X(kSourceClient, "source client") /* the client an object is duplicated from */    \
  X(kSourceObject, "source object") /* the object duplicated */
enum class HandleKind : uint8_t {
#define CUDATOOL_HANDLE_KIND_ENUM(e, n) e,
  CUDATOOL_HANDLE_KINDS(CUDATOOL_HANDLE_KIND_ENUM)
#undef CUDATOOL_HANDLE_KIND_ENUM
};
std::string_view handle_kind_name(HandleKind k);  // "client", "new object", …

// Where a handle kind goes in the RM object model a decoded call summarises (trace::Decoded's
// h_client, h_parent, h_object): the client; the parent or device; the object created, freed,
// mapped or controlled. Other kinds are named in the row but not summarised.
enum class HandleSlot : uint8_t { kNone, kClient, kParent, kObject };
constexpr HandleSlot handle_slot(HandleKind k) {
  switch (k) {
    case HandleKind::kClient:
      return HandleSlot::kClient;
    case HandleKind::kParent:
    case HandleKind::kDevice:
      return HandleSlot::kParent;
    case HandleKind::kObject:
    case HandleKind::kNewObject:
    case HandleKind::kOldObject:
    case HandleKind::kMemory:
      return HandleSlot::kObject;
    default:
      return HandleSlot::kNone;
  }
}

struct HandleMember {
  std::string_view member{};  // "" for an unused slot
  HandleKind kind = HandleKind::kObject;
};

// The memory range a mapping call maps (members of the RM structure).
struct MapMembers {
  std::string_view memory{};   // the memory object's handle
  std::string_view offset{};   // offset into it
  std::string_view length{};   // bytes mapped
  std::string_view address{};  // where the range lands: the CPU address or the GPU virtual address
};

inline constexpr size_t kMaxHandleMembers = 6;

// One call. Members are named inside the RM structure of the call: the argument itself, or the
// argument's member `within` when the argument wraps it (the *_with_fd wrappers of nv-ioctl.h put
// NVOS02/NVOS33 in "params", beside an fd; an alternative argument structure without that member,
// as NVOS34 for NV_ESC_RM_MAP_MEMORY on older branches, is the RM structure itself). `fd` is named
// in the argument. An empty name: the call has no such member.
struct CallRow {
  CallSpace space = CallSpace::kEscape;
  std::string_view name{};  // "NV_ESC_RM_ALLOC", "UVM_FREE"
  uint32_t does = 0;        // kCall* bits
  CallDecoder decoder = CallDecoder::kStruct;
  std::string_view within{};
  std::array<HandleMember, kMaxHandleMembers> handles{};  // in member order
  std::string_view status{};                              // the NV_STATUS of the call
  std::string_view cls{};                                 // the class of an allocation (hClass)
  std::string_view control{};                             // the control command (NVOS54 cmd)
  std::string_view fd{};    // a file descriptor of the calling process
  MapMembers map{};         // kCallMapsCpu / kCallMapsGpu / kCallMapsExternal
  std::string_view what{};  // what the call does, in a few words
};

// A call of the ABI that has no row: it is read generically (no handles, no status, no effects)
// because no branch gives it a layout.
struct DefaultCall {
  CallSpace space;
  std::string_view name{};
  std::string_view why{};
};

// ClassRow::does
inline constexpr uint32_t kClassClient = 1u << 0;   // allocating it creates an RM client
inline constexpr uint32_t kClassChannel = 1u << 1;  // a GPFIFO channel the fake GPU follows

// What a channel's allocation parameters say of its GPFIFO and USERD (NV_CHANNEL_ALLOC_PARAMS).
struct ChannelMembers {
  std::string_view gpfifo_offset{};   // GPU VA of the GPFIFO ring
  std::string_view gpfifo_entries{};  // its entries
  std::string_view userd_memory{};    // the memory object holding USERD (first element)
  std::string_view userd_offset{};    // USERD's offset in it (first element)
};

// RM classes whose allocation means something to a reader: one class by name, or every class
// whose allocation parameters are `alloc_params`.
struct ClassRow {
  std::string_view name{};          // "NV01_ROOT_CLIENT"; "" to match by alloc_params
  std::string_view alloc_params{};  // "NV_CHANNEL_ALLOC_PARAMS"; "" to match by name
  uint32_t does = 0;                // kClass* bits
  ChannelMembers channel{};         // kClassChannel: members of alloc_params
  std::string_view what{};
};

// ControlRow::does
inline constexpr uint32_t kControlDriverVersion = 1u << 0;  // returns the driver's version
                                                            // strings, checked by libcuda

// RM control commands that mean something to a reader.
struct ControlRow {
  std::string_view name{};  // "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION"
  uint32_t does = 0;        // kControl* bits
  std::string_view what{};
};

std::span<const CallRow> call_rows();
std::span<const DefaultCall> default_calls();
std::span<const ClassRow> class_rows();
std::span<const ControlRow> control_rows();

// The row of a call by name; nullptr when it has none (on the default list, or unknown).
const CallRow* find_call_row(CallSpace space, std::string_view name);
// The row of one escape / UVM call of a branch (cached per generated branch).
const CallRow* row_of(const Tables& t, const EscapeEntry& e);
const CallRow* row_of(const Tables& t, const UvmEntry& u);
// The one call row with every bit of `does` (the mapping calls the fake GPU follows); nullptr
// when none (the test checks there is exactly one).
const CallRow* row_doing(uint32_t does);

// The kCallClass bits of class `cls` of branch t (0 when no class row matches it).
uint32_t class_does(const Tables& t, uint32_t cls);
// The class row with every bit of `does`, nullptr when none.
const ClassRow* class_row_doing(uint32_t does);
// The control of branch t whose row has every bit of `does`, nullptr when none.
const CtrlEntry* control_doing(const Tables& t, uint32_t does);

// The member of the first handle of `kind` in a row ("" when none).
std::string_view handle_member(const CallRow& row, HandleKind kind);

// The members by which readers that follow RM objects (ab, replay) know a call: the client, and
// either the object created (kCallCreates) or freed (kCallFrees) with its parent, or the object
// the call is about (its kObject member, else its kMemory member).
struct CallIdentity {
  std::string_view client, parent, object;
  bool creates = false, frees = false;
};
CallIdentity call_identity(const CallRow& row);

// Where a row's members lie in one argument structure `arg` of the call: the RM structure (`arg`
// or its member `within`) and its offset in `arg`.
struct CallLayout {
  const StructEntry* arg = nullptr;
  const StructEntry* rm = nullptr;
  uint32_t rm_base = 0;
};
CallLayout locate_call(const Tables& t, const CallRow* row, const StructEntry& arg);
// A member of the RM structure by name (nullptr when absent or when `name` is empty).
const FieldEntry* rm_member(const Tables& t, const CallLayout& l, std::string_view name);

}  // namespace cudatool::rm
