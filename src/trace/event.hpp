// The event model of a trace: what a CUDA program asked of the NVIDIA kernel driver.
//
// This is the contract between the recorder (trace/), the decoder (rm/), statistics, export and
// A/B comparison (ab/). The on-disk form is specified in docs/trace-format.md (JSON lines,
// versioned header); this header is its in-memory twin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cudatool::trace {

// Version of the trace file format written by this build (header field "cudatool_trace").
// Version 2 added call stacks and module records, the environment events (stat, file, mknod,
// symlink, readlink, chmod, unlink), nested buffers behind pointer members ("params.<member>")
// and `unrecorded`. Version 3 added stack records: a stack written once as a record line and
// named by later events with "stack_ref" (the preload recorder's repeated stacks). Version 1 and 2
// traces read as before (docs/trace-format.md).
inline constexpr int kFormatVersion = 3;

// A member this build does not know (written by a newer recorder), kept as its raw JSON text so
// that reading and writing a trace loses nothing.
struct ExtraField {
  std::string key;
  std::string json;
};

enum class Sys : uint8_t {
  kOpen,    // open/openat/openat2/creat: `path`, `open_flags`, ret = fd
  kClose,   // close: `fd`
  kDup,     // dup/dup2/dup3/fcntl(F_DUPFD*): `fd` (old), ret = new fd
  kIoctl,   // ioctl: `fd`, `request`, `arg`, `nested`
  kMmap,    // mmap: `fd`, `addr` (hint), `len`, `prot`, `map_flags`, `offset`, ret = address
  kMunmap,  // munmap: `addr`, `len`
  kExecve,  // a traced process replaced its image: `path` (new program)
  kFork,    // a traced process created `child_pid` (fork/vfork/clone of a process)
  kExit,    // a traced process or thread ended: ret = exit status, or -signal
  // The driver's view of the system (v2): calls on environment paths (/proc/driver/nvidia,
  // /sys/module/nvidia*, /sys/bus/pci/devices, the /dev/nvidia* nodes themselves). `op` names the
  // call as the program made it ("stat", "lstat", "statx", "access", "fopen", "mknod", …).
  kStat,      // stat/lstat/fstatat/statx/access of `path`: `has_stat` + mode, rdev, st_size
  kFile,      // an environment file or directory opened: `path`, `open_flags`, `content`/`entries`
  kMknod,     // mknod of `path`: `mode`, `rdev`
  kSymlink,   // symlink `path` -> `target`
  kReadlink,  // readlink of `path`: `target`
  kChmod,     // chmod of `path` to `mode`
  kUnlink,    // unlink/remove/rmdir of `path`
  kUnknown,   // a record of a kind this build does not know (read from a newer trace); last
};

std::string_view sys_name(Sys s);  // "open", "close", "dup", "ioctl", …
Sys sys_from_name(std::string_view name);
// kStat … kUnlink: an environment event (v2), a call on a path rather than on a device.
bool is_environment(Sys s);

// A user-memory buffer read before and after the call.
struct Buffer {
  std::string role;  // "arg" for the ioctl argument; "params" (NVOS54/NVOS21/NVOS64 pParams/
                     // pAllocParms), "xfer" (nv_ioctl_xfer_t target), … for nested ones
  uint64_t addr = 0;
  uint64_t size = 0;  // bytes the recorder meant to read
  // `size` is an upper bound, not the parameter size (no size is known for the request: a UVM
  // ioctl the size table of nv_ioctl_abi.h does not know): `before`/`after` hold what was
  // readable of it, clipped at the end of the mapping, with no error unless nothing was readable.
  bool bounded = false;
  // v2: how `size` was chosen when the call did not give it: "class" for the parameters of an
  // RM alloc with paramsSize 0, sized as RM sizes them for the class; "" otherwise.
  std::string sized_by;
  // Contents; empty with the matching `*_error` set when the memory could not be read (bad
  // pointer, unmapped, size over the recorder's cap). Both may be present with fewer bytes than
  // `size` when only a prefix was readable (then `*_error` says so too).
  std::vector<uint8_t> before;
  std::vector<uint8_t> after;
  std::string before_error;
  std::string after_error;
  std::vector<ExtraField> extra;
};

// Something a recorder could not record for a call, and why (v2), e.g. {"params", "capture
// format: paramsSize 0, RM sizes the parameters by the class"}.
struct Unrecorded {
  std::string what;  // a buffer role ("params", "params.grInfoList"), or "stack", …
  std::string why;
};

struct Event {
  uint64_t seq = 0;     // 0-based, in order of completion as the recorder saw it
  uint64_t t_ns = 0;    // entry time, ns since the trace's t0 (CLOCK_MONOTONIC)
  uint64_t dur_ns = 0;  // entry to exit; 0 when unknown (imported captures)
  bool has_duration = false;
  int32_t pid = 0;  // 0 when unknown (imported captures record only tids)
  int32_t tid = 0;
  Sys sys = Sys::kUnknown;
  std::string sys_raw;  // the name as written, kept for kUnknown
  int32_t fd = -1;
  std::string path;      // device path of fd (or opened path); "" when not a device
  uint64_t request = 0;  // ioctl request
  int64_t ret = 0;       // return value (fd, 0, address for mmap); -1 with errno on failure
  int32_t err = 0;       // errno, 0 on success
  // open
  uint64_t open_flags = 0;
  // mmap / munmap
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t prot = 0;
  uint64_t map_flags = 0;
  uint64_t offset = 0;
  // fork
  int32_t child_pid = 0;
  // ioctl: `arg` is always present for ioctls; arg->addr is the raw third argument and
  // arg->size 0 when it is not read as a buffer (an integer argument, an unknown size).
  std::optional<Buffer> arg;
  // RM escapes: the parameter buffers the argument points to ("params", "rights", "xfer"), and
  // (v2) the buffers behind their pointer members, role "<buffer>.<member>" ("params.grInfoList").
  std::vector<Buffer> nested;
  // v2: the user-space call stack when the call was made: code addresses, innermost first (the
  // first may lie in libc), at most the recorder's frame limit. Empty: not recorded.
  std::vector<uint64_t> stack;
  // v3: the id of the stack record ("stack_ref") the line named; the reader fills `stack` from the
  // record. 0 when the line held its stack inline, or none. Never written back: a writer writes
  // `stack` inline.
  uint64_t stack_ref = 0;
  // Why the walk stopped before the outermost frame ("no unwind information at 0x…", "frame
  // limit 32", "signal frame"); empty when it ended normally or when there is no stack.
  std::string stack_error;
  // Environment events (v2; see Sys).
  std::string op;         // the call as made: "stat", "__xstat", "statx", "fopen", "opendir", …
  std::string target;     // symlink: the link's target; readlink: the text read
  uint64_t mode = 0;      // stat: st_mode; mknod, chmod: the mode asked for; access: the amode
  uint64_t rdev = 0;      // stat: st_rdev; mknod: the device asked for
  uint64_t st_size = 0;   // stat: st_size
  bool has_stat = false;  // stat: mode/rdev/st_size hold the answer (the call succeeded)
  std::optional<Buffer> content;     // file: the bytes of the file (role "content", in `after`)
  std::vector<std::string> entries;  // file on a directory: its names, sorted, without . and ..
  bool has_entries = false;
  std::vector<Unrecorded> unrecorded;  // v2: what could not be recorded for this call, and why
  std::vector<ExtraField> extra;       // members this build does not know, in file order
};

// A loaded ELF object of a traced process (v2): a record line of its own, written before the
// first event whose stack holds an address in it. Frames resolve as path + (address - base).
struct Module {
  int32_t pid = 0;
  std::string path;      // as the process mapped it
  std::string build_id;  // hex of NT_GNU_BUILD_ID; "" when the object has none
  uint64_t base = 0;     // load bias: runtime address = base + ELF virtual address
  uint64_t lo = 0;       // the mapped range of its segments, [lo, hi)
  uint64_t hi = 0;
  std::vector<ExtraField> extra;
};

// A call stack written once (v3): {"stack_record":{"id":N,"stack":[…]}}, before the first event
// that names it with "stack_ref":N. Ids are unique in the trace; the frames are as in
// Event::stack (a record says nothing of processes: the event's pid resolves its frames).
struct StackRecord {
  uint64_t id = 0;
  std::vector<uint64_t> stack;
};

struct Header {
  int format_version = kFormatVersion;
  std::vector<std::string> argv;              // traced command line
  std::optional<std::string> driver_version;  // /proc/driver/nvidia/version, when readable
  std::string driver_version_line;            // the whole first line of that file
  std::string host;                           // uname nodename ("" when unknown: imports)
  std::string kernel;                         // uname release ("" when unknown)
  std::string start_time;                     // ISO 8601 UTC, e.g. "2026-11-29T19:43:52Z"
  std::string mode;                           // "ptrace", "preload", "import"
  std::string devices;                        // the --devices glob in force
  std::string source;                         // for imports: the capture file it came from
  std::string gpu;                            // optional free text (PCI id, name) when known
  std::string recorder;                       // "cudatool 0.1.0"
  std::string placement;                      // ptrace: "same-cpu 1", "any"; "" when not set
  bool stacks = false;                        // v2: events carry call stacks
  std::string env;                            // v2: globs of the environment paths recorded
  std::vector<ExtraField> extra;
};

// Optional last line: how the recording ended. A trace without it is still valid (the recorder
// was killed); readers report its absence.
struct Trailer {
  uint64_t events = 0;
  std::string reason;  // "exit", "signal", "detached", "interrupted"
  // Of the traced command; -signal when killed by one. None when not known: an imported capture
  // holds none (written as null; `import --exit-status N` states one).
  std::optional<int> exit_status = 0;
  // Preload mode: how many device ioctls arrived through each route ("ioctl", "syscall").
  std::vector<std::pair<std::string, uint64_t>> routes;
  // Device calls the recorder saw but could not record (preload: a device call made by a signal
  // handler that interrupted the recorder in the same thread). 0 normally.
  uint64_t lost = 0;
  std::vector<ExtraField> extra;
};

}  // namespace cudatool::trace
