// Text and JSON renderings of a Decoded call (no printing: the caller writes the strings).
#include <charconv>
#include <cstdio>

#include "base/json_writer.hpp"
#include "trace/decode.hpp"

namespace cudatool::trace {

using namespace json_literals;  // NOLINT(google-build-using-namespace): "name"_key

using rm::device_name;
using rm::Field;
using rm::ValueKind;
namespace {

// "0x1f" ("0x0000001f" with pad8), without printf: the text renderer's hottest helper. Numbers
// are written in place at the stage's cursor.
void append_hex(TextStage& out, uint64_t v, bool pad8 = false) {
  char* p = out.room(20);
  *p++ = '0';
  *p++ = 'x';
  if (pad8) {
    int digits = v == 0 ? 1 : (67 - __builtin_clzll(v)) / 4;
    if (digits < 8) p = std::fill_n(p, 8 - digits, '0');
  }
  out.set_cursor(std::to_chars(p, p + 16, v, 16).ptr);
}

void append_dec(TextStage& out, uint64_t v) {
  char* p = out.room(20);
  out.set_cursor(std::to_chars(p, p + 20, v).ptr);
}

void append_signed(TextStage& out, int64_t v) {
  char* p = out.room(20);
  out.set_cursor(std::to_chars(p, p + 20, v).ptr);
}

void append_value(TextStage& out, const Field& f);

void append_members(TextStage& out, const std::vector<Field>& items) {
  bool first = true;
  for (const Field& m : items) {
    if (!first) out += ' ';
    first = false;
    out += m.name;
    out += '=';
    append_value(out, m);
  }
}

void append_quoted(TextStage& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20 || u >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
}

void append_value(TextStage& out, const Field& f) {
  switch (f.kind) {
    case ValueKind::kHex:
      append_hex(out, f.value);
      break;
    case ValueKind::kDec:
      append_dec(out, f.value);
      break;
    case ValueKind::kSigned:
      append_signed(out, static_cast<int64_t>(f.value));
      break;
    case ValueKind::kHandle:
      append_hex(out, f.value, true);
      break;
    case ValueKind::kClass:
    case ValueKind::kStatus:
      if (!f.symbol.empty()) {
        out += f.symbol;
      } else {
        append_hex(out, f.value);
        out += '?';
      }
      break;
    case ValueKind::kControl:
      if (!f.symbol.empty()) {
        out += f.symbol;
        if (!f.category.empty()) {
          out += " (no header define; RM handler ";
          out += f.category;
          out += ')';
        }
      } else {
        append_hex(out, f.value, true);
        out += '?';
        if (!f.category.empty()) {
          out += " (";
          out += f.category;
          out += ')';
        }
      }
      break;
    case ValueKind::kChar:
      if (f.value >= 0x20 && f.value < 0x7f) {
        out += '\'';
        out += static_cast<char>(f.value);
        out += '\'';
      } else {
        append_hex(out, f.value);
      }
      break;
    case ValueKind::kString:
      append_quoted(out, f.text);
      break;
    case ValueKind::kBytes:
      out += f.text.empty() ? "\"\"" : f.text;
      if (f.total * 2 > f.text.size()) out += "…";
      break;
    case ValueKind::kList: {
      out += '[';
      bool first = true;
      for (const Field& e : f.items) {
        if (!first) out += ", ";
        first = false;
        append_value(out, e);
      }
      if (f.total > f.items.size()) {
        out += ", … (" + std::to_string(f.total) + " in all)";
      }
      out += ']';
      break;
    }
    case ValueKind::kStruct:
      out += '{';
      append_members(out, f.items);
      out += '}';
      break;
  }
}

// The JSON of decoded members, through the event's writer (a staged writer's inline cursor: the
// members are most of `decode --json`'s output).
void json_field_value(JsonWriter& w, const Field& f);

void json_fields(JsonWriter& w, const std::vector<Field>& fields) {
  w.begin_array();
  for (const Field& f : fields) {
    w.begin_object();
    w.kv("name"_key, f.name);
    w.key("value"_key);
    json_field_value(w, f);
    if (f.kind == ValueKind::kClass || f.kind == ValueKind::kControl ||
        f.kind == ValueKind::kStatus) {
      w.key("symbol"_key);
      if (f.symbol.empty()) {
        w.null();
      } else {
        w.value(f.symbol);
      }
      if (f.kind == ValueKind::kControl && !f.category.empty()) {
        if (f.symbol.empty()) {
          w.kv("category"_key, f.category);
        } else {
          w.kv("handler"_key, f.category);
        }
      }
    }
    w.end_object();
  }
  w.end_array();
}

// Numbers that people read as numbers are JSON numbers; handles, addresses, flags and ids are
// "0x…" strings (docs/json.md); lists and structures nest.
void json_field_value(JsonWriter& w, const Field& f) {
  switch (f.kind) {
    case ValueKind::kDec:
    case ValueKind::kChar:
      w.value(f.value);
      break;
    case ValueKind::kSigned:
      w.value(static_cast<int64_t>(f.value));
      break;
    case ValueKind::kString:
    case ValueKind::kBytes:
      w.value(f.text);
      break;
    case ValueKind::kList: {
      w.begin_array();
      for (const Field& e : f.items) {
        if (e.kind == ValueKind::kStruct) {
          json_fields(w, e.items);
        } else if (e.kind == ValueKind::kClass || e.kind == ValueKind::kStatus) {
          if (e.symbol.empty()) {
            w.hex(e.value);
          } else {
            w.value(e.symbol);
          }
        } else {
          json_field_value(w, e);
        }
      }
      w.end_array();
      break;
    }
    case ValueKind::kStruct:
      json_fields(w, f.items);
      break;
    default:
      w.hex(f.value);
      break;
  }
}

void kv_opt_hex(JsonWriter& w, JsonKey k, const std::optional<uint32_t>& v) {
  w.key(k);
  if (v) {
    w.hex(*v);
  } else {
    w.null();
  }
}

}  // namespace

std::string format_value(const Field& f) {
  std::string out;
  {
    TextStage text(out, 256);
    append_value(text, f);
  }
  return out;
}

std::string format_line(const Decoded& d) {
  std::string out;
  append_line(out, d);
  return out;
}

void append_line(std::string& out, const Decoded& d) {
  TextStage text(out, 1024);
  append_line(text, d);
}

void append_line(TextStage& out, const Decoded& d) {
  if (!d.summary.empty()) {  // an environment event: its own text, the facts are in args
    out += d.call;
    out += ' ';
    out += d.summary;
    return;
  }
  if (!d.call.empty()) {
    out += d.call;
  } else {
    out += "ioctl ";
    append_hex(out, d.request);
    out += '?';
  }
  if (!d.args.empty()) {
    out += ' ';
    append_members(out, d.args);
  }
  // " TYPE {members}": the parameters, then (an XFER) the wrapped call's own parameters.
  for (const auto& [type, members] :
       {std::pair{d.params_struct, &d.params}, std::pair{d.wrapped_struct, &d.wrapped}}) {
    if (type.empty()) continue;
    out += ' ';
    out += type;
    if (!members->empty()) {
      out += " {";
      append_members(out, *members);
      out += '}';
    }
  }
  for (const Pointee& p : d.pointees) {
    out += ' ';
    out += p.role;
    out += '=';
    append_value(out, p.value);
  }
  if (!d.hex.empty()) {
    out += " hex=";
    out += d.hex;
  }
}

void write_json(JsonWriter& w, const Decoded& d) {
  w.begin_object();
  write_json_members(w, d);
  w.end_object();
}

void write_json_members(JsonWriter& w, const Decoded& d) {
  w.key("call"_key);
  if (d.call.empty()) {
    w.null();
  } else {
    w.value(d.call);
  }
  w.kv("known"_key, d.known);
  w.kv("device"_key, device_name(d.device));
  if (d.sys == Sys::kIoctl) {
    w.kv_hex("request"_key, d.request);
    w.kv_hex("nr"_key, d.nr);
    w.kv("size"_key, d.ioc_size);
  }
  w.key("arg_struct"_key);
  if (d.arg_struct.empty()) {
    w.null();
  } else {
    w.value(d.arg_struct);
  }
  w.key("args"_key);
  json_fields(w, d.args);
  w.key("params_struct"_key);
  if (d.params_struct.empty()) {
    w.null();
  } else {
    w.value(d.params_struct);
  }
  w.key("params"_key);
  json_fields(w, d.params);
  if (!d.wrapped_struct.empty()) {  // NV_ESC_IOCTL_XFER_CMD only
    w.kv("wrapped_struct"_key, d.wrapped_struct);
    w.key("wrapped"_key);
    json_fields(w, d.wrapped);
  }
  w.key("pointees"_key);
  w.begin_array();
  for (const Pointee& p : d.pointees) {
    w.begin_object();
    w.kv("role"_key, p.role);
    w.key("struct"_key);
    if (p.elem_type.empty()) {
      w.null();
    } else {
      w.value(p.elem_type);
    }
    w.kv("known"_key, p.known);
    w.key("value"_key);
    json_field_value(w, p.value);
    w.end_object();
  }
  w.end_array();
  kv_opt_hex(w, "status"_key, d.status);
  w.key("status_name"_key);
  if (d.status_name.empty()) {
    w.null();
  } else {
    w.value(d.status_name);
  }
  kv_opt_hex(w, "h_client"_key, d.h_client);
  kv_opt_hex(w, "h_parent"_key, d.h_parent);
  kv_opt_hex(w, "h_object"_key, d.h_object);
  kv_opt_hex(w, "h_class"_key, d.h_class);
  kv_opt_hex(w, "cmd"_key, d.cmd);
  w.key("hex"_key);
  if (d.hex.empty()) {
    w.null();
  } else {
    w.value(d.hex);
  }
  w.key("notes"_key);
  w.begin_array();
  for (const std::string& n : d.notes) w.value(n);
  w.end_array();
  w.key("partial"_key);
  w.begin_array();
  for (const std::string& n : d.partial) w.value(n);
  w.end_array();
  w.key("unrecorded"_key);
  w.begin_array();
  for (const Unrecorded& u : d.unrecorded) {
    w.begin_object();
    w.kv("what"_key, u.what);
    w.kv("why"_key, u.why);
    w.end_object();
  }
  w.end_array();
}

}  // namespace cudatool::trace
