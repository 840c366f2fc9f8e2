// Synthetic RM calls for unit tests: structures filled through the generated layouts of one
// branch (member offsets are looked up, never typed in) and ids looked up by NVIDIA's names, so
// the tests hold for whatever the generator emits. Shared by rm_test, decode_tools_test and
// ab_normalize_test; the real captures are checked in tests/integration/.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rm/tables.hpp"
#include "trace/event.hpp"

namespace cudatool::rm::synth {

// The tables of the captures' driver (580.159.04).
inline const Tables& tables() {
  return tables_for_driver("580.159.04");
}

// sizeof(type) by the tables; 0 for a type they do not know.
inline size_t size_of(std::string_view type) {
  const StructEntry* s = tables().find_struct(type);
  return s ? static_cast<size_t>(s->size) : 0;
}

// Writes `value` into member `member` of structure `type` inside `bytes` (little-endian, at most
// the member's first 8 bytes).
inline void put(std::vector<uint8_t>& bytes, std::string_view type, std::string_view member,
                uint64_t value) {
  const StructEntry* s = tables().find_struct(type);
  ASSERT_NE(s, nullptr) << type;
  const FieldEntry* f = tables().find_field(*s, member);
  ASSERT_NE(f, nullptr) << type << "." << member;
  ASSERT_LE(f->offset + f->elem_size, bytes.size()) << type << "." << member;
  for (uint32_t i = 0; i < f->elem_size && i < 8; ++i) {
    bytes[f->offset + i] = static_cast<uint8_t>(value >> (8 * i));
  }
}

// The bytes of `type` (zeros) with the given members set.
inline std::vector<uint8_t> make(std::string_view type,
                                 const std::map<std::string, uint64_t>& members) {
  std::vector<uint8_t> b(size_of(type));
  EXPECT_FALSE(b.empty()) << type;
  for (const auto& [name, v] : members) put(b, type, name, v);
  return b;
}

inline uint64_t offset_of(std::string_view type, std::string_view member) {
  const StructEntry* s = tables().find_struct(type);
  const FieldEntry* f = s ? tables().find_field(*s, member) : nullptr;
  EXPECT_NE(f, nullptr) << type << "." << member;
  return f ? f->offset : 0;
}

// Looks an entry up by name in one of the tables' lists; a test failure (and 0) when absent.
template <class List, class Value>
uint32_t id_named(const List& list, std::string_view name, Value value) {
  for (const auto& e : list) {
    if (e.name == name) return value(e);
  }
  ADD_FAILURE() << name << " is not in the tables";
  return 0;
}
inline uint32_t escape_nr(std::string_view name) {
  return id_named(tables().escapes(), name, [](const EscapeEntry& e) { return e.nr; });
}
inline uint32_t class_id(std::string_view name) {
  return id_named(tables().classes(), name, [](const ClassEntry& e) { return e.id; });
}
inline uint32_t control_id(std::string_view name) {
  return id_named(tables().controls(), name, [](const CtrlEntry& e) { return e.id; });
}
inline uint32_t status_value(std::string_view name) {
  return id_named(tables().statuses(), name, [](const StatusEntry& e) { return e.value; });
}

// _IOWR('F', nr, size), as the driver builds its requests (nv-ioctl-numbers.h).
inline uint64_t rm_request(uint32_t nr, size_t size) {
  return (3ULL << 30) | (static_cast<uint64_t>(size) << 16) | ('F' << 8) | nr;
}
inline uint64_t rm_request(std::string_view escape, size_t size) {
  return rm_request(escape_nr(escape), size);
}

// An argument buffer that reads `arg` before and after the call.
inline trace::Buffer arg_buffer(std::vector<uint8_t> arg) {
  trace::Buffer b;
  b.role = "arg";
  b.size = arg.size();
  b.before = arg;
  b.after = std::move(arg);
  return b;
}

// An ioctl on `path` whose argument buffer reads `arg` before and after the call.
inline trace::Event ioctl(std::string path, uint64_t request, std::vector<uint8_t> arg) {
  trace::Event ev;
  ev.sys = trace::Sys::kIoctl;
  ev.path = std::move(path);
  ev.request = request;
  ev.arg = arg_buffer(std::move(arg));
  return ev;
}

}  // namespace cudatool::rm::synth
