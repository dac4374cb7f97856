/*
 * The command lines of lenet5.c, ddp_lenet5.c and resnet.c: every option is
 * "--name VALUE", described by one row of a table the program fills in with
 * pointers to its own variables; example_parse_args walks argv against it.
 * Header-only; include after train_device.h (--device and --amp are parsed
 * by its parse_device and parse_amp).
 *
 *   -h, --help (anywhere)       usage, exit status 0
 *   an unknown option, a bad
 *   value or a missing one      usage, exit status 2
 *
 * Numbers are read as the programs always read them (atoi, atoll, strtoull:
 * no range or syntax check); --device, --amp and choice options are checked.
 */
#ifndef CTORCH_EXAMPLE_ARGS_H
#define CTORCH_EXAMPLE_ARGS_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef CTORCH_TRAIN_DEVICE_H
#error "include train_device.h before example_args.h"
#endif

typedef enum {
  EXAMPLE_ARG_INT,    /* int, atoi */
  EXAMPLE_ARG_INT64,  /* int64_t, atoll */
  EXAMPLE_ARG_U64,    /* unsigned long long, strtoull base 10 */
  EXAMPLE_ARG_STR,    /* const char *, the argument itself */
  EXAMPLE_ARG_DEVICE, /* ctorch_device, parse_device */
  EXAMPLE_ARG_AMP,    /* int, parse_amp */
  EXAMPLE_ARG_CHOICE  /* const char *, one of `choices` */
} example_arg_kind;

typedef struct {
  const char *flag; /* "--epochs" */
  example_arg_kind kind;
  void *dest;
  const char *const *choices; /* EXAMPLE_ARG_CHOICE: NULL-terminated */
  const char **text;          /* optional: also receives the value as typed */
} example_arg;

/* Table rows; the pointer's type is checked against the kind. */
#define EXAMPLE_INT(flag, p) {flag, EXAMPLE_ARG_INT, (1 ? (p) : (int *)0), NULL, NULL}
#define EXAMPLE_INT64(flag, p) {flag, EXAMPLE_ARG_INT64, (1 ? (p) : (int64_t *)0), NULL, NULL}
#define EXAMPLE_U64(flag, p) {flag, EXAMPLE_ARG_U64, (1 ? (p) : (unsigned long long *)0), NULL, NULL}
#define EXAMPLE_STR(flag, p) {flag, EXAMPLE_ARG_STR, (1 ? (p) : (const char **)0), NULL, NULL}
#define EXAMPLE_DEVICE(flag, p, text) {flag, EXAMPLE_ARG_DEVICE, (1 ? (p) : (ctorch_device *)0), NULL, text}
#define EXAMPLE_AMP(flag, p) {flag, EXAMPLE_ARG_AMP, (1 ? (p) : (int *)0), NULL, NULL}
#define EXAMPLE_CHOICE(flag, p, choices) {flag, EXAMPLE_ARG_CHOICE, (1 ? (p) : (const char **)0), choices, NULL}

/* Stores v through the row; 0, or -1 if v is not a valid value (then the
 * destination may have changed: the program exits). */
static inline int example_arg_set(const example_arg *o, const char *v) {
  switch (o->kind) {
    case EXAMPLE_ARG_INT: *(int *)o->dest = atoi(v); break;
    case EXAMPLE_ARG_INT64: *(int64_t *)o->dest = atoll(v); break;
    case EXAMPLE_ARG_U64: *(unsigned long long *)o->dest = strtoull(v, NULL, 10); break;
    case EXAMPLE_ARG_STR: *(const char **)o->dest = v; break;
    case EXAMPLE_ARG_DEVICE:
      if (parse_device(v, (ctorch_device *)o->dest) != 0) return -1;
      break;
    case EXAMPLE_ARG_AMP:
      if ((*(int *)o->dest = parse_amp(v)) < 0) return -1;
      break;
    case EXAMPLE_ARG_CHOICE: {
      const char *const *c = o->choices;
      while (*c && strcmp(*c, v)) ++c;
      if (!*c) return -1;
      *(const char **)o->dest = v;
      break;
    }
    default: return -1;
  }
  if (o->text) *o->text = v;
  return 0;
}

/* Parses argv[1..argc) against the n rows of `args`. Returns -1 when the
 * program should go on; otherwise it has printed usage and returns the
 * program's exit status (0 for --help, 2 for a bad command line). */
static inline int example_parse_args(int argc, char **argv, const example_arg *args, size_t n,
                                     void (*usage)(const char *prog)) {
  int i;
  for (i = 1; i < argc; i += 2) { /* a flag and its value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    size_t k;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(argv[0]);
      return 0;
    }
    for (k = 0; k < n && strcmp(a, args[k].flag); ++k) {
    }
    if (!v || k == n || example_arg_set(&args[k], v) != 0) {
      usage(argv[0]);
      return 2;
    }
  }
  return -1;
}

#define EXAMPLE_NARGS(table) (sizeof(table) / sizeof((table)[0]))

#endif
