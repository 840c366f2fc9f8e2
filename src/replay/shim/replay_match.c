/* The matcher: which recorded call answers a live one (docs/replay.md, "Matching").
 *
 * Each thread of the program plays one thread role of the recording (ab's roles: per process, its
 * threads in the order they were created), taken at its first device call: the free role whose
 * calls hold an unanswered one of the same identity (the role whose next call it is, first; among
 * those, the one whose call had the same inputs, rp_input_digest). Within
 * the role, the answer is the first unanswered recorded call of that identity at or after the
 * role's position (in order), else the first unanswered one before it (out of order: the program
 * made it later than the recording did). An identity with no unanswered call left is unrecorded: an
 * RM control then gets the answer of its nearest recorded twin (polling), and the caller applies
 * the policy for the rest. */
#define _GNU_SOURCE
#include <string.h>

#include "replay_shim.h"

static const struct rp_bucket* bucket(const struct rp_ident* id, uint32_t role) {
  const struct rp_table* t = rs.t;
  if (t->n_buckets == 0) return NULL;
  const struct rp_bucket* b = (const struct rp_bucket*)((const char*)t + t->off_buckets);
  const uint32_t* lists = (const uint32_t*)((const char*)t + t->off_lists);
  uint64_t h = rp_ident_hash(id, role);
  if (h == 0) h = 1;
  uint32_t mask = t->n_buckets - 1;
  for (uint32_t i = (uint32_t)h & mask, k = 0; k < t->n_buckets; ++k, i = (i + 1) & mask) {
    if (b[i].hash == 0) return NULL;
    if (b[i].hash == h && b[i].role == role && b[i].count > 0 &&
        rp_ident_eq(&rs_event(lists[b[i].list])->id, id)) {
      return &b[i];
    }
  }
  return NULL;
}

static const uint32_t* list_of(const struct rp_bucket* b) {
  return (const uint32_t*)((const char*)rs.t + rs.t->off_lists) + b->list;
}

static int claim(uint32_t e) {
  uint8_t zero = 0;
  return __atomic_compare_exchange_n(&rs.answered[e], &zero, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED);
}

/* The first unanswered event of the bucket at or after `from`, else before it; claims it. */
static int take(const struct rp_bucket* b, uint32_t from, int* in_order) {
  const uint32_t* l = list_of(b);
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < b->count; ++i) {
      uint32_t e = l[i];
      if ((pass == 0) != (e >= from)) continue;
      if (__atomic_load_n(&rs.answered[e], __ATOMIC_RELAXED) == 0 && claim(e)) {
        *in_order = pass == 0;
        return (int)e;
      }
    }
  }
  return -1;
}

static int has_unanswered(const struct rp_bucket* b) {
  const uint32_t* l = list_of(b);
  for (uint32_t i = 0; i < b->count; ++i) {
    if (__atomic_load_n(&rs.answered[l[i]], __ATOMIC_RELAXED) == 0) return 1;
  }
  return 0;
}

static const struct rp_role* role_info(uint32_t r) {
  return (const struct rp_role*)((const char*)rs.t + rs.t->off_roles) + r;
}

/* Whether an unanswered event of bucket `b` has the inputs `digest` (0: the live call has none). */
static int has_inputs(const struct rp_bucket* b, uint32_t digest) {
  const uint32_t* l = list_of(b);
  for (uint32_t i = 0; digest != 0 && i < b->count; ++i) {
    if (__atomic_load_n(&rs.answered[l[i]], __ATOMIC_RELAXED) == 0 &&
        rs_event(l[i])->in_digest == digest) {
      return 1;
    }
  }
  return 0;
}

/* This thread's role: kept, taken over after an exec (same tid), or chosen now for `id` with
 * inputs `digest`: of the free roles that hold an unanswered call of this identity, the one whose
 * next call it is with these inputs, else one whose next call it is, else one that holds it with
 * these inputs, else the first (threads that race to the same call are told apart by what they
 * ask). */
static int my_role(const struct rp_ident* id, uint32_t digest) {
  if (rs_t.role >= 0 && rs_t.role_pid == rt_pid) return rs_t.role;
  struct rp_state* st = rs.st;
  uint32_t n = rs.t->n_roles < RP_MAX_ROLES ? rs.t->n_roles : RP_MAX_ROLES;
  int tid = rt_tid();
  for (uint32_t r = 0; r < n; ++r) {
    if (st->roles[r].owner_tid == tid && st->roles[r].owner_pid == rt_pid) {
      rs_t.role = (int)r;
      rs_t.role_pid = rt_pid;
      return (int)r;
    }
  }
  int best = -1, best_score = -1;
  rt_lock(&st->lock);
  for (uint32_t r = 0; r < n && best_score < 3; ++r) {
    if (st->roles[r].owner_tid != 0) continue;
    const struct rp_bucket* b = bucket(id, r);
    if (b == NULL || !has_unanswered(b)) continue;
    /* Whether this call is the role's next unanswered one, and with these inputs. */
    const struct rp_role* ri = role_info(r);
    int next = 0, same = 0;
    for (uint32_t e = ri->first; e < ri->first + ri->count; ++e) {
      if (__atomic_load_n(&rs.answered[e], __ATOMIC_RELAXED) == 0) {
        next = rp_ident_eq(&rs_event(e)->id, id);
        same = next && digest != 0 && rs_event(e)->in_digest == digest;
        break;
      }
    }
    if (!next) same = has_inputs(b, digest);
    int score = 2 * next + same;
    if (score > best_score) {
      best = (int)r;
      best_score = score;
    }
  }
  if (best >= 0) {
    st->roles[best].owner_tid = tid;
    st->roles[best].owner_pid = rt_pid;
    st->roles[best].hint = role_info((uint32_t)best)->first;
    rs_t.role = best;
    rs_t.role_pid = rt_pid;
  }
  rt_unlock(&st->lock);
  return best;
}

struct rs_match rs_match(const struct rp_ident* id, int twin_ok, uint32_t digest) {
  struct rs_match m = {-1, 0};
  int r = my_role(id, digest);
  if (r < 0) return m;
  struct rp_role_state* rsx = &rs.st->roles[r];
  const struct rp_bucket* b = bucket(id, (uint32_t)r);
  if (b == NULL) return m;
  int in_order = 0;
  int e = take(b, rsx->hint, &in_order);
  if (e >= 0) {
    m.event = e;
    m.outcome = in_order ? RP_OUT_ANSWERED : RP_OUT_OUT_OF_ORDER;
    if (in_order) rsx->hint = (uint32_t)e + 1;
    return m;
  }
  if (!twin_ok) return m;
  /* The nearest recorded twin of this identity to the role's position. */
  const uint32_t* l = list_of(b);
  uint32_t best = l[0], from = rsx->hint;
  for (uint32_t i = 0; i < b->count; ++i) {
    uint32_t d = l[i] >= from ? l[i] - from : from - l[i];
    uint32_t bd = best >= from ? best - from : from - best;
    if (d < bd) best = l[i];
  }
  m.event = (int)best;
  m.outcome = RP_OUT_TWIN;
  return m;
}

const struct rp_escape* rs_escape(uint32_t nr, uint32_t size) {
  const struct rp_escape* e = (const struct rp_escape*)((const char*)rs.t + rs.t->off_escapes);
  for (uint32_t i = 0; i < rs.t->n_escapes; ++i) {
    if (e[i].nr == nr && e[i].size == size) return &e[i];
  }
  return NULL;
}

const struct rp_uvm* rs_uvm(uint32_t nr) {
  const struct rp_uvm* u = (const struct rp_uvm*)((const char*)rs.t + rs.t->off_uvm);
  uint32_t lo = 0, hi = rs.t->n_uvm;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (u[mid].nr < nr) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < rs.t->n_uvm && u[lo].nr == nr ? &u[lo] : NULL;
}

int32_t rs_class_size(uint32_t cls) {
  const struct rp_class_size* c =
      (const struct rp_class_size*)((const char*)rs.t + rs.t->off_classes);
  for (uint32_t i = 0; i < rs.t->n_classes; ++i) {
    if (c[i].cls == cls) return c[i].size;
  }
  return -1;
}

int rs_is_channel_class(uint32_t cls) {
  const struct rp_class_size* c =
      (const struct rp_class_size*)((const char*)rs.t + rs.t->off_classes);
  for (uint32_t i = 0; i < rs.t->channel_class_count && i < rs.t->n_classes; ++i) {
    if (c[i].cls == cls) return 1;
  }
  return 0;
}
