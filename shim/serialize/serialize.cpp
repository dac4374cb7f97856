// Checkpoints in torch.save's zip format: save/load one tensor or a named
// dict of tensors, and the dict handle. Writing and reading are ctorch's own
// (serialize_writer.cpp, serialize_reader.cpp; see there for why).
#include "serialize_value.h"
#include "core/materialize.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <unordered_set>

namespace ctorch {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

// The permission bits a plain open(O_CREAT, 0666) would give: the existing
// file's mode if there is one, else 0666 minus the umask (read without
// changing it, so other threads are not disturbed).
mode_t new_file_mode(const char *path) {
  struct stat sb;
  if (::stat(path, &sb) == 0) return sb.st_mode & 07777;
  mode_t mask = 022;
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "Umask:") {
      unsigned m = 0;
      if (status >> std::oct >> m) mask = static_cast<mode_t>(m);
      break;
    }
  }
  return 0666 & ~mask;
}

}  // namespace

void atomic_write_with(const char *path, const Producer &produce) {
  std::string tmpl = std::string(path) + ".ctorch-tmp-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) fail(CTORCH_IO, std::string("cannot create a temporary file next to '") + path + "': " + errno_text(errno));
  auto abandon = [&](const char *what, int e) {
    ::close(fd);
    ::unlink(name.data());
    fail(CTORCH_IO, std::string(what) + " '" + name.data() + "' (for '" + path + "'): " + errno_text(e));
  };
  // The sink reports every byte as written: libtorch's zip writer throws
  // on a short write and throws again from its destructor (terminate). The
  // first error is kept and reported once the producer is done.
  int write_errno = 0;
  Sink sink = [&](const void *p, size_t size) -> size_t {
    const char *data = static_cast<const char *>(p);
    size_t done = 0;
    while (!write_errno && done < size) {
      ssize_t n = ::write(fd, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_errno = n < 0 ? errno : EIO;
        break;
      }
      done += static_cast<size_t>(n);
    }
    return size;
  };
  try {
    produce(sink);
  } catch (...) {
    ::close(fd);
    ::unlink(name.data());
    throw;
  }
  if (write_errno) abandon("cannot write", write_errno);
  if (::fchmod(fd, new_file_mode(path)) != 0) abandon("cannot chmod", errno);
  if (::fsync(fd) != 0) abandon("cannot fsync", errno);
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(name.data());
    fail(CTORCH_IO, std::string("cannot close '") + name.data() + "': " + errno_text(e));
  }
  if (::rename(name.data(), path) != 0) {
    int e = errno;
    ::unlink(name.data());
    fail(CTORCH_IO, std::string("cannot rename the temporary file onto '") + path + "': " + errno_text(e));
  }
  // Make the rename itself durable; failure here cannot undo anything.
  std::string dir(path);
  size_t slash = dir.find_last_of('/');
  dir = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ctorch

namespace {

void require_path(const char *path) {
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
}

// What torch.save should see of t. Conjugate/negative view bits are not
// part of the format (Python's torch.save resolves them too).
at::Tensor savable(const at::Tensor &t, const std::string &arg) {
  if (t.layout() != c10::kStrided)
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, "argument '" + arg + "': only dense (strided) tensors can be saved; convert it (to_dense) first");
  return ctorch::materialize_zero(t).resolve_conj().resolve_neg();
}

size_t dict_index(const ctorch_tensor_dict_s &d, size_t i) {
  if (i >= d.keys.size())
    ctorch::fail(CTORCH_INDEX, "argument 'i': index " + std::to_string(i) + " out of range for a dict of " +
                                   std::to_string(d.keys.size()) + " entries");
  return i;
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_save(const char *path, ctorch_tensor t) {
  CTORCH_TRY
  require_path(path);
  ctorch::write_pickled(path, *ctorch::saved_tensor_value(t));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_load(ctorch_tensor *out, const char *path) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  require_path(path);
  ctorch::Checkpoint c = ctorch::read_checkpoint(path);
  if (!c.is_tensor)
    ctorch::fail(CTORCH_TYPE, std::string("'") + path + "' holds a dict of " + std::to_string(c.dict.keys.size()) +
                                  " tensors, not one tensor (use ctorch_load_dict)");
  *out = ctorch::give(std::move(c.tensor));
  CTORCH_CATCH
}

}  // extern "C"

namespace {
// The one builder of named-tensor dicts (ctorch_save_dict,
// ctorch_tensor_dict_save and their buffer/stream forms): an OrderedDict,
// as model.state_dict() is. name(i)/tensor(i) read entry i;
// `names`/`tensors` name the arguments in messages.
ctorch::P named_value(size_t n, const std::function<const char *(size_t)> &name,
                      const std::function<ctorch_tensor(size_t)> &tensor, const char *names, const char *tensors) {
  ctorch::P d = ctorch::PV::dict(true);
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < n; ++i) {
    const char *k = name(i);
    if (!k) ctorch::fail_arg(names, "entry " + std::to_string(i) + " is NULL");
    ctorch_tensor t = tensor(i);
    if (!t) ctorch::fail_arg(tensors, "entry " + std::to_string(i) + " ('" + k + "') is NULL");
    if (!seen.insert(k).second) ctorch::fail_arg(names, std::string("'") + k + "' appears twice");
    d->put(ctorch::PV::str(k), ctorch::PV::tensor(savable(ctorch::own(t), std::string(tensors) + "[" + std::to_string(i) + "]")));
  }
  return d;
}
}  // namespace

namespace ctorch {
P saved_tensor_value(ctorch_tensor t) {
  require_tensor(t, "t");
  return PV::tensor(savable(own(t), "t"));
}
P saved_dict_value(ctorch_tensor_dict d) {
  auto &r = ctorch::dict_ref(d);
  Lent lend;
  return named_value(r.keys.size(), [&](size_t i) { return r.keys[i].c_str(); }, [&](size_t i) { return lend(r.values[i]); },
                     "d", "d");
}
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_save_dict(const char *path, const char *const *names, const ctorch_tensor *tensors,
                                          size_t n) {
  CTORCH_TRY
  require_path(path);
  ctorch::require_list(names, n, "names");
  ctorch::require_list(tensors, n, "tensors");
  ctorch::write_pickled(path, *named_value(n, [&](size_t i) { return names[i]; }, [&](size_t i) { return tensors[i]; },
                                           "names", "tensors"));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_load_dict(ctorch_tensor_dict *out, const char *path) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  require_path(path);
  ctorch::Checkpoint c = ctorch::read_checkpoint(path);
  if (c.is_tensor) ctorch::fail(CTORCH_TYPE, std::string("'") + path + "' holds one tensor, not a dict (use ctorch_load)");
  *out = new ctorch_tensor_dict_s(std::move(c.dict));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_size(size_t *out, ctorch_tensor_dict d) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch::dict_ref(d).keys.size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_key(const char **out, ctorch_tensor_dict d, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &r = ctorch::dict_ref(d);
  *out = r.keys[dict_index(r, i)].c_str();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_get(ctorch_tensor *out, ctorch_tensor_dict d, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &r = ctorch::dict_ref(d);
  *out = ctorch::give(r.values[dict_index(r, i)]);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_find(ctorch_tensor *out, ctorch_tensor_dict d, const char *name) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &r = ctorch::dict_ref(d);
  ctorch::require_ptr(name, "name");
  for (size_t i = 0; i < r.keys.size(); ++i)
    if (r.keys[i] == name) {
      *out = ctorch::give(r.values[i]);
      return CTORCH_OK;
    }
  ctorch::fail(CTORCH_INDEX, std::string("argument 'name': no entry named '") + name + "'");
  CTORCH_CATCH
}

CTORCH_API void ctorch_tensor_dict_free(ctorch_tensor_dict d) {
  if (ctorch::release_handle(d, __func__)) delete d;
}

CTORCH_API ctorch_status ctorch_tensor_dict_new(ctorch_tensor_dict *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = new ctorch_tensor_dict_s;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_set(ctorch_tensor_dict d, const char *name, ctorch_tensor t) {
  CTORCH_TRY
  auto &r = ctorch::dict_ref(d);
  ctorch::require_ptr(name, "name");
  ctorch::require_tensor(t, "t");
  at::Tensor v = ctorch::own(t);
  for (size_t i = 0; i < r.keys.size(); ++i)
    if (r.keys[i] == name) {
      r.values[i] = std::move(v);  // an existing key keeps its place, as in a Python dict
      return CTORCH_OK;
    }
  r.keys.emplace_back(name);
  r.values.push_back(std::move(v));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_save(const char *path, ctorch_tensor_dict d) {
  CTORCH_TRY
  require_path(path);
  ctorch::write_pickled(path, *ctorch::saved_dict_value(d));
  CTORCH_CATCH
}

}  // extern "C"
