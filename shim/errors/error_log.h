// Process-wide log of recent failures (ids, tickets), behind the thread-local
// last error of errors.cpp. See ctorch_last_error_id in ctorch.h.
#pragma once

#include <cstdint>
#include <string>

#include "ctorch.h"

namespace ctorch {
namespace error_log {

// Records a failure's message; returns its new process-unique id (>= 1).
// noexcept: drops the message (keeps the id) if copying it fails.
uint64_t record(ctorch_status status, const std::string &msg) noexcept;

// The status a failing entry point returns: `status`, with the ticket of
// `id` above its low 8 bits when tickets are on.
ctorch_status returned_status(ctorch_status status, uint64_t id) noexcept;

}  // namespace error_log
}  // namespace ctorch
