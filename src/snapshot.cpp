#include "snapshot.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "errshim/version.hpp"

namespace errshim::detail {
namespace {

// Bump when the layout below changes. 2: the match plan and a checksum.
// 3: the hash of the source bytes. 4: scoped preflight conditions (tests,
// config kind, model family, applies_to) and examples.preflight. 5: fixes
// carry config kinds, create and vocabulary. 6: the plan's specificity is
// regex::specificity (code points; it was bytes, digits of counts included).
constexpr std::uint32_t kFormat = 6;
constexpr std::string_view kMagic = "errshim catalog snapshot\n";

// A 64-bit checksum of the bytes before it, last in the file: a damaged
// snapshot, a key of the match plan included, must be refused, not read as
// a catalog that silently misses matches. Eight bytes per step at memory
// speed (a byte-wise CRC would cost a fifth of the load).
std::uint64_t checksum(std::string_view bytes) {
  std::uint64_t h = 0x243F6A8885A308D3ull ^ bytes.size();
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w = 0;
    for (int b = 0; b < 8; ++b) w |= std::uint64_t{static_cast<std::uint8_t>(bytes[i + b])} << (8 * b);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<std::uint8_t>(bytes[i])) * 0x100000001B3ull;
  h ^= h >> 32;
  return h * 0xD6E8FEB86659FD93ull ^ (h >> 31);
}

// Little-endian integers and length-prefixed strings, written the same on
// every platform.
class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void i64(std::int64_t v) {
    const auto u = static_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) u8(static_cast<std::uint8_t>(u >> (8 * i)));
  }
  void count(std::size_t n) { u32(static_cast<std::uint32_t>(n)); }
  void str(std::string_view s) {
    count(s.size());
    out_.append(s.data(), s.size());
  }
  void strings(const std::vector<std::string>& v) {
    count(v.size());
    for (const std::string& s : v) str(s);
  }
  void value(const Value& v) {
    u8(static_cast<std::uint8_t>(v.type));
    str(v.text);
  }
  void scope(const std::vector<ScopeCondition>& v) {
    count(v.size());
    for (const ScopeCondition& c : v) str(c.key), str(c.range), strings(c.any_of);
  }
  void context(const Context& c) {
    count(c.values.size());
    for (const auto& [k, v] : c.values) str(k), str(v);
  }
  void assignments(const std::vector<std::pair<std::string, Value>>& v) {
    count(v.size());
    for (const auto& [k, val] : v) str(k), value(val);
  }
  void location(const Location& l) {
    str(l.file);
    i64(l.line);
    i64(l.column);
  }
  void pin(const SourcePin& p) {
    str(p.repo);
    str(p.path);
    i64(p.line);
    str(p.commit);
    str(p.symbol);
  }
  void entry(const Entry& e);
  void plan_item(const MatchPlan::Item& item) {
    str(item.key.text);
    i64(static_cast<std::int64_t>(item.key.max_offset));
    u8(static_cast<std::uint8_t>((item.key.single_line_prefix ? 1 : 0) | (item.key.line_local ? 2 : 0)));
    str(item.key.also);
    u32(item.anchor);
    u32(item.also_anchor);
    i64(static_cast<std::int64_t>(item.specificity));
  }
  std::string take() { return std::move(out_); }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

void Writer::entry(const Entry& e) {
  str(e.id);
  str(e.template_text);
  str(e.pattern);
  strings(e.capture_names);
  pin(e.source);
  count(e.also_at.size());
  for (const SourcePin& p : e.also_at) pin(p);
  str(e.library);
  str(e.error_class);
  str(e.kind);
  str(e.severity);
  str(e.cause);
  str(e.trigger);
  count(e.remediation.size());
  for (const Remediation& r : e.remediation) {
    str(r.text);
    u8(r.fix ? 1 : 0);
    if (!r.fix) continue;
    const Fix& f = *r.fix;
    assignments(f.set);
    strings(f.remove);
    str(f.action);
    u8(static_cast<std::uint8_t>(f.safety));
    str(f.reason);
    assignments(f.requires_set);
    assignments(f.conflicts);
    strings(f.config_kinds);
    strings(f.create);
    assignments(f.vocabulary);
  }
  strings(e.tags);
  count(e.match_examples.size());
  for (const MatchExample& m : e.match_examples) {
    str(m.text);
    count(m.captures.size());
    for (const Capture& c : m.captures) str(c.name), str(c.value);
    context(m.context);
    location(m.where);
  }
  count(e.no_match_examples.size());
  for (const NoMatchExample& m : e.no_match_examples) str(m.text), location(m.where);
  i64(e.priority);
  strings(e.unless);
  scope(e.applies_to);
  count(e.preflight.size());
  for (const PreflightCondition& c : e.preflight) {
    count(c.keys.size());
    for (const auto& [k, values] : c.keys) {
      str(k);
      count(values.size());
      for (const Value& v : values) value(v);
    }
    str(c.model);
    count(c.tests.size());
    for (const PreflightTest& t : c.tests) {
      str(t.key);
      u8(static_cast<std::uint8_t>(t.op));
      count(t.values.size());
      for (const Value& v : t.values) value(v);
    }
    u8(static_cast<std::uint8_t>(c.config));
    strings(c.model_types);
    strings(c.architectures);
    scope(c.applies_to);
  }
  count(e.preflight_examples.size());
  for (const PreflightExample& x : e.preflight_examples) {
    u8(x.fires ? 1 : 0);
    str(x.config);
    str(x.model_config);
    str(x.generation_config);
    context(x.context);
    location(x.where);
  }
  u8(e.imported ? 1 : 0);
  location(e.where);
}

// Thrown inside the reader only: what is wrong and at which byte.
struct Damaged {
  std::size_t at;
  std::string what;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  std::size_t offset() const { return pos_; }
  bool done() const { return pos_ == in_.size(); }

  std::uint8_t u8() {
    need(1, "a byte");
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  std::uint32_t u32() {
    need(4, "a count");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<std::uint8_t>(in_[pos_++])} << (8 * i);
    return v;
  }
  std::int64_t i64() {
    need(8, "a number");
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(in_[pos_++])} << (8 * i);
    return static_cast<std::int64_t>(v);
  }
  int int32() {
    const std::int64_t v = i64();
    if (v < INT32_MIN || v > INT32_MAX) fail(pos_ - 8, "a number out of range");
    return static_cast<int>(v);
  }
  // Reads a count, then that many items. Items are appended as they are
  // read, so memory grows with the bytes actually present: a damaged count
  // cannot ask for a huge allocation. Room for up to one item per
  // `bytes_per_item` bytes left is reserved up front.
  template <class T, class F>
  void list(std::vector<T>& v, F&& read_one, std::size_t bytes_per_item = 0) {
    const std::uint32_t n = u32();
    v.clear();
    v.reserve(std::min<std::size_t>(n, bytes_per_item ? (in_.size() - pos_) / bytes_per_item : 16));
    for (std::uint32_t i = 0; i < n; ++i) v.push_back(read_one());
  }
  std::string str() {
    const std::uint32_t n = u32();
    need(n, "a string");
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  void strings(std::vector<std::string>& v) {
    list(v, [this] { return str(); });
  }
  Value value() {
    Value v;
    const std::uint8_t t = u8();
    if (t > static_cast<std::uint8_t>(Value::Type::string)) fail(pos_ - 1, "an unknown value type");
    v.type = static_cast<Value::Type>(t);
    v.text = str();
    return v;
  }
  void assignments(std::vector<std::pair<std::string, Value>>& v) {
    list(v, [this] {
      std::string k = str();
      return std::pair<std::string, Value>(std::move(k), value());
    });
  }
  void scope(std::vector<ScopeCondition>& v) {
    list(v, [this] {
      ScopeCondition c;
      c.key = str();
      c.range = str();
      strings(c.any_of);
      return c;
    });
  }
  void context(Context& c) {
    for (std::uint32_t n = u32(); n > 0; --n) {
      std::string k = str();
      c.values[std::move(k)] = str();
    }
  }
  Location location() {
    Location l;
    l.file = str();
    l.line = int32();
    l.column = int32();
    return l;
  }
  SourcePin pin() {
    SourcePin p;
    p.repo = str();
    p.path = str();
    p.line = int32();
    p.commit = str();
    p.symbol = str();
    return p;
  }
  bool flag() {
    const std::uint8_t b = u8();
    if (b > 1) fail(pos_ - 1, "a flag that is neither 0 nor 1");
    return b == 1;
  }
  void entry(Entry& e);
  MatchPlan::Item plan_item() {
    MatchPlan::Item item;
    item.key.text = str();
    item.key.max_offset = static_cast<std::size_t>(i64());
    const std::uint8_t flags = u8();
    if (flags > 3) fail(pos_ - 1, "unknown match plan flags");
    item.key.single_line_prefix = (flags & 1) != 0;
    item.key.line_local = (flags & 2) != 0;
    item.key.also = str();
    item.anchor = u32();
    item.also_anchor = u32();
    item.specificity = static_cast<std::size_t>(i64());
    return item;
  }

  [[noreturn]] void fail(std::size_t at, std::string what) const { throw Damaged{at, std::move(what)}; }

 private:
  void need(std::size_t n, const char* what) const {
    if (n > in_.size() - pos_) fail(pos_, fmt::format("cut short: {} needs {} bytes, {} are left", what, n, in_.size() - pos_));
  }

  std::string_view in_;
  std::size_t pos_ = 0;
};

void Reader::entry(Entry& e) {
  e.id = str();
  e.template_text = str();
  e.pattern = str();
  strings(e.capture_names);
  e.source = pin();
  list(e.also_at, [this] { return pin(); });
  e.library = str();
  e.error_class = str();
  e.kind = str();
  e.severity = str();
  e.cause = str();
  e.trigger = str();
  list(e.remediation, [this] {
    Remediation r;
    r.text = str();
    if (!flag()) return r;
    Fix& f = r.fix.emplace();
    assignments(f.set);
    strings(f.remove);
    f.action = str();
    const std::uint8_t safety = u8();
    if (safety > static_cast<std::uint8_t>(Safety::manual)) fail(offset() - 1, "an unknown safety class");
    f.safety = static_cast<Safety>(safety);
    f.reason = str();
    assignments(f.requires_set);
    assignments(f.conflicts);
    strings(f.config_kinds);
    strings(f.create);
    assignments(f.vocabulary);
    return r;
  });
  strings(e.tags);
  list(e.match_examples, [this] {
    MatchExample m;
    m.text = str();
    list(m.captures, [this] {
      Capture c;
      c.name = str();
      c.value = str();
      return c;
    });
    context(m.context);
    m.where = location();
    return m;
  });
  list(e.no_match_examples, [this] {
    NoMatchExample m;
    m.text = str();
    m.where = location();
    return m;
  });
  e.priority = int32();
  strings(e.unless);
  scope(e.applies_to);
  list(e.preflight, [this] {
    PreflightCondition c;
    list(c.keys, [this] {
      std::pair<std::string, std::vector<Value>> kv;
      kv.first = str();
      list(kv.second, [this] { return value(); });
      return kv;
    });
    c.model = str();
    list(c.tests, [this] {
      PreflightTest t;
      t.key = str();
      const std::uint8_t op = u8();
      if (op > static_cast<std::uint8_t>(PreflightTest::Op::not_multiple_of)) fail(pos_ - 1, "an unknown preflight test");
      t.op = static_cast<PreflightTest::Op>(op);
      list(t.values, [this] { return value(); });
      return t;
    });
    const std::uint8_t kind = u8();
    if (kind > static_cast<std::uint8_t>(PreflightSource::generation)) fail(pos_ - 1, "an unknown config kind");
    c.config = static_cast<PreflightSource>(kind);
    strings(c.model_types);
    strings(c.architectures);
    scope(c.applies_to);
    return c;
  });
  list(e.preflight_examples, [this] {
    PreflightExample x;
    x.fires = flag();
    x.config = str();
    x.model_config = str();
    x.generation_config = str();
    context(x.context);
    x.where = location();
    return x;
  });
  e.imported = flag();
  e.where = location();
}

}  // namespace

std::uint64_t snapshot_checksum(std::string_view bytes) { return checksum(bytes); }

namespace {
void header(Writer& w) {
  for (char c : kMagic) w.u8(static_cast<std::uint8_t>(c));
  w.u32(kFormat);
  w.str(version());
}
}  // namespace

std::string_view snapshot_body(std::string_view snapshot) {
  Writer w;
  header(w);
  const std::size_t n = w.bytes().size();
  if (snapshot.size() < n + 8 || snapshot.substr(0, n) != w.bytes()) return {};
  return snapshot.substr(n, snapshot.size() - n - 8);
}

std::string seal_snapshot(std::string_view body) {
  Writer w;
  header(w);
  for (char c : body) w.u8(static_cast<std::uint8_t>(c));
  const std::uint64_t sum = checksum(w.bytes());
  w.i64(static_cast<std::int64_t>(sum));
  return w.take();
}

std::string write_snapshot(const std::vector<std::shared_ptr<const Entry>>& entries, const MatchPlan& plan,
                           std::uint64_t source) {
  Writer w;
  header(w);
  w.i64(static_cast<std::int64_t>(source));
  w.count(entries.size());
  for (const auto& e : entries) w.entry(*e);
  w.count(plan.items.size());
  for (const MatchPlan::Item& item : plan.items) w.plan_item(item);
  const std::uint64_t sum = checksum(w.bytes());
  w.i64(static_cast<std::int64_t>(sum));
  return w.take();
}

Snapshot read_snapshot(std::string_view bytes, const std::string& name, std::vector<Problem>& problems) {
  Snapshot out;
  auto problem = [&](std::string message) {
    Problem p;
    p.where.file = name;
    p.message = std::move(message);
    problems.push_back(std::move(p));
  };
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    problem("not a catalog snapshot (it does not start with errshim's snapshot header)");
    return out;
  }
  Reader r(bytes.substr(kMagic.size()));
  try {
    // The versions first: a snapshot from another errshim is told so, not
    // called damaged.
    if (const std::uint32_t format = r.u32(); format != kFormat)
      r.fail(0, fmt::format("snapshot format {}, this errshim reads format {}: rebuild the snapshot", format, kFormat));
    if (const std::string made_by = r.str(); made_by != version())
      r.fail(4, fmt::format("written by errshim {}, this is errshim {}: rebuild the snapshot", made_by, version()));
    if (bytes.size() < kMagic.size() + r.offset() + 8) r.fail(r.offset(), "cut short: no checksum");
    const std::size_t body = bytes.size() - kMagic.size() - 8;
    Reader tail(bytes.substr(bytes.size() - 8));
    if (static_cast<std::uint64_t>(tail.i64()) != checksum(bytes.substr(0, bytes.size() - 8)))
      r.fail(body, "its checksum does not match its contents (damaged or cut short): rebuild the snapshot");
    // The body without the checksum, from the same byte as `r`, so offsets
    // in problems stay those of the file; the header is already checked.
    Reader in(bytes.substr(kMagic.size(), body));
    in.u32();
    in.str();
    out.source = static_cast<std::uint64_t>(in.i64());
    // Built in place: an Entry is ~700 bytes, and moving each into its
    // shared_ptr cost a twentieth of the load. Room for one entry per 512
    // bytes is reserved, so a damaged count reserves at most about the
    // snapshot's own size.
    in.list(out.entries, [&in] {
      auto e = std::make_shared<Entry>();
      in.entry(*e);
      return std::shared_ptr<const Entry>(std::move(e));
    }, 512);
    // The winner rule negates a specificity as a signed number; it counts
    // characters of the pattern, so a larger one was never written by us.
    in.list(out.plan.items, [&in, &out, i = std::size_t{0}]() mutable {
      const std::size_t at = in.offset();
      MatchPlan::Item item = in.plan_item();
      if (i < out.entries.size() && item.specificity > out.entries[i]->pattern.size())
        in.fail(at, fmt::format("the match plan gives entry '{}' a specificity of {}, more than its pattern's {} "
                                "characters", out.entries[i]->id, item.specificity, out.entries[i]->pattern.size()));
      ++i;
      return item;
    }, 32);
    if (out.plan.items.size() != out.entries.size())
      in.fail(in.offset(), fmt::format("a match plan for {} entries, the snapshot holds {}", out.plan.items.size(),
                                       out.entries.size()));
    if (!in.done()) in.fail(in.offset(), "bytes after the match plan");
  } catch (const Damaged& d) {
    problem(fmt::format("not a valid catalog snapshot: {} (at byte {})", d.what, d.at + kMagic.size()));
    out = {};
  }
  return out;
}

}  // namespace errshim::detail
