// Names the community gave to cuGetExportTable UUIDs and their slots. One list; unknown UUIDs and
// slots print without a name, never a guess.
//
// Source: ZLUDA (github.com/vosen/ZLUDA, dark_api/src/lib.rs, the `dark_api!` tables; names
// found by observing the CUDA runtime against a live driver). ZLUDA writes UUIDs with the uuid!
// macro, i.e. the 16 bytes in memory order, the form format_uuid() prints. Its slot [0] is the
// size word ("SIZE_OF"), which is how cudatool numbers slots too.
#include <algorithm>
#include <cstring>

#include "cuda/driver_tables.hpp"

namespace cudatool::cuda {
namespace {

constexpr uint8_t hexval(char c) {
  return c >= '0' && c <= '9'   ? static_cast<uint8_t>(c - '0')
         : c >= 'a' && c <= 'f' ? static_cast<uint8_t>(c - 'a' + 10)
                                : static_cast<uint8_t>(c - 'A' + 10);
}

// "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9" -> bytes, at compile time.
constexpr Uuid U(const char (&s)[37]) {
  Uuid u{};
  int j = 0;
  for (int i = 0; i < 36 && j < 16; ++i) {
    if (s[i] == '-') continue;
    u[j++] = static_cast<uint8_t>(hexval(s[i]) << 4 | hexval(s[i + 1]));
    ++i;
  }
  return u;
}

constexpr KnownSlot kCudartInterface[] = {
    {1, "get_module_from_cubin"},      {2, "cudart_interface_fn2"},
    {6, "get_module_from_cubin_ext1"}, {7, "cudart_interface_fn7"},
    {8, "get_module_from_cubin_ext2"}, {12, "load_compilers"}};
constexpr KnownSlot kToolsRuntimeCallbackHooks[] = {{2, "get_unknown_buffer1"},
                                                    {6, "get_unknown_buffer2"}};
constexpr KnownSlot kContextLocalStorage[] = {{0, "context_local_storage_put"},
                                              {1, "context_local_storage_delete"},
                                              {2, "context_local_storage_get"}};
constexpr KnownSlot kCtxCreateBypass[] = {{1, "ctx_create_v2_bypass"}};
constexpr KnownSlot kHeapAccess[] = {{1, "heap_alloc"}, {2, "heap_free"}};
constexpr KnownSlot kDeviceExtendedRt[] = {{5, "device_get_attribute_ext"},
                                           {13, "device_get_something"}};
constexpr KnownSlot kIntegrityCheck[] = {{1, "integrity_check"}};
constexpr KnownSlot kContextChecks[] = {{2, "context_check"}, {3, "check_fn3"}};
constexpr KnownSlot kHybridCudart[] = {{1, "hybrid_runtime_load_get_proc_address"},
                                       {2, "hybrid_runtime_free"}};

constexpr const char* kZluda = "ZLUDA dark_api";

const KnownExportTable kKnown[] = {
    {U("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"), "CUDART_INTERFACE", kZluda, kCudartInterface},
    {U("42d85a81-23f6-cb47-8298-f6e78a3aecdc"), "TOOLS_TLS", kZluda, {}},
    {U("a094798c-2e74-2e74-93f2-0800200c0a66"), "TOOLS_RUNTIME_CALLBACK_HOOKS", kZluda,
     kToolsRuntimeCallbackHooks},
    {U("c693336e-1121-df11-a8c3-68f355d89593"), "CONTEXT_LOCAL_STORAGE_INTERFACE_V0301", kZluda,
     kContextLocalStorage},
    {U("0ca50b8c-1004-929a-89a7-d0df10e77286"), "CTX_CREATE_BYPASS", kZluda, kCtxCreateBypass},
    {U("195bcbf4-d67d-024a-acc5-1d29cea631ae"), "HEAP_ACCESS", kZluda, kHeapAccess},
    {U("b10541e1-f7c7-c74a-9f64-f223be99f1e2"), "DEVICE_EXTENDED_RT", kZluda, kDeviceExtendedRt},
    {U("d4082055-bde6-704b-8d34-ba123c66e1f2"), "INTEGRITY_CHECK", kZluda, kIntegrityCheck},
    {U("263e8860-7cd2-6143-92f6-bbd5006dfa7e"), "CONTEXT_CHECKS", kZluda, kContextChecks},
    {U("dd9e98a4-f410-4844-99b0-e2aeb7b432b5"), "HYBRID_CUDART", kZluda, kHybridCudart},
};

}  // namespace

std::span<const KnownExportTable> known_export_tables() {
  return kKnown;
}

const KnownExportTable* find_known_export_table(const Uuid& u) {
  // Called for every pair-shaped place among ~35k relocations: two word compares per entry,
  // not Uuid's byte-wise operator==.
  auto word = [](const Uuid& x, size_t at) {
    uint64_t w;
    std::memcpy(&w, x.data() + at, sizeof w);
    return w;
  };
  const uint64_t lo = word(u, 0), hi = word(u, 8);
  for (const auto& k : kKnown)
    if (word(k.uuid, 0) == lo && word(k.uuid, 8) == hi) return &k;
  return nullptr;
}

}  // namespace cudatool::cuda
