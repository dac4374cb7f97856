/* dump_jobs(argc, argv, run): the batch mode of the test programs that a
 * Python script runs once per case (a process start loads
 * libtorch, 0.1-0.3 s plain and about 1 s under ASan, more than most cases
 * take). `PROG --jobs FILE` runs run(argc, argv) once for each line of FILE,
 * the line's words (split on spaces and tabs, no quoting) after PROG as its
 * arguments, in order, in this one process, and stops at the first nonzero
 * return; after each case's own output stdout gets the line "@@end", so a
 * script can split the output by case. Each case must leave nothing behind that the next could see (the
 * dumps seed their generators per case). Returns -1 when argv is not the
 * batch form, so that main runs the single case instead. */
#ifndef CTORCH_TESTS_DUMP_JOBS_H
#define CTORCH_TESTS_DUMP_JOBS_H

#include <stdio.h>
#include <string.h>

#define DUMP_JOBS_MAX_LINE 8192
#define DUMP_JOBS_MAX_ARGS 128

static int dump_jobs(int argc, char **argv, int (*run)(int, char **)) {
  static char line[DUMP_JOBS_MAX_LINE];
  char *args[DUMP_JOBS_MAX_ARGS + 1];
  FILE *f;
  int rc = 0, n = 0;
  if (argc != 3 || strcmp(argv[1], "--jobs") != 0) return -1;
  if (!(f = fopen(argv[2], "r"))) {
    perror(argv[2]);
    return 2;
  }
  while (rc == 0 && fgets(line, sizeof line, f)) {
    int k = 0;
    char *w;
    if (!strchr(line, '\n') && !feof(f)) {
      fprintf(stderr, "%s: a line longer than %d bytes\n", argv[2], DUMP_JOBS_MAX_LINE - 1);
      rc = 2;
      break;
    }
    args[k++] = argv[0];
    for (w = strtok(line, " \t\r\n"); w && k < DUMP_JOBS_MAX_ARGS; w = strtok(NULL, " \t\r\n")) args[k++] = w;
    if (w) {
      fprintf(stderr, "%s: a line with more than %d words\n", argv[2], DUMP_JOBS_MAX_ARGS - 1);
      rc = 2;
      break;
    }
    args[k] = NULL;
    if (k > 1) {
      rc = run(k, args);
      printf("@@end\n");
      fflush(stdout);
      ++n;
    }
  }
  fclose(f);
  if (rc == 0 && n == 0) {
    fprintf(stderr, "%s: no jobs\n", argv[2]);
    rc = 2;
  }
  return rc;
}

#endif
