// Template definitions for Bindings<T> and TypedConfig<T>, and the key
// matching rule find() shares with ConfigTree. Included at the end of
// config.hpp; standard library only, since it is a public header. What does
// not depend on a member type (the key rule, number parsing and formatting)
// is defined in src/remedy/typed_config.cpp, so that every file that includes
// errshim.hpp does not compile <charconv>, <cmath> and <algorithm>.
#pragma once

#include <limits>

#include "errshim/config.hpp"

namespace errshim {
// Its own namespace, so these helpers cannot collide with the library's
// internal errshim::detail names in every file that includes config.hpp.
namespace detail::config_impl {

// Whether `path` is one that find(key) reports: its last part is `key`, or,
// for a dotted key ("generation_config.cache_implementation"), its last
// parts are the key's parts. A fix may name a key either way.
bool path_matches(const KeyPath& path, std::string_view key);

template <class M>
constexpr const char* kind_name() {
  if constexpr (std::is_same_v<M, bool>)
    return "boolean";
  else if constexpr (std::is_integral_v<M>)
    return "integer";
  else if constexpr (std::is_floating_point_v<M>)
    return "number";
  else
    return "string";
}

[[noreturn]] inline void refuse(const std::string& name, std::string_view kind, const Value& v,
                                std::string_view why = {}) {
  std::string msg = "cannot set " + name + " (" + std::string(kind) + ") to ";
  msg += v.type == Value::Type::null ? std::string("null") : "'" + v.text + "'";
  if (!why.empty()) msg += ": " + std::string(why);
  throw config_error(msg);
}

template <class M>
std::string limit_text(M v) {
  if constexpr (std::is_signed_v<M>)
    return std::to_string(static_cast<long long>(v));
  else
    return std::to_string(static_cast<unsigned long long>(v));
}

enum class Parsed { ok, malformed, out_of_range };

// An optional sign, then decimal digits: their value as unsigned long long
// and whether the sign was '-'. out_of_range: more than it holds.
Parsed parse_magnitude(std::string_view s, bool& negative, unsigned long long& magnitude);

// Decimal text into M. out_of_range: a number M cannot hold (300 into
// uint8_t, -1 into size_t).
template <class M>
Parsed parse_integer(std::string_view s, M& out) {
  // The magnitude as unsigned long long, then the range of M: one parse
  // covers every integral type, char types included (from_chars has no
  // overload for char16_t and friends).
  bool negative = false;
  unsigned long long magnitude = 0;
  if (const Parsed p = parse_magnitude(s, negative, magnitude); p != Parsed::ok) return p;
  if (!negative || magnitude == 0) {
    if (magnitude > static_cast<unsigned long long>(std::numeric_limits<M>::max())) return Parsed::out_of_range;
    out = static_cast<M>(magnitude);
    return Parsed::ok;
  }
  if constexpr (std::is_unsigned_v<M>) {
    return Parsed::out_of_range;
  } else {
    // |min| without overflow: -(min + 1) + 1.
    const unsigned long long min_magnitude =
        static_cast<unsigned long long>(-(static_cast<long long>(std::numeric_limits<M>::min()) + 1)) + 1;
    if (magnitude > min_magnitude) return Parsed::out_of_range;
    out = static_cast<M>(-static_cast<long long>(magnitude - 1) - 1);
    return Parsed::ok;
  }
}

// Decimal or exponent text, and YAML's .inf/.nan spellings.
Parsed parse_floating(std::string_view s, float& out);
Parsed parse_floating(std::string_view s, double& out);
Parsed parse_floating(std::string_view s, long double& out);

// The shortest text that reads back as the same value, spelled so that it
// reads back as a number, not an integer ("1.0", not "1").
std::string format_floating(float v);
std::string format_floating(double v);
std::string format_floating(long double v);

template <class M>
Value to_value(const M& v) {
  if constexpr (std::is_same_v<M, bool>)
    return {Value::Type::boolean, v ? "true" : "false"};
  else if constexpr (std::is_integral_v<M>)
    return {Value::Type::integer, limit_text(v)};
  else if constexpr (std::is_floating_point_v<M>)
    return {Value::Type::number, format_floating(v)};
  else
    return {Value::Type::string, v};
}

// The member value `v` stands for, or config_error naming the member. Each
// kind takes its own Value type, and a string holding that type's text,
// since hosts and catalogs often quote numbers.
template <class M>
M from_value(const std::string& name, const Value& v) {
  constexpr const char* kind = kind_name<M>();
  if (v.type == Value::Type::null) refuse(name, kind, v, "a struct member cannot hold null");
  if constexpr (std::is_same_v<M, bool>) {
    if (v.type == Value::Type::boolean || v.type == Value::Type::string) {
      if (v.text == "true" || v.text == "True" || v.text == "TRUE") return true;
      if (v.text == "false" || v.text == "False" || v.text == "FALSE") return false;
    }
    refuse(name, kind, v);
  } else if constexpr (std::is_integral_v<M>) {
    M out{};
    const Parsed p = v.type == Value::Type::integer || v.type == Value::Type::string ? parse_integer(v.text, out)
                                                                                     : Parsed::malformed;
    if (p == Parsed::ok) return out;
    if (p == Parsed::out_of_range)
      refuse(name, kind, v,
             "out of range " + limit_text(std::numeric_limits<M>::min()) + ".." +
                 limit_text(std::numeric_limits<M>::max()));
    refuse(name, kind, v);
  } else if constexpr (std::is_floating_point_v<M>) {
    M out{};
    const Parsed p = v.type != Value::Type::boolean ? parse_floating(v.text, out) : Parsed::malformed;
    if (p == Parsed::ok) return out;
    refuse(name, kind, v, p == Parsed::out_of_range ? "out of range" : "");
  } else {
    return v.text;
  }
}

// Names must be valid key paths and bound once: find() and get() would
// otherwise see only the first of two bindings.
template <class Members>
void check_new_name(const Members& members, const std::string& name) {
  try {
    (void)parse_key_path(name);
  } catch (const config_error& e) {
    throw std::invalid_argument(std::string("errshim::Bindings: ") + e.what());
  }
  for (const auto& bound : members)
    if (bound.first == name) throw std::invalid_argument("errshim::Bindings: '" + name + "' is bound twice");
}

}  // namespace detail::config_impl

template <class T>
template <class M>
Bindings<T>& Bindings<T>::bind(std::string name, M T::*member) {
  static_assert(!std::is_enum_v<M>, "bind an enum member with bind_enum and a name table");
  static_assert(!std::is_const_v<M>, "a const member cannot be set");
  static_assert(
      std::is_same_v<M, bool> || std::is_integral_v<M> || std::is_floating_point_v<M> || std::is_same_v<M, std::string>,
      "supported member types: bool, integral, floating point, std::string (enums: bind_enum)");
  detail::config_impl::check_new_name(members_, name);
  Member m;
  m.get = [member](const T& t) -> std::optional<Value> { return detail::config_impl::to_value(t.*member); };
  // Converts fully before assigning, so a refused value leaves the member as it was.
  m.set = [member, name](T& t, const Value& v) { t.*member = detail::config_impl::from_value<M>(name, v); };
  members_.emplace_back(std::move(name), std::move(m));
  return *this;
}

template <class T>
template <class E>
Bindings<T>& Bindings<T>::bind_enum(std::string name, E T::*member, std::vector<std::pair<std::string, E>> names) {
  static_assert(std::is_enum_v<E>, "bind_enum takes an enum member; bind the others with bind");
  static_assert(!std::is_const_v<E>, "a const member cannot be set");
  detail::config_impl::check_new_name(members_, name);
  if (names.empty()) throw std::invalid_argument("errshim::Bindings: '" + name + "' has an empty name table");
  std::string listed;
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (names[j].first == names[i].first)
        throw std::invalid_argument("errshim::Bindings: '" + name + "' lists the name '" + names[i].first + "' twice");
    listed += (i ? ", " : "") + names[i].first;
  }
  // One table shared by both functions; Member must stay copyable.
  auto table = std::make_shared<const std::vector<std::pair<std::string, E>>>(std::move(names));
  Member m;
  m.get = [member, table](const T& t) -> std::optional<Value> {
    for (const auto& [text, e] : *table)
      if (e == t.*member) return Value{Value::Type::string, text};  // the first name, when a value has aliases
    // A value outside the table has no name; its number is the honest answer.
    return Value{Value::Type::integer,
                 detail::config_impl::limit_text(static_cast<std::underlying_type_t<E>>(t.*member))};
  };
  m.set = [member, table, name, listed](T& t, const Value& v) {
    if (v.type != Value::Type::null)
      for (const auto& [text, e] : *table)
        if (text == v.text) {
          t.*member = e;
          return;
        }
    detail::config_impl::refuse(name, "name", v, "valid names are " + listed);
  };
  members_.emplace_back(std::move(name), std::move(m));
  return *this;
}

template <class T>
const typename Bindings<T>::Member* Bindings<T>::find(std::string_view name) const {
  for (const auto& [bound, member] : members_)
    if (bound == name) return &member;
  return nullptr;
}

template <class T>
TypedConfig<T>::TypedConfig(T value, std::shared_ptr<const Bindings<T>> bindings)
    : value_(std::move(value)), bindings_(std::move(bindings)) {
  if (!bindings_) throw std::invalid_argument("errshim::TypedConfig: bindings must not be null");
}

// A bound name is one path however it is split: {"generation_config",
// "cache_implementation"} and {"generation_config.cache_implementation"}
// both reach the member bound as "generation_config.cache_implementation".

template <class T>
std::vector<KeyPath> TypedConfig<T>::find(std::string_view key) const {
  std::vector<KeyPath> out;
  for (const auto& bound : bindings_->members()) {
    KeyPath path = parse_key_path(bound.first);
    if (detail::config_impl::path_matches(path, key)) out.push_back(std::move(path));
  }
  return out;
}

template <class T>
std::optional<Value> TypedConfig<T>::get(const KeyPath& path) const {
  const auto* member = bindings_->find(to_string(path));
  return member ? member->get(value_) : std::nullopt;
}

template <class T>
void TypedConfig<T>::set(const KeyPath& path, const Value& value) {
  const std::string name = to_string(path);
  const auto* member = bindings_->find(name);
  if (!member) {
    std::string bound;
    for (const auto& b : bindings_->members()) bound += (bound.empty() ? "" : ", ") + b.first;
    // A struct has no room for a new key, unlike a ConfigTree.
    throw config_error("cannot set " + name + ": no member is bound to it (bound: " + bound + ")");
  }
  member->set(value_, value);
}

template <class T>
void TypedConfig<T>::remove(const KeyPath& path) {
  const std::string name = to_string(path);
  if (bindings_->find(name))
    throw config_error("cannot remove " + name +
                       ": a struct member cannot be removed; bind a default and set it instead");
  // Not bound: absent, so nothing to remove.
}

template <class T>
std::unique_ptr<ConfigAccess> TypedConfig<T>::clone() const {
  return std::make_unique<TypedConfig<T>>(*this);  // copies the struct; the bindings are immutable and shared
}

template <class T>
void TypedConfig<T>::assign_from(const ConfigAccess& other) {
  const auto* typed = dynamic_cast<const TypedConfig<T>*>(&other);
  if (!typed) throw config_error("cannot take the state of a config that is not a TypedConfig of the same struct");
  value_ = typed->value_;  // the bindings describe T, not its state: this config keeps its own
}

}  // namespace errshim
