// TensorBoard event files (torch.utils.tensorboard.SummaryWriter's records,
// without Python, TensorFlow or a protobuf library): scalars, histograms,
// images and text, each record appended to the file with write(2) as it is
// added, so a process killed afterwards (even by SIGKILL) leaves every
// record it added readable; ctorch_summary_writer_flush also fsyncs.
//
// What mirrors PyTorch and how (tests/logging/tensorboard_vs_torch.py reads
// ctorch's file and torch's with TensorBoard's own reader and compares):
// - add_scalar: Summary.Value{tag, simple_value (float32)}, as torch writes
//   by default (new_style=False);
// - add_histogram: torch's make_histogram with bins="tensorflow" (the
//   default): the edges 0, +-1e-12 * 1.1^k below 1e20, np.histogram's
//   counting (edges[i] <= v < edges[i+1], the last bin closed), trimmed to
//   the occupied range plus one empty bin on the left; min, max, num, sum,
//   sum of squares. Non-finite values are refused (TensorFlow's rule);
// - add_image: CHW, uint8 as is or floating point scaled by 255, clipped to
//   [0, 255] and truncated; one channel repeated to RGB (convert_to_HWC), 3
//   = RGB, 4 = RGBA; PNG-encoded (the pixels are torch's; the PNG bytes are
//   not PIL's compressor's);
// - add_text: tag + "/text_summary", plugin "text", a DT_STRING tensor of
//   shape [1].
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/internal.h"
#include "text/utf8.h"
#include "logging/event_file.h"
#include "logging/png.h"

struct ctorch_summary_writer_s {
  int fd = -1;
  std::string path;
  std::mutex mu;
  ctorch::Live<ctorch_summary_writer_s> live{this};  // last: see core/internal.h
};

namespace ctorch {
namespace logging {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double wall(double wall_time) { return wall_time > 0 && std::isfinite(wall_time) ? wall_time : now(); }

// mkdir -p.
void make_dirs(const std::string &dir) {
  std::string cur;
  size_t i = 0;
  while (i <= dir.size()) {
    size_t j = dir.find('/', i);
    if (j == std::string::npos) j = dir.size();
    cur = dir.substr(0, j);
    if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      fail(CTORCH_IO, "cannot create the directory '" + cur + "': " + std::strerror(errno));
    i = j + 1;
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) fail(CTORCH_IO, "'" + dir + "' is not a directory");
}

void write_all(ctorch_summary_writer_s &w, const std::string &bytes) {
  std::lock_guard<std::mutex> lock(w.mu);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(w.fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(CTORCH_IO, "cannot write to '" + w.path + "': " + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
}

void add(ctorch_summary_writer_s &w, const Proto &value, int64_t step, double wall_time) {
  Proto summary;
  summary.bytes_field(1, value.bytes());
  write_all(w, tfrecord(event_summary(wall(wall_time), step, summary.bytes())));
}

// Every string that goes into a record (or names a file TensorBoard lists)
// must be valid UTF-8 without surrogates (text/utf8.h): protobuf's string
// fields are UTF-8, and TensorBoard's reader stops at the first bad one
// ("String field had bad UTF-8"), losing the whole file after it.
void require_utf8(const char *s, const std::string &arg) {
  size_t at = 0;
  if (!ctorch::valid_utf8(s, std::strlen(s), &at))
    fail_arg(arg.c_str(), "is not valid UTF-8 (byte " + std::to_string(at) +
                              "; TensorBoard cannot read such a record)");
}

void require_tag(const char *tag) {
  require_ptr(tag, "tag");
  if (!*tag) fail_arg("tag", "is empty");
  require_utf8(tag, "tag");
}

// torch's SummaryWriter.default_bins: the same double arithmetic, so the same edges.
const std::vector<double> &default_bins() {
  static const std::vector<double> bins = [] {
    std::vector<double> pos;
    for (double v = 1e-12; v < 1e20; v *= 1.1) pos.push_back(v);
    std::vector<double> b;
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) b.push_back(-*it);
    b.push_back(0);
    b.insert(b.end(), pos.begin(), pos.end());
    return b;
  }();
  return bins;
}

Proto histogram(const char *tag, const at::Tensor &t) {
  at::Tensor v = t.detach().to(at::kCPU, at::kDouble).contiguous().reshape({-1});
  const int64_t n = v.numel();
  if (n == 0) fail_arg("values", "has no element");
  const double *p = v.data_ptr<double>();
  double mn = p[0], mx = p[0], sum_sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(p[i])) fail_arg("values", "holds a non-finite value (NaN or infinity) at flat index " +
                                                      std::to_string(i) + ": a histogram needs finite values");
    mn = std::min(mn, p[i]);
    mx = std::max(mx, p[i]);
    sum_sq += p[i] * p[i];
  }
  const double sum = v.sum().item<double>();
  const std::vector<double> &edges = default_bins();
  std::vector<double> counts(edges.size() - 1, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double x = p[i];
    if (x < edges.front() || x > edges.back()) continue;  // np.histogram drops values outside the edges
    size_t k = std::upper_bound(edges.begin(), edges.end(), x) - edges.begin();
    counts[k == edges.size() ? counts.size() - 1 : k - 1] += 1;  // the last bin is closed
  }
  // make_histogram: the occupied range, one empty bin to its left, the right limits.
  size_t first = 0, last = 0;
  bool any = false;
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0) {
      if (!any) first = i;
      last = i;
      any = true;
    }
  std::vector<double> bucket, limit;
  if (first > 0) bucket.assign(counts.begin() + (first - 1), counts.begin() + last + 1);
  else {
    bucket.push_back(0);
    bucket.insert(bucket.end(), counts.begin(), counts.begin() + last + 1);
  }
  limit.assign(edges.begin() + first, edges.begin() + last + 2);
  Proto h;
  h.double_field(1, mn);
  h.double_field(2, mx);
  h.double_field(3, static_cast<double>(n));
  h.double_field(4, sum);
  h.double_field(5, sum_sq);
  h.packed_doubles(6, limit);
  h.packed_doubles(7, bucket);
  Proto value;
  value.bytes_field(1, tag);
  value.bytes_field(5, h.bytes());
  return value;
}

Proto image(const char *tag, const at::Tensor &t) {
  if (t.dim() != 3) fail_arg("image", "must be 3-d (channels, height, width), got " + std::to_string(t.dim()) + "-d");
  const int64_t c = t.size(0), hgt = t.size(1), wid = t.size(2);
  if (c != 1 && c != 3 && c != 4) fail_arg("image", "must have 1, 3 or 4 channels, got " + std::to_string(c));
  if (hgt < 1 || wid < 1 || hgt > (1 << 16) || wid > (1 << 16))
    fail_arg("image", "height and width must be in [1, 65536]");
  if (c10::isComplexType(t.scalar_type()) || t.scalar_type() == at::kBool)
    fail_arg("image", "must be uint8 or a real number type");
  at::Tensor x = t.detach().to(at::kCPU);
  // torch's image(): uint8 kept, anything else * 255 in float32, clipped, truncated.
  if (x.scalar_type() != at::kByte) x = x.to(at::kFloat).mul(255).clamp(0, 255).to(at::kByte);
  x = x.permute({1, 2, 0});
  if (c == 1) x = x.expand({hgt, wid, 3});
  x = x.contiguous();
  std::string png = encode_png(x.data_ptr<uint8_t>(), hgt, wid, static_cast<int>(x.size(2)));
  Proto img;
  img.varint_field(1, static_cast<uint64_t>(hgt));
  img.varint_field(2, static_cast<uint64_t>(wid));
  img.varint_field(3, static_cast<uint64_t>(x.size(2)));
  img.bytes_field(4, png);
  Proto value;
  value.bytes_field(1, tag);
  value.bytes_field(4, img.bytes());
  return value;
}

Proto text(const char *tag, const char *txt) {
  Proto plugin;
  plugin.bytes_field(1, "text");  // content: TextPluginData(version=0), empty once encoded
  Proto meta;
  meta.bytes_field(1, plugin.bytes());
  Proto dim;
  dim.varint_field(1, 1);
  Proto shape;
  shape.bytes_field(2, dim.bytes());
  Proto tensor;
  tensor.varint_field(1, 7);  // DT_STRING
  tensor.bytes_field(2, shape.bytes());
  tensor.bytes_field(8, txt);
  Proto value;
  value.bytes_field(1, std::string(tag) + "/text_summary");
  value.bytes_field(8, tensor.bytes());
  value.bytes_field(9, meta.bytes());
  return value;
}

ctorch_summary_writer_s &require_writer(ctorch_summary_writer w) {
  require_ptr(w, "writer");
  if (w->fd < 0) fail_arg("writer", "is closed");
  return *w;
}

std::atomic<int> g_uid{0};

struct WriterDeleter {
  void operator()(ctorch_summary_writer_s *w) const { ctorch_summary_writer_free(w); }
};
using WriterPtr = std::unique_ptr<ctorch_summary_writer_s, WriterDeleter>;

// A new event file in dir (made with its parents), named as torch names them.
WriterPtr open_writer(const std::string &dir, const std::string &suffix) {
  make_dirs(dir);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  char name[512];
  const double t = now();
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.%s.%d.%d%s", static_cast<long long>(t), host,
                static_cast<int>(getpid()), g_uid++, suffix.c_str());
  WriterPtr w(new ctorch_summary_writer_s);
  w->path = dir + "/" + name;
  w->fd = ::open(w->path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (w->fd < 0) fail(CTORCH_IO, "cannot create '" + w->path + "': " + std::strerror(errno));
  write_all(*w, tfrecord(event_file_version(t)));
  return w;
}

// ---- hparams (torch.utils.tensorboard.summary.hparams) -------------------------
// HParamsPluginData {version 1 = 0; experiment 2 | session_start_info 3 |
// session_end_info 4} inside SummaryMetadata.PluginData{"hparams", content}.
Proto hparams_value(const char *tag, int which, const std::string &message) {
  Proto content;
  content.varint_field(1, 0);  // PLUGIN_DATA_VERSION
  content.bytes_field(which, message);
  Proto plugin;
  plugin.bytes_field(1, "hparams");
  plugin.bytes_field(2, content.bytes());
  Proto meta;
  meta.bytes_field(1, plugin.bytes());
  Proto value;
  value.bytes_field(1, tag);
  value.bytes_field(9, meta.bytes());
  return value;
}

// Python's str(time.time()): the shortest repr of the double.
std::string python_float(double x) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace
}  // namespace logging
}  // namespace ctorch

using namespace ctorch;
using namespace ctorch::logging;

CTORCH_API ctorch_status ctorch_summary_writer_new(ctorch_summary_writer *out, const char *log_dir,
                                                   const char *filename_suffix) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  require_ptr(log_dir, "log_dir");
  if (!*log_dir) fail_arg("log_dir", "is empty");
  std::string suffix = filename_suffix ? filename_suffix : "";
  if (suffix.find('/') != std::string::npos) fail_arg("filename_suffix", "must not contain '/'");
  require_utf8(suffix.c_str(), "filename_suffix");
  *out = open_writer(log_dir, suffix).release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_summary_writer_path(const char **out, ctorch_summary_writer w) {
  CTORCH_TRY
  require_out(out, "out");
  *out = require_writer(w).path.c_str();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_summary_writer_add_scalar(ctorch_summary_writer w, const char *tag, double value,
                                                          int64_t step, double wall_time) {
  CTORCH_TRY
  auto &wr = require_writer(w);
  require_tag(tag);
  Proto v;
  v.bytes_field(1, tag);
  v.float_field(2, static_cast<float>(value));
  add(wr, v, step, wall_time);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_summary_writer_add_histogram(ctorch_summary_writer w, const char *tag,
                                                             ctorch_tensor values, int64_t step, double wall_time) {
  CTORCH_TRY
  auto &wr = require_writer(w);
  require_tag(tag);
  require_tensor(values, "values");
  Borrowed t(values);
  if (c10::isComplexType(t->scalar_type())) fail_arg("values", "must be real");
  add(wr, histogram(tag, t), step, wall_time);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_summary_writer_add_image(ctorch_summary_writer w, const char *tag, ctorch_tensor img,
                                                         int64_t step, double wall_time) {
  CTORCH_TRY
  auto &wr = require_writer(w);
  require_tag(tag);
  require_tensor(img, "image");
  Borrowed t(img);
  add(wr, image(tag, t), step, wall_time);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_summary_writer_add_text(ctorch_summary_writer w, const char *tag, const char *txt,
                                                        int64_t step, double wall_time) {
  CTORCH_TRY
  auto &wr = require_writer(w);
  require_tag(tag);
  require_ptr(txt, "text");
  require_utf8(txt, "text");
  add(wr, text(tag, txt), step, wall_time);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_summary_writer_add_hparams(ctorch_summary_writer w, const char *const *names,
                                                           const double *values, const char *const *texts, size_t n,
                                                           const char *const *metric_names,
                                                           const double *metric_values, size_t n_metrics,
                                                           const char *run_name) {
  CTORCH_TRY
  auto &wr = require_writer(w);
  require_ptr(names, "names");
  if (n == 0) fail_arg("n", "must be >= 1 (torch logs nothing without hyper-parameters)");
  if (!values && !texts) fail_arg("values", "and texts are both NULL");
  if (n_metrics && (!metric_names || !metric_values)) fail_arg("metric_names", "and metric_values are needed for n_metrics > 0");
  std::string run = run_name ? run_name : python_float(now());
  if (run.empty() || run.find('/') != std::string::npos || run == "." || run == "..")
    fail_arg("run_name", "must be a non-empty directory name without '/'");
  require_utf8(run.c_str(), "run_name");
  // Experiment {hparam_infos 4: HParamInfo{name 1, type 4}; metric_infos 5: MetricInfo{name 1: MetricName{tag 2}}}
  // SessionStartInfo {hparams 1: map<string, Value{number_value 2 | string_value 3}>}
  Proto exp, start;
  for (size_t i = 0; i < n; ++i) {
    if (!names[i] || !*names[i]) fail_arg("names", "entry " + std::to_string(i) + " is NULL or empty");
    const bool is_text = texts && texts[i];
    require_utf8(names[i], "names[" + std::to_string(i) + "]");
    if (is_text) require_utf8(texts[i], "texts[" + std::to_string(i) + "]");
    if (!is_text && !values) fail_arg("values", "is NULL but hyper-parameter '" + std::string(names[i]) + "' is a number");
    Proto info;
    info.bytes_field(1, names[i]);
    info.varint_field(4, is_text ? 1 : 3);  // DATA_TYPE_STRING, DATA_TYPE_FLOAT64
    exp.bytes_field(4, info.bytes());
    Proto value;
    if (is_text) value.bytes_field(3, texts[i]);
    else value.double_field(2, values[i]);
    Proto entry;
    entry.bytes_field(1, names[i]);
    entry.bytes_field(2, value.bytes());
    start.bytes_field(1, entry.bytes());
  }
  for (size_t i = 0; i < n_metrics; ++i) {
    if (!metric_names[i] || !*metric_names[i]) fail_arg("metric_names", "entry " + std::to_string(i) + " is NULL or empty");
    require_utf8(metric_names[i], "metric_names[" + std::to_string(i) + "]");
    Proto tag, info;
    tag.bytes_field(2, metric_names[i]);
    info.bytes_field(1, tag.bytes());
    exp.bytes_field(5, info.bytes());
  }
  Proto end;
  end.varint_field(1, 1);  // STATUS_SUCCESS
  const std::string dir = wr.path.substr(0, wr.path.rfind('/')) + "/" + run;
  WriterPtr hp = open_writer(dir, "");
  add(*hp, hparams_value("_hparams_/experiment", 2, exp.bytes()), 0, 0);
  add(*hp, hparams_value("_hparams_/session_start_info", 3, start.bytes()), 0, 0);
  add(*hp, hparams_value("_hparams_/session_end_info", 4, end.bytes()), 0, 0);
  for (size_t i = 0; i < n_metrics; ++i) {
    Proto v;
    v.bytes_field(1, metric_names[i]);
    v.float_field(2, static_cast<float>(metric_values[i]));
    add(*hp, v, 0, 0);
  }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_summary_writer_flush(ctorch_summary_writer w) {
  CTORCH_TRY
  auto &wr = require_writer(w);
  std::lock_guard<std::mutex> lock(wr.mu);
  if (::fsync(wr.fd) != 0 && errno != EINVAL)
    fail(CTORCH_IO, "cannot flush '" + wr.path + "': " + std::strerror(errno));
  CTORCH_CATCH
}

CTORCH_API void ctorch_summary_writer_free(ctorch_summary_writer w) {
  if (!ctorch::release_handle(w, __func__)) return;
  if (w->fd >= 0) ::close(w->fd);
  delete w;
}
