#include "analysis/xref_sqlite.hpp"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>

#include "analysis/driver_tables.hpp"
#include "analysis/function_names.hpp"
#include "analysis/xrefs.hpp"
#include "base/helper_thread.hpp"
#include "base/prefault.hpp"

namespace cudatool {

namespace {

// The schema; docs/xrefs.md documents every column. Addresses are integers (library addresses,
// below 2^63), so that `printf('0x%x', site)` and ranges work in SQL.
constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE sections(name TEXT, address INTEGER, size INTEGER, offset INTEGER, flags TEXT);
CREATE TABLE functions(id INTEGER PRIMARY KEY, start INTEGER, "end" INTEGER, size INTEGER,
                       section TEXT, name TEXT, fde INTEGER);
CREATE TABLE function_names(function_id INTEGER, name TEXT, source TEXT);
CREATE TABLE refs(site INTEGER, target INTEGER, kind TEXT, conditional INTEGER, branch INTEGER,
                  from_function INTEGER, target_function INTEGER);
CREATE TABLE strings(address INTEGER PRIMARY KEY, section TEXT, text TEXT);
CREATE TABLE plt(address INTEGER PRIMARY KEY, name TEXT, got INTEGER, section TEXT);
CREATE TABLE got(address INTEGER PRIMARY KEY, name TEXT, defined INTEGER);
CREATE TABLE imports(name TEXT, version TEXT, library TEXT, type TEXT, binding TEXT);
CREATE TABLE exports(name TEXT, address INTEGER, size INTEGER, type TEXT, binding TEXT,
                     version TEXT, base TEXT, api_version INTEGER, variant TEXT, domain TEXT,
                     function_id INTEGER);
CREATE TABLE procaddress(api TEXT, cuda_version INTEGER, flags TEXT, entry INTEGER,
                         function INTEGER, export TEXT);
CREATE TABLE export_tables(uuid TEXT, table_name TEXT, address INTEGER, slot INTEGER,
                           slot_address INTEGER, kind TEXT, value INTEGER, slot_name TEXT,
                           export TEXT);
CREATE TABLE dispatch(export TEXT, wrapper INTEGER, kind TEXT, slot INTEGER,
                      implementation INTEGER);
CREATE TABLE errors(code INTEGER, name TEXT, description TEXT, address INTEGER);
CREATE INDEX refs_by_target ON refs(target);
CREATE INDEX refs_by_target_function ON refs(target_function) WHERE target_function IS NOT NULL;
)sql";

// An index whose keys only grow as the rows go in exists before them, each entry appended; the
// others are made after the rows, by one sort each. The rows of refs go in by target, then site
// (XrefIndex::by_target()): refs_by_target and refs_by_target_function (the function holding a
// target only grows with it) are appended, refs_by_from is sorted, on (from_function, site) so
// that a function's references still come by site. Rows by site instead appended refs_by_from
// and sorted the other two: 0.02 s more on 580.159.04. (functions go in by start too, but they
// are written beside the sweep, where appending to functions_by_start made `index` 4-6 ms slower
// than sorting it after.)
// refs_by_from and refs_by_target_function leave out the rows without a function (pointers in
// data, references into data): a lookup `= id` (every view and documented query) finds the
// same rows, and the two indexes cost 0.12 s instead of 0.2 s on 580.159.04. An `IS NULL` query
// scans.
//
// The functions' indexes are made on a second thread while this one gathers the rows of refs
// (Filler::prepare_refs); the others after all rows.
constexpr const char* kFunctionIndexes = R"sql(
CREATE INDEX functions_by_start ON functions(start);
CREATE INDEX functions_by_name ON functions(name);
CREATE INDEX function_names_by_name ON function_names(name);
CREATE INDEX function_names_by_function ON function_names(function_id);
)sql";
constexpr const char* kIndexes = R"sql(
CREATE INDEX refs_by_from ON refs(from_function, site) WHERE from_function IS NOT NULL;
CREATE INDEX plt_by_name ON plt(name);
CREATE INDEX exports_by_name ON exports(name);
CREATE VIEW calls AS
  SELECT r.site, r.kind, r.from_function, f.name AS caller, r.target, r.target_function,
         g.name AS callee, p.name AS import
  FROM refs r LEFT JOIN functions f ON f.id = r.from_function
              LEFT JOIN functions g ON g.id = r.target_function
              LEFT JOIN plt p ON p.address = r.target
  WHERE r.kind IN ('call', 'tail_jump');
CREATE VIEW import_calls AS
  SELECT p.name AS import, r.site, r.kind, r.from_function, f.name AS function
  FROM plt p JOIN refs r ON r.target = p.address AND r.kind IN ('call', 'tail_jump')
             LEFT JOIN functions f ON f.id = r.from_function;
CREATE VIEW string_refs AS
  SELECT s.address, s.text, r.site, r.kind, r.from_function, f.name AS function
  FROM strings s JOIN refs r ON r.target = s.address AND r.kind IN ('lea', 'pointer')
                 LEFT JOIN functions f ON f.id = r.from_function;
)sql";

class Db {
 public:
  ~Db() {
    if (db_ != nullptr) sqlite3_close(db_);
  }
  Status open(const std::string& path) {
    path_ = path;
    // No allocation statistics (SQLite's default keeps them under a global mutex on every
    // malloc). Only possible before SQLite initialises; later calls change nothing.
    static const bool configured = [] {
      sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
      // Sorts of up to 4096 pages (64 MiB) in memory: refs_by_from's (300k entries, ~10 MB on
      // 580.159.04) was otherwise cut into 2 MiB runs written to a file in /var/tmp and merged
      // back. 4 ms less; the peak RSS 68 → 78 MB.
      sqlite3_config(SQLITE_CONFIG_PMASZ, 4096);
      return true;
    }();
    (void)configured;
    // A connection used by one thread at a time: no mutexes (they were 4 % of `index` in perf).
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      return fail("open");
    }
    return Status::success();
  }
  Status exec(const char* sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      std::string m = msg != nullptr ? msg : "?";
      sqlite3_free(msg);
      return make_error(fmt::format("SQLite database {}", path_), "", std::nullopt, m);
    }
    return Status::success();
  }
  Error fail(std::string_view what) const {
    return make_error(fmt::format("SQLite database {}", path_), std::string(what), std::nullopt,
                      db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory");
  }
  sqlite3* get() { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// One prepared INSERT; values are bound in column order by the operator() overloads.
class Insert {
 public:
  Insert(Db& db, const char* table, int columns) : db_(db), table_(table) {
    std::string sql = fmt::format("INSERT INTO {} VALUES(", table);
    for (int i = 0; i < columns; ++i) sql += i == 0 ? "?" : ",?";
    sql += ")";
    ok_ = sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &st_, nullptr) == SQLITE_OK;
  }
  ~Insert() { sqlite3_finalize(st_); }
  Insert& i(int64_t v) {
    sqlite3_bind_int64(st_, ++col_, v);
    return *this;
  }
  Insert& u(uint64_t v) { return i(static_cast<int64_t>(v)); }
  Insert& t(std::string_view s) {
    sqlite3_bind_text(st_, ++col_, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // NULL when empty.
  Insert& t_or_null(std::string_view s) { return s.empty() ? null() : t(s); }
  Insert& null() {
    sqlite3_bind_null(st_, ++col_);
    return *this;
  }
  template <class T>
  Insert& opt(const std::optional<T>& v) {
    return v ? i(static_cast<int64_t>(*v)) : null();
  }
  // Executes the row; the first failure is kept.
  void row() {
    if (ok_ && sqlite3_step(st_) != SQLITE_DONE) ok_ = false;
    sqlite3_reset(st_);
    col_ = 0;
    ++rows_;
  }
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] uint64_t rows() const { return rows_; }
  [[nodiscard]] const char* table() const { return table_; }

 private:
  Db& db_;
  const char* table_;
  sqlite3_stmt* st_ = nullptr;
  int col_ = 0;
  bool ok_ = false;
  uint64_t rows_ = 0;
};

std::string section_flags(const elf::SectionHeader& s) {
  std::string f;
  if ((s.sh_flags & SHF_WRITE) != 0) f += 'W';
  if ((s.sh_flags & SHF_ALLOC) != 0) f += 'A';
  if ((s.sh_flags & SHF_EXECINSTR) != 0) f += 'X';
  return f;
}

// The rows of `refs` as an eponymous virtual table over the XrefIndex's references, so that one
// INSERT ... SELECT copies them inside SQLite's own loop: binding seven values and stepping a
// prepared INSERT per row took 0.145 s of `index` on 580.159.04 (359k rows).
struct RefsSource {
  std::span<const Ref> refs;           // in the order the rows go in
  std::span<const int32_t> target_fn;  // of each of refs: a functions.id, -1 for NULL
};

struct RefsVtab : sqlite3_vtab {
  const RefsSource* src = nullptr;
};

struct RefsCursor : sqlite3_vtab_cursor {
  size_t i = 0;
};

int refs_connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  int rc = sqlite3_declare_vtab(db,
                                "CREATE TABLE x(site, target, kind, conditional, branch, "
                                "from_function, target_function)");
  if (rc != SQLITE_OK) return rc;
  auto* v = new RefsVtab();
  v->src = static_cast<const RefsSource*>(aux);
  *out = v;
  return SQLITE_OK;
}
int refs_disconnect(sqlite3_vtab* v) {
  delete static_cast<RefsVtab*>(v);
  return SQLITE_OK;
}
int refs_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  info->estimatedCost = 1e6;
  return SQLITE_OK;
}
int refs_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = new RefsCursor();
  return SQLITE_OK;
}
int refs_close(sqlite3_vtab_cursor* c) {
  delete static_cast<RefsCursor*>(c);
  return SQLITE_OK;
}
int refs_filter(sqlite3_vtab_cursor* c, int, const char*, int, sqlite3_value**) {
  static_cast<RefsCursor*>(c)->i = 0;
  return SQLITE_OK;
}
int refs_next(sqlite3_vtab_cursor* c) {
  ++static_cast<RefsCursor*>(c)->i;
  return SQLITE_OK;
}
int refs_eof(sqlite3_vtab_cursor* c) {
  auto* cur = static_cast<RefsCursor*>(c);
  return cur->i >= static_cast<RefsVtab*>(cur->pVtab)->src->refs.size() ? 1 : 0;
}
int refs_column(sqlite3_vtab_cursor* c, sqlite3_context* ctx, int col) {
  auto* cur = static_cast<RefsCursor*>(c);
  const RefsSource& src = *static_cast<RefsVtab*>(cur->pVtab)->src;
  const Ref& r = src.refs[cur->i];
  switch (col) {
    case 0:
      sqlite3_result_int64(ctx, static_cast<int64_t>(r.site));
      break;
    case 1:
      sqlite3_result_int64(ctx, static_cast<int64_t>(r.target));
      break;
    case 2: {
      std::string_view k = ref_kind_name(r.kind);  // a literal: no copy
      sqlite3_result_text(ctx, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
      break;
    }
    case 3:
      sqlite3_result_int(ctx, (r.flags & Ref::kConditional) != 0);
      break;
    case 4:
      sqlite3_result_int(ctx, (r.flags & Ref::kBranch) != 0);
      break;
    case 5:
      if (r.from >= 0)
        sqlite3_result_int64(ctx, r.from);
      else
        sqlite3_result_null(ctx);
      break;
    default:
      if (src.target_fn[cur->i] >= 0)
        sqlite3_result_int64(ctx, src.target_fn[cur->i]);
      else
        sqlite3_result_null(ctx);
      break;
  }
  return SQLITE_OK;
}
int refs_rowid(sqlite3_vtab_cursor* c, sqlite3_int64* out) {
  *out = static_cast<sqlite3_int64>(static_cast<RefsCursor*>(c)->i);
  return SQLITE_OK;
}

// Eponymous only (no xCreate): `SELECT FROM cudatool_refs` works, nothing enters the schema.
const sqlite3_module* refs_module() {
  static const sqlite3_module m = [] {
    sqlite3_module x{};
    x.xConnect = refs_connect;
    x.xBestIndex = refs_best_index;
    x.xDisconnect = refs_disconnect;
    x.xDestroy = refs_disconnect;
    x.xOpen = refs_open;
    x.xClose = refs_close;
    x.xFilter = refs_filter;
    x.xNext = refs_next;
    x.xEof = refs_eof;
    x.xColumn = refs_column;
    x.xRowid = refs_rowid;
    return x;
  }();
  return &m;
}

Status copy_refs(Db& db, std::span<const Ref> refs, std::span<const int32_t> target_fn) {
  RefsSource src{refs, target_fn};
  if (sqlite3_create_module_v2(db.get(), "cudatool_refs", refs_module(), &src, nullptr) !=
      SQLITE_OK) {
    return db.fail("refs");
  }
  Status st = db.exec("INSERT INTO refs SELECT * FROM cudatool_refs");
  // The module is dropped with the source it points to.
  sqlite3_create_module_v2(db.get(), "cudatool_refs", nullptr, nullptr, nullptr);
  return st;
}

// Index entries and distinct keys, keys being small integers (function ids).
class KeyCount {
 public:
  explicit KeyCount(size_t keys) : seen_(keys, false) {}
  void add(uint64_t key) {
    ++entries_;
    if (key >= seen_.size()) seen_.resize(key + 1, false);
    if (!seen_[key]) {
      seen_[key] = true;
      ++distinct_;
    }
  }
  [[nodiscard]] uint64_t entries() const { return entries_; }
  [[nodiscard]] uint64_t distinct() const { return distinct_; }

 private:
  std::vector<bool> seen_;
  uint64_t entries_ = 0, distinct_ = 0;
};

// An index's sqlite_stat1 row as ANALYZE writes it (https://sqlite.org/fileformat2.html#stat1tab,
// analyze.c): the entries, then for each leading run of its columns the entries per distinct
// value rounded up, with 2 made 1 when the values are nearly unique.
std::string stat1_text(uint64_t entries, std::initializer_list<uint64_t> distinct) {
  std::string out = std::to_string(entries);
  for (uint64_t d : distinct) {
    uint64_t per_key = (entries + d - 1) / d;
    if (per_key == 2 && entries * 10 <= d * 11) per_key = 1;
    out += ' ';
    out += std::to_string(per_key);
  }
  return out;
}

// Fills the tables of the index, one group at a time.
struct Filler {
  Db& db;
  DriverImage& img;
  const FunctionMap& map;
  IndexStats& stats;
  std::span<const Function> fns = map.functions();
  // Rows and distinct keys of the two partial refs indexes, counted while the rows are written.
  KeyCount from_functions{fns.size()}, target_functions{fns.size()};
  uint64_t distinct_targets = 0;  // of refs (refs_by_target's keys)
  uint64_t from_sites = 0;        // distinct (from_function, site) of refs_by_from

  // Closes one table's insert: its error, or its row count into the stats.
  Status done(Insert& ins) {
    if (!ins.ok()) return db.fail(fmt::format("INSERT INTO {}", ins.table()));
    stats.rows.emplace_back(ins.table(), ins.rows());
    return Status::success();
  }

  // meta, sections, functions and function_names.
  Status image() {
    Status st;
    {
      Insert ins(db, "meta", 2);
      auto kv = [&](std::string_view k, std::string_view v) { ins.t(k).t(v).row(); };
      kv("schema", kIndexSchema);
      kv("path", img.path());
      kv("build_id", img.build_id().value_or(""));
      kv("driver_version", img.driver_version(false).best().value_or(""));
      kv("file_size", std::to_string(img.bytes().size()));
      kv("cudatool_version", CUDATOOL_VERSION);
      if (!(st = done(ins))) return st;
    }
    {
      Insert ins(db, "sections", 5);
      for (const auto& s : img.elf().sections()) {
        if (s.index == 0) continue;
        ins.t(s.name).u(s.sh_addr).u(s.sh_size).u(s.sh_offset).t(section_flags(s)).row();
      }
      if (!(st = done(ins))) return st;
    }
    {
      Insert ins(db, "functions", 7);
      Insert names(db, "function_names", 3);
      for (size_t i = 0; i < fns.size(); ++i) {
        const Function& f = fns[i];
        ins.u(i).u(f.start).u(f.end()).u(f.size).t_or_null(map.exec_section(f.start));
        ins.t(map.display_name(f)).u(f.fde).row();
        for (const auto& n : map.names(f)) names.u(i).t(n.name).t(n.source).row();
      }
      if (!(st = done(ins))) return st;
      if (!(st = done(names))) return st;
    }
    return Status::success();
  }

  // The rows of refs in the order they go in (by target, then site), with the function each
  // lands in (-1: none, or a PLT entry), looked up once per target (57k of 359k refs on
  // 580.159.04); and the counts of the planner's statistics. Gathered once here, the rows are
  // then read in order: reading them through by_target() row by row, column by column, cost
  // 9 ms more in cache misses.
  std::vector<Ref> rows{};
  std::vector<int32_t> target_fn{};
  void prepare_refs(const XrefIndex& x) {
    const auto refs = x.refs();
    const auto order = x.by_target();
    rows.reserve(order.size());
    target_fn.reserve(order.size());
    prefault_capacity(rows);
    prefault_capacity(target_fn);
    int32_t fn = -1;
    for (size_t k = 0; k < order.size(); ++k) {
      const Ref& r = refs[order[k]];
      if (k == 0 || r.target != rows.back().target) {
        ++distinct_targets;
        const Function* g = x.plt_at(r.target) != nullptr ? nullptr : map.find(r.target);
        fn = g != nullptr ? static_cast<int32_t>(g - fns.data()) : -1;
      }
      rows.push_back(r);
      target_fn.push_back(fn);
      if (fn >= 0) target_functions.add(static_cast<uint64_t>(fn));
    }
    // refs() holds a site's references side by side (code by address, then data by slot).
    const Ref* last = nullptr;
    for (const Ref& r : refs) {
      if (r.from < 0) continue;
      from_functions.add(static_cast<uint64_t>(r.from));
      if (last == nullptr || r.site != last->site || r.from != last->from) ++from_sites;
      last = &r;
    }
  }

  // refs, strings, plt and got: the cross references (prepare_refs first).
  Status xrefs() {
    const XrefIndex& x = img.facet<XrefIndex>();
    Status st;
    {
      if (!(st = copy_refs(db, rows, target_fn))) return st;
      stats.rows.emplace_back("refs", x.refs().size());
    }
    {
      Insert ins(db, "strings", 3);
      for (const auto& s : x.strings()) ins.u(s.address).t(s.section).t(s.text).row();
      if (!(st = done(ins))) return st;
    }
    {
      Insert plt(db, "plt", 4);
      for (const auto& p : x.plt()) plt.u(p.address).t(p.name).u(p.got_slot).t(p.section).row();
      if (!(st = done(plt))) return st;
      Insert got(db, "got", 3);
      uint64_t last = ~uint64_t{0};
      for (const auto& g : x.got()) {
        if (g.address == last) continue;  // a slot relocated twice: the PRIMARY KEY keeps one
        last = g.address;
        got.u(g.address).t(g.name).i(g.defined).row();
      }
      if (!(st = done(got))) return st;
    }
    return Status::success();
  }

  // imports and exports.
  Status symbols() {
    Status st;
    {
      Insert ins(db, "imports", 5);
      for (const auto& im : img.imports()) {
        ins.t(im.sym.name).t_or_null(im.version).t_or_null(im.library);
        ins.t(elf::symbol_type_name(im.sym.type())).t(elf::symbol_binding_name(im.sym.binding()));
        ins.row();
      }
      if (!(st = done(ins))) return st;
    }
    {
      Insert ins(db, "exports", 11);
      for (const auto& e : img.exports()) {
        ins.t(e.sym.name).u(e.sym.st_value).u(e.sym.st_size);
        ins.t(elf::symbol_type_name(e.sym.type())).t(elf::symbol_binding_name(e.sym.binding()));
        ins.t_or_null(e.version).t_or_null(e.api.base);
        if (e.api.version != 0)
          ins.i(e.api.version);
        else
          ins.null();
        ins.t_or_null(cuda::variant_name(e.api.variant)).t_or_null(e.api.domain);
        if (const Function* f = map.at(e.sym.st_value))
          ins.u(static_cast<uint64_t>(f - fns.data()));
        else
          ins.null();
        ins.row();
      }
      if (!(st = done(ins))) return st;
    }
    return Status::success();
  }

  // procaddress, export_tables, dispatch and errors: the driver's own tables.
  Status driver_tables() {
    auto& tables = img.facet<DriverTables>();
    Status st;
    {
      Insert ins(db, "procaddress", 6);
      for (const auto& r : tables.procaddress().rows) {
        ins.t(r.api).u(r.cuda_version).t(cuda::proc_flags_name(r.flags)).u(r.entry_vaddr);
        ins.u(r.function).t_or_null(r.export_name).row();
      }
      if (!(st = done(ins))) return st;
    }
    {
      Insert ins(db, "export_tables", 9);
      for (const auto& t : tables.export_tables().tables) {
        std::string uuid = cuda::format_uuid(t.uuid);
        std::string_view name = t.known != nullptr ? t.known->name : std::string_view();
        for (const auto& s : t.slots) {
          ins.t(uuid).t_or_null(name).u(t.table_vaddr).u(s.index).u(s.vaddr);
          ins.t(cuda::slot_kind_name(s.kind)).u(s.value).t_or_null(s.known_name);
          ins.t_or_null(s.export_name).row();
        }
      }
      if (!(st = done(ins))) return st;
    }
    {
      Insert ins(db, "dispatch", 5);
      for (const auto& e : tables.dispatch().entries) {
        ins.t(e.export_name).u(e.wrapper).t(cuda::wrapper_kind_name(e.kind));
        if (e.slot != 0)
          ins.u(e.slot);
        else
          ins.null();
        if (e.implementation != 0)
          ins.u(e.implementation);
        else
          ins.null();
        ins.row();
      }
      if (!(st = done(ins))) return st;
    }
    {
      Insert ins(db, "errors", 4);
      for (const auto& e : tables.errors().entries)
        ins.u(e.code).t(e.name).t(e.description).u(e.vaddr).row();
      if (!(st = done(ins))) return st;
    }
    return Status::success();
  }
};

// The tables in the order they are created. Where the references are still to be found, meta,
// sections, functions and function_names (~18 ms on 580.159.04; they need only the map) are
// written on the sweep's second thread once it has swept its half, while this one finishes the
// references: 27 ms less. (The driver's tables and the symbols there too gave nothing more: what
// they compute on first use must then be computed before.)
Status fill(Filler& f) {
  DriverImage& img = f.img;
  Status st;
  if (img.has_facet<XrefIndex>()) {
    st = f.image();
  } else {
    // What image() reads of `img` that is computed on first use, computed now: the index's
    // builder reads some of it too, and neither then creates anything the other reads.
    img.build_id();
    img.driver_version(false);
    img.adopt_facet(std::make_shared<XrefIndex>(img, [&] { st = f.image(); }));
  }
  if (!st) return st;
  // The functions' indexes (~11 ms on 580.159.04) on a second thread while this one gathers the
  // rows of refs (~7 ms): 4.6 ms less (alternate.py, 40 pairs). The connection is the other
  // thread's until it is joined.
  {
    std::optional<HelperThread> helper;  // joined on leaving the block
    if (HelperThread::another_cpu()) {
      try {
        helper.emplace([&] { st = f.db.exec(kFunctionIndexes); });
      } catch (const std::system_error&) {
        // no thread to be had: one after the other, below
      }
    }
    f.prepare_refs(img.facet<XrefIndex>());
    if (!helper) st = f.db.exec(kFunctionIndexes);
  }
  if (!st) return st;
  if (!(st = f.xrefs())) return st;
  if (!(st = f.symbols())) return st;
  return f.driver_tables();
}

// The statistics of the query planner, as ANALYZE writes them: without them a LIKE over
// string_refs or a join through refs scans all of refs (0.08 s on 580.159.04; 3 ms with them).
// ANALYZE reads every table but refs; refs' three rows come from the counts kept while it was
// written (ANALYZE reading its 360k rows again took 0.05 s of `index` on 580.159.04). A SQLite
// that keeps samples too (STAT4) runs the whole ANALYZE.
Status planner_statistics(Db& db, const XrefIndex& x, const Filler& f) {
  if (sqlite3_compileoption_used("ENABLE_STAT4") != 0) return db.exec("ANALYZE");
  std::vector<std::string> tables;
  {
    sqlite3_stmt* q = nullptr;
    const char* sql =
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' AND "
        "name <> 'refs'";
    if (sqlite3_prepare_v2(db.get(), sql, -1, &q, nullptr) != SQLITE_OK) return db.fail("ANALYZE");
    while (sqlite3_step(q) == SQLITE_ROW) {
      tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)));
    }
    sqlite3_finalize(q);
  }
  Status st;
  for (const std::string& t : tables) {
    if (!(st = db.exec(fmt::format("ANALYZE \"{}\"", t).c_str()))) return st;
  }
  Insert row(db, "sqlite_stat1", 3);
  auto add = [&](const char* index, uint64_t entries, std::initializer_list<uint64_t> distinct) {
    if (entries > 0) row.t("refs").t(index).t(stat1_text(entries, distinct)).row();
  };
  add("refs_by_target", x.refs().size(), {f.distinct_targets});
  add("refs_by_from", f.from_functions.entries(), {f.from_functions.distinct(), f.from_sites});
  add("refs_by_target_function", f.target_functions.entries(), {f.target_functions.distinct()});
  return row.ok() ? Status::success() : db.fail("INSERT INTO sqlite_stat1");
}

}  // namespace

Result<IndexStats> write_xref_database(DriverImage& img, const std::string& path) {
  IndexStats stats;
  const bool memory = path == ":memory:";
  const std::string tmp = memory ? path : path + ".tmp";
  if (!memory) std::remove(tmp.c_str());
  {
    Db db;
    Status st = db.open(tmp);
    // As functions and xrefs name them (function_names.hpp).
    FunctionMap& map = function_map_with_names(img);
    Filler f{db, img, map, stats};
    // No journal and no syncs while the file is built: it is renamed into place only when
    // complete, so a crash leaves FILE.tmp, never a half-written FILE. 16 KiB pages: 0.012 s
    // less than 8 KiB on 580.159.04 (fewer page splits), and the file is 1 % larger.
    if (st)
      st = db.exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA page_size=16384;");
    if (st) st = db.exec(kSchema);
    if (st) st = db.exec("BEGIN");
    if (st) st = fill(f);
    if (st) st = db.exec(kIndexes);
    if (st) st = db.exec("COMMIT");
    if (st) st = planner_statistics(db, img.facet<XrefIndex>(), f);
    if (!st) {
      if (!memory) std::remove(tmp.c_str());
      return st.error();
    }
  }
  if (memory) return stats;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return make_error(fmt::format("SQLite database {}", path), "rename", std::nullopt,
                      fmt::format("cannot rename {} into place", tmp));
  }
  struct stat sb {};
  if (::stat(path.c_str(), &sb) == 0) stats.file_size = static_cast<uint64_t>(sb.st_size);
  return stats;
}

}  // namespace cudatool
