/* The guest program of the arm_insn_count test (insn_count.py --selftest): a loop of
 * exactly 4 instructions per turn, run for N and then 2N turns between marks, with N
 * read from argv so that no compiler can fold it. Built static for aarch64, run under
 * qemu-aarch64 with qemu_insn_count.so; the test checks that the plugin's total, the
 * marks and the per-symbol count of spin() move by exactly 4 instructions a turn, one of
 * them a multiply-add.
 *
 *   aarch64-linux-gnu-gcc -O2 -static -o insn_count_check insn_count_check.c
 *   insn_count_check N
 */
#include <stdlib.h>

/* The mark: its entry is what qemu_insn_count's mark=insn_count_mark watches. */
__attribute__((noinline)) void insn_count_mark(void) { __asm__ volatile("" : : : "memory"); }

/* 4 instructions a turn (fmla, add, subs, b.ne; one multiply-add), n >= 1 turns; the
 * asm is the whole loop, so the count does not depend on the compiler. */
__attribute__((noinline)) void spin(long n) {
  long a = 0;
  __asm__ volatile(
      "1:\n\t"
      "fmla v0.4s, v1.4s, v2.4s\n\t"
      "add %1, %1, #1\n\t"
      "subs %0, %0, #1\n\t"
      "b.ne 1b\n\t"
      : "+r"(n), "+r"(a)
      :
      : "cc", "v0");
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const long n = strtol(argv[1], NULL, 10);
  if (n < 1 || n > 100000000) return 2;
  insn_count_mark();
  spin(n);
  insn_count_mark();
  spin(2 * n);
  insn_count_mark();
  return 0;
}
