/* The tests' Python: `pyz ARGS...` is `PYTHON ARGS...`, where
 * PYTHON is the build's CTORCH_TORCH_PYTHON (compiled in), but a script or
 * -c that imports torch runs in a child forked from a zygote that imported
 * torch once (tests/pyzygote/pyzygote.py says what it serves and refuses).
 * Whatever the zygote does not serve (it answers "F"), and any failure to
 * reach it, runs the real interpreter with execv: the same process, the same
 * arguments. CTORCH_PYZYGOTE=0 turns the zygote off.
 *
 * One zygote per Python, zygote script (its path and modification time)
 * and value of the environment variables an interpreter or torch reads
 * while it imports (SENSITIVE): its abstract socket's name is a hash of them. The first test that finds none
 * starts one (detached: its own session, stdio on /dev/null, so ctest waits
 * for neither) and runs the real interpreter itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CTORCH_PYZ_PYTHON
#error "CTORCH_PYZ_PYTHON: the real interpreter's path (tests/CMakeLists.txt)"
#endif
#ifndef CTORCH_PYZ_SERVER
#error "CTORCH_PYZ_SERVER: tests/pyzygote/pyzygote.py's path"
#endif

extern char **environ;

/* Read by the interpreter at start (PYTHON*, HOME for the user site, LANG
 * and LC_* for the stdio encoding), by tempfile once (TMPDIR...), or by
 * libtorch, libgomp, MKL, OpenBLAS, numpy and the allocator while torch
 * imports: a zygote serves only tests whose values of all of these are its
 * own. */
static const char *const SENSITIVE[] = {
    "PYTHON", "HOME=", "LANG", "LC_", "TMPDIR=", "TEMP=", "TMP=", "XDG_", "LD_",
    "OMP_", "GOMP_", "KMP_", "MKL", "OPENBLAS_", "GOTO", "BLIS_", "NUMEXPR_", "NUMPY",
    "TORCH", "PYTORCH", "CUDA", "CUBLAS", "CUDNN", "NCCL_", "NVIDIA", "DNNL_", "ONEDNN_",
    "GLOG_", "MALLOC", "ASAN_", "UBSAN_", "LSAN_", "TSAN_", "CTORCH_ASAN_", /* scripts/sanitize's python-asan */
};
/* The resource limits compared with the zygote's (pyzygote.py's RLIMITS, same order). */
static const int RLIMITS[] = {RLIMIT_AS,     RLIMIT_CORE,   RLIMIT_CPU,   RLIMIT_DATA,  RLIMIT_FSIZE,
                              RLIMIT_MEMLOCK, RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_STACK};

static void run_real(char **argv) {
  argv[0] = (char *)CTORCH_PYZ_PYTHON;
  execv(CTORCH_PYZ_PYTHON, argv);
  fprintf(stderr, "pyz: cannot run %s: %s\n", CTORCH_PYZ_PYTHON, strerror(errno));
  exit(127);
}

static int sensitive(const char *e) {
  for (size_t i = 0; i < sizeof SENSITIVE / sizeof *SENSITIVE; i++)
    if (strncmp(e, SENSITIVE[i], strlen(SENSITIVE[i])) == 0) return 1;
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* "ctorch-pyz-UID-HASH": the zygote for this Python, script and environment. */
static void zygote_name(char *out, size_t size) {
  size_t n = 0, k = 0;
  while (environ[n]) n++;
  char **env = malloc((n + 1) * sizeof *env);
  if (!env) { snprintf(out, size, "ctorch-pyz-none"); return; }
  for (size_t i = 0; i < n; i++)
    if (sensitive(environ[i])) env[k++] = environ[i];
  qsort(env, k, sizeof *env, cmp_str);
  uint64_t h = 14695981039346656037ull;
  h = fnv(h, CTORCH_PYZ_PYTHON, sizeof CTORCH_PYZ_PYTHON);
  h = fnv(h, CTORCH_PYZ_SERVER, sizeof CTORCH_PYZ_SERVER);
  struct stat st; /* an edited zygote script: a new zygote (the old one idles out) */
  if (stat(CTORCH_PYZ_SERVER, &st) == 0) {
    long long v[2] = {(long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, (long long)st.st_size};
    h = fnv(h, (const char *)v, sizeof v);
  }
  for (size_t i = 0; i < k; i++) h = fnv(h, env[i], strlen(env[i]) + 1);
  free(env);
  snprintf(out, size, "ctorch-pyz-%u-%016llx", (unsigned)getuid(), (unsigned long long)h);
}

/* A growing buffer of NUL-terminated fields. */
struct buf { char *p; size_t n, cap; int failed; };

static void put(struct buf *b, const char *s, size_t len) {
  if (b->failed) return;
  if (b->n + len + 1 > b->cap) {
    size_t cap = (b->n + len + 1) * 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->failed = 1; return; }
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, s, len);
  b->p[b->n + len] = '\0';
  b->n += len + 1;
}

static void put_str(struct buf *b, const char *s) { put(b, s, strlen(s)); }

static void put_num(struct buf *b, long long v) {
  char s[32];
  snprintf(s, sizeof s, "%lld", v);
  put_str(b, s);
}

static int request(struct buf *b, int argc, char **argv) {
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return -1;
  mode_t mask = umask(0);
  umask(mask);
  put(b, "\0\0\0\0CTZ1", 8); /* the length, filled in below, then the magic */
  put_str(b, cwd);
  put_num(b, (long long)mask);
  char lim[512] = "";
  for (size_t i = 0; i < sizeof RLIMITS / sizeof *RLIMITS; i++) {
    struct rlimit r;
    if (getrlimit(RLIMITS[i], &r) != 0) return -1;
    size_t l = strlen(lim);
    snprintf(lim + l, sizeof lim - l, "%s%lld:%lld", i ? "," : "",
             r.rlim_cur == RLIM_INFINITY ? -1LL : (long long)r.rlim_cur,
             r.rlim_max == RLIM_INFINITY ? -1LL : (long long)r.rlim_max);
  }
  put_str(b, lim);
  put_num(b, argc);
  for (int i = 0; i < argc; i++) put_str(b, argv[i]);
  size_t n = 0;
  while (environ[n]) n++;
  put_num(b, (long long)n);
  for (size_t i = 0; i < n; i++) put_str(b, environ[i]);
  if (b->failed || b->n - 4 > 0xFFFFFFFFu) return -1;
  uint32_t size = (uint32_t)(b->n - 4);
  memcpy(b->p, &size, 4); /* little-endian here (x86-64, aarch64) */
  return 0;
}

/* Detached: a session of its own, stdio on /dev/null and no other descriptor
 * of this process, so ctest (which waits for the test's output pipes) and
 * its timeout (which kills the test's process tree) never see it. */
static void start_zygote(const char *name) {
  pid_t p = fork();
  if (p < 0) return;
  if (p == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    int dn = open("/dev/null", O_RDWR);
    if (dn < 0) _exit(1);
    dup2(dn, 0), dup2(dn, 1), dup2(dn, 2);
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++) close((int)fd);
    /* The zygote gives each child the test's environment with these
     * variables as the zygote has them: as the test's, unless the
     * interpreter is a wrapper that changes them (scripts/sanitize's
     * python-asan sets LD_PRELOAD and ASAN_OPTIONS), whose changes a real
     * interpreter's subprocesses would inherit. */
    char list[1024] = "";
    for (size_t i = 0; i < sizeof SENSITIVE / sizeof *SENSITIVE; i++) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%s", i ? "," : "", SENSITIVE[i]);
    }
    setenv("CTORCH_PYZ_SENSITIVE", list, 1);
    execl(CTORCH_PYZ_PYTHON, CTORCH_PYZ_PYTHON, CTORCH_PYZ_SERVER, name, (char *)NULL);
    _exit(127);
  }
  while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {}
}

static int read_all(int fd, void *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, (char *)p + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

/* Returns only when the real interpreter should run instead. */
static void try_zygote(int argc, char **argv) {
  char name[96];
  zygote_name(name, sizeof name);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  size_t len = strlen(name);
  memcpy(addr.sun_path + 1, name, len); /* sun_path[0] == 0: an abstract name */
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  if (connect(fd, (struct sockaddr *)&addr, alen) != 0) {
    close(fd);
    if (errno == ECONNREFUSED || errno == ENOENT) start_zygote(name);
    return;
  }
  /* An abstract name can be taken by any local user: only a zygote of this
   * user gets the test's stdio (the kernel's word, SO_PEERCRED). */
  struct ucred peer;
  socklen_t plen = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) != 0 || peer.uid != getuid()) {
    close(fd);
    return;
  }
  struct buf b = {0};
  if (request(&b, argc, argv) != 0) { free(b.p); close(fd); return; }
  int fds[3] = {0, 1, 2};
  char ctl[CMSG_SPACE(sizeof fds)];
  memset(ctl, 0, sizeof ctl);
  struct iovec iov = {.iov_base = b.p, .iov_len = b.n};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t sent;
  while ((sent = sendmsg(fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
  size_t done = sent < 0 ? 0 : (size_t)sent;
  while (sent >= 0 && done < b.n) {
    ssize_t r = send(fd, b.p + done, b.n - done, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { sent = -1; break; }
    done += (size_t)r;
  }
  free(b.p);
  char answer = 0;
  if (sent < 0 || read_all(fd, &answer, 1) != 0 || answer != 'A') { close(fd); return; }
  /* Accepted: from here the child runs the test, and this process only
   * waits for its end (if this process is killed, the zygote kills the child). */
  int32_t st[2];
  if (read_all(fd, st, sizeof st) != 0) {
    fprintf(stderr, "pyz: the zygote ended before the child's status came\n");
    exit(1);
  }
  if (st[0] == 1) {
    signal(st[1], SIG_DFL);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none); /* the child dumped its core already, if any */
    raise(st[1]);
    exit(128 + st[1]);
  }
  exit(st[1]);
}

int main(int argc, char **argv) {
  const char *on = getenv("CTORCH_PYZYGOTE");
  if (argc >= 2 && !(on && strcmp(on, "0") == 0)) try_zygote(argc, argv);
  run_real(argv);
  return 127;
}
