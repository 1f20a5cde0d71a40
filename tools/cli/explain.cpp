// errshim explain and errshim list.
#include <algorithm>
#include <cctype>
#include <memory>

#include <fmt/format.h>

#include "cli.hpp"
#include "escape.hpp"
#include "json.hpp"
#include "text_wrap.hpp"
#include "render_internal.hpp"

namespace errshim_cli {

namespace {

// The entry `id` names, sharing the catalog's ownership (find() decodes that
// entry alone; entries() would decode a lazily read layer whole).
std::shared_ptr<const errshim::Entry> entry_by_id(const errshim::CatalogPtr& catalog, std::string_view id) {
  const errshim::Entry* e = catalog->find(id);
  return e ? std::shared_ptr<const errshim::Entry>(catalog, e) : nullptr;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

Command add_explain(CLI::App& root) {
  struct Opts {
    CatalogOptions catalog;
    OutputOptions output;
    std::vector<std::string> words;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = add_command(
      root, "explain", "explain an error message (or a catalog entry by its id)",
      "Explain one error message, or one catalog entry given its id (e.g. 'errshim explain "
      "candle.metavoice.kv_cache_enabled'). With '-', all of standard input (at most 16 MiB) is the message (a whole "
      "traceback or log excerpt).");
  add_catalog_options(*cmd, o->catalog);
  add_output_options(*cmd, o->output);
  cmd->add_option("MESSAGE", o->words, "the error message (its words are joined), an entry id, or '-'");
  return {cmd, [o] {
            const std::string message = message_of(o->words, "explain");
            const errshim::Context context = context_of(o->catalog);
            const auto catalog = load_catalog(o->catalog);
            // An entry id is never an error message: show the entry itself.
            if (o->words.size() == 1) {
              if (auto entry = entry_by_id(catalog, message)) {
                if (o->output.json) {
                  errshim::Diagnosis d;
                  d.entry = entry;
                  fmt::print("{}\n", with_catalog(errshim::to_json(d), *catalog));
                } else {
                  fmt::print("{}", errshim::to_text(*entry, text_options(o->output)));
                }
                return kOk;
              }
            }
            const errshim::MatchResult r = catalog->match(message, context);
            for (const auto& p : r.problems) fmt::print(stderr, "errshim: warning: {}\n", p);
            if (!r.diagnosis) {
              if (o->output.json)
                fmt::print("{}\n", with_catalog(errshim::unmatched_json(), *catalog));
              else
                fmt::print(stderr, "errshim: no catalog entry matches this message\n");
              return kNoMatch;
            }
            if (o->output.json)
              fmt::print("{}\n", with_catalog(errshim::to_json(*r.diagnosis), *catalog));
            else
              fmt::print("{}", errshim::to_text(*r.diagnosis, text_options(o->output)));
            return kOk;
          }};
}

Command add_list(CLI::App& root) {
  struct Opts {
    CatalogOptions catalog;
    OutputOptions output;
    std::string library;
    std::vector<std::string> tags;
    std::vector<std::string> words;
    bool patterns = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = add_command(
      root, "list", "list the entries, filtered by library, tag or words",
      "Print the entries: id and the first sentence of the cause (JSON: one object per line). TEXT keeps the "
      "entries whose id, message, cause, trigger or tags contain every word (any case).");
  add_catalog_options(*cmd, o->catalog);
  add_output_options(*cmd, o->output);
  cmd->add_option("--library", o->library, "only entries of this library (candle, transformers, libtorch, torch)")
      ->type_name("NAME");
  cmd->add_option("--tag", o->tags, "only entries with this tag; repeatable (all must be there)")
      ->type_name("TAG")
      ->allow_extra_args(false);
  cmd->add_option("TEXT", o->words, "words to search for");
  cmd->add_flag("--patterns", o->patterns, "print each entry's Boost.Regex instead, one a line (for other tools)")
      ->excludes("--json");
  return {cmd, [o] {
            const auto catalog = load_catalog(o->catalog);
            const errshim::TextOptions t = text_options(o->output);
            std::vector<std::string> words;
            for (const auto& w : o->words) words.push_back(lower(w));
            std::size_t shown = 0;
            for (const auto& e : catalog->entries()) {
              if (!o->library.empty() && e->library != o->library) continue;
              bool keep = true;
              for (const auto& tag : o->tags)
                keep = keep && std::find(e->tags.begin(), e->tags.end(), tag) != e->tags.end();
              if (!keep) continue;
              if (!words.empty()) {
                const std::string hay = lower(fmt::format("{}\n{}\n{}\n{}\n{}", e->id, e->template_text, e->cause,
                                                          e->trigger, fmt::join(e->tags, " ")));
                for (const auto& w : words) keep = keep && hay.find(w) != std::string::npos;
                if (!keep) continue;
              }
              ++shown;
              if (o->patterns) {
                std::string re = e->pattern;  // one a line: a raw newline becomes the escape matching it
                for (std::size_t at = re.find('\n'); at != std::string::npos; at = re.find('\n', at + 2))
                  re.replace(at, 1, "\\n");
                fmt::print("{}\n", re);
                continue;
              }
              const std::string summary = errshim::first_sentence(e->cause);
              if (o->output.json) {
                fmt::print("{}\n", with_catalog(errshim::detail::json_of_summary(*e, summary), *catalog));
                continue;
              }
              // The id, then the whole first sentence, wrapped under it.
              fmt::print("{}\n{}", t.color ? fmt::format("\x1b[1m{}\x1b[0m", e->id) : e->id,
                         errshim::detail::wrap("    ", errshim::detail::escape_controls(summary), 4, t.width));
            }
            if (shown == 0) fmt::print(stderr, "errshim: no entry fits these filters\n");
            return shown > 0 ? kOk : kNoMatch;
          }};
}

}  // namespace errshim_cli
