/*
 * Benchmark load for the environment events of `cudatool trace` (bench/env_overhead.py): N
 * stat() calls of one path (glibc: one newfstatat system call each), interleaved with M
 * getppid() calls.
 *
 *   stat_loop PATH N M
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: stat_loop PATH N M\n");
    return 2;
  }
  long n = atol(argv[2]), m = atol(argv[3]);
  long most = n > m ? n : m;
  long sink = 0;
  struct stat st;
  for (long i = 0; i < most; ++i) {
    if (i < n) sink += stat(argv[1], &st);
    if (i < m) sink += getppid();
  }
  return sink == 12345 ? 3 : 0;
}
