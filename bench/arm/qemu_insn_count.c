/* qemu_insn_count: a qemu TCG plugin that counts the guest instructions a program
 * executes under qemu-user, in total, per function symbol and between "marks", so that
 * an ARM kernel change is judged by a number that does not move from run to run (unlike
 * any timing under qemu). bench/arm/insn_count.py builds and drives it.
 *
 *   gcc -shared -fPIC -O2 -Wall -Wextra -o libqemu_insn_count.so qemu_insn_count.c
 *   qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu cortex-a72 \
 *     -plugin ./libqemu_insn_count.so,mark=kestrel_insn_mark,out=counts.txt,top=40 -d plugin PROGRAM ARGS
 *
 * Arguments (each "key=value"):
 *   mark=NAME  a function symbol (as in the symbol table: C++ names mangled); every time
 *              execution reaches its entry, the count since the previous mark (or the
 *              start) is recorded. Up to 8 mark= arguments; they share one sequence.
 *              kestrel-bench --insn-marks calls kestrel_insn_mark() once before each
 *              inference and after every layer; for ncnn, insn_count.py marks the entries
 *              of Net::create_extractor, NetPrivate::do_forward_layer and ~Extractor.
 *   out=FILE   write the report there instead of through qemu_plugin_outs (qemu's log:
 *              stderr with -d plugin, or the -D file).
 *   top=N      how many functions the per-symbol list shows (default 30; 0: none).
 *
 * Report, one record per line, space-separated (the function name last, as it is):
 *   total INSNS FMAS
 *   vcpus N
 *   mark K INSNS FMAS TOTAL_AT_MARK NAME   (K from 0 in execution order; INSNS and FMAS
 *                                           since the previous mark)
 *   symbol INSNS FMAS NAME                 (the top N by INSNS, most first)
 * FMAS counts the floating-point multiply-add instructions among them (fmla, fmls, fmadd,
 * fmsub, fnmadd, fnmsub; vector or scalar, any lane count), told from qemu's
 * disassembly at translation time: against a layer's multiply-adds it shows how close
 * the code is to one 4-lane FMLA per 4 MACs, and how many other instructions it needs.
 *
 * How it counts: every translated block (TB) gets an inline "add n_insns" to the total
 * and another to the counter of its first instruction's symbol (qemu_plugin_insn_symbol,
 * which qemu 7.2 has; it knows the main executable's symbol table only, so link the
 * program statically to see libc and libgomp by name; a TB is charged to the symbol it
 * starts in). The add runs when the TB starts, for all of its instructions: a TB that a
 * fault or a syscall leaves early is charged in full (a handful of instructions per
 * syscall; they cancel in the differences the driver takes).
 *
 * Marks: the first TB that starts in a mark symbol starts at its entry (a function is
 * first entered through a call), so that address is taken as the entry and only TBs
 * starting there record a mark; TBs that start inside the function later (after a call
 * it makes returns) do not. A function whose entry is also a loop head would mark every
 * turn: mark functions that are not (kestrel_insn_mark is an empty asm and a return).
 * The mark's own TB may already be counted when it records (the inline add and the
 * callback both run at the TB's start, in qemu's order), a constant per mark.
 *
 * Threads: written for ONE guest thread. In qemu-user every guest thread is a vCPU, and
 * the inline adds of several vCPUs hit the same counters without atomics: with more
 * than one thread running at once the totals can lose increments and the marks of the
 * threads interleave. "vcpus" reports how many vCPUs (threads) were ever started, so the
 * driver can warn: with vcpus > 1 a count is exact only if the other threads were idle
 * (blocked, not spinning) while the counted one ran.
 *
 * Debian 12 ships no qemu-plugin.h (qemu 7.2, plugin API version 1). The few types and
 * functions used here are declared below by hand, as in qemu 7.2's
 * include/qemu/qemu-plugin.h; the functions are exported by the qemu-aarch64 binary.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Declarations from qemu 7.2's qemu-plugin.h (API version 1), by hand. ---- */
typedef uint64_t qemu_plugin_id_t;

typedef struct qemu_info_t {
  const char *target_name;
  struct {
    int min;
    int cur;
  } version;
  bool system_emulation;
  union {
    struct {
      int smp_vcpus;
      int max_vcpus;
    } system;
  };
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);

void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const char *qemu_plugin_insn_symbol(const struct qemu_plugin_insn *insn);
char *qemu_plugin_insn_disas(const struct qemu_plugin_insn *insn);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv);
/* ---- End of the declarations. ---- */

static uint64_t total;  /* every TB adds its instruction count here, inline */
static uint64_t fmas;   /* and its multiply-add instructions here */
static unsigned vcpus;  /* guest threads started (vCPU indices seen + 1) */

/* Per-symbol counters live in a fixed open-addressing table: the inline adds hold the
 * counters' addresses, so they must never move. qemu-user translates under its mmap
 * lock, one TB at a time, so the table needs no lock of its own. */
#define SYMBOL_SLOTS (1u << 16)
struct symbol_count {
  const char *name; /* NULL: free slot */
  uint64_t insns, fmas;
};
static struct symbol_count symbols[SYMBOL_SLOTS];
static struct symbol_count unknown = {"[unknown]", 0, 0}; /* no symbol, or the table is full */

#define MAX_MARKS 8
struct mark_symbol {
  const char *name;
  uint64_t entry;   /* the function's entry, once its first TB is seen */
  bool entry_known;
};
static struct mark_symbol mark_symbols[MAX_MARKS];
static int n_mark_symbols;
struct mark {
  uint64_t total, fmas; /* the totals when the mark was reached */
  int symbol;           /* which mark_symbols entry */
};
static struct mark *marks;
static size_t n_marks, cap_marks;

static const char *out_path;
static int top_n = 30;

static struct symbol_count *symbol_counter(const char *name) {
  if (!name) return &unknown;
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = name; *p; ++p) h = (h ^ (uint8_t)*p) * 16777619u;
  for (uint32_t probe = 0; probe < SYMBOL_SLOTS; ++probe) {
    struct symbol_count *s = &symbols[(h + probe) & (SYMBOL_SLOTS - 1)];
    if (!s->name) {
      s->name = strdup(name);
      return s->name ? s : &unknown;
    }
    if (strcmp(s->name, name) == 0) return s;
  }
  return &unknown;
}

/* The half-precision FMLA/FMLS (vector, and by element), by encoding: qemu 7.2's
 * disassembler does not name them. */
static bool is_f16_fma(const struct qemu_plugin_insn *insn) {
  if (qemu_plugin_insn_size(insn) != 4) return false;
  uint32_t w;
  memcpy(&w, qemu_plugin_insn_data(insn), sizeof w);
  const uint32_t by_element = w & 0xBFC0B400u;  /* opcode bits 15-12 as 0?01: FMLA or FMLS */
  const uint32_t vector = w & 0xBF60FC00u;      /* bit 23 (a) free: FMLA or FMLS */
  return by_element == 0x0F001000u || vector == 0x0E400C00u;
}

/* fmla, fmls (vector, by element) and the scalar fused multiply-adds, by mnemonic. */
static bool is_fma(const struct qemu_plugin_insn *insn) {
  if (is_f16_fma(insn)) return true;
  char *d = qemu_plugin_insn_disas(insn);
  if (!d) return false;
  const char *p = d + strspn(d, " \t");
  const size_t n = strcspn(p, " \t");
  bool fma = false;
  static const char *const names[] = {"fmla", "fmls", "fmadd", "fmsub", "fnmadd", "fnmsub"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (n == strlen(names[i]) && strncmp(p, names[i], n) == 0) fma = true;
  }
  free(d); /* qemu's g_strdup: g_free is free */
  return fma;
}

static void on_mark(unsigned int vcpu_index, void *userdata) {
  (void)vcpu_index;
  if (n_marks == cap_marks) {
    size_t cap = cap_marks ? 2 * cap_marks : 4096;
    struct mark *m = realloc(marks, cap * sizeof *m);
    if (!m) return; /* out of memory: later marks are lost; the driver sees too few */
    marks = m;
    cap_marks = cap;
  }
  marks[n_marks].total = total;
  marks[n_marks].fmas = fmas;
  marks[n_marks].symbol = (int)(intptr_t)userdata;
  ++n_marks;
}

static void on_tb_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  const size_t n = qemu_plugin_tb_n_insns(tb);
  const char *sym = n ? qemu_plugin_insn_symbol(qemu_plugin_tb_get_insn(tb, 0)) : NULL;
  size_t n_fma = 0;
  for (size_t i = 0; i < n; ++i) n_fma += is_fma(qemu_plugin_tb_get_insn(tb, i));
  struct symbol_count *s = symbol_counter(sym);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total, n);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &s->insns, n);
  if (n_fma) {
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &fmas, n_fma);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &s->fmas, n_fma);
  }
  for (int i = 0; sym && i < n_mark_symbols; ++i) {
    struct mark_symbol *m = &mark_symbols[i];
    if (strcmp(sym, m->name) != 0) continue;
    const uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
    if (!m->entry_known) {
      m->entry = vaddr;
      m->entry_known = true;
    }
    if (vaddr == m->entry) {
      qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, (void *)(intptr_t)i);
    }
  }
}

static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu_index) {
  (void)id;
  if (vcpu_index + 1 > vcpus) vcpus = vcpu_index + 1;
}

static int by_insns_desc(const void *a, const void *b) {
  const struct symbol_count *x = a, *y = b;
  return x->insns < y->insns ? 1 : x->insns > y->insns ? -1 : strcmp(x->name, y->name);
}

/* One line to the chosen sink. */
static void emit(FILE *f, const char *line) {
  if (f)
    fputs(line, f);
  else
    qemu_plugin_outs(line);
}

static void report_at_exit(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
  FILE *f = NULL;
  if (out_path) {
    f = fopen(out_path, "w");
    if (!f) qemu_plugin_outs("qemu_insn_count: cannot write the out= file; reporting here\n");
  }
  char line[512];
  snprintf(line, sizeof line, "total %llu %llu\n", (unsigned long long)total, (unsigned long long)fmas);
  emit(f, line);
  snprintf(line, sizeof line, "vcpus %u\n", vcpus);
  emit(f, line);
  uint64_t previous = 0, previous_fmas = 0;
  for (size_t k = 0; k < n_marks; ++k) {
    snprintf(line, sizeof line, "mark %zu %llu %llu %llu %.400s\n", k, (unsigned long long)(marks[k].total - previous),
             (unsigned long long)(marks[k].fmas - previous_fmas), (unsigned long long)marks[k].total,
             mark_symbols[marks[k].symbol].name);
    emit(f, line);
    previous = marks[k].total;
    previous_fmas = marks[k].fmas;
  }
  if (top_n > 0) {
    /* Pack the used slots (and the unknown bucket) to the front and sort them. */
    size_t used = 0;
    for (size_t i = 0; i < SYMBOL_SLOTS; ++i) {
      if (symbols[i].name) symbols[used++] = symbols[i];
    }
    if (used < SYMBOL_SLOTS && unknown.insns) symbols[used++] = unknown;
    qsort(symbols, used, sizeof symbols[0], by_insns_desc);
    for (size_t i = 0; i < used && i < (size_t)top_n; ++i) {
      snprintf(line, sizeof line, "symbol %llu %llu %.400s\n", (unsigned long long)symbols[i].insns,
               (unsigned long long)symbols[i].fmas, symbols[i].name);
      emit(f, line);
    }
  }
  if (f) fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  if (info->system_emulation) {
    qemu_plugin_outs("qemu_insn_count: written for qemu-user (one process, one guest thread)\n");
  }
  for (int i = 0; i < argc; ++i) {
    /* A copy: the names are kept for the whole run, argv is qemu's. */
    const char *a = strdup(argv[i]);
    if (!a) return -1;
    if (strncmp(a, "mark=", 5) == 0 && a[5] && n_mark_symbols < MAX_MARKS) {
      mark_symbols[n_mark_symbols++].name = a + 5;
    } else if (strncmp(a, "out=", 4) == 0 && a[4]) {
      out_path = a + 4;
    } else if (strncmp(a, "top=", 4) == 0) {
      top_n = atoi(a + 4);
    } else {
      char line[320];
      snprintf(line, sizeof line, "qemu_insn_count: unknown argument '%.200s' (mark=NAME up to 8 times, out=FILE, top=N)\n", a);
      qemu_plugin_outs(line);
      return -1;
    }
  }
  qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_translate);
  qemu_plugin_register_atexit_cb(id, report_at_exit, NULL);
  return 0;
}
