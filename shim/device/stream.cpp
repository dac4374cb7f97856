// CUDA streams, stream scopes and events through the C ABI.
//
// Built only on device-generic c10 types, which need no CUDA header and
// exist in libtorch 1.13 and 2.x: c10::Stream (a device plus an id),
// c10::impl::VirtualGuardImpl (the registered CUDA guard: current stream,
// pool streams, query, synchronize), c10::StreamGuard and c10::Event. What
// 1.13's c10::Event lacks (synchronize, elapsed time) is bridged in compat.h.
#define CTORCH_COMPAT_EVENTS 1  // compat::event_synchronize, event_elapsed_ms
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "core/cuda_backend.h"
#include "core/scope_stack.h"

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

struct ctorch_stream_s {
  c10::Stream stream;
  ctorch::Live<ctorch_stream_s> live{this};  // last: see core/internal.h
};

struct ctorch_event_s {
  c10::Event event;
  bool timing;
  ctorch::Live<ctorch_event_s> live{this};  // last: see core/internal.h
};

struct ctorch_stream_scope_s {
  std::thread::id owner;
  std::atomic<bool> left{false};  // see core/scope_stack.h
  std::unique_ptr<c10::StreamGuard> guard;
  ctorch::Live<ctorch_stream_scope_s> live{this};  // last: see core/internal.h
};

namespace {

// Open stream scopes of this thread, innermost last (core/scope_stack.h).
thread_local ctorch::ScopeStack<ctorch_stream_scope_s> tls_stream_scopes;

const c10::impl::VirtualGuardImpl &cuda_impl() {
  // Only reached after ctorch::cuda_device succeeded, so the CUDA guard is
  // registered. One instance: it is a thin pointer to the registered impl.
  static const c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  return impl;
}

const c10::Stream &live_stream(ctorch_stream s, const char *arg) {
  ctorch::require_ptr(s, arg);
  return s->stream;
}

ctorch_event_s &live_event(ctorch_event e, const char *arg) {
  ctorch::require_ptr(e, arg);
  return *e;
}

ctorch_stream give_stream(const c10::Stream &s) { return new ctorch_stream_s{s}; }

}  // namespace

extern "C" {

// ---- streams -----------------------------------------------------------------

CTORCH_API ctorch_status ctorch_stream_new(ctorch_stream *out, ctorch_device device, int high_priority) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  c10::Device d = ctorch::cuda_device(device, "device", "a stream");
  // getStreamFromGlobalPool is in 1.13 and 2.x (2.x's getNewStream is the
  // same pool under another name): streams are recycled round-robin, as
  // torch.cuda.Stream() does.
  *out = give_stream(cuda_impl().getStreamFromGlobalPool(d, high_priority != 0));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_current(ctorch_stream *out, ctorch_device device) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  c10::Device d = ctorch::cuda_device(device, "device", "a stream");
  *out = give_stream(cuda_impl().getStream(d));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_default(ctorch_stream *out, ctorch_device device) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  c10::Device d = ctorch::cuda_device(device, "device", "a stream");
  *out = give_stream(cuda_impl().getDefaultStream(d));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_device(ctorch_device *out, ctorch_stream s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch::from_device(live_stream(s, "s").device());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_id(int64_t *out, ctorch_stream s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = static_cast<int64_t>(live_stream(s, "s").id());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_query(int *out, ctorch_stream s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  const c10::Stream &st = live_stream(s, "s");  // checked before the CUDA guard is looked up
  *out = cuda_impl().queryStream(st) ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_synchronize(ctorch_stream s) {
  CTORCH_TRY
  const c10::Stream &st = live_stream(s, "s");
  cuda_impl().synchronizeStream(st);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_wait_event(ctorch_stream s, ctorch_event e) {
  CTORCH_TRY
  const c10::Stream &st = live_stream(s, "s");
  live_event(e, "e").event.block(st);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_wait_stream(ctorch_stream s, ctorch_stream other) {
  CTORCH_TRY
  const c10::Stream &st = live_stream(s, "s");
  const c10::Stream &o = live_stream(other, "other");
  if (o.device_type() != st.device_type())
    ctorch::fail_arg("other", "is a " + c10::DeviceTypeName(o.device_type()) + " stream, s a " +
                                  c10::DeviceTypeName(st.device_type()) + " one");
  // Stream.wait_stream: record a timing-free event on `other`, make s wait
  // for it. Destroying the event afterwards is fine: the wait is enqueued.
  c10::Event ev(o.device_type());
  ev.record(o);
  ev.block(st);
  CTORCH_CATCH
}

CTORCH_API void ctorch_stream_free(ctorch_stream s) {
  if (ctorch::release_handle(s, __func__)) delete s;
}

// ---- stream scopes -------------------------------------------------------------

CTORCH_API ctorch_status ctorch_stream_scope_enter(ctorch_stream_scope *out, ctorch_stream s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  const c10::Stream &st = live_stream(s, "s");
  tls_stream_scopes.before_enter();  // no throw after the guard
  auto scope = std::make_unique<ctorch_stream_scope_s>();
  scope->owner = std::this_thread::get_id();
  // c10::StreamGuard makes st's device current, then st current on it, and
  // restores both on destruction: `with torch.cuda.stream(s)`.
  scope->guard = std::make_unique<c10::StreamGuard>(st);
  tls_stream_scopes.push(scope.get());
  *out = scope.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_stream_scope_leave(ctorch_stream_scope scope) {
  CTORCH_TRY
  tls_stream_scopes.leave(scope, "stream ");  // the guard restores the previous stream and device
  CTORCH_CATCH
}

// ---- events --------------------------------------------------------------------

CTORCH_API ctorch_status ctorch_event_new(ctorch_event *out, ctorch_device_type device_type, int enable_timing) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::cuda_device(ctorch_device{device_type, -1}, "device_type", "an event");
  // BACKEND_DEFAULT is cudaEventDefault (timed), PYTORCH_DEFAULT
  // cudaEventDisableTiming, in 1.13 and 2.x alike.
  c10::EventFlag flag = enable_timing ? c10::EventFlag::BACKEND_DEFAULT : c10::EventFlag::PYTORCH_DEFAULT;
  *out = new ctorch_event_s{c10::Event(c10::DeviceType::CUDA, flag), enable_timing != 0};
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_event_record(ctorch_event e, ctorch_stream s) {
  CTORCH_TRY
  auto &ev = live_event(e, "e");
  if (s) {
    ev.event.record(s->stream);
  } else {
    int d = ctorch::cuda_device(-1, "s");
    ev.event.record(cuda_impl().getStream(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(d))));
  }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_event_query(int *out, ctorch_event e) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = live_event(e, "e").event.query() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_event_synchronize(ctorch_event e) {
  CTORCH_TRY
  ctorch::compat::event_synchronize(live_event(e, "e").event);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_event_elapsed_ms(double *out, ctorch_event start, ctorch_event end) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  auto &a = live_event(start, "start");
  auto &b = live_event(end, "end");
  if (!a.timing) ctorch::fail_arg("start", "was created without enable_timing");
  if (!b.timing) ctorch::fail_arg("end", "was created without enable_timing");
  if (!a.event.was_marked_for_recording()) ctorch::fail_arg("start", "was never recorded");
  if (!b.event.was_marked_for_recording()) ctorch::fail_arg("end", "was never recorded");
  *out = ctorch::compat::event_elapsed_ms(a.event, b.event);
  CTORCH_CATCH
}

CTORCH_API void ctorch_event_free(ctorch_event e) {
  if (!ctorch::release_handle(e, __func__)) return;
  try {
    delete e;  // cudaEventDestroy; c10 swallows its errors in destructors
  } catch (...) {
  }
}

}  // extern "C"
