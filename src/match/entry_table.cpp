#include "entry_table.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>

#include "pattern_risk.hpp"

namespace errshim::detail {

// The standard library's string hash: on keys of a few dozen bytes (ids,
// literals; a build hashes every entry's twice) it costs less than the
// snapshot checksum, whose four lanes are set up for megabytes.
std::uint32_t ViewMap::hash(std::string_view key) noexcept {
  return static_cast<std::uint32_t>(std::hash<std::string_view>{}(key));
}

void ViewMap::reserve(std::size_t n) {
  std::size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  if (cap <= items_.size()) return;
  BigTable<Item> old = std::move(items_);
  items_.assign(cap, Item{});
  const std::size_t mask = cap - 1;
  for (const Item& it : old) {
    if (!it.data) continue;
    std::size_t s = hash(it.key()) & mask;
    while (items_[s].data) s = (s + 1) & mask;
    items_[s] = it;
  }
}

ViewMap::Item& ViewMap::insert(std::string_view key, std::uint32_t h, std::uint32_t value, bool& fresh) {
  if (key.size() > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("view map: key too long");
  if (2 * (size_ + 1) > items_.size()) reserve(std::max<std::size_t>(2 * size_, 8));
  // An empty key is stored with a non-null pointer: null marks a free item.
  if (!key.data()) key = std::string_view("", 0);
  const std::size_t mask = items_.size() - 1;
  std::size_t s = h & mask;
  for (; items_[s].data; s = (s + 1) & mask)
    if (items_[s].key() == key) {
      fresh = false;
      return items_[s];
    }
  fresh = true;
  ++size_;
  items_[s].set_key(key);
  items_[s].value = value;
  return items_[s];
}

const ViewMap::Item* ViewMap::find(std::string_view key) const noexcept {
  if (items_.empty()) return nullptr;
  const std::size_t mask = items_.size() - 1;
  for (std::size_t s = hash(key) & mask; items_[s].data; s = (s + 1) & mask)
    if (items_[s].key() == key) return &items_[s];
  return nullptr;
}

EntryTable::EntryTable(std::vector<std::shared_ptr<const Entry>> entries) {
  slots_.reserve(entries.size());
  for (auto& e : entries) add(std::move(e));
}

EntryTable::EntryTable(EntryTable&&) noexcept = default;
EntryTable& EntryTable::operator=(EntryTable&&) noexcept = default;
EntryTable::~EntryTable() = default;

void EntryTable::reserve(std::size_t n) { slots_.reserve(n); }

void EntryTable::add(std::shared_ptr<const Entry> entry) {
  Slot s;
  s.entry = std::move(entry);
  slots_.push_back(std::move(s));
  lazy_->once.emplace_back();
}

void EntryTable::add(const std::shared_ptr<const LazySnapshot>& from, std::size_t pos, bool risk_check) {
  if (keep_.empty() || keep_.back() != from) keep_.push_back(from);
  if (pos > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("entry table: too many entries");
  Slot s;
  s.from = from.get();
  s.pos = static_cast<std::uint32_t>(pos);
  s.risk_check = risk_check;
  slots_.push_back(std::move(s));
  lazy_->once.emplace_back();
}

std::string_view EntryTable::id(std::size_t i) const noexcept {
  const Slot& s = slots_[i];
  return s.from ? std::string_view(s.from->id(s.pos)) : std::string_view(s.entry->id);
}

void EntryTable::decode(std::size_t i) const {
  const Slot& s = slots_[i];
  std::string problem;
  std::shared_ptr<const Entry> e = s.from->decode(s.pos, problem);
  if (e && s.risk_check) {
    // A planted pattern from a folder the environment named: refused, as a
    // reload refuses it, before it ever runs.
    std::vector<Problem> risky;
    append_backtracking_problems(*e, risky);
    if (!risky.empty()) problem = risky.front().to_string();
  }
  if (!problem.empty()) {
    auto stand_in = std::make_shared<Entry>();
    stand_in->id = s.from->id(s.pos);
    stand_in->where.file = s.from->name();
    stand_in->pattern = "(?!)";
    stand_in->cause = problem;
    e = std::move(stand_in);
  }
  if (!problem.empty()) s.problem = std::make_unique<const std::string>(std::move(problem));
  s.entry = std::move(e);
}

bool EntryTable::deferred(std::size_t i) const noexcept {
  const Slot& s = slots_[i];
  return s.from && !s.from->eager(s.pos);
}

const std::shared_ptr<const Entry>& EntryTable::get(std::size_t i) const {
  const Slot& s = slots_[i];
  if (s.from) std::call_once(lazy_->once[i], [this, i] { decode(i); });
  return s.entry;
}

const std::string& EntryTable::problem(std::size_t i) const noexcept {
  static const std::string none;
  return slots_[i].problem ? *slots_[i].problem : none;
}

std::uint64_t EntryTable::content_hash() const {
  std::uint64_t h = 0x6A09E667F3BCC908ull ^ slots_.size();
  for (const Slot& s : slots_) {
    const std::uint64_t sum = s.from ? s.from->record_checksum(s.pos) : entry_checksum(*s.entry);
    h = (h ^ sum) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
  }
  return h;
}

const std::vector<std::shared_ptr<const Entry>>& EntryTable::all() const {
  std::call_once(lazy_->all_once, [this] {
    lazy_->all.reserve(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) lazy_->all.push_back(get(i));
  });
  return lazy_->all;
}

}  // namespace errshim::detail
