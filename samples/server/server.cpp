// An inference server with errshim in the request path, as it would run in
// production: an HTTP endpoint on loopback (cpp-httplib) serving a libtorch
// attention block with a KV cache (samples/torch/attention_block.hpp), each
// request run under errshim::remediate() with the policy read from a file,
// every decision written to a JSON-lines audit log, errshim's metrics in the
// server's prometheus-cpp registry at /metrics, and the catalog reloaded
// through a CatalogStore on SIGHUP and when one of its files changes (a
// broken catalog is refused and the old one kept).
//
//   sample_server --policy policy.yaml --catalog patterns/ --audit audit.jsonl [--port N] [--port-file F]
//
//   POST /v1/generate {"prompt_tokens": 5, "max_new_tokens": 2, "cache_dtype": "float16", ...}
//     200 {"ok": true, "cache_length", "output_shape", "remediation": {"calls", "decisions"}}
//     422 a recognised error errshim could not fix: {"ok": false, "error": "recognised", "id", "message", "diagnosis",
//     "remediation"} 500 an error the catalog does not know:      {"ok": false, "error": "unrecognised", "message"} 400
//     a request that is not understood
//   GET /metrics   Prometheus text format (prometheus-cpp's TextSerializer)
//   GET /healthz   "ok generation=N entries=M"
//
// SIGHUP reloads the catalog; SIGTERM and SIGINT stop the server.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <pthread.h>

#include <errshim/errshim.hpp>
#include <errshim/catalog_store.hpp>
#include <errshim/prometheus.hpp>
#include <errshim/render.hpp>

#include "attention_block.hpp"
#include "policy_file.hpp"

namespace {

// A JSON string literal for the server's own replies (errshim's documents
// come from errshim::to_json); invalid UTF-8 in a message becomes U+FFFD.
std::string json_quote(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

using torch_attention::AttentionConfig;
using Config = errshim::TypedConfig<AttentionConfig>;

constexpr std::int64_t kMaxTokens = 256;  // per request, prompt or new
constexpr std::size_t kMaxBody = 64u << 10;  // bytes of a request body
constexpr std::size_t kMaxLoggedText = 1024;  // bytes of an error text in the audit log

std::string now_iso() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(now)), ms);
}

// The audit log: one JSON object per line, written whole and flushed, so a
// reader tailing it never sees half a record.
class AuditLog {
 public:
  explicit AuditLog(const std::filesystem::path& path) : out_(path, std::ios::app) {
    if (!out_) throw std::runtime_error(fmt::format("cannot open the audit log '{}' for appending", path.string()));
  }
  // `fields` is the inside of an object: "\"a\": 1, \"b\": 2".
  void write(std::string_view event, const std::string& fields) {
    const std::string line = fmt::format("{{\"time\": \"{}\", \"event\": \"{}\"{}{}}}\n", now_iso(), event,
                                         fields.empty() ? "" : ", ", fields);
    std::lock_guard<std::mutex> lock(mutex_);
    out_ << line << std::flush;
  }

 private:
  std::mutex mutex_;
  std::ofstream out_;
};

std::shared_ptr<const errshim::Bindings<AttentionConfig>> bindings() {
  static const auto b = std::make_shared<const errshim::Bindings<AttentionConfig>>(
      errshim::Bindings<AttentionConfig>()
          .bind("num_heads", &AttentionConfig::num_heads)
          .bind("num_kv_heads", &AttentionConfig::num_kv_heads)
          .bind("dtype", &AttentionConfig::dtype)
          .bind("cache_implementation", &AttentionConfig::cache_implementation)
          .bind("max_cache_len", &AttentionConfig::max_cache_len)
          .bind("cache_dtype", &AttentionConfig::cache_dtype)
          .bind("cache_device", &AttentionConfig::cache_device));
  return b;
}

struct Request {
  std::int64_t prompt_tokens = 5;
  std::int64_t max_new_tokens = 2;
  Config config{AttentionConfig{}, bindings()};
};

struct bad_request : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::int64_t integer(const errshim::Value& v, const char* key) {
  try {
    std::size_t used = 0;
    const long long n = std::stoll(v.text, &used);
    if (used == v.text.size() && n >= 0 && n <= kMaxTokens) return n;
  } catch (const std::exception&) {}
  throw bad_request(fmt::format("'{}' must be an integer from 0 to {}, not '{}'", key, kMaxTokens, v.text));
}

// The body is a JSON object: the two lengths, and any of the bound config
// keys to override the served model's defaults for this request (the
// serving layer's cache settings, as transformers' generate() takes them).
Request parse_request(const std::string& body) {
  errshim::ConfigTree tree = [&] {
    try {
      return errshim::ConfigTree::parse(body, "request");
    } catch (const errshim::config_error& e) {
      throw bad_request(e.what());
    }
  }();
  if (tree.format() != errshim::ConfigTree::Format::json) throw bad_request("the request body must be a JSON object");
  Request r;
  if (auto v = tree.get({"prompt_tokens"})) r.prompt_tokens = integer(*v, "prompt_tokens");
  if (auto v = tree.get({"max_new_tokens"})) r.max_new_tokens = integer(*v, "max_new_tokens");
  if (r.prompt_tokens == 0) throw bad_request("'prompt_tokens' must be at least 1");
  for (const auto& [name, member] : bindings()->members()) {
    if (auto v = tree.get({name})) {
      try {
        r.config.set({name}, *v);
      } catch (const errshim::config_error& e) {
        throw bad_request(e.what());
      }
    }
  }
  return r;
}

// One generation: the prompt, then one decoding step per new token.
torch_attention::StepResult generate(const Request& r, const AttentionConfig& c) {
  torch_attention::AttentionBlock block(c);
  torch_attention::StepResult out = block.step(1, r.prompt_tokens);
  for (std::int64_t i = 0; i < r.max_new_tokens; ++i) out = block.step(1, 1);
  return out;
}

std::string shape_json(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port, written to --port-file
  std::filesystem::path port_file, policy, audit;
  std::vector<std::filesystem::path> catalogs;
  int watch_ms = 250;  // how often the catalog files are checked for a change
  int threads = 4;
};

[[noreturn]] void usage(const std::string& problem) {
  fmt::print(
      stderr,
      "sample_server: {}\nusage: sample_server --policy FILE --audit FILE [--catalog PATH]... [--host 127.0.0.1] "
      "[--port N] [--port-file FILE] [--watch-ms N] [--threads N]\n",
      problem);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    auto number = [&](int lo, int hi) {
      const std::string v = next();
      try {
        const int n = std::stoi(v);
        if (n >= lo && n <= hi) return n;
      } catch (const std::exception&) {}
      usage(fmt::format("{} takes a number from {} to {}, not '{}'", a, lo, hi, v));
    };
    // clang-format off
    if (a == "--host") o.host = next();
    else if (a == "--port") o.port = number(0, 65535);
    else if (a == "--port-file") o.port_file = next();
    else if (a == "--policy") o.policy = next();
    else if (a == "--audit") o.audit = next();
    else if (a == "--catalog") o.catalogs.push_back(next());
    else if (a == "--watch-ms") o.watch_ms = number(10, 60000);
    else if (a == "--threads") o.threads = number(1, 64);
    else usage("unknown option '" + a + "'");
    // clang-format on
  }
  if (o.policy.empty()) usage("--policy is required");
  if (o.audit.empty()) usage("--audit is required");
  return o;
}

std::string problems_json(const std::vector<errshim::Problem>& problems) {
  std::string out = "[";
  for (std::size_t i = 0; i < problems.size(); ++i) out += (i ? ", " : "") + json_quote(problems[i].to_string());
  return out + "]";
}

class Server {
 public:
  Server(const Options& o, errshim::Policy policy)
      : options_(o), audit_(o.audit), metrics_(registry_), policy_(std::move(policy)) {
    metrics_.attach(policy_);
  }

  // The first load must work: a server does not start on a broken catalog.
  bool load_catalog() {
    if (options_.catalogs.empty()) return true;
    const errshim::ReloadReport r = store_.reload_paths(options_.catalogs);
    report(r, "startup");
    return r.ok();
  }

  // SIGHUP: reload even when no file looks changed; otherwise only on a change.
  void reload(bool forced) {
    if (options_.catalogs.empty()) return;
    const errshim::ReloadReport r = forced ? store_.reload_paths(options_.catalogs) : store_.reload_if_changed();
    if (r.outcome != errshim::ReloadReport::Outcome::unchanged) report(r, forced ? "sighup" : "file-change");
  }

  int run() {
    httplib::Server http;
    const int threads = options_.threads;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
    http.set_payload_max_length(kMaxBody);
    http.Post("/v1/generate", [this](const httplib::Request& req, httplib::Response& res) { serve(req, res); });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::ostringstream out;
      prometheus::TextSerializer().Serialize(out, registry_.Collect());
      res.set_content(out.str(), "text/plain; version=0.0.4; charset=utf-8");
    });
    http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(fmt::format("ok generation={} entries={}\n", store_.generation(), store_.current()->size()),
                      "text/plain");
    });

    int port = options_.port;
    if (port == 0) {
      port = http.bind_to_any_port(options_.host);
    } else if (!http.bind_to_port(options_.host, port)) {
      port = -1;
    }
    if (port < 0) {
      fmt::print(stderr, "sample_server: cannot listen on {}:{}\n", options_.host, options_.port);
      return 1;
    }
    if (!options_.port_file.empty()) {
      // Written whole, then renamed: a reader never sees a partial number.
      const std::filesystem::path tmp = options_.port_file.string() + ".tmp";
      std::ofstream(tmp) << port << "\n";
      std::filesystem::rename(tmp, options_.port_file);
    }
    fmt::print(stderr, "sample_server: listening on http://{}:{} (catalog generation {}, {} entries)\n", options_.host,
               port, store_.generation(), store_.current()->size());

    std::thread watcher([&] { watch(http); });
    const bool ok = http.listen_after_bind();
    stopping_ = true;
    watcher.join();
    fmt::print(stderr, "sample_server: stopped after {} request(s)\n", requests_.load());
    return ok ? 0 : 1;
  }

 private:
  void report(const errshim::ReloadReport& r, const char* why) {
    metrics_.observe(r);
    const char* outcome = r.outcome == errshim::ReloadReport::Outcome::swapped ? "swapped" : "refused";
    audit_.write("catalog-reload", fmt::format("\"trigger\": \"{}\", \"outcome\": \"{}\", \"generation\": {}, "
                                               "\"entries\": {}, \"problems\": {}",
                                               why, outcome, r.generation, r.entries, problems_json(r.problems)));
    if (r.ok())
      fmt::print(stderr, "sample_server: catalog {} ({}): generation {}, {} entries\n", outcome, why, r.generation,
                 r.entries);
    else
      fmt::print(stderr, "sample_server: {} ({})\n", r.to_string(), why);
  }

  // Signals are blocked in every thread (main() does it before any thread
  // starts) and taken here, synchronously: no work in a signal handler.
  void watch(httplib::Server& http) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    auto last_poll = std::chrono::steady_clock::now();
    while (!stopping_) {
      const timespec wait{0, 50 * 1000 * 1000};
      const int sig = sigtimedwait(&set, nullptr, &wait);
      if (sig == SIGTERM || sig == SIGINT) {
        fmt::print(stderr, "sample_server: {} received, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        http.stop();
        break;
      }
      try {
        if (sig == SIGHUP) {
          reload(true);
        } else if (std::chrono::steady_clock::now() - last_poll >= std::chrono::milliseconds(options_.watch_ms)) {
          last_poll = std::chrono::steady_clock::now();
          reload(false);
        }
      } catch (const std::exception& e) {
        // Out of memory at worst: the current catalog stays, the server runs on.
        fmt::print(stderr, "sample_server: catalog reload failed: {}\n", e.what());
      }
    }
  }

  void serve(const httplib::Request& req, httplib::Response& res) {
    const std::uint64_t id = ++requests_;
    errshim::Policy policy = policy_;  // this request's audit lines carry its id
    policy.on_decision = [this, id, chained = policy_.on_decision](const errshim::Decision& d) {
      if (chained) chained(d);
      const std::string record = d.to_json();  // "{...}": its fields go inside our record
      audit_.write("decision", fmt::format("\"request\": {}, {}", id, record.substr(1, record.size() - 2)));
    };
    int status = 200;
    std::string body;
    try {
      const Request r = parse_request(req.body);
      const errshim::CatalogPtr catalog = store_.current();  // one catalog for the whole request
      auto out = errshim::remediate(
          r.config, [&](const Config& c) { return generate(r, c.value()); }, policy, *catalog);
      body = fmt::format(
          "{{\"ok\": true, \"cache_length\": {}, \"output_shape\": {}, \"dtype\": {}, \"remediation\": {}}}",
          out.value.cache_length, shape_json(out.value.output_shape), json_quote(out.value.dtype),
          out.report.to_json());
    } catch (const bad_request& e) {
      status = 400;
      body = fmt::format("{{\"ok\": false, \"error\": \"bad-request\", \"message\": {}}}", json_quote(e.what()));
    } catch (const errshim::remediation_error& e) {
      status = 422;
      body = fmt::format(
          "{{\"ok\": false, \"error\": \"recognised\", \"id\": {}, \"message\": {}, \"diagnosis\": {}, "
          "\"remediation\": {}}}",
          json_quote(e.id()), json_quote(e.what()), errshim::to_json(e.diagnosis()), e.report().to_json());
    } catch (const errshim::translated_error& e) {
      status = 422;
      body = fmt::format("{{\"ok\": false, \"error\": \"recognised\", \"id\": {}, \"message\": {}, \"diagnosis\": {}}}",
                         json_quote(e.id()), json_quote(e.what()), errshim::to_json(e.diagnosis()));
    } catch (const std::exception& e) {
      // Not in the catalog: remediate() rethrew it unchanged, and the
      // metrics bridge counted it under its fingerprint.
      status = 500;
      const std::string text = errshim::exception_text(std::current_exception()).substr(0, kMaxLoggedText);
      const errshim::UnrecognisedLabels f = errshim::unrecognised_labels(text);
      audit_.write("unrecognised",
                   fmt::format("\"request\": {}, \"class\": {}, \"fingerprint\": \"{}\", \"message\": {}", id,
                               json_quote(f.error_class), f.fingerprint, json_quote(text)));
      body = fmt::format("{{\"ok\": false, \"error\": \"unrecognised\", \"message\": {}}}", json_quote(e.what()));
    } catch (...) {
      status = 500;
      body = "{\"ok\": false, \"error\": \"unrecognised\", \"message\": \"an exception that is not a std::exception\"}";
    }
    audit_.write("request", fmt::format("\"request\": {}, \"status\": {}", id, status));
    res.status = status;
    res.set_content(body + "\n", "application/json");
  }

  Options options_;
  AuditLog audit_;
  prometheus::Registry registry_;
  errshim::PrometheusMetrics metrics_;
  errshim::Policy policy_;
  errshim::CatalogStore store_;
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);

  // Before any thread exists, so every thread inherits the mask and only the
  // watcher's sigtimedwait takes these signals.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  try {
    errshim::Policy policy = sample_server::load_policy(options.policy);
    Server server(options, std::move(policy));
    if (!server.load_catalog()) {
      fmt::print(stderr, "sample_server: not starting on a catalog that does not load\n");
      return 2;
    }
    return server.run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "sample_server: {}\n", e.what());
    return 2;
  }
}
