// The autograd profiler from C (ctorch_profiler_*): what
// torch.autograd.profiler.profile() records on the CPU, exported as a Chrome
// trace and summarised as key_averages().table().
//
// Which profiler: libtorch's legacy one (enableProfilerLegacy /
// disableProfilerLegacy), on 1.13.1 and on 2.x alike. Kineto
// (profiler_kineto.h) is declared by both versions' headers, but Debian's
// 1.13.1 is built without it (USE_KINETO off: its enableProfiler records
// nothing useful), and one code path gives both versions the same events
// and the same output. What that costs: no CUDA kernel timeline (the legacy
// profiler records CPU ranges; CUDA time would need its CUDA mode and
// events).
//
// The legacy profiler is thread-local: it records the operators of the
// thread that enabled it (and the autograd engine's work for that thread,
// which runs on it for CPU graphs, and at::launch tasks, to which libtorch
// propagates the state). Its events come as push/pop pairs matched by
// RecordFunction handle, as Python's parse_legacy_records matches them.
#include "core/internal.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <unistd.h>

// A named namespace, not an anonymous one: unity batches mix the folder's files.
namespace ctorch_prof_impl {

namespace prof = torch::autograd::profiler;

struct Event {
  std::string name;
  uint64_t tid = 0;
  double start_us = 0, dur_us = 0, self_us = 0;
  std::vector<std::vector<int64_t>> shapes;
};

// Set while a session of this thread records; `orphaned` tells a later start
// on the thread that the session's handle was freed elsewhere, so its still
// enabled profiler may be switched off and dropped.
struct Active {
  std::atomic<bool> orphaned{false};
};
thread_local std::shared_ptr<Active> tl_active;

}  // namespace ctorch_prof_impl

struct ctorch_profiler_s {
  std::thread::id thread;
  bool recording = true;
  bool shapes = false;
  std::shared_ptr<ctorch_prof_impl::Active> active;
  std::vector<ctorch_prof_impl::Event> events;
  ctorch::Live<ctorch_profiler_s> live{this};  // last: see core/internal.h
};

namespace ctorch_prof_impl {

// Pairs each thread's push and pop events into ranges, relative to the
// __start_profile mark, and computes self time from the nesting (a range's
// children are the ranges of its thread inside it, as Python's
// populate_cpu_children).
std::vector<Event> ranges(const prof::thread_event_lists &lists) {
  const prof::LegacyEvent *start = nullptr;
  for (const auto &l : lists)
    for (const auto &e : l)
      if (e.kind() == prof::EventKind::Mark && std::string(e.name()) == "__start_profile") start = &e;
  std::vector<Event> out;
  for (const auto &l : lists) {
    std::map<uint64_t, const prof::LegacyEvent *> open;  // handle -> push
    std::vector<Event> mine;
    for (const auto &e : l) {
      if (e.kind() == prof::EventKind::PushRange) {
        open[e.handle()] = &e;
      } else if (e.kind() == prof::EventKind::PopRange) {
        auto it = open.find(e.handle());
        if (it == open.end()) continue;
        const prof::LegacyEvent &p = *it->second;
        Event r;
        r.name = p.name();
        r.tid = p.threadId();
        r.start_us = start ? start->cpuElapsedUs(p) : p.cpuUs();
        r.dur_us = p.cpuElapsedUs(e);
        r.shapes = p.shapes();
        mine.push_back(std::move(r));
        open.erase(it);
      }
    }
    std::sort(mine.begin(), mine.end(), [](const Event &a, const Event &b) {
      return a.start_us != b.start_us ? a.start_us < b.start_us : a.dur_us > b.dur_us;
    });
    std::vector<size_t> stack;
    for (size_t i = 0; i < mine.size(); ++i) {
      mine[i].self_us = mine[i].dur_us;
      double end = mine[i].start_us + mine[i].dur_us;
      while (!stack.empty() && mine[stack.back()].start_us + mine[stack.back()].dur_us < end) stack.pop_back();
      if (!stack.empty()) mine[stack.back()].self_us -= mine[i].dur_us;
      stack.push_back(i);
    }
    for (auto &r : mine) out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const Event &a, const Event &b) { return a.start_us < b.start_us; });
  return out;
}

void json_string(std::ostream &o, const std::string &s) {
  o << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o << '\\' << c;
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o << buf;
    } else o << c;
  }
  o << '"';
}

std::string shapes_text(const std::vector<std::vector<int64_t>> &s) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < s.size(); ++i) {
    o << (i ? ", " : "") << '[';
    for (size_t j = 0; j < s[i].size(); ++j) o << (j ? ", " : "") << s[i][j];
    o << ']';
  }
  o << ']';
  return o.str();
}

// Python's torch.autograd.profiler_util._format_time.
std::string fmt_time(double us) {
  char buf[64];
  if (us >= 1e6) std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3) std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}
std::string fmt_pct(double part, double whole) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f%%", whole > 0 ? part * 100.0 / whole : 0.0);
  return buf;
}

ctorch_profiler_s &stopped(ctorch_profiler p) {
  ctorch::check_handle(p, "p");
  if (p->recording) ctorch::fail(CTORCH_RUNTIME, "the session is still recording (call ctorch_profiler_stop first)");
  return *p;
}

}  // namespace ctorch_prof_impl

extern "C" {

CTORCH_API ctorch_status ctorch_profiler_start(ctorch_profiler *out, int record_shapes) {
  using namespace ctorch_prof_impl;
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (tl_active && tl_active->orphaned.load()) {
    // A session freed from another thread while recording: its profiler is
    // still on here; switch it off and drop its events.
    if (prof::profilerEnabled()) prof::disableProfilerLegacy();
    tl_active.reset();
  }
  if (tl_active || prof::profilerEnabled())
    ctorch::fail(CTORCH_RUNTIME, "a profiler is already recording on this thread (one session per thread)");
  auto p = std::make_unique<ctorch_profiler_s>();
  p->thread = std::this_thread::get_id();
  p->shapes = record_shapes != 0;
  p->active = std::make_shared<Active>();
  prof::ProfilerConfig cfg(prof::ProfilerState::CPU, /*report_input_shapes=*/p->shapes);
  prof::enableProfilerLegacy(cfg);
  tl_active = p->active;
  *out = p.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_profiler_stop(ctorch_profiler p) {
  using namespace ctorch_prof_impl;
  CTORCH_TRY
  ctorch::check_handle(p, "p");
  if (!p->recording) ctorch::fail(CTORCH_RUNTIME, "the session was already stopped");
  if (p->thread != std::this_thread::get_id())
    ctorch::fail(CTORCH_RUNTIME, "a session is stopped on the thread that started it (the profiler is thread-local)");
  prof::thread_event_lists lists = prof::disableProfilerLegacy();
  p->recording = false;
  tl_active.reset();
  p->events = ranges(lists);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_profiler_export_chrome_trace(ctorch_profiler p, const char *path) {
  using namespace ctorch_prof_impl;
  CTORCH_TRY
  ctorch_profiler_s &s = stopped(p);
  ctorch::require_ptr(path, "path");
  std::ostringstream o;
  o.precision(3);
  o << std::fixed;
  long pid = static_cast<long>(getpid());
  o << "{\"schemaVersion\": 1, \"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  for (size_t i = 0; i < s.events.size(); ++i) {
    const Event &e = s.events[i];
    o << (i ? ",\n" : "\n") << "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": ";
    json_string(o, e.name);
    o << ", \"pid\": " << pid << ", \"tid\": " << e.tid << ", \"ts\": " << e.start_us << ", \"dur\": " << e.dur_us
      << ", \"args\": {";
    if (s.shapes) o << "\"Input Dims\": " << shapes_text(e.shapes);
    o << "}}";
  }
  o << "\n]}\n";
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) ctorch::fail(CTORCH_IO, std::string("argument 'path': cannot open '") + path + "' for writing");
  f << o.str();
  f.close();
  if (!f) ctorch::fail(CTORCH_IO, std::string("argument 'path': writing '") + path + "' failed");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_profiler_table(char **out, ctorch_profiler p, const char *sort_by, int64_t row_limit) {
  using namespace ctorch_prof_impl;
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch_profiler_s &s = stopped(p);
  enum { NONE, TOTAL, SELF, AVG, COUNT } key = NONE;
  if (sort_by) {
    std::string k = sort_by;
    if (k == "cpu_time_total") key = TOTAL;
    else if (k == "self_cpu_time_total") key = SELF;
    else if (k == "cpu_time") key = AVG;
    else if (k == "count") key = COUNT;
    else
      ctorch::fail_arg("sort_by", "'" + k + "' is not one of cpu_time_total, self_cpu_time_total, cpu_time, count");
  }
  struct Avg {
    std::string name;
    double total = 0, self = 0;
    int64_t count = 0;
    std::string shapes;
  };
  std::vector<Avg> rows;
  std::map<std::string, size_t> at;
  double self_total = 0;
  for (const Event &e : s.events) {
    auto it = at.find(e.name);
    if (it == at.end()) {
      it = at.emplace(e.name, rows.size()).first;
      rows.push_back({e.name, 0, 0, 0, shapes_text(e.shapes)});
    }
    Avg &a = rows[it->second];
    a.total += e.dur_us;
    a.self += e.self_us;
    a.count += 1;
    self_total += e.self_us;
  }
  auto metric = [&](const Avg &a) {
    switch (key) {
      case TOTAL: return a.total;
      case SELF: return a.self;
      case AVG: return a.total / static_cast<double>(a.count);
      case COUNT: return static_cast<double>(a.count);
      default: return 0.0;
    }
  };
  if (key != NONE)
    std::stable_sort(rows.begin(), rows.end(), [&](const Avg &a, const Avg &b) { return metric(a) > metric(b); });
  if (row_limit >= 0 && rows.size() > static_cast<uint64_t>(row_limit)) rows.resize(static_cast<size_t>(row_limit));
  // Python's _build_table layout: the name column as wide as the longest
  // name (at most 55), the others 12 wide, two spaces between.
  size_t name_w = 4;
  for (const Avg &a : rows) name_w = std::max(name_w, std::min<size_t>(a.name.size(), 55));
  std::vector<std::string> head{"Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"};
  if (s.shapes) head.push_back("Input Shapes");
  std::ostringstream o;
  auto cell = [&](const std::string &t, size_t w) {
    o << std::string(w > t.size() ? w - t.size() : 0, ' ') << t << "  ";
  };
  auto line = [&]() {
    size_t n = name_w + 2 + head.size() * 14;
    o << std::string(n - 2, '-') << "\n";
  };
  line();
  o << "Name" << std::string(name_w - 4 + 2, ' ');
  for (auto &h : head) cell(h, 12);
  o << "\n";
  line();
  for (const Avg &a : rows) {
    std::string nm = a.name.size() > 55 ? a.name.substr(0, 52) + "..." : a.name;
    o << nm << std::string(name_w - nm.size() + 2, ' ');
    cell(fmt_pct(a.self, self_total), 12);
    cell(fmt_time(a.self), 12);
    cell(fmt_pct(a.total, self_total), 12);
    cell(fmt_time(a.total), 12);
    cell(fmt_time(a.total / static_cast<double>(a.count)), 12);
    cell(std::to_string(a.count), 12);
    if (s.shapes) o << a.shapes;
    o << "\n";
  }
  line();
  o << "Self CPU time total: " << fmt_time(self_total) << "\n";
  std::string text = o.str();
  char *r = static_cast<char *>(std::malloc(text.size() + 1));
  if (!r) throw std::bad_alloc();
  std::memcpy(r, text.c_str(), text.size() + 1);
  *out = r;
  CTORCH_CATCH
}

CTORCH_API void ctorch_profiler_free(ctorch_profiler p) {
  using namespace ctorch_prof_impl;
  if (!ctorch::release_handle(p, __func__)) return;
  if (p->recording) {
    if (p->thread == std::this_thread::get_id()) {
      try {
        prof::disableProfilerLegacy();
      } catch (...) {
      }
      tl_active.reset();
    } else {
      p->active->orphaned.store(true);
    }
  }
  delete p;
}

}  // extern "C"
