// Tokenizer and recursive-descent parser of the --filter language (docs/decode.md).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "trace/event_filter.hpp"
#include "trace/event_filter_lang.hpp"

namespace cudatool::trace {

using rm::ClassEntry;
using rm::CtrlEntry;
using rm::EscapeEntry;
using rm::StatusEntry;
using rm::Tables;
using rm::UvmEntry;
namespace {

using namespace filter_detail;  // NOLINT(google-build-using-namespace)

// Tokens of an expression.
struct Token {
  enum Kind : uint8_t { kEnd, kWord, kQuoted, kLParen, kRParen, kComma, kNot, kAnd, kOr, kCmp };
  Kind kind = kEnd;
  EventFilter::Node::Op op = EventFilter::Node::kEq;
  std::string text;
  size_t column = 0;  // 1-based
};

class Parser {
 public:
  Parser(std::string_view expr, const Tables& t, std::vector<EventFilter::Node>& nodes)
      : s_(expr), t_(t), nodes_(nodes) {}

  Result<int> parse() {
    if (!advance()) return error_;
    auto root = parse_or(0);
    if (!root) return root;
    if (tok_.kind != Token::kEnd) {
      return fail(tok_, fmt::format("unexpected '{}' (a condition ends here)", tok_.text));
    }
    return root;
  }

 private:
  Error fail(const Token& at, std::string reason) {
    return make_error(fmt::format("--filter '{}'", s_), "", std::nullopt,
                      fmt::format("column {}: {}", at.column, std::move(reason)));
  }

  // Reads the next token into tok_; false (with error_ set) on a bad character or quote.
  bool advance() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
    tok_ = Token{};
    tok_.column = pos_ + 1;
    if (pos_ >= s_.size()) return true;
    char c = s_[pos_];
    auto two = [&](char next) { return pos_ + 1 < s_.size() && s_[pos_ + 1] == next; };
    auto single = [&](Token::Kind k, size_t n) {
      tok_.kind = k;
      tok_.text = std::string(s_.substr(pos_, n));
      pos_ += n;
      return true;
    };
    switch (c) {
      case '(':
        return single(Token::kLParen, 1);
      case ')':
        return single(Token::kRParen, 1);
      case ',':
        return single(Token::kComma, 1);
      case '!':
        if (two('=')) {
          tok_.op = EventFilter::Node::kNe;
          return single(Token::kCmp, 2);
        }
        return single(Token::kNot, 1);
      case '=':
        tok_.op = EventFilter::Node::kEq;
        return single(Token::kCmp, two('=') ? 2 : 1);
      case '<':
        tok_.op = two('=') ? EventFilter::Node::kLe : EventFilter::Node::kLt;
        return single(Token::kCmp, two('=') ? 2 : 1);
      case '>':
        tok_.op = two('=') ? EventFilter::Node::kGe : EventFilter::Node::kGt;
        return single(Token::kCmp, two('=') ? 2 : 1);
      case '&':
        if (two('&')) return single(Token::kAnd, 2);
        error_ = fail(tok_, "a lone '&' (write 'and' or '&&')");
        return false;
      case '|':
        if (two('|')) return single(Token::kOr, 2);
        error_ = fail(tok_, "a lone '|' (write 'or' or '||')");
        return false;
      case '"':
      case '\'': {
        size_t end = s_.find(c, pos_ + 1);
        if (end == std::string_view::npos) {
          error_ = fail(tok_, fmt::format("quote {} is not closed", c));
          return false;
        }
        tok_.kind = Token::kQuoted;
        tok_.text = std::string(s_.substr(pos_ + 1, end - pos_ - 1));
        pos_ = end + 1;
        return true;
      }
      default:
        break;
    }
    size_t start = pos_;
    while (pos_ < s_.size()) {
      char d = s_[pos_];
      if (d == '[') {  // a glob set may hold any byte but ']'
        size_t close = s_.find(']', pos_ + 2);
        if (close != std::string_view::npos) {
          pos_ = close + 1;
          continue;
        }
      }
      if (d == ' ' || d == '\t' || d == '\n' || std::strchr("()!=<>,&|\"'", d) != nullptr) break;
      if (static_cast<unsigned char>(d) < 0x20) {
        tok_.column = pos_ + 1;
        error_ = fail(tok_, fmt::format("control character 0x{:02x}", d));
        return false;
      }
      ++pos_;
    }
    tok_.kind = Token::kWord;
    tok_.text = std::string(s_.substr(start, pos_ - start));
    if (equal_ci(tok_.text, "and")) tok_.kind = Token::kAnd;
    if (equal_ci(tok_.text, "or")) tok_.kind = Token::kOr;
    if (equal_ci(tok_.text, "not")) tok_.kind = Token::kNot;
    return true;
  }

  int add(EventFilter::Node n) {
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size() - 1);
  }
  int binary(EventFilter::Node::Kind k, int a, int b) {
    EventFilter::Node n;
    n.kind = k;
    n.a = a;
    n.b = b;
    return add(std::move(n));
  }

  Result<int> parse_or(int depth) {
    auto left = parse_and(depth);
    if (!left) return left;
    int node = *left;
    while (tok_.kind == Token::kOr) {
      if (!advance()) return error_;
      auto right = parse_and(depth);
      if (!right) return right;
      node = binary(EventFilter::Node::kOr, node, *right);
    }
    return node;
  }

  // Conditions side by side are joined by "and" too.
  Result<int> parse_and(int depth) {
    auto left = parse_unary(depth);
    if (!left) return left;
    int node = *left;
    for (;;) {
      if (tok_.kind == Token::kAnd) {
        if (!advance()) return error_;
      } else if (tok_.kind != Token::kWord && tok_.kind != Token::kNot &&
                 tok_.kind != Token::kLParen && tok_.kind != Token::kQuoted) {
        break;
      }
      auto right = parse_unary(depth);
      if (!right) return right;
      node = binary(EventFilter::Node::kAnd, node, *right);
    }
    return node;
  }

  Result<int> parse_unary(int depth) {
    if (depth >= kMaxDepth) return fail(tok_, fmt::format("nested deeper than {}", kMaxDepth));
    switch (tok_.kind) {
      case Token::kEnd:
        return fail(tok_, "expected a condition at the end of the expression");
      case Token::kNot: {
        if (!advance()) return error_;
        auto inner = parse_unary(depth + 1);
        if (!inner) return inner;
        EventFilter::Node n;
        n.kind = EventFilter::Node::kNot;
        n.a = *inner;
        return add(std::move(n));
      }
      case Token::kLParen: {
        Token open = tok_;
        if (!advance()) return error_;
        auto inner = parse_or(depth + 1);
        if (!inner) return inner;
        if (tok_.kind != Token::kRParen) {
          return fail(open, "'(' is not closed by a ')'");
        }
        if (!advance()) return error_;
        return inner;
      }
      case Token::kWord:
        return parse_condition();
      case Token::kQuoted:
        return fail(
            tok_, fmt::format("a quoted value '{}' where a field or flag was expected", tok_.text));
      default:
        return fail(tok_, fmt::format("expected a condition (FIELD=VALUE or a flag: {}) before "
                                      "'{}'",
                                      kFlagList, tok_.text));
    }
  }

  Result<int> parse_condition() {
    Token word = tok_;
    if (!advance()) return error_;
    const FieldDef* field = nullptr;
    for (const FieldDef& f : kFields) {
      if (equal_ci(f.name, word.text)) field = &f;
    }
    if (tok_.kind != Token::kCmp) {
      for (const FlagDef& f : kFlags) {
        if (equal_ci(f.name, word.text)) {
          EventFilter::Node n;
          n.kind = EventFilter::Node::kFlag;
          n.field = f.id;
          return add(std::move(n));
        }
      }
      if (field != nullptr) {
        return fail(word, fmt::format("field '{}' needs a comparison, e.g. {}=VALUE or {}!=VALUE",
                                      word.text, field->name, field->name));
      }
      return fail(word, fmt::format("unknown word '{}' (a condition is FIELD=VALUE with a field "
                                    "of: {}; or a flag: {})",
                                    word.text, kFieldList, kFlagList));
    }
    if (field == nullptr) {
      return fail(word, fmt::format("unknown field '{}' (fields: {})", word.text, kFieldList));
    }
    EventFilter::Node n;
    n.kind = EventFilter::Node::kCompare;
    n.op = tok_.op;
    n.field = field->id;
    Token op = tok_;
    bool ordered = n.op != EventFilter::Node::kEq && n.op != EventFilter::Node::kNe;
    if (ordered && (field->type == Type::kName || field->type == Type::kNameOrNumber)) {
      return fail(op, fmt::format("'{}' compares numbers; {} is compared with = or !=", op.text,
                                  field->name));
    }
    if (!advance()) return error_;
    for (;;) {
      if (tok_.kind != Token::kWord && tok_.kind != Token::kQuoted) {
        return fail(tok_, fmt::format("expected a value after '{}{}'", field->name, op.text));
      }
      auto v = parse_value(*field, tok_);
      if (!v) return v.error();
      n.values.push_back(std::move(*v));
      if (!advance()) return error_;
      if (tok_.kind != Token::kComma) break;
      if (ordered)
        return fail(tok_, fmt::format("a list of values needs = or !=, not '{}'", op.text));
      if (!advance()) return error_;
    }
    return add(std::move(n));
  }

  static std::optional<uint64_t> number(std::string_view s) {
    uint64_t v = 0;
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      base = 16;
      s.remove_prefix(2);
    }
    if (s.empty() || s.size() > 20) return std::nullopt;
    for (char c : s) {
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : 99;
      if (d >= base) return std::nullopt;
      if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) {
        return std::nullopt;
      }
      v = v * base + static_cast<uint64_t>(d);
    }
    return v;
  }

  // "1500", "1.5ms", "20us", "2s" → ns.
  static std::optional<uint64_t> duration(std::string_view s) {
    static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
        {"ns", 1}, {"us", 1000}, {"\xc2\xb5s", 1000}, {"ms", 1000000}, {"s", 1000000000}};
    uint64_t scale = 1;
    for (const auto& [u, m] : kUnits) {
      if (s.size() > u.size() && s.substr(s.size() - u.size()) == u) {
        scale = m;
        s.remove_suffix(u.size());
        break;
      }
    }
    size_t dot = s.find('.');
    std::string_view whole = s.substr(0, dot);
    std::string_view frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
    auto w = number(whole.empty() ? "0" : whole);
    if (!w || (whole.size() > 1 && whole[1] == 'x') || frac.size() > 9) return std::nullopt;
    if (*w > UINT64_MAX / scale) return std::nullopt;
    uint64_t ns = *w * scale;
    uint64_t unit = scale;
    for (char c : frac) {
      if (c < '0' || c > '9') return std::nullopt;
      unit /= 10;
      ns += static_cast<uint64_t>(c - '0') * unit;
    }
    return ns;
  }

  Result<EventFilter::Value> parse_value(const FieldDef& f, const Token& tok) {
    EventFilter::Value v;
    const std::string& s = tok.text;
    if (s.empty()) return fail(tok, fmt::format("an empty value for {}", f.name));
    switch (f.type) {
      case Type::kNumber:
        if (auto n = number(s)) {
          v.is_number = true;
          v.number = *n;
          return v;
        }
        return fail(tok, fmt::format("{} takes a number (decimal or 0x…), not '{}'", f.name, s));
      case Type::kSigned: {
        bool neg = s[0] == '-';
        if (auto n = number(neg ? std::string_view(s).substr(1) : s)) {
          v.is_number = true;
          v.number = neg ? static_cast<uint64_t>(-static_cast<int64_t>(*n)) : *n;
          return v;
        }
        return fail(tok, fmt::format("{} takes a signed number, not '{}'", f.name, s));
      }
      case Type::kTime:
        if (auto n = duration(s)) {
          v.is_number = true;
          v.number = *n;
          return v;
        }
        return fail(tok, fmt::format("{} takes a time in ns, or with a unit (1.5ms, 20us, 2s), "
                                     "not '{}'",
                                     f.name, s));
      case Type::kNameOrNumber:
        if (s[0] >= '0' && s[0] <= '9') {
          if (auto n = number(s)) {
            v.is_number = true;
            v.number = *n;
            return v;
          }
          return fail(tok, fmt::format("'{}' is not a number", s));
        }
        break;
      case Type::kName:
        break;
    }
    v.pattern = to_lower(s);
    if (is_glob(s)) return v;
    // An exact name must be one the knowledge base (or the trace format) knows.
    if (auto id = resolve_name(f.id, s)) {
      if (f.type == Type::kNameOrNumber) {
        v.is_number = true;
        v.number = *id;
      }
      return v;
    }
    return fail(tok, unknown_name(f, s));
  }

  // The number of an exact name, or 0 for a known name of a kName field; nullopt when unknown.
  std::optional<uint64_t> resolve_name(FieldId id, std::string_view s) const {
    switch (id) {
      case kSys:
        for (int i = 0; i <= static_cast<int>(Sys::kUnknown); ++i) {
          if (equal_ci(sys_name(static_cast<Sys>(i)), s)) return 0;
        }
        return std::nullopt;
      case kDevice:
        for (std::string_view d : kDeviceNames) {
          if (equal_ci(d, s)) return 0;
        }
        return std::nullopt;
      case kPath:
      case kApi:  // names of the trace's own libraries: any name may be right
      case kOp:
        return 0;
      case kCall:
        for (int i = 0; i <= static_cast<int>(Sys::kUnknown); ++i) {
          if (equal_ci(sys_name(static_cast<Sys>(i)), s)) return 0;
        }
        for (const Tables& b : rm::all_branches()) {
          for (const EscapeEntry& e : b.escapes()) {
            if (equal_ci(e.name, s)) return 0;
          }
          for (const UvmEntry& u : b.uvm_ioctls()) {
            if (equal_ci(u.name, s)) return 0;
          }
        }
        return std::nullopt;
      case kStatus:
        for (const StatusEntry& e : t_.statuses()) {
          if (equal_ci(e.name, s)) return e.value;
        }
        for (const Tables& b : rm::all_branches()) {
          for (const StatusEntry& e : b.statuses()) {
            if (equal_ci(e.name, s)) return e.value;
          }
        }
        return std::nullopt;
      case kClass:
        for (const ClassEntry& e : t_.classes()) {
          if (equal_ci(e.name, s)) return e.id;
        }
        for (const Tables& b : rm::all_branches()) {
          for (const ClassEntry& e : b.classes()) {
            if (equal_ci(e.name, s)) return e.id;
          }
        }
        return std::nullopt;
      case kCtrl:
        for (const CtrlEntry& e : t_.controls()) {
          if (equal_ci(e.name, s)) return e.id;
        }
        for (const Tables& b : rm::all_branches()) {
          for (const CtrlEntry& e : b.controls()) {
            if (equal_ci(e.name, s)) return e.id;
          }
        }
        return std::nullopt;
      case kErrno:
        for (int e = 1; e < 4096; ++e) {
          const char* n = strerrorname_np(e);
          if (n != nullptr && equal_ci(n, s)) return static_cast<uint64_t>(e);
        }
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }

  std::string unknown_name(const FieldDef& f, std::string_view s) const {
    switch (f.id) {
      case kSys:
        return fmt::format(
            "no event kind '{}' (sys is one of open, close, dup, ioctl, mmap, "
            "munmap, execve, fork, exit, stat, file, mknod, symlink, readlink, chmod, unlink)",
            s);
      case kDevice:
        return fmt::format(
            "no device kind '{}' (device is one of nvidiactl, gpu, uvm, uvm-tools, "
            "modeset, caps, nvidia-other, unknown; path= matches paths)",
            s);
      case kErrno:
        return fmt::format("no errno named '{}' (write ENOTTY, EINVAL, … or a number)", s);
      default: {
        std::string hint;
        if (auto near = nearest_name(f.id, s); !near.empty()) {
          hint = fmt::format(" (did you mean {}?)", near);
        }
        return fmt::format(
            "no {} named '{}' in the tables of any branch{}; a glob such as "
            "'*{}*' matches by pattern",
            f.name, s, hint, s);
      }
    }
  }

  // The known name closest to a misspelt one (edit distance at most a third of its length).
  std::string_view nearest_name(FieldId id, std::string_view s) const {
    std::string_view best;
    size_t best_d = s.size() / 3 + 1;
    auto consider = [&](std::string_view n) {
      if (n.size() > s.size() + best_d || s.size() > n.size() + best_d) return;
      size_t d = edit_distance(s, n);
      if (d < best_d) {
        best_d = d;
        best = n;
      }
    };
    if (id == kStatus) {
      for (const StatusEntry& e : t_.statuses()) consider(e.name);
    } else if (id == kClass) {
      for (const ClassEntry& e : t_.classes()) consider(e.name);
    } else if (id == kCtrl) {
      for (const CtrlEntry& e : t_.controls()) consider(e.name);
    } else if (id == kCall) {
      for (const EscapeEntry& e : t_.escapes()) consider(e.name);
      for (const UvmEntry& e : t_.uvm_ioctls()) consider(e.name);
    }
    return best;
  }

  static size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t up = row[j];
        row[j] = std::min(
            {row[j] + 1, row[j - 1] + 1, diag + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  }

  std::string_view s_;
  const Tables& t_;
  std::vector<EventFilter::Node>& nodes_;
  size_t pos_ = 0;
  Token tok_;
  Error error_;
};

}  // namespace

Result<EventFilter> EventFilter::parse(std::string_view expr, const Tables& tables) {
  EventFilter f;
  f.tables_ = &tables;
  if (expr.size() > 65536) {
    return make_error("--filter", "", std::nullopt, "longer than 65536 characters");
  }
  if (expr.find_first_not_of(" \t\n") == std::string_view::npos) return f;
  Parser p(expr, tables, f.nodes_);
  auto root = p.parse();
  if (!root) return root.error();
  f.root_ = *root;
  for (const EventFilter::Node& n : f.nodes_) {
    f.uses_api_ |= n.kind == EventFilter::Node::kCompare && n.field == filter_detail::kApi;
  }
  return f;
}

}  // namespace cudatool::trace
