#include "snapshot.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "errshim/version.hpp"
#include "problem.hpp"

namespace errshim::detail {
namespace {

// Bump when the layout below changes. 2: the match plan and a checksum.
// 3: the hash of the source bytes. 4: scoped preflight conditions (tests,
// config kind, model family, applies_to) and examples.preflight. 5: fixes
// carry config kinds, create and vocabulary. 6: an index (ids, plan items,
// where each entry's record lies and its checksum) before the records, so
// a reader can decode an entry on first use. 7: the plan's specificity is
// regex::specificity (code points; it was bytes, digits of counts included).
// 8: the checksum runs four lanes.
//
// Layout after the header: where the records start (from the file's first
// byte), source hash, entry count, one index item per entry, the checksum
// of everything before it, the entry records, the checksum of the whole.
constexpr std::uint32_t kFormat = 8;
constexpr std::uint8_t kEagerFlag = 1;  // the entry has a raw pattern or `unless` list: it compiles when built
constexpr std::string_view kMagic = "errshim catalog snapshot\n";

// Little-endian numbers of 8 and 4 bytes at `p`, whatever the platform, in
// one load each (GCC 12 kept the byte-by-byte form as a load and a shift
// per byte, in the checksum's inner loop too).
template <class T>
T load_le(const char* p) noexcept {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "a 32- or 64-bit number");
  T v;
  std::memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  if constexpr (sizeof(T) == 8)
    v = __builtin_bswap64(v);
  else
    v = __builtin_bswap32(v);
#endif
  return v;
}

// A 64-bit checksum of the bytes before it, last in the file: a damaged
// snapshot, a key of the match plan included, must be refused, not read as
// a catalog that silently misses matches. Eight bytes per step in four
// independent lanes (one lane waited on a multiply every eight bytes: the
// checksums of every layer's index were a fifteenth of loading them all).
// Each step is a bijection of its lane's state, and so is folding a lane
// in: a changed word always changes the sum.
std::uint64_t checksum(std::string_view bytes) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
  const auto word = [&](std::size_t at) { return load_le<std::uint64_t>(bytes.data() + at); };
  const auto step = [](std::uint64_t h, std::uint64_t w) {
    h = (h ^ w) * kMul;
    return h ^ (h >> 29);
  };
  std::uint64_t lane[4] = {0x243F6A8885A308D3ull ^ bytes.size(), 0x13198A2E03707344ull, 0xA4093822299F31D0ull,
                           0x082EFA98EC4E6C89ull};
  std::size_t i = 0;
  for (; i + 32 <= bytes.size(); i += 32)
    for (std::size_t l = 0; l < 4; ++l) lane[l] = step(lane[l], word(i + 8 * l));
  std::uint64_t h = lane[0];
  for (std::size_t l = 1; l < 4; ++l) h = step(h, lane[l]);
  for (; i + 8 <= bytes.size(); i += 8) h = step(h, word(i));
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
  void raw(std::string_view bytes) { out_.append(bytes.data(), bytes.size()); }
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
  // Reads in[begin, end): offsets in problems stay those of `in`.
  Reader(std::string_view in, std::size_t begin, std::size_t end) : in_(in.substr(0, end)), pos_(begin) {}

  std::size_t offset() const { return pos_; }
  bool done() const { return pos_ == in_.size(); }

  std::uint8_t u8() {
    need(1, "a byte");
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  std::uint32_t u32() {
    need(4, "a count");
    const std::uint32_t v = load_le<std::uint32_t>(in_.data() + pos_);
    pos_ += 4;
    return v;
  }
  std::int64_t i64() {
    need(8, "a number");
    const std::uint64_t v = load_le<std::uint64_t>(in_.data() + pos_);
    pos_ += 8;
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
  template <class T, class A, class F>
  void list(std::vector<T, A>& v, F&& read_one, std::size_t bytes_per_item = 0) {
    const std::uint32_t n = u32();
    v.clear();
    v.reserve(std::min<std::size_t>(n, bytes_per_item ? (in_.size() - pos_) / bytes_per_item : 16));
    for (std::uint32_t i = 0; i < n; ++i) v.push_back(read_one());
  }
  std::string str() { return std::string(view()); }
  // A string as a view of the bytes read.
  std::string_view view() {
    const std::uint32_t n = u32();
    need(n, "a string");
    const std::string_view s = in_.substr(pos_, n);
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
    item.key.text = view();
    item.key.max_offset = static_cast<std::size_t>(i64());
    const std::uint8_t flags = u8();
    if (flags > 3) fail(pos_ - 1, "unknown match plan flags");
    item.key.single_line_prefix = (flags & 1) != 0;
    item.key.line_local = (flags & 2) != 0;
    item.key.also = view();
    item.anchor = u32();
    item.also_anchor = u32();
    item.specificity = static_cast<std::size_t>(i64());
    return item;
  }

  [[noreturn]] void fail(std::size_t at, std::string what) const { throw Damaged{at, std::move(what)}; }

 private:
  void need(std::size_t n, const char* what) const {
    if (n > in_.size() - pos_)
      fail(pos_, fmt::format("cut short: {} needs {} bytes, {} are left", what, n, in_.size() - pos_));
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
      if (op > static_cast<std::uint8_t>(PreflightTest::Op::not_multiple_of))
        fail(pos_ - 1, "an unknown preflight test");
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

std::uint64_t entry_checksum(const Entry& e) {
  Writer w;
  w.entry(e);
  return checksum(w.bytes());
}

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
  Writer records;
  std::vector<std::pair<std::size_t, std::size_t>> at;  // each record's offset and size
  at.reserve(entries.size());
  for (const auto& e : entries) {
    const std::size_t begin = records.bytes().size();
    records.entry(*e);
    at.emplace_back(begin, records.bytes().size() - begin);
  }
  const std::string_view all = records.bytes();
  Writer index;
  index.i64(static_cast<std::int64_t>(source));
  index.count(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = *entries[i];
    index.str(e.id);
    index.u8(e.template_text.empty() || !e.unless.empty() ? kEagerFlag : 0);
    index.plan_item(i < plan.items.size() ? plan.items[i] : MatchPlan::Item{});
    index.i64(static_cast<std::int64_t>(at[i].first));
    index.i64(static_cast<std::int64_t>(at[i].second));
    index.i64(static_cast<std::int64_t>(checksum(all.substr(at[i].first, at[i].second))));
  }
  Writer w;
  header(w);
  w.i64(static_cast<std::int64_t>(w.bytes().size() + 8 + index.bytes().size() + 8));
  w.raw(index.bytes());
  w.i64(static_cast<std::int64_t>(checksum(w.bytes())));
  w.raw(all);
  w.i64(static_cast<std::int64_t>(checksum(w.bytes())));
  return w.take();
}

struct SnapshotIndex {
  std::uint64_t source = 0;
  BigTable<LazySnapshot::Item> items;  // what the index says of each entry (ids view its bytes)
  MatchPlan plan;  // and its plan item
  std::size_t records = 0;  // where the records start, from the file's first byte
};

namespace {

// The header: the versions first, so a snapshot from another errshim is
// told so, not called damaged. Returns where the records start (from the
// file's first byte); `prefix` holds at least the header.
std::size_t check_header(std::string_view prefix) {
  if (prefix.substr(0, kMagic.size()) != kMagic)
    throw Damaged{std::string::npos, "not a catalog snapshot (it does not start with errshim's snapshot header)"};
  Reader r(prefix.substr(kMagic.size()));
  if (const std::uint32_t format = r.u32(); format != kFormat)
    r.fail(0, fmt::format("snapshot format {}, this errshim reads format {}: rebuild the snapshot", format, kFormat));
  if (const std::string made_by = r.str(); made_by != version())
    r.fail(4, fmt::format("written by errshim {}, this is errshim {}: rebuild the snapshot", made_by, version()));
  const std::size_t at = r.offset();
  const std::int64_t records = r.i64();
  if (records < static_cast<std::int64_t>(kMagic.size() + r.offset()))
    r.fail(at, "the records start inside the header");
  return static_cast<std::size_t>(records);
}

// The index, from `bytes` (the file's first bytes, up to the records at
// least). Its checksum is checked when `check` is set: a lazy reader trusts
// nothing else before an entry is decoded. `size` is the file's.
SnapshotIndex read_index(std::string_view bytes, std::size_t records, std::size_t size, bool check) {
  if (records > bytes.size() || size < records + 8)
    throw Damaged{bytes.size() - kMagic.size(), "cut short: the index or the checksum is missing"};
  Reader in(bytes.substr(kMagic.size(), records - kMagic.size()));
  in.u32();  // format and version: check_header's
  in.str();
  in.i64();
  SnapshotIndex out;
  out.records = records;
  out.source = static_cast<std::uint64_t>(in.i64());
  in.list(
      out.items,
      [&in, &out] {
        LazySnapshot::Item item;
        item.id = in.view();
        const std::uint8_t flags = in.u8();
        if (flags > kEagerFlag) in.fail(in.offset() - 1, "unknown entry flags");
        item.eager = flags == kEagerFlag;
        // Sized as the items are (list() bounds that by the bytes left).
        if (out.plan.items.capacity() < out.items.capacity()) out.plan.items.reserve(out.items.capacity());
        out.plan.items.push_back(in.plan_item());
        item.specificity = out.plan.items.back().specificity;
        const std::size_t at = in.offset();
        const std::int64_t offset = in.i64(), length = in.i64();
        if (offset < 0 || length < 0) in.fail(at, "a negative record offset or size");
        item.offset = static_cast<std::size_t>(offset);
        item.size = static_cast<std::size_t>(length);
        item.sum = static_cast<std::uint64_t>(in.i64());
        return item;
      },
      64);
  const std::size_t end = in.offset();
  const auto sum = static_cast<std::uint64_t>(in.i64());
  if (check && sum != checksum(bytes.substr(0, kMagic.size() + end)))
    in.fail(end, "its index checksum does not match (damaged or cut short): rebuild the snapshot");
  if (!in.done()) in.fail(in.offset(), "bytes between the index and the records");
  const std::size_t room = size - 8 - records;
  for (const LazySnapshot::Item& item : out.items)
    if (item.offset > room || item.size > room - item.offset)
      in.fail(end, fmt::format("entry '{}': its record lies past the end of the snapshot", item.id));
  return out;
}

// The entry in `record` (its bytes, at `at` in the file), checked against
// its index item.
std::shared_ptr<const Entry> read_record(std::string_view record, std::size_t at, std::string_view id,
                                         std::size_t specificity) {
  Reader in(record);
  auto e = std::make_shared<Entry>();
  try {
    in.entry(*e);
    if (!in.done()) in.fail(in.offset(), fmt::format("entry '{}': bytes after its record", id));
    if (e->id != id) in.fail(0, fmt::format("the record of entry '{}' holds entry '{}'", id, e->id));
    // The winner rule negates a specificity as a signed number; it counts
    // characters of the pattern, so a larger one was never written by us.
    if (specificity > e->pattern.size())
      in.fail(0, fmt::format("the match plan gives entry '{}' a specificity of {}, more than its pattern's {} "
                             "characters",
                             e->id, specificity, e->pattern.size()));
  } catch (Damaged& d) {
    d.at += at - kMagic.size();
    throw;
  }
  return e;
}

std::string damaged_text(const Damaged& d) {
  if (d.at == std::string::npos) return d.what;
  return fmt::format("not a valid catalog snapshot: {} (at byte {})", d.what, d.at + kMagic.size());
}

}  // namespace

Snapshot read_snapshot(std::string_view bytes, const std::string& name, std::vector<Problem>& problems) {
  Snapshot out;
  try {
    const std::size_t records = check_header(bytes);
    Reader tail(bytes.substr(bytes.size() - std::min<std::size_t>(8, bytes.size())));
    if (bytes.size() < 8 || static_cast<std::uint64_t>(tail.i64()) != checksum(bytes.substr(0, bytes.size() - 8)))
      throw Damaged{bytes.size() - kMagic.size(),
                    "its checksum does not match its contents (damaged or cut short): rebuild the snapshot"};
    SnapshotIndex index = read_index(bytes, records, bytes.size(), false);  // the whole is checked
    out.source = index.source;
    out.entries.reserve(index.items.size());
    for (const LazySnapshot::Item& item : index.items) {
      const std::size_t at = records + item.offset;
      out.entries.push_back(read_record(bytes.substr(at, item.size), at, item.id, item.specificity));
    }
    out.plan = std::move(index.plan);
    out.plan.hold_keys();  // they view `bytes`, which the caller keeps or not
  } catch (const Damaged& d) {
    problems.push_back(file_problem(name, damaged_text(d)));
    out = {};
  }
  return out;
}

LazySnapshot::LazySnapshot() = default;
LazySnapshot::~LazySnapshot() {
  if (fd_ >= 0) ::close(fd_);
}

std::shared_ptr<LazySnapshot> LazySnapshot::finish(SnapshotIndex index, std::string name) {
  auto out = std::shared_ptr<LazySnapshot>(new LazySnapshot());
  out->records_ = index.records;
  out->source_ = index.source;
  out->items_ = std::move(index.items);
  out->plan_ = std::move(index.plan);
  out->name_ = std::move(name);
  return out;
}

std::shared_ptr<LazySnapshot> LazySnapshot::read(std::string_view bytes, std::string name,
                                                 std::vector<Problem>& problems, Regexes regexes) {
  try {
    const std::size_t records = check_header(bytes);
    std::shared_ptr<LazySnapshot> out = finish(read_index(bytes, records, bytes.size(), true), std::move(name));
    out->bytes_ = bytes;
    out->compiled_when_written_ = regexes == Regexes::compiled_when_written;
    return out;
  } catch (const Damaged& d) {
    problems.push_back(file_problem(name, damaged_text(d)));
    return nullptr;
  }
}

namespace {
// Reads [at, at + n) of `fd` into `out`; false when the file is shorter.
bool read_at(int fd, std::size_t at, std::size_t n, LazySnapshot::Buffer& out) {
  out.data = make_big_bytes(n);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out.data.get() + done, n - done, static_cast<off_t>(at + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}
}  // namespace

std::shared_ptr<LazySnapshot> LazySnapshot::open(const std::filesystem::path& path, std::vector<Problem>& problems) {
  const std::string name = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    problems.push_back(file_problem(name, "cannot read the snapshot file"));
    return nullptr;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  try {
    // The header first, then the index up to where the records start.
    Buffer prefix;
    if (!read_at(fd, 0, std::min<std::size_t>(size, 4096), prefix)) throw Damaged{0, "cut short: no header"};
    const std::size_t records = check_header(prefix.view());
    if (records > size) throw Damaged{prefix.size() - kMagic.size(), "cut short: the index is missing"};
    if (records > prefix.size() && !read_at(fd, 0, records, prefix))
      throw Damaged{prefix.size() - kMagic.size(), "cut short while reading the index"};
    std::shared_ptr<LazySnapshot> out = finish(read_index(prefix.view(), records, size, true), name);
    out->fd_ = fd;
    out->index_ = std::move(prefix);  // what the ids and the plan's keys view
    return out;
  } catch (const Damaged& d) {
    ::close(fd);
    problems.push_back(file_problem(name, damaged_text(d)));
    return nullptr;
  }
}

std::size_t LazySnapshot::size() const noexcept { return items_.size(); }
std::string_view LazySnapshot::id(std::size_t i) const noexcept { return items_[i].id; }
bool LazySnapshot::eager(std::size_t i) const noexcept { return items_[i].eager && !compiled_when_written_; }

std::shared_ptr<const Entry> LazySnapshot::decode(std::size_t i, std::string& problem) const {
  const Item& item = items_[i];
  const std::size_t at = records_ + item.offset;
  try {
    Buffer copy;
    std::string_view record;
    if (fd_ >= 0) {
      // Read when first needed, not mapped: a file replaced in place under
      // a running process gives a damaged record here, never a SIGBUS.
      if (!read_at(fd_, at, item.size, copy))
        throw Damaged{at - kMagic.size(), fmt::format("entry '{}': the file is shorter than its index says", item.id)};
      record = copy.view();
    } else {
      record = bytes_.substr(at, item.size);
    }
    if (checksum(record) != item.sum)
      throw Damaged{
          at - kMagic.size(),
          fmt::format("entry '{}': its record's checksum does not match (damaged): rebuild the snapshot", item.id)};
    return read_record(record, at, item.id, item.specificity);
  } catch (const Damaged& d) {
    problem = fmt::format("{}: {}", name_, damaged_text(d));
    return nullptr;
  }
}

}  // namespace errshim::detail
