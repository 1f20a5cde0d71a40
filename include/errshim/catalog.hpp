// The catalog: what errshim knows about inference-layer errors.
//
// A Catalog is built once from YAML (the embedded patterns/ files, user files
// or folders, or text) and is immutable afterwards, so one instance is shared
// by any number of threads without locking. Reloading means building a new
// Catalog and swapping the shared_ptr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "errshim/context.hpp"
#include "errshim/diagnosis.hpp"
#include "errshim/value.hpp"

namespace errshim {

// Where something sits in a catalog file (1-based line and column; 0 = unknown).
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
};

// Where the error is raised upstream, pinned to a commit.
struct SourcePin {
  std::string repo;  // "huggingface/candle"
  std::string path;  // "candle-transformers/src/models/metavoice.rs"
  int line = 0;  // line of the bail!/raise
  std::string commit;  // full or abbreviated sha the line was read at
  std::string symbol;  // enclosing function, "SelfAttention::new"
};

// How much an automatic fix may change what the model computes.
enum class Safety {
  safe,  // results unchanged
  slower,  // results unchanged, costs speed or memory
  changes_output,  // may change what the model computes
  manual,  // needs a person (rebuild, other hardware); never automatic
};
std::string_view to_string(Safety) noexcept;
std::optional<Safety> parse_safety(std::string_view) noexcept;

// A machine-readable config change attached to a remediation step.
struct Fix {
  std::vector<std::pair<std::string, Value>> set;  // key (or dotted path) -> value, in order
  std::vector<std::string> remove;  // keys to delete
  std::string action;  // host-registered action name, e.g. "fallback-manual-attention"
  Safety safety = Safety::manual;
  std::string reason;  // one line: why this safety class
  std::vector<std::pair<std::string, Value>> requires_set;  // bundle: must change together
  std::vector<std::pair<std::string, Value>> conflicts;  // bundle: refuses when a key holds this value
  // The config kinds this fix applies to ("model-config", "generation-config",
  // "from-pretrained-kwargs", "generate-kwargs", "candle-config", "host-config");
  // empty: any. A config of another kind refuses the step.
  std::vector<std::string> config_kinds;
  // Keys of `set`/`requires` this fix may create when the config lacks them
  // ("*": any of them). Without it a fix only changes keys the config has.
  std::vector<std::string> create;
  // Key -> vocabulary ("dtype", "device", "attn-implementation",
  // "cache-implementation") a value is mapped into before it is written, for
  // keys whose name does not say it (the registry knows `*_dtype`, ...).
  std::vector<std::pair<std::string, Value>> vocabulary;

  bool empty() const noexcept { return set.empty() && remove.empty() && action.empty(); }
};

struct Remediation {
  std::string text;
  std::optional<Fix> fix;
};

// Which of the user's configs a preflight condition reads its keys from.
enum class PreflightSource : std::uint8_t {
  any,  // whichever config holds the key
  model,  // the model's config.json (model_type, architectures, ...)
  generation,  // generation_config.json
};

// A test of one config value other than "is one of" (preflight `when:`
// values such as `{gt: 1}`, `{not: [2, 4]}`, `{not_multiple_of: num_heads}`).
// A number operand is literal; a string operand names another key of the
// same config, whose value is compared against.
struct PreflightTest {
  enum class Op : std::uint8_t { not_in, gt, ge, lt, le, not_multiple_of };
  std::string key;  // key or dotted path
  Op op = Op::not_in;
  std::vector<Value> values;  // not_in: any number of values; the others: exactly one operand
};

// A config condition under which an entry's error is known to happen:
// every key holds one of its values and every test holds (all-of). Scoped:
// `config` says which config file the keys are read from; `model_types` and
// `architectures` name the model family as the model config states it
// (`model_type`, `architectures`), `model` is a regex on the model name
// (context "model") used when the config does not state its family;
// `applies_to` (library versions, ...) must be confirmed by the context.
// Used by preflight checks.
struct PreflightCondition {
  std::vector<std::pair<std::string, std::vector<Value>>> keys;  // key or dotted path -> any of
  std::string model;  // regex, may be empty
  std::vector<PreflightTest> tests;
  PreflightSource config = PreflightSource::any;
  std::vector<std::string> model_types;  // config.json `model_type`, any of
  std::vector<std::string> architectures;  // config.json `architectures`, any element any of
  std::vector<ScopeCondition> applies_to;  // confirmed by the context, or the condition does not hold
};

// A config that a preflight condition of the entry must report (`fires`)
// or must leave alone (`quiet`): examples.preflight in the catalog. Each
// config is stored as JSON text; an empty one is not given.
struct PreflightExample {
  bool fires = true;
  std::string config;  // a config of no stated kind (the host's own)
  std::string model_config;  // config.json
  std::string generation_config;  // generation_config.json
  Context context;  // e.g. model=NAME, transformers=4.57
  Location where;
};

struct MatchExample {
  std::string text;
  std::vector<Capture> captures;  // expected; only the ones listed are checked
  Context context;  // the context the example is matched in
  Location where;
};

struct NoMatchExample {
  std::string text;
  Location where;
};

// One catalog entry. Field names follow the YAML schema in patterns/README.md.
struct Entry {
  std::string id;  // stable, dotted: "candle.metavoice.kv_cache_enabled"
  std::string template_text;  // the upstream message with its placeholders, or empty
  std::string pattern;  // the Boost.Regex errshim matches with (compiled from the template)
  std::vector<std::string> capture_names;  // in order of appearance
  SourcePin source;
  std::vector<SourcePin> also_at;  // other places that raise the same text
  std::string library;  // "candle", "transformers", "libtorch"
  std::string error_class;  // "candle::Error::Msg", "ValueError"
  std::string kind;  // validation, unsupported-feature, resource, ...
  std::string severity = "error";
  std::string cause;  // what the error means
  std::string trigger;  // what makes it happen
  std::vector<Remediation> remediation;  // ordered: most likely to work first
  std::vector<std::string> tags;
  std::vector<MatchExample> match_examples;
  std::vector<NoMatchExample> no_match_examples;
  int priority = 0;
  std::vector<std::string> unless;  // regexes; a hit on any of them vetoes this entry
  std::vector<ScopeCondition> applies_to;  // library versions, device, backend; empty = general
  std::vector<PreflightCondition> preflight;  // any of these configs will hit this error
  std::vector<PreflightExample> preflight_examples;  // configs that must / must not meet `preflight`
  bool imported = false;  // text came from an importer, not written by us
  Location where;  // the entry's position in its file
};

// A problem found in a catalog, with enough position to fix it.
struct Problem {
  Location where;
  std::string entry_id;  // empty when the problem is not inside an entry
  std::string message;

  // "patterns/candle.yaml:12:5: entry 'candle.x': unknown key 'cuase' (did you mean 'cause'?)"
  std::string to_string() const;
};

// Thrown when a catalog cannot be built. Carries every problem found, not just
// the first, so one run of `errshim lint` shows them all.
class catalog_error : public std::runtime_error {
 public:
  explicit catalog_error(std::vector<Problem> problems);
  const std::vector<Problem>& problems() const noexcept { return problems_; }

 private:
  std::vector<Problem> problems_;
};

class Catalog;
using CatalogPtr = std::shared_ptr<const Catalog>;

// What a match found, plus anything that went wrong on the way (an entry that
// gave up, the step budget running out, an input cut to the size cap).
// Matching never throws; problems are reported here instead.
struct MatchResult {
  std::optional<Diagnosis> diagnosis;
  std::vector<std::string> problems;
  std::size_t steps = 0;  // regex steps spent (at most MatchOptions::max_steps)
};

// Bounds on the work of one match() call.
struct MatchOptions {
  // Regex steps (states Boost.Regex visits) one call may spend over all
  // entries and segments. When they run out, matching stops: `problems`
  // says "budget exhausted" and the diagnosis is the best hit found before.
  // One entry's search may take a quarter of it; an entry that needs more
  // gives up on the message (no match, reported) and the others go on.
  // The default is far above what a real message needs (a few thousand
  // steps) and bounds the worst message to a few milliseconds.
  std::size_t max_steps = 500'000;
};

class Catalog {
 public:
  // The catalog compiled into the library from patterns/. Built on first use,
  // once per process, and shared.
  static CatalogPtr embedded();

  const std::vector<std::shared_ptr<const Entry>>& entries() const noexcept;
  const Entry* find(std::string_view id) const noexcept;
  std::size_t size() const noexcept;

  // A hash of every entry's content, in order: the same for the same entries
  // however they were loaded (YAML, a snapshot, a lazily read layer, whose
  // entries it does not decode). Names a catalog's version; not a security
  // property.
  std::uint64_t content_hash() const;

  // What build() worked around without failing, each naming its file: a
  // catalog cache folder or entry that was not used (the layer's YAML was
  // parsed instead). Empty for most catalogs; the CLI prints these on
  // standard error.
  const std::vector<Problem>& warnings() const noexcept;

  // Normalises `message` (tracebacks, Caused-by chains, log prefixes; see
  // normalize.hpp) and returns the winning entry.
  //
  // The rule when several entries match: entries whose `applies_to` scope
  // the context contradicts are out. Then the highest `priority` wins; on a
  // tie, the most specific entry (the most literal characters in its
  // pattern); then the best scope fit (confirmed by the context, then
  // general, then scoped but not known from the context); then the segment
  // nearest the root cause (normalize() lists segments root cause first);
  // then the earliest match in that segment; last, the smallest id. The rule
  // is total, so the result is deterministic.
  [[nodiscard]] MatchResult match(std::string_view message, const Context& context = {},
                                  const MatchOptions& options = {}) const noexcept;
  [[nodiscard]] std::optional<Diagnosis> diagnose(std::string_view message, const Context& context = {}) const noexcept;

  // Whether this one entry's pattern (and not its `unless` list) claims some
  // segment of `message`, regardless of which entry would win. For lint.
  bool claims(std::string_view id, std::string_view message) const noexcept;

  // The ids of every entry that claims() some segment of `message`, in
  // entry order, found through the literal index rather than by asking each
  // entry. The views live as long as this catalog. For lint's overlap check.
  [[nodiscard]] std::vector<std::string_view> claimants(std::string_view message) const;

  // Compiles every entry's regex now. Matching compiles a template's regex
  // on its first use, so a large catalog loads fast; lint calls this so every
  // regex is checked. Returns a problem for each one that does not compile
  // (none is expected: build() compiles raw patterns and `unless` lists, the
  // embedded catalog's were compiled when the library was built, and
  // template regexes are valid by construction).
  std::vector<Problem> compile_all() const;

  // The entries in a binary form that CatalogBuilder::add_snapshot loads
  // without parsing YAML: for large catalogs, where yaml-cpp's parse is most
  // of the load time. Only the errshim version that wrote it reads it.
  std::string snapshot() const;

  ~Catalog();
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

 private:
  struct Impl;  // src/catalog/catalog.cpp
  friend class CatalogBuilder;
  explicit Catalog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Collects catalog sources in layers, then builds an immutable Catalog.
// Within a layer ids must be unique; a later layer replaces entries of an
// earlier one by id (that is how a user overrides the embedded catalog).
class CatalogBuilder {
 public:
  // The generated layers add_generated() can find, by library name, sorted.
  static std::vector<std::string> generated_layers();

  CatalogBuilder& add_embedded();
  // A .yaml/.yml file, a folder whose *.yaml/*.yml files (sorted, not
  // recursive) form one layer, or a .snapshot file (see add_snapshot).
  CatalogBuilder& add_path(const std::filesystem::path& path);
  CatalogBuilder& add_yaml(std::string text, std::string name = "<string>");
  // Bytes written by Catalog::snapshot(), as one layer. Its entries were
  // checked when that catalog was built and are not checked again; a damaged
  // snapshot, or one from another errshim version, is a problem named `name`.
  CatalogBuilder& add_snapshot(std::string bytes, std::string name = "<snapshot>");
  // The layer generated from `library`'s sources ("candle"), as installed
  // with errshim (share/errshim/generated: a snapshot made at build time,
  // else its YAML), or from the folder named by the environment variable
  // ERRSHIM_GENERATED_DIR when set. Not embedded: a generated layer holds
  // every raise site of every release and costs load time and memory a
  // host may not want (README, "Generated layers"). A layer that is not
  // there is a build() problem naming the folders searched.
  CatalogBuilder& add_generated(std::string library);

  // Keeps a snapshot of each YAML layer (add_path, add_yaml) in folder
  // `dir`, named by a hash of the layer's file names and bytes and of the
  // errshim version, which the snapshot records too: a later build of the
  // same bytes reads the snapshot instead of parsing YAML (many times
  // faster: README, "Performance"), e.g. across restarts, CLI calls and reloads
  // of unchanged files. The cache is never the source of truth: a missing,
  // damaged, foreign (a snapshot of other bytes), oversized or non-regular
  // entry, or one whose entries break a rule of the YAML loader (a
  // duplicate id, a pattern that does not compile), means the YAML is parsed
  // as without a cache and the entry rewritten; nothing is written for a
  // layer with problems. Whoever can write `dir` decides what the catalog
  // holds, so a folder that is not this user's, or that others can write,
  // is not used at all. Each of these is a Catalog::warnings() item, never
  // an error. A missing `dir` is created (mode 0700). Old entries are not
  // removed; the folder may be emptied at any time.
  CatalogBuilder& cache_in(std::filesystem::path dir);

  // Parses and compiles every layer. Throws catalog_error listing every
  // problem; nothing half-loaded is ever returned.
  CatalogPtr build() const;

 private:
  struct Source {
    enum class Kind { embedded, path, text, snapshot, generated } kind;
    std::filesystem::path path;
    std::string text;
    std::string name;
  };
  std::vector<Source> sources_;
  std::filesystem::path cache_dir_;
};

}  // namespace errshim
