/* The Python bridge's container conversion: CPU time and
 * resident-memory growth of ctorch_py_to_value on a Python list of N ints
 * and of N floats (default N = 5,000,000), one conversion each, in one
 * process: build/bench/probes/pybridge_list [N] (built where
 * libctorch_python is). docs/benchmarks.md, "Handle
 * registry and scopes", has the figures and the method. */
#include <ctorch.h>
#include <ctorch_python.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Resident set in KiB, from /proc (0 where there is none). */
static long rss_kib(void) {
  long pages_total = 0, pages_rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (fscanf(f, "%ld %ld", &pages_total, &pages_rss) != 2) pages_rss = 0;
  fclose(f);
  return pages_rss * 4;
}

static int die(const char *what) {
  fprintf(stderr, "pybridge_list: %s: %s\n", what, ctorch_py_last_error());
  return 1;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 5000000;
  char src[256];
  ctorch_py_object ns, lists[2];
  const char *names[2] = {"xs", "fs"};
  int k;
  snprintf(src, sizeof src, "xs = list(range(%ld))\nfs = [i * 0.5 for i in range(%ld)]\n", n, n);
  if (ctorch_py_start(NULL, NULL) != CTORCH_OK) return die("ctorch_py_start");
  if (ctorch_py_exec(&ns, src, "pybridge_list") != CTORCH_OK) return die("ctorch_py_exec");
  for (k = 0; k < 2; ++k)
    if (ctorch_py_getattr(&lists[k], ns, names[k]) != CTORCH_OK) return die("ctorch_py_getattr");
  printf("{\"n\": %ld", n);
  for (k = 0; k < 2; ++k) {
    ctorch_value v;
    size_t size = 0;
    long r0 = rss_kib();
    double t0 = cpu_s(), t1;
    if (ctorch_py_to_value(&v, lists[k]) != CTORCH_OK) return die("ctorch_py_to_value");
    t1 = cpu_s();
    if (ctorch_value_size(&size, v) != CTORCH_OK || size != (size_t)n) {
      fprintf(stderr, "pybridge_list: %zu items, not %ld\n", size, n);
      return 1;
    }
    printf(", \"%s_cpu_s\": %.3f, \"%s_rss_mib\": %.1f", k ? "float" : "int", t1 - t0, k ? "float" : "int",
           (double)(rss_kib() - r0) / 1024.0);
    ctorch_value_free(v);
    ctorch_py_object_free(lists[k]);
  }
  printf("}\n");
  ctorch_py_object_free(ns);
  return 0;
}
