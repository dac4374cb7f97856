// ctorch-lm-serve: a language model served over HTTP with the OpenAI API's
// endpoints (serve/README.md). cpp-httplib reads and writes HTTP; the
// engine (engine.h) batches the requests' decoding; openai.h reads the
// requests and writes the responses.
#include <httplib.h>

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include <ctorch.h>

#include "engine.h"
#include "openai.h"

using nlohmann::json;
using namespace lmserve;

namespace {

const char kUsage[] =
    "usage: ctorch-lm-serve MODEL [options]\n"
    "  MODEL                 a Hugging Face folder or a GGUF file (ctorch_lm_load)\n"
    "  --host ADDR           address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port N              port (default 8080; 0: any free port, printed at start)\n"
    "  --model-name NAME     the model's id in the API (default: the file or folder name)\n"
    "  --load-options TEXT   ctorch_lm_load's options, e.g. dtype=bfloat16\n"
    "  --chat-template T     a template's text, @FILE, or a built-in name (default: the model's own)\n"
    "  --ctx N               positions per request: prompt and completion (default min(2048, n_ctx_train))\n"
    "  --slots N             requests decoded together in one batch (default 4)\n"
    "  --queue N             requests that may wait for a slot; more are refused with 503 (default 16)\n"
    "  --batch-tokens N      prompt tokens one forward takes at most (default 256)\n"
    "  --max-prompt-tokens N longer prompts are refused with 400 (default: --ctx - 1)\n"
    "  --max-tokens N        a request's completion tokens at most (default: what the context leaves)\n"
    "  --max-body BYTES      larger request bodies are refused with 413 (default 1048576)\n"
    "  --http-threads N      connections served at once (default 2 * (slots + queue) + 4)\n"
    "  --threads N           libtorch's intra-op threads (default: libtorch's)\n"
    "  --timeout S           seconds a client may take to send its request (default 30)\n"
    "  --quiet               no request log on stderr\n";

struct Config {
  std::string model_path, host = "127.0.0.1", model_name, load_options, chat_template;
  int port = 8080;
  int64_t ctx = 0, slots = 4, queue = 16, batch_tokens = 256, max_prompt_tokens = 0, max_tokens = 0;
  int64_t max_body = 1 << 20, http_threads = 0, threads = 0, timeout = 30;
  bool quiet = false;
};

[[noreturn]] void usage_error(const std::string &msg) {
  std::fprintf(stderr, "ctorch-lm-serve: %s\n%s", msg.c_str(), kUsage);
  std::exit(2);
}

int64_t to_int(const std::string &flag, const std::string &v, int64_t lo) {
  char *end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo) usage_error(flag + " needs an integer >= " + std::to_string(lo));
  return x;
}

Config parse_args(int argc, char **argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a == "--quiet") {
      c.quiet = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) {
      if (!c.model_path.empty()) usage_error("one MODEL only (also got " + a + ")");
      c.model_path = a;
      continue;
    }
    if (i + 1 >= argc) usage_error(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--host") c.host = v;
    else if (a == "--port") c.port = static_cast<int>(to_int(a, v, 0));
    else if (a == "--model-name") c.model_name = v;
    else if (a == "--load-options") c.load_options = v;
    else if (a == "--chat-template") c.chat_template = v;
    else if (a == "--ctx") c.ctx = to_int(a, v, 2);
    else if (a == "--slots") c.slots = to_int(a, v, 1);
    else if (a == "--queue") c.queue = to_int(a, v, 0);
    else if (a == "--batch-tokens") c.batch_tokens = to_int(a, v, 1);
    else if (a == "--max-prompt-tokens") c.max_prompt_tokens = to_int(a, v, 1);
    else if (a == "--max-tokens") c.max_tokens = to_int(a, v, 1);
    else if (a == "--max-body") c.max_body = to_int(a, v, 64);
    else if (a == "--http-threads") c.http_threads = to_int(a, v, 1);
    else if (a == "--threads") c.threads = to_int(a, v, 1);
    else if (a == "--timeout") c.timeout = to_int(a, v, 1);
    else usage_error("unknown option " + a);
  }
  if (c.model_path.empty()) usage_error("MODEL is required");
  if (c.port > 65535) usage_error("--port must be at most 65535");
  return c;
}

std::string last_error() {
  const char *e = ctorch_last_error();
  return e && *e ? e : "failed";
}

// The model's name in the API: the last path component, a GGUF's extension dropped.
std::string default_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) name.resize(name.size() - 5);
  return name;
}

bool load_model(const Config &c, Model *m, std::string *error) {
  if (ctorch_lm_load(&m->handle, c.model_path.c_str(), c.load_options.empty() ? nullptr : c.load_options.c_str()) !=
      CTORCH_OK) {
    *error = "ctorch_lm_load: " + last_error();
    return false;
  }
  char *desc = nullptr;
  if (ctorch_lm_describe(&desc, m->handle) != CTORCH_OK) {
    *error = "ctorch_lm_describe: " + last_error();
    return false;
  }
  m->description = desc;
  ctorch_string_free(desc);
  try {
    json d = json::parse(m->description);
    m->n_ctx_train = d.at("n_ctx_train").get<int64_t>();
    m->n_vocab = d.at("n_vocab").get<int64_t>();
    m->has_chat_template = d.at("has_chat_template").get<bool>();
    for (const auto &e : d.at("eos")) m->eos.push_back(e.get<int64_t>());
  } catch (const std::exception &e) {
    *error = std::string("ctorch_lm_describe's JSON: ") + e.what();
    return false;
  }
  m->id = c.model_name.empty() ? default_name(c.model_path) : c.model_name;
  return true;
}

// A response id: the endpoint's prefix and 24 random hex digits.
std::string new_id(const char *prefix) {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lk(mu);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx%08llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng() & 0xffffffffu));
  return std::string(prefix) + buf;
}

void send_error(httplib::Response &res, const ApiError &e) {
  res.status = e.status;
  res.set_content(error_body(e), "application/json");
}

ApiError server_error(int status, const std::string &message, const char *type) {
  ApiError e;
  e.status = status;
  e.message = message;
  e.type = type;
  return e;
}

// How a job that ended without finishing is told to the client.
ApiError job_error(const Job &job) {
  if (job.finish_reason() == "cancelled")
    return server_error(503, job.error().empty() ? "the request was cancelled" : job.error(), "server_error");
  return server_error(500, "generation failed: " + job.error(), "server_error");
}

class Server {
 public:
  Server(const Config &c, const Model &m, Engine &e) : model_(m), engine_(e) {
    limits_.n_ctx = e.n_ctx();
    limits_.max_prompt_tokens = c.max_prompt_tokens > 0 ? std::min(c.max_prompt_tokens, limits_.n_ctx - 1)
                                                         : limits_.n_ctx - 1;
    limits_.max_tokens = c.max_tokens;
    limits_.chat_template = c.chat_template;
  }

  void routes(httplib::Server &svr) {
    svr.Get("/health", [this](const httplib::Request &, httplib::Response &res) { health(res); });
    svr.Get("/v1/models", [this](const httplib::Request &, httplib::Response &res) {
      res.set_content(dump(json{{"object", "list"}, {"data", json::array({model_json()})}}), "application/json");
    });
    svr.Get(R"(/v1/models/(.+))", [this](const httplib::Request &req, httplib::Response &res) {
      if (req.matches[1] != model_.id) {
        ApiError e = server_error(404, "The model `" + std::string(req.matches[1]) + "` does not exist",
                                  "invalid_request_error");
        e.code = "model_not_found";
        send_error(res, e);
        return;
      }
      res.set_content(dump(model_json()), "application/json");
    });
    svr.Post("/v1/chat/completions",
             [this](const httplib::Request &req, httplib::Response &res) { generate(req, res, true); });
    svr.Post("/v1/completions",
             [this](const httplib::Request &req, httplib::Response &res) { generate(req, res, false); });
  }

 private:
  json model_json() const {
    return {{"id", model_.id}, {"object", "model"}, {"created", started_}, {"owned_by", "ctorch"}};
  }

  void health(httplib::Response &res) {
    EngineStats s = engine_.stats();
    json j = {{"status", "ok"}, {"model", model_.id}, {"slots", s.slots}, {"busy", s.busy}, {"queued", s.queued},
              {"served", s.served}, {"cancelled", s.cancelled}, {"failed", s.failed}, {"refused", s.refused},
              {"prompt_tokens", s.prompt_tokens}, {"completion_tokens", s.completion_tokens},
              {"forwards", s.forwards}, {"max_batch", s.max_batch},
              {"n_ctx", limits_.n_ctx}, {"max_prompt_tokens", limits_.max_prompt_tokens}};
    res.set_content(dump(j), "application/json");
  }

  void generate(const httplib::Request &http_req, httplib::Response &res, bool chat) {
    auto req = std::make_shared<ApiRequest>();
    ApiError err;
    if (!parse_request(http_req.body, chat, model_, limits_, req.get(), &err)) {
      send_error(res, err);
      return;
    }
    bool busy = false;
    std::string why;
    std::shared_ptr<Job> job = engine_.submit(std::move(req->gen), &busy, &why);
    if (!job) {
      if (busy) res.set_header("Retry-After", "1");
      send_error(res, busy ? server_error(503, why, "server_busy") : server_error(400, why, "invalid_request_error"));
      return;
    }
    std::string id = new_id(chat ? "chatcmpl-" : "cmpl-");
    int64_t created = static_cast<int64_t>(std::time(nullptr));
    if (req->stream) {
      stream(res, req, job, id, created);
      return;
    }
    std::string text, piece;
    while (!job->take(&piece, std::chrono::milliseconds(1000))) text += piece;
    text += piece;
    if (job->finish_reason() != "stop" && job->finish_reason() != "length") {
      send_error(res, job_error(*job));
      return;
    }
    res.set_content(dump(completion_response(*req, model_, id, created, text, *job)), "application/json");
  }

  // Server-sent events: one "data: {chunk}" event per piece of text, the
  // finish reason in the last chunk, then "data: [DONE]". A write that
  // fails means the client has gone: the job is cancelled and its slot freed
  // (the releaser does the same whenever the response ends unfinished).
  // Silence longer than two seconds (waiting for a slot, a long prefill)
  // is broken by an SSE comment, so a client that left is noticed then too.
  void stream(httplib::Response &res, std::shared_ptr<ApiRequest> req, std::shared_ptr<Job> job,
              const std::string &id, int64_t created) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto started = std::make_shared<bool>(false);
    auto quiet_ms = std::make_shared<int64_t>(0);
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, req, job, id, created, started, quiet_ms](size_t, httplib::DataSink &sink) -> bool {
          auto write = [&](const std::string &s) {
            if (sink.write(s.data(), s.size())) return true;
            job->cancel();
            return false;
          };
          auto event = [&](const json &j) { return write("data: " + dump(j) + "\n\n"); };
          if (!*started) {
            *started = true;
            if (req->chat) return event(stream_chunk(*req, model_, id, created, "", "", true));
          }
          std::string text;
          bool ended = job->take(&text, std::chrono::milliseconds(250));
          if (!text.empty()) {
            *quiet_ms = 0;
            if (!event(stream_chunk(*req, model_, id, created, text, "", false))) return false;
          }
          if (!ended) {
            if (text.empty() && (*quiet_ms += 250) >= 2000) {
              *quiet_ms = 0;
              return write(": waiting\n\n");
            }
            return true;
          }
          const std::string &reason = job->finish_reason();
          if (reason == "stop" || reason == "length") {
            if (!event(stream_chunk(*req, model_, id, created, "", reason, false))) return false;
            if (req->include_usage && !event(usage_chunk(*req, model_, id, created, *job))) return false;
          } else if (!write("data: " + error_body(job_error(*job)) + "\n\n")) {
            return false;
          }
          if (!write("data: [DONE]\n\n")) return false;
          sink.done();
          return true;
        },
        [job](bool) { job->cancel(); });
  }

  const Model &model_;
  Engine &engine_;
  ApiLimits limits_;
  int64_t started_ = static_cast<int64_t>(std::time(nullptr));
};

// What the error handler writes for cpp-httplib's own refusals (no route,
// a body over the limit, a request it cannot read), in the API's shape.
httplib::Server::HandlerResponse http_error(const httplib::Request &req, httplib::Response &res, int64_t max_body) {
  if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
  ApiError e;
  e.status = res.status;
  if (res.status == 404) {
    e.message = "no such endpoint: " + req.method + " " + req.path;
    e.code = "not_found";
  } else if (res.status == 413) {
    e.message = "the request body is larger than this server takes (" + std::to_string(max_body) + " bytes)";
    e.code = "request_too_large";
  } else {
    e.message = "the request could not be read (HTTP " + std::to_string(res.status) + ")";
    if (res.status >= 500) e.type = "server_error";
  }
  send_error(res, e);
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

int main(int argc, char **argv) {
  Config cfg = parse_args(argc, argv);
  // A client that leaves makes a write fail with EPIPE, which must not be a signal.
  std::signal(SIGPIPE, SIG_IGN);
  // SIGINT and SIGTERM are taken by one thread (sigwait), which stops the
  // server: blocked here, before any thread starts, so every thread inherits it.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  if (cfg.threads > 0 && ctorch_set_num_threads(static_cast<int>(cfg.threads)) != CTORCH_OK) {
    std::fprintf(stderr, "ctorch-lm-serve: --threads: %s\n", last_error().c_str());
    return 1;
  }
  if (!cfg.chat_template.empty() && cfg.chat_template[0] == '@') {
    std::ifstream f(cfg.chat_template.substr(1), std::ios::binary);
    if (!f) usage_error("--chat-template: cannot read " + cfg.chat_template.substr(1));
    std::ostringstream ss;
    ss << f.rdbuf();
    cfg.chat_template = ss.str();
  }
  Model model;
  std::string error;
  if (!load_model(cfg, &model, &error)) {
    std::fprintf(stderr, "ctorch-lm-serve: %s: %s\n", cfg.model_path.c_str(), error.c_str());
    ctorch_lm_model_free(model.handle);
    return 1;
  }
  EngineOptions eo;
  eo.slots = cfg.slots;
  eo.queue = cfg.queue;
  eo.batch_tokens = cfg.batch_tokens;
  eo.n_ctx = cfg.ctx > 0 ? cfg.ctx : std::min<int64_t>(2048, model.n_ctx_train > 0 ? model.n_ctx_train : 2048);
  int rc = 0;
  {
    Engine engine(model, eo, &error);
    if (!engine.ok()) {
      std::fprintf(stderr, "ctorch-lm-serve: %s\n", error.c_str());
      ctorch_lm_model_free(model.handle);
      return 1;
    }
    Server api(cfg, model, engine);
    httplib::Server svr;
    size_t pool = cfg.http_threads > 0 ? static_cast<size_t>(cfg.http_threads)
                                       : static_cast<size_t>(2 * (cfg.slots + cfg.queue) + 4);
    svr.new_task_queue = [pool] { return new httplib::ThreadPool(pool); };
    svr.set_payload_max_length(static_cast<size_t>(cfg.max_body));
    svr.set_read_timeout(cfg.timeout);
    svr.set_write_timeout(cfg.timeout);
    // An idle keep-alive connection holds one of the pool's threads: held
    // briefly, so that idle clients cannot take them all (and a stop does
    // not wait for them long).
    svr.set_keep_alive_timeout(2);
    svr.set_tcp_nodelay(true);
    const int64_t max_body = cfg.max_body;
    svr.set_error_handler(httplib::Server::HandlerWithResponse(
        [max_body](const httplib::Request &req, httplib::Response &res) { return http_error(req, res, max_body); }));
    svr.set_exception_handler([](const httplib::Request &, httplib::Response &res, std::exception_ptr ep) {
      std::string what = "unknown error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception &e) {
        what = e.what();
      } catch (...) {
      }
      send_error(res, server_error(500, "internal error: " + what, "server_error"));
    });
    if (!cfg.quiet) {
      svr.set_logger([](const httplib::Request &req, const httplib::Response &res) {
        std::fprintf(stderr, "%s %s %d\n", req.method.c_str(), req.path.c_str(), res.status);
      });
    }
    api.routes(svr);
    int port = cfg.port;
    if (port == 0) {
      port = svr.bind_to_any_port(cfg.host);
      if (port < 0) port = 0;
    } else if (!svr.bind_to_port(cfg.host, port)) {
      port = 0;
    }
    if (port == 0) {
      std::fprintf(stderr, "ctorch-lm-serve: cannot listen on %s:%d\n", cfg.host.c_str(), cfg.port);
      rc = 1;
    } else {
      std::thread stopper([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        engine.shutdown();
        svr.stop();
      });
      std::printf("ctorch-lm-serve: %s on http://%s:%d (slots %lld, context %lld)\n", model.id.c_str(),
                  cfg.host.c_str(), port, static_cast<long long>(eo.slots), static_cast<long long>(eo.n_ctx));
      std::fflush(stdout);
      if (!svr.listen_after_bind()) rc = 1;
      // listen returns once stopped; a failure to listen ends the program
      // the same way: the stopper is woken with a signal of its own.
      if (svr.is_running() || rc) pthread_kill(stopper.native_handle(), SIGTERM);
      stopper.join();
    }
  }
  ctorch_lm_model_free(model.handle);
  return rc;
}
