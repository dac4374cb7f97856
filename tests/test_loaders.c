/* Loaders given hostile input: no loader blocks on a special
 * file, the optimizer archive loader gets the TorchScript checks (no crash,
 * no leak), dict unpickling is linear, the checkpoint reader's memory is
 * bounded (and a caller's limit holds), and the small defects found with
 * them. Each hostile call runs in a child with a time bound, so a hang or a
 * crash fails the test instead of stopping the suite. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "check_main.h"
#include "loader_files.h"
#include "tmp_files.h"

/* Under AddressSanitizer (scripts/sanitize) resident memory measures the
 * sanitizer, not ctorch: freed blocks wait in its 256 MiB quarantine and
 * every block carries redzones and shadow. There the RSS bounds are printed,
 * not asserted; LeakSanitizer checks the refused loads for leaks more
 * strictly than RSS can, and every status is asserted on every build. */
#if defined(__SANITIZE_ADDRESS__)
#define LF_RSS_MEANINGFUL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LF_RSS_MEANINGFUL 0
#endif
#endif
#ifndef LF_RSS_MEANINGFUL
#define LF_RSS_MEANINGFUL 1
#endif

/* Each test's own /tmp/ctorch_loaders_XXXXXX (ct_tmp_dir), made and removed
 * by a checked fixture (tmp_files.h): these tests write up to 1.3 MB each,
 * and 10 folders a run were left behind. */
static void make_dir(void) { ct_tmp_dir_make("loaders"); }
static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", ct_tmp_dir, name); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- every loader refuses a FIFO (and other special files) at once --------- */

typedef struct {
  const char *path;
  ctorch_optimizer opt, opt_sgd;
} fifo_case;

static int load_tensor(void *a) {
  ctorch_tensor t = NULL;
  return ctorch_load(&t, ((fifo_case *)a)->path);
}
static int load_dict(void *a) {
  ctorch_tensor_dict d = NULL;
  return ctorch_load_dict(&d, ((fifo_case *)a)->path);
}
static int load_module(void *a) {
  ctorch_module m = NULL;
  return ctorch_module_load(&m, ((fifo_case *)a)->path, NULL);
}
static int load_idx(void *a) {
  ctorch_tensor t = NULL;
  return ctorch_data_idx_read(&t, ((fifo_case *)a)->path);
}
static int load_mnist(void *a) {
  ctorch_tensor x = NULL, y = NULL;
  return ctorch_data_mnist_read(&x, &y, ((fifo_case *)a)->path, ((fifo_case *)a)->path);
}
static int load_mnist_dir(void *a) {
  ctorch_tensor x = NULL, y = NULL;
  return ctorch_data_mnist_read_dir(&x, &y, ((fifo_case *)a)->path, 1);
}
static int load_optimizer(void *a) { return ctorch_optimizer_load(((fifo_case *)a)->opt, ((fifo_case *)a)->path); }
static int load_optimizer_state_dict(void *a) {
  return ctorch_optimizer_load_state_dict(((fifo_case *)a)->opt_sgd, ((fifo_case *)a)->path);
}
static int load_aoti(void *a) {
  ctorch_aoti_package p = NULL;
  int avail = 0;
  ctorch_status st = ctorch_aoti_package_load(&p, ((fifo_case *)a)->path, NULL);
  /* Without AOTInductor (libtorch < 2.6) the loader refuses before any file: 200 marks it. */
  if (ctorch_aoti_available(&avail) == CTORCH_OK && !avail) return st == CTORCH_NOT_IMPLEMENTED ? 200 : 201;
  return st;
}

static const struct {
  const char *name;
  int (*fn)(void *);
} k_loaders[] = {
    {"ctorch_load", load_tensor},
    {"ctorch_load_dict", load_dict},
    {"ctorch_module_load", load_module},
    {"ctorch_data_idx_read", load_idx},
    {"ctorch_data_mnist_read", load_mnist},
    {"ctorch_optimizer_load", load_optimizer},
    {"ctorch_optimizer_load_state_dict", load_optimizer_state_dict},
    {"ctorch_aoti_package_load", load_aoti},
};

static void make_optimizers(fifo_case *c, ctorch_tensor *p) {
  const float v[2] = {1, 2};
  const int64_t sz[1] = {2};
  *p = ct_floats(v, sz, 1);
  CT_OK(ctorch_tensor_set_requires_grad(*p, 1));
  CT_OK(ctorch_optimizer_new(&c->opt, CTORCH_OPTIM_ADAM, p, 1, NULL));
  CT_OK(ctorch_optimizer_new(&c->opt_sgd, CTORCH_OPTIM_SGD, p, 1, NULL));
}

/* Each loader, given `path`, returns CTORCH_IO within 30 s. */
static void every_loader_refuses(const char *path, const char *what) {
  fifo_case c = {path, NULL, NULL};
  ctorch_tensor p = NULL;
  size_t i;
  make_optimizers(&c, &p);
  for (i = 0; i < sizeof k_loaders / sizeof k_loaders[0]; ++i) {
    double t0 = now_s();
    int rc = lf_in_child(k_loaders[i].fn, &c, 30);
    double dt = now_s() - t0;
    printf("%s on %s: %s in %.3f s\n", k_loaders[i].name, what,
           rc < 0 ? "killed" : rc == 200 ? "NOT_IMPLEMENTED (no AOTInductor in this libtorch)" : ctorch_status_name((ctorch_status)rc),
           dt);
    ck_assert_msg(rc != -SIGALRM, "%s blocked on %s (killed after 30 s)", k_loaders[i].name, what);
    ck_assert_msg(rc >= 0, "%s died with signal %d on %s", k_loaders[i].name, -rc, what);
    if (rc == 200) continue; /* AOTInductor not in this libtorch */
    ck_assert_msg(rc == CTORCH_IO, "%s on %s returned %s, not IO", k_loaders[i].name, what,
                  ctorch_status_name((ctorch_status)rc));
  }
  ctorch_optimizer_free(c.opt);
  ctorch_optimizer_free(c.opt_sgd);
  ctorch_tensor_free(p);
}

START_TEST(no_loader_blocks_on_a_fifo) {
  char fifo[300];
  ctorch_tensor t = NULL;
  path_in(fifo, sizeof fifo, "state.pt");
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  every_loader_refuses(fifo, "a FIFO");
  /* the message names the path and says what it is */
  CT_FAILS(CTORCH_IO, ctorch_load(&t, fifo));
  CT_ERROR_HAS(fifo);
  CT_ERROR_HAS("FIFO");
  every_loader_refuses("/dev/zero", "/dev/zero");
  every_loader_refuses(ct_tmp_dir, "a directory");
  unlink(fifo);
}
END_TEST

/* The MNIST directory reader opens the files it picks the same way. */
START_TEST(mnist_dir_of_fifos_is_refused) {
  char f[300];
  fifo_case c;
  int rc;
  path_in(f, sizeof f, "train-images-idx3-ubyte");
  ck_assert_int_eq(mkfifo(f, 0600), 0);
  path_in(f, sizeof f, "train-labels-idx1-ubyte");
  ck_assert_int_eq(mkfifo(f, 0600), 0);
  c.path = ct_tmp_dir;
  rc = lf_in_child(load_mnist_dir, &c, 30);
  ck_assert_msg(rc == CTORCH_IO, "ctorch_data_mnist_read_dir on FIFOs: %d", rc);
}
END_TEST

/* ---- ctorch_optimizer_load: the TorchScript checks, no crash, no leak -------- */

/* The records of a zip as its central directory lists them (libtorch's
 * writer uses data descriptors and deflates code/ records). */
typedef struct {
  char name[256];
  unsigned char *data;
  size_t size, usize;
  int method;
  uint32_t crc;
} zrec;

static uint64_t rd_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  int k;
  for (k = 0; k < n; ++k) v |= (uint64_t)p[k] << (8 * k);
  return v;
}

static size_t read_zip(const char *path, zrec *out, size_t cap) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long len;
  size_t n = 0, count, p, i;
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  len = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (unsigned char *)malloc((size_t)len);
  ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  ck_assert_uint_eq(rd_le(buf + len - 22, 4), 0x06054b50); /* no comment */
  count = (size_t)rd_le(buf + len - 22 + 10, 2);
  p = (size_t)rd_le(buf + len - 22 + 16, 4);
  for (i = 0; i < count && n < cap; ++i) {
    const unsigned char *h = buf + p, *l;
    size_t nl = (size_t)rd_le(h + 28, 2), off = (size_t)rd_le(h + 42, 4);
    ck_assert_uint_eq(rd_le(h, 4), 0x02014b50);
    ck_assert_uint_lt(nl, sizeof out[n].name);
    memcpy(out[n].name, h + 46, nl);
    out[n].name[nl] = 0;
    out[n].method = (int)rd_le(h + 10, 2);
    out[n].crc = (uint32_t)rd_le(h + 16, 4);
    out[n].size = (size_t)rd_le(h + 20, 4);
    out[n].usize = (size_t)rd_le(h + 24, 4);
    l = buf + off;
    out[n].data = (unsigned char *)malloc(out[n].size + 8);
    memcpy(out[n].data, l + 30 + rd_le(l + 26, 2) + rd_le(l + 28, 2), out[n].size);
    p += 46 + nl + (size_t)rd_le(h + 30, 2) + (size_t)rd_le(h + 32, 2);
    ++n;
  }
  free(buf);
  return n;
}

typedef struct {
  ctorch_optimizer opt;
  const char *path;
  int loops;
} opt_load_case;

static int optimizer_load_once(void *a) {
  opt_load_case *c = (opt_load_case *)a;
  return ctorch_optimizer_load(c->opt, c->path);
}

START_TEST(optimizer_load_gets_the_torchscript_checks) {
  fifo_case fc = {NULL, NULL, NULL};
  ctorch_tensor p = NULL;
  char good[300], bad[300], reg[1024];
  zrec recs[64];
  const char *names[64];
  const unsigned char *datas[64];
  size_t sizes[64], usizes[64], n, i;
  int methods[64];
  uint32_t crcs[64];
  int found = 0, rc;
  opt_load_case c;
  const char *src = getenv("CTORCH_SOURCE_DIR");
  make_optimizers(&fc, &p);
  path_in(good, sizeof good, "adam.pt");
  path_in(bad, sizeof bad, "constants4.pt");
  CT_OK(ctorch_optimizer_save(fc.opt, good));
  CT_OK(ctorch_optimizer_load(fc.opt, good));
  /* The same archive with a 4-byte constants.pkl: SIGSEGV in libtorch's reader before. */
  n = read_zip(good, recs, 64);
  ck_assert_uint_gt(n, 2);
  for (i = 0; i < n; ++i) {
    names[i] = recs[i].name;
    datas[i] = recs[i].data;
    sizes[i] = recs[i].size;
    methods[i] = recs[i].method;
    crcs[i] = recs[i].crc;
    usizes[i] = recs[i].usize;
    if (strstr(recs[i].name, "constants.pkl")) {
      /* REDUCE on an empty stack: SIGSEGV in libtorch's unpickler (Python's
       * torch.jit.load dies the same way); a real one is "\x80\x02)." */
      memcpy(recs[i].data, "\x80\x02R.", 4);
      sizes[i] = usizes[i] = 4;
      methods[i] = 0;
      found = 1;
    }
  }
  ck_assert_msg(found, "the optimizer archive has no constants.pkl");
  ck_assert_int_eq(lf_write_zip_raw(bad, names, datas, sizes, methods, crcs, usizes, n), 0);
  for (i = 0; i < n; ++i) free(recs[i].data);
  c.opt = fc.opt;
  c.path = bad;
  rc = lf_in_child(optimizer_load_once, &c, 60);
  ck_assert_msg(rc == CTORCH_IO, "ctorch_optimizer_load of a 4-byte constants.pkl: %d (negative: a signal)", rc);
  CT_FAILS(CTORCH_IO, ctorch_optimizer_load(fc.opt, bad));
  CT_ERROR_HAS("constants.pkl");
  /* The project's own TorchScript regression input crashed here too. */
  ck_assert_ptr_nonnull(src);
  snprintf(reg, sizeof reg, "%s/tests/harden/regressions/torchscript/debug_pickle_underflow_heap_corruption", src);
  c.path = reg;
  rc = lf_in_child(optimizer_load_once, &c, 60);
  ck_assert_msg(rc > 0 && rc != CTORCH_OK, "ctorch_optimizer_load of %s: %d (negative: a signal)", reg, rc);
  /* No leak on refusal (1.3 KiB per load before): 2,000 refused loads. */
  {
    long before, after;
    int k;
    for (k = 0; k < 200; ++k) ck_assert_int_ne(ctorch_optimizer_load(fc.opt, bad), CTORCH_OK);
    before = lf_status_kib("VmRSS:");
    for (k = 0; k < 2000; ++k) ck_assert_int_ne(ctorch_optimizer_load(fc.opt, bad), CTORCH_OK);
    after = lf_status_kib("VmRSS:");
    printf("2000 refused ctorch_optimizer_load: RSS %ld -> %ld KiB\n", before, after);
    if (LF_RSS_MEANINGFUL) ck_assert_msg(after - before < 1024, "RSS grew by %ld KiB over 2000 refused loads", after - before);
  }
  /* the optimizer still works and loads a good file */
  CT_OK(ctorch_optimizer_load(fc.opt, good));
  ctorch_optimizer_free(fc.opt);
  ctorch_optimizer_free(fc.opt_sgd);
  ctorch_tensor_free(p);
}
END_TEST

/* ---- dict unpickling is linear ------------------------------------------------ */

/* {k0: t, k1: t, ...} with n keys (plus `dups` keys set again), every value
 * the same memoised 1-element tensor. */
static void dict_pickle(lf_buf *b, int n, int dups) {
  const int64_t one = 1;
  int i;
  char key[32];
  lf_byte(b, 0x80);
  lf_byte(b, 2);
  lf_byte(b, '}');
  pk_tensor(b, "0", 1, &one, &one, 1);
  lf_byte(b, 'r'); /* LONG_BINPUT 1 */
  lf_le(b, 1, 4);
  lf_byte(b, '0'); /* POP */
  for (i = 0; i < n + dups; ++i) {
    if (i % 1000 == 0) {
      if (i) lf_byte(b, 'u');
      lf_byte(b, '(');
    }
    snprintf(key, sizeof key, "k%07d", i < n ? i : (i - n) * 7 % n);
    pk_unicode(b, key);
    lf_byte(b, 'j'); /* LONG_BINGET 1 */
    lf_le(b, 1, 4);
  }
  lf_byte(b, 'u');
  lf_byte(b, '.');
}

START_TEST(dict_of_100k_keys_loads_in_linear_time) {
  char path[300];
  lf_buf b = {0};
  ctorch_tensor_dict d = NULL;
  size_t n = 0;
  const char *k = NULL;
  double t0, dt;
  path_in(path, sizeof path, "keys.pt");
  dict_pickle(&b, 100000, 500);
  ck_assert_int_eq(lf_write_checkpoint(path, &b, 4), 0);
  printf("100k-key checkpoint: %zu bytes of pickle\n", b.n);
  t0 = now_s();
  CT_OK(ctorch_load_dict(&d, path));
  dt = now_s() - t0;
  printf("ctorch_load_dict of 100k keys: %.3f s\n", dt);
  ck_assert_msg(dt < 5.0, "100k keys took %.1f s (30 s when quadratic)", dt);
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, 100000); /* a key set again keeps its place, as in Python */
  CT_OK(ctorch_tensor_dict_key(&k, d, 99999));
  ck_assert_str_eq(k, "k0099999");
  CT_OK(ctorch_tensor_dict_key(&k, d, 7));
  ck_assert_str_eq(k, "k0000007");
  ctorch_tensor_dict_free(d);
  lf_free(&b);
}
END_TEST

/* The optimizer state reader shares the unpickler: a 'state' of 100k
 * entries (none for this optimizer's parameter) loads as fast. */
static void pk_float(lf_buf *b, double x) {
  uint64_t u;
  int k;
  memcpy(&u, &x, 8);
  lf_byte(b, 'G');
  for (k = 7; k >= 0; --k) lf_byte(b, (unsigned)((u >> (8 * k)) & 0xFF));
}

START_TEST(optimizer_state_dict_of_100k_entries_loads_in_linear_time) {
  char path[300];
  lf_buf b = {0};
  fifo_case c = {NULL, NULL, NULL};
  ctorch_tensor p = NULL;
  double t0, dt;
  int i;
  path_in(path, sizeof path, "sgd_state.pt");
  lf_byte(&b, 0x80);
  lf_byte(&b, 2);
  lf_byte(&b, '}');
  lf_byte(&b, '(');
  pk_unicode(&b, "state");
  lf_byte(&b, '}');
  lf_byte(&b, '}'); /* the one (empty) per-parameter state, memoised */
  lf_byte(&b, 'r');
  lf_le(&b, 1, 4);
  lf_byte(&b, '0');
  for (i = 0; i < 100000; ++i) {
    if (i % 1000 == 0) {
      if (i) lf_byte(&b, 'u');
      lf_byte(&b, '(');
    }
    pk_int(&b, 1000 + i); /* not parameter 0: Python keeps such entries unused */
    lf_byte(&b, 'j');
    lf_le(&b, 1, 4);
  }
  lf_byte(&b, 'u');
  pk_unicode(&b, "param_groups");
  lf_byte(&b, ']');
  lf_byte(&b, '}');
  lf_byte(&b, '(');
  pk_unicode(&b, "lr"); pk_float(&b, 0.01);
  pk_unicode(&b, "momentum"); pk_float(&b, 0);
  pk_unicode(&b, "dampening"); pk_float(&b, 0);
  pk_unicode(&b, "weight_decay"); pk_float(&b, 0);
  pk_unicode(&b, "nesterov"); lf_byte(&b, 0x89);
  pk_unicode(&b, "params"); lf_byte(&b, ']'); pk_int(&b, 0); lf_byte(&b, 'a');
  lf_byte(&b, 'u');
  lf_byte(&b, 'a');
  lf_byte(&b, 'u');
  lf_byte(&b, '.');
  ck_assert_int_eq(lf_write_checkpoint(path, &b, 0), 0);
  make_optimizers(&c, &p);
  t0 = now_s();
  CT_OK(ctorch_optimizer_load_state_dict(c.opt_sgd, path));
  dt = now_s() - t0;
  printf("ctorch_optimizer_load_state_dict with 100k state entries: %.3f s\n", dt);
  ck_assert_msg(dt < 5.0, "took %.1f s", dt);
  ctorch_optimizer_free(c.opt);
  ctorch_optimizer_free(c.opt_sgd);
  ctorch_tensor_free(p);
  lf_free(&b);
}
END_TEST

/* ---- memory bound and the caller's limit -------------------------------------- */

/* A pickle of n empty lists (each a 1-byte opcode) and a last one kept. */
static void lists_pickle(lf_buf *b, size_t n) {
  size_t i;
  lf_byte(b, 0x80);
  lf_byte(b, 2);
  lf_byte(b, ']');
  lf_byte(b, '(');
  for (i = 0; i < n; ++i) lf_byte(b, ']');
  lf_byte(b, 'e');
  lf_byte(b, '.');
}

typedef struct {
  const char *path;
  uint64_t limit;
  long grew_kib; /* out, through the exit code only */
} mem_case;

/* Loads in the child; exit code: the status; writes VmHWM growth (KiB) to a file. */
static int load_measured(void *a) {
  mem_case *c = (mem_case *)a;
  ctorch_tensor t = NULL;
  char out[320];
  FILE *f;
  long base;
  ctorch_status st;
  ctorch_set_load_limit(NULL, c->limit);
  lf_reset_hwm();
  base = lf_status_kib("VmRSS:");
  st = ctorch_load(&t, c->path);
  snprintf(out, sizeof out, "%s.hwm", c->path);
  f = fopen(out, "w");
  if (f) {
    fprintf(f, "%ld\n", lf_status_kib("VmHWM:") - base);
    fclose(f);
  }
  return st;
}

static long read_growth(const char *path) {
  char out[320];
  long v = -1;
  FILE *f;
  snprintf(out, sizeof out, "%s.hwm", path);
  f = fopen(out, "r");
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

START_TEST(checkpoint_memory_is_bounded_by_its_size) {
  char path[300];
  lf_buf b = {0};
  mem_case c;
  int rc;
  long grew, bound_kib;
  const size_t n = 2u << 20; /* 2 MiB of 1-byte lists: 440 MB at 210 bytes per byte */
  path_in(path, sizeof path, "lists.pt");
  lists_pickle(&b, n);
  ck_assert_int_eq(lf_write_checkpoint(path, &b, 0), 0);
  c.path = path;
  c.limit = 0;
  rc = lf_in_child(load_measured, &c, 120);
  grew = read_growth(path);
  /* The stated bound: 64 bytes per pickle byte + 4 MiB, plus the pickle itself;
   * 16 MiB for the allocator's own slack and the measurement. */
  bound_kib = (long)((64 * b.n + b.n + (4u << 20) + (16u << 20)) / 1024);
  printf("%zu-byte pickle of empty lists: %s, peak RSS growth %ld KiB (bound %ld KiB)\n", b.n,
         rc < 0 ? "killed" : ctorch_status_name((ctorch_status)rc), grew, bound_kib);
  ck_assert_msg(rc == CTORCH_OUT_OF_MEMORY, "status %d", rc);
  if (LF_RSS_MEANINGFUL) ck_assert_msg(grew >= 0 && grew <= bound_kib, "peak RSS grew %ld KiB, bound %ld KiB", grew, bound_kib);
  /* The caller's limit: refused sooner, with the limit in the message. */
  c.limit = 8u << 20;
  rc = lf_in_child(load_measured, &c, 120);
  grew = read_growth(path);
  printf("same file with an 8 MiB limit: %s, peak RSS growth %ld KiB\n",
         rc < 0 ? "killed" : ctorch_status_name((ctorch_status)rc), grew);
  ck_assert_msg(rc == CTORCH_OUT_OF_MEMORY, "status %d", rc);
  if (LF_RSS_MEANINGFUL) ck_assert_msg(grew >= 0 && grew <= (8 + 16) * 1024, "peak RSS grew %ld KiB with an 8 MiB limit", grew);
  lf_free(&b);
}
END_TEST

/* Under an address-space cap, the same file ends in a status, not a kill. */
static int load_under_rlimit(void *a) {
  ctorch_tensor t = NULL;
  struct rlimit r;
  long vm = lf_status_kib("VmSize:");
  r.rlim_cur = r.rlim_max = (rlim_t)vm * 1024 + (512u << 20);
  if (setrlimit(RLIMIT_AS, &r) != 0) return 250;
  return ctorch_load(&t, (const char *)a);
}

START_TEST(checkpoint_under_an_address_space_cap) {
  char path[300];
  lf_buf b = {0};
  int rc;
  path_in(path, sizeof path, "lists.pt");
  lists_pickle(&b, 4u << 20);
  ck_assert_int_eq(lf_write_checkpoint(path, &b, 0), 0);
  rc = lf_in_child(load_under_rlimit, path, 120);
  ck_assert_msg(rc == CTORCH_OUT_OF_MEMORY, "status %d (negative: a signal)", rc);
  lf_free(&b);
}
END_TEST

START_TEST(load_limit_refuses_large_tensors_before_allocating) {
  char path[300];
  lf_buf b = {0};
  ctorch_tensor t = NULL;
  const int64_t sz = 1 << 20, st = 1;
  uint64_t prev = 1;
  path_in(path, sizeof path, "big.pt");
  lf_byte(&b, 0x80);
  lf_byte(&b, 2);
  pk_tensor(&b, "0", sz, &sz, &st, 1);
  lf_byte(&b, '.');
  ck_assert_int_eq(lf_write_checkpoint(path, &b, 4u << 20), 0);
  CT_OK(ctorch_load(&t, path));
  ctorch_tensor_free(t);
  CT_OK(ctorch_set_load_limit(&prev, 2u << 20));
  ck_assert_uint_eq(prev, 0);
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_load(&t, path));
  CT_ERROR_HAS("ctorch_set_load_limit");
  CT_OK(ctorch_set_load_limit(&prev, 0));
  ck_assert_uint_eq(prev, 2u << 20);
  CT_OK(ctorch_load(&t, path));
  ctorch_tensor_free(t);
  lf_free(&b);
}
END_TEST

/* Defect: a tensor whose sizes multiply past int64 (zero strides keep it in
 * its storage) was refused as "not a readable torch.save zip file". */
START_TEST(size_overflow_is_not_called_a_zip_problem) {
  char path[300];
  lf_buf b = {0};
  ctorch_tensor t = NULL;
  const int64_t sz[2] = {(int64_t)1 << 62, 8}, st[2] = {0, 0};
  path_in(path, sizeof path, "overflow.pt");
  lf_byte(&b, 0x80);
  lf_byte(&b, 2);
  pk_tensor(&b, "0", 1, sz, st, 2);
  lf_byte(&b, '.');
  ck_assert_int_eq(lf_write_checkpoint(path, &b, 4), 0);
  CT_FAILS(CTORCH_VALUE, ctorch_load(&t, path));
  ck_assert_msg(strstr(ctorch_last_error(), "zip") == NULL, "message blames the zip layer: %s", ctorch_last_error());
  CT_ERROR_HAS("overflow");
  lf_free(&b);
}
END_TEST

/* ---- small defects ---------------------------------------------------------- */

/* An IDX file of 4 uint8 values as gzip (one stored deflate block), then `tail`. */
static void write_gz_idx(const char *path, const char *tail, size_t tail_len) {
  const unsigned char idx[] = {0, 0, 0x08, 1, 0, 0, 0, 4, 1, 2, 3, 4};
  lf_buf b = {0};
  FILE *f;
  const unsigned char head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  lf_put(&b, head, 10);
  lf_byte(&b, 1); /* BFINAL, stored */
  lf_le(&b, sizeof idx, 2);
  lf_le(&b, (uint16_t)~sizeof idx, 2);
  lf_put(&b, idx, sizeof idx);
  lf_le(&b, lf_crc32(idx, sizeof idx), 4);
  lf_le(&b, sizeof idx, 4);
  lf_put(&b, tail, tail_len);
  f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b.p, 1, b.n, f), b.n);
  fclose(f);
  lf_free(&b);
}

START_TEST(gzip_idx_with_trailing_garbage_is_refused) {
  char path[300];
  ctorch_tensor t = NULL;
  int64_t n = 0;
  path_in(path, sizeof path, "x.idx.gz");
  write_gz_idx(path, "", 0);
  CT_OK(ctorch_data_idx_read(&t, path));
  CT_OK(ctorch_tensor_numel(&n, t));
  ck_assert_int_eq(n, 4);
  ctorch_tensor_free(t);
  /* two gzip members one after the other are one stream, as gunzip reads them */
  {
    lf_buf b = {0};
    FILE *f = fopen(path, "rb");
    unsigned char tmp[256];
    size_t got = fread(tmp, 1, sizeof tmp, f);
    fclose(f);
    /* the second member holds nothing: an empty stored block */
    lf_put(&b, tmp, got);
    lf_put(&b, "\x1f\x8b\x08\0\0\0\0\0\0\x03\x01\0\0\xff\xff\0\0\0\0\0\0\0\0", 23);
    f = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(b.p, 1, b.n, f), b.n);
    fclose(f);
    lf_free(&b);
  }
  CT_OK(ctorch_data_idx_read(&t, path));
  ctorch_tensor_free(t);
  /* garbage after the data: refused as the plain reader refuses it */
  write_gz_idx(path, "garbage!", 8);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, path));
  CT_ERROR_HAS("trailing");
  write_gz_idx(path, "\0", 1);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, path));
}
END_TEST

START_TEST(num_batches_does_not_overflow) {
  const float v[10] = {0};
  const int64_t sz[1] = {10};
  ctorch_tensor x = ct_floats(v, sz, 1);
  ctorch_data_loader l = NULL;
  int64_t n = -1;
  CT_OK(ctorch_data_loader_new(&l, x, NULL, INT64_MAX, 0, 0, 0));
  CT_OK(ctorch_data_loader_num_batches(&n, l));
  ck_assert_int_eq(n, 1);
  ctorch_data_loader_free(l);
  CT_OK(ctorch_data_loader_new(&l, x, NULL, INT64_MAX, 0, 0, 1));
  CT_OK(ctorch_data_loader_num_batches(&n, l));
  ck_assert_int_eq(n, 0);
  ctorch_data_loader_free(l);
  CT_OK(ctorch_data_loader_new(&l, x, NULL, 3, 0, 0, 0));
  CT_OK(ctorch_data_loader_num_batches(&n, l));
  ck_assert_int_eq(n, 4);
  ctorch_data_loader_free(l);
  ctorch_tensor_free(x);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("loaders");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, no_loader_blocks_on_a_fifo);
  tcase_add_test(tc, mnist_dir_of_fifos_is_refused);
  tcase_add_test(tc, optimizer_load_gets_the_torchscript_checks);
  tcase_add_test(tc, dict_of_100k_keys_loads_in_linear_time);
  tcase_add_test(tc, optimizer_state_dict_of_100k_entries_loads_in_linear_time);
  tcase_add_test(tc, checkpoint_memory_is_bounded_by_its_size);
  tcase_add_test(tc, checkpoint_under_an_address_space_cap);
  tcase_add_test(tc, load_limit_refuses_large_tensors_before_allocating);
  tcase_add_test(tc, size_overflow_is_not_called_a_zip_problem);
  tcase_add_test(tc, gzip_idx_with_trailing_garbage_is_refused);
  tcase_add_test(tc, num_batches_does_not_overflow);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
