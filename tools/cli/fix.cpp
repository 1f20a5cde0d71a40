// errshim fix and errshim check.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cli.hpp"
#include "json_writer.hpp"
#include "render_internal.hpp"
#include "errshim/preflight.hpp"

extern char** environ;

namespace errshim_cli {

namespace {

// A unified diff of `path` (as on disk) against `after`, printed on standard
// output by diff(1) from diffutils, which every Debian system has.
void print_diff(const std::string& path, const std::string& after) {
  std::fflush(stdout);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0)
    throw std::runtime_error(fmt::format("--diff: cannot make a pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[0], STDIN_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  // git's a/ and b/ prefixes, for a relative path (patch -p1 applies it).
  const bool relative = !path.empty() && path[0] != '/';
  const std::string a = relative ? "a/" + path : path, b = relative ? "b/" + path : path;
  std::vector<std::string> args = {"diff", "-u", "--label", a, "--label", b, "--", path, "-"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "diff", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[0]);
  if (rc != 0) {
    ::close(pipe_fds[1]);
    throw std::runtime_error(fmt::format("--diff needs diff(1) from diffutils: {}", std::strerror(rc)));
  }
  // diff reads all of standard input before it writes, so writing it whole
  // first cannot block on diff's output.
  const auto old_pipe = std::signal(SIGPIPE, SIG_IGN);
  for (std::size_t done = 0; done < after.size();) {
    const ssize_t n = ::write(pipe_fds[1], after.data() + done, after.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(pipe_fds[1]);
  std::signal(SIGPIPE, old_pipe);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) throw std::runtime_error("diff(1) failed");
}

// `d` with the fixes of every step but `step` taken out, so choose_fix
// considers that one step only (and keeps its number).
errshim::Diagnosis only_step(const errshim::Diagnosis& d, std::size_t step) {
  auto e = std::make_shared<errshim::Entry>(*d.entry);
  for (std::size_t i = 0; i < e->remediation.size(); ++i)
    if (i != step) e->remediation[i].fix.reset();
  errshim::Diagnosis out = d;
  out.entry = std::move(e);
  return out;
}

std::string changes_text(const std::vector<errshim::Change>& changes) {
  std::string out;
  for (const auto& c : changes)
    out += fmt::format("{}: {} -> {}\n", errshim::to_string(c.path), value_text(c.before), value_text(c.after));
  return out;
}

// The ranked fixes, then the step the person confirms; nullopt to stop.
std::optional<std::size_t> ask_step(const errshim::Diagnosis& d, const errshim::ConfigTree& config,
                                    const errshim::Policy& policy) {
  const auto& steps = d.entry->remediation;
  std::vector<std::size_t> usable;
  fmt::print(stderr, "{}: {}\n", d.id(), errshim::first_sentence(d.entry->cause));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].fix) continue;
    errshim::ConfigTree scratch = config;
    const errshim::FixChoice c = errshim::choose_fix(only_step(d, i), scratch, policy);
    fmt::print(stderr, "  [{}] {} ({})\n", i, errshim::first_sentence(steps[i].text),
               errshim::to_string(steps[i].fix->safety));
    if (c.step) {
      usable.push_back(i);
      for (const auto& ch : c.changes)
        fmt::print(stderr, "      {}: {} -> {}\n", errshim::to_string(ch.path), value_text(ch.before),
                   value_text(ch.after));
    } else {
      for (const auto& x : c.decisions)
        if (x.step && *x.step == i && !x.reason.empty()) fmt::print(stderr, "      not possible: {}\n", x.reason);
    }
  }
  if (usable.empty()) return std::nullopt;
  for (;;) {
    fmt::print(stderr, "apply which step? [{}; q to quit]: ", fmt::join(usable, "/"));
    std::string answer;
    if (!std::getline(std::cin, answer) || answer == "q" || answer.empty()) return std::nullopt;
    for (std::size_t i : usable)
      if (answer == std::to_string(i)) return i;
    fmt::print(stderr, "'{}' is not one of the steps above\n", answer);
  }
}

}  // namespace

Command add_fix(CLI::App& root) {
  struct Opts {
    CatalogOptions catalog;
    std::string config;
    std::vector<std::string> allow;
    std::vector<std::string> pins;
    bool dry_run = false, in_place = false, interactive = false, diff = false;
    std::string backup;
    std::optional<std::size_t> step;
    std::vector<std::string> words;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = add_command(
      root, "fix", "apply a catalog fix to a config file",
      "Diagnose the message and apply the first fix the policy allows to the config (YAML or JSON); print the "
      "resulting config on standard output in the input's format. FILE is not modified unless --in-place.");
  add_catalog_options(*cmd, o->catalog);
  cmd->add_option("--config", o->config, "the config file to fix (YAML or JSON)")->type_name("FILE");
  cmd->add_option("--allow", o->allow, "may apply: safe, slower, changes-output (default: safe,slower)")
      ->type_name("CLASS,...")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--pin", o->pins, "a key you set on purpose: no fix changes it; repeatable")
      ->type_name("KEY")
      ->allow_extra_args(false);
  auto* dry = cmd->add_flag("--dry-run", o->dry_run, "print the changes it would make, not the config");
  auto* in_place = cmd->add_flag("--in-place", o->in_place, "write the fixed config back to FILE");
  cmd->add_option("--backup", o->backup, "keep the original as FILE + SUFFIX (with --in-place)")
      ->type_name("SUFFIX")
      ->needs(in_place);
  auto* step = cmd->add_option("--step", o->step, "apply step N (numbered from 0, as 'explain' and the JSON show)")
                   ->type_name("N");
  cmd->add_flag("--interactive,-i", o->interactive, "show the fixes that fit, apply the one you confirm")
      ->excludes(step);
  cmd->add_flag("--diff", o->diff, "print a unified diff of the change, not the whole config");
  dry->excludes(in_place);
  cmd->add_option("MESSAGE", o->words, "the error message, or '-' for standard input");
  return {cmd, [o] {
            if (o->config.empty()) throw usage_error("fix needs --config FILE");
            if (o->interactive && isatty(STDIN_FILENO) != 1)
              throw usage_error("--interactive needs a terminal on standard input to ask on; use --step N instead");
            if (o->interactive && o->words.size() == 1 && o->words[0] == "-")
              throw usage_error("--interactive reads your answer from standard input: give the MESSAGE as an argument");
            const std::string message = message_of(o->words, "fix");
            errshim::Policy policy;
            policy.context = context_of(o->catalog);
            policy.mode = o->dry_run ? errshim::Mode::suggest : errshim::Mode::automatic;
            policy.pinned_keys.insert(o->pins.begin(), o->pins.end());
            if (!o->allow.empty()) {
              policy.allowed.clear();
              for (const std::string& cls : o->allow) {
                const auto s = errshim::parse_safety(cls);
                if (!s || *s == errshim::Safety::manual)
                  throw usage_error(fmt::format("--allow: unknown class '{}' (safe, slower, changes-output)", cls));
                policy.allowed.insert(*s);
              }
            }
            errshim::ConfigTree config = errshim::ConfigTree::load(o->config);
            const auto catalog = load_catalog(o->catalog);
            auto d = catalog->diagnose(message, policy.context);
            if (!d) {
              fmt::print(stderr, "errshim: no catalog entry matches this message; {} is unchanged\n", o->config);
              return kNoMatch;
            }
            // As remediate() does: when text elsewhere in the message (a quoted
            // or echoed error) won the match, the root-cause message alone is fixed.
            if (auto root = errshim::root_cause_diagnosis(*catalog, *d, policy.context)) d = std::move(root);
            std::optional<std::size_t> wanted = o->step;
            if (wanted && *wanted >= d->entry->remediation.size())
              throw usage_error(
                  fmt::format("--step {}: {} has steps 0 to {}", *wanted, d->id(), d->entry->remediation.size() - 1));
            if (o->interactive) {
              wanted = ask_step(*d, config, policy);
              if (!wanted) {
                fmt::print(stderr, "errshim: nothing applied; {} is unchanged\n", o->config);
                return kNoMatch;
              }
            }
            const errshim::Diagnosis chosen = wanted ? only_step(*d, *wanted) : *d;
            errshim::ConfigTree scratch = config;
            const errshim::FixChoice choice = errshim::choose_fix(chosen, scratch, policy);
            for (const auto& x : choice.decisions)
              if (x.outcome == errshim::Decision::Outcome::refused || x.outcome == errshim::Decision::Outcome::failed)
                fmt::print(stderr, "errshim: {} step {} {}: {}\n", d->id(), *x.step, errshim::to_string(x.outcome),
                           x.reason);
            if (!choice.step) {
              fmt::print(stderr, "errshim: {} recognised, but {} allowed on this config; it is unchanged\n", d->id(),
                         wanted ? fmt::format("step {} is not", *wanted) : std::string("no fix is"));
              return kNoMatch;
            }
            // Written first: a config errshim cannot write back (config_error)
            // fails here, before anything says the step was applied.
            const std::string after = scratch.dump();
            const auto& step = d->entry->remediation[*choice.step];
            fmt::print(stderr, "errshim: {}: {} step {} ({}): {}\n", d->id(), o->dry_run ? "would apply" : "applied",
                       *choice.step, errshim::to_string(step.fix->safety), errshim::first_sentence(step.text));
            for (const auto& c : choice.changes)
              if (!c.before)
                fmt::print(stderr, "errshim: warning: created key '{}', which {} did not have\n",
                           errshim::to_string(c.path), o->config);
            if (o->diff) print_diff(o->config, after);
            if (o->dry_run) {
              if (!o->diff) fmt::print("{}", changes_text(choice.changes));
              return kOk;
            }
            if (o->in_place) {
              struct stat st {};
              const bool known = ::stat(o->config.c_str(), &st) == 0;
              if (!o->backup.empty())
                std::filesystem::copy_file(o->config, o->config + o->backup,
                                           std::filesystem::copy_options::overwrite_existing);
              write_atomically(o->config, after, known ? std::optional<unsigned>(st.st_mode & 07777) : std::nullopt);
              fmt::print(stderr, "errshim: wrote {}{}\n", o->config,
                         o->backup.empty() ? "" : fmt::format(" (the original is {}{})", o->config, o->backup));
            } else if (!o->diff) {
              fmt::print("{}", after);
            }
            return kOk;
          }};
}

Command add_check(CLI::App& root) {
  struct Opts {
    CatalogOptions catalog;
    std::string config, model;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = add_command(root, "check", "report the known errors a config will hit",
                              "Report the known errors this config will hit, before loading anything.");
  add_catalog_options(*cmd, o->catalog);
  cmd->add_option("--config", o->config,
                  "the config to check: a model's config.json or generation_config.json, a model folder (both), or "
                  "the host's own config (YAML or JSON)")
      ->type_name("FILE|DIR");
  cmd->add_option("--model", o->model,
                  "the model name, for entries scoped to a model family when the config names none")
      ->type_name("NAME");
  cmd->add_flag("--json", o->json, "print one JSON document: {\"config\", \"findings\": [...], \"catalog\"}");
  return {cmd, [o] {
            if (o->config.empty()) throw usage_error("check needs --config FILE");
            errshim::Context context = context_of(o->catalog);
            if (!o->model.empty()) context.values["model"] = o->model;
            // The config the user has: a model folder gives config.json and
            // generation_config.json (either may be missing); a file named like
            // one of them is that kind; any other file is the host's own.
            std::optional<errshim::ConfigTree> own, model, generation;
            const std::filesystem::path path(o->config);
            if (std::filesystem::is_directory(path)) {
              if (std::filesystem::exists(path / "config.json"))
                model = errshim::ConfigTree::load(path / "config.json");
              if (std::filesystem::exists(path / "generation_config.json"))
                generation = errshim::ConfigTree::load(path / "generation_config.json");
              if (!model && !generation)
                throw usage_error(fmt::format("{} holds neither config.json nor generation_config.json", o->config));
            } else if (path.filename() == "config.json") {
              model = errshim::ConfigTree::load(path);
            } else if (path.filename() == "generation_config.json") {
              generation = errshim::ConfigTree::load(path);
            } else {
              own = errshim::ConfigTree::load(path);
            }
            errshim::PreflightConfigs configs;
            configs.config = own ? &*own : nullptr;
            configs.model = model ? &*model : nullptr;
            configs.generation = generation ? &*generation : nullptr;
            const auto catalog = load_catalog(o->catalog);
            const auto findings = errshim::check(configs, *catalog, context);
            // --json: {"config", "findings": [{"id", "because": [...], "remediation": [{"step", "text"}]}]}
            std::string json;
            errshim::detail::JsonWriter w(json);
            w.begin_object().field("config", o->config).key("findings").begin_array();
            for (const auto& f : findings) {
              std::vector<std::string> because;
              for (const auto& [path, v] : f.because)
                because.push_back(fmt::format("{} = {}", errshim::to_string(path), value_text(v)));
              if (o->json) {
                w.begin_object().field("id", f.entry->id).key("because").begin_array();
                for (const auto& b : because) w.string(b);
                w.end_array().key("remediation").begin_array();
                for (std::size_t i = 0; i < f.entry->remediation.size(); ++i)
                  w.begin_object()
                      .field("step", i)
                      .field("text", errshim::fold_prose(f.entry->remediation[i].text))
                      .end_object();
                w.end_array().end_object();
                continue;
              }
              fmt::print("{} will fail: {}\n  because: {}\n", o->config, f.entry->id, fmt::join(because, ", "));
              fmt::print("  cause:   {}\n", errshim::first_sentence(f.entry->cause));
              for (std::size_t i = 0; i < f.entry->remediation.size(); ++i)
                fmt::print("  [{}] {}\n", i, errshim::first_sentence(f.entry->remediation[i].text));
            }
            w.end_array().end_object();
            if (o->json)
              fmt::print("{}\n", with_catalog(json, *catalog));
            else if (findings.empty())
              fmt::print(stderr, "errshim: no known error ahead for {}\n", o->config);
            return findings.empty() ? kOk : kNoMatch;
          }};
}

}  // namespace errshim_cli
