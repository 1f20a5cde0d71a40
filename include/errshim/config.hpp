// The user's configuration, as remediation sees it: keys with values, at the
// top or nested, that a fix can find, read, set and remove.
//
// Two kinds are provided: ConfigTree (a YAML or JSON document, written back
// as it was given but for the bytes of the values a fix changed) and TypedConfig<T> (a C++ struct whose members the
// host binds to names once). Both are values: remediation works on copies and never changes the caller's object.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "errshim/value.hpp"

namespace errshim {

// A path into a config: {"generation_config", "cache_implementation"}.
using KeyPath = std::vector<std::string>;
std::string to_string(const KeyPath& path);  // "generation_config.cache_implementation"
KeyPath parse_key_path(std::string_view dotted);

// Which kind of config a fix is looking at: what reads it decides which keys
// mean anything there (transformers never reads attn_implementation from
// generation_config.json) and how values are spelled.
enum class ConfigKind {
  unknown,  // not known: no key is ruled out by kind
  model_config,  // a model's config.json (transformers PretrainedConfig)
  generation_config,  // generation_config.json (transformers GenerationConfig)
  from_pretrained_kwargs,  // keyword arguments of from_pretrained()
  generate_kwargs,  // keyword arguments of generate()
  candle_config,  // a candle model's Config (serde from config.json)
  host_config,  // the host program's own typed config
};
// "model-config", "generation-config", "from-pretrained-kwargs",
// "generate-kwargs", "candle-config", "host-config", "unknown".
std::string_view to_string(ConfigKind) noexcept;
std::optional<ConfigKind> parse_config_kind(std::string_view) noexcept;

// A config that cannot be read, or a change it cannot take. Says where.
class config_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ConfigAccess {
 public:
  virtual ~ConfigAccess() = default;

  // Every path whose last part is `key`, at any depth, in document order.
  // More than one means the key is ambiguous for a fix that names only `key`.
  virtual std::vector<KeyPath> find(std::string_view key) const = 0;
  // The scalar at `path`; nullopt when absent. A mapping or list comes back
  // with type Value::Type::null and text "<mapping>" / "<list>".
  virtual std::optional<Value> get(const KeyPath& path) const = 0;
  // Sets `path` (creating missing parent mappings where the kind allows).
  // Throws config_error when the path cannot hold the value.
  virtual void set(const KeyPath& path, const Value& value) = 0;
  // Removes `path`; no-op when absent. Throws config_error when the kind
  // cannot remove keys (a struct member can only be reset by the host).
  virtual void remove(const KeyPath& path) = 0;
  virtual std::unique_ptr<ConfigAccess> clone() const = 0;
  // The kind of config this is; a policy's context key `config` overrides it.
  virtual ConfigKind kind() const { return ConfigKind::unknown; }
  // Takes the state of `other`, a config of the same kind (a clone of this
  // one, changed). Throws config_error for a config of another kind. Lets
  // remediation try a bundle on a clone and keep it only when it all worked.
  virtual void assign_from(const ConfigAccess& other) = 0;
};

// A YAML or JSON document.
class ConfigTree final : public ConfigAccess {
 public:
  enum class Format { yaml, json };

  // Parses `text`; the format is JSON when the text starts with '{' or '['
  // (after white space), else YAML. Throws config_error with line:column.
  static ConfigTree parse(std::string_view text, std::string name = "<config>");
  static ConfigTree load(const std::filesystem::path& path);  // throws config_error

  // The document as it was given, with only the bytes of what changed
  // replaced: comments, key order, quoting, flow or block style, indentation,
  // line ends and the trailing newline stay as written. A changed scalar
  // keeps its quoting where the new value allows it; a created key is
  // written in the style of its siblings; an alias to a node that changed is
  // written out in full in its place. What is returned reads back as this
  // tree; a config errshim cannot write so throws config_error instead.
  [[nodiscard]] std::string dump() const;
  // The kind, from the file name (`config.json`, `generation_config.json`)
  // or the content (`model_type`/`architectures`, `_from_model_config`);
  // unknown when neither tells. set_kind() says it outright.
  ConfigKind kind() const override;
  void set_kind(ConfigKind kind);
  // Whether `other` holds the same keys with the same values (order and
  // layout aside): what a config reads as, not how it is written.
  bool same_values(const ConfigTree& other) const;
  Format format() const noexcept;
  const std::string& name() const noexcept;

  std::vector<KeyPath> find(std::string_view key) const override;
  std::optional<Value> get(const KeyPath& path) const override;
  void set(const KeyPath& path, const Value& value) override;
  void remove(const KeyPath& path) override;
  std::unique_ptr<ConfigAccess> clone() const override;
  void assign_from(const ConfigAccess& other) override;

  ConfigTree(const ConfigTree& other);
  ConfigTree& operator=(const ConfigTree& other);
  ConfigTree(ConfigTree&&) noexcept;
  ConfigTree& operator=(ConfigTree&&) noexcept;
  ~ConfigTree() override;

 private:
  struct Impl;
  explicit ConfigTree(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Names bound to members of a struct, declared once by the host:
//
//   static const auto bindings = errshim::Bindings<Config>()
//       .bind("kv_cache_enabled", &Config::kv_cache_enabled)
//       .bind("kv_repeat", &Config::kv_repeat)
//       .bind("cache_implementation", &Config::cache_implementation);
//
// Supported member types: bool, integral types, floating types, std::string,
// and enums through bind_enum with a name table.
template <class T>
class Bindings {
 public:
  struct Member {
    std::function<std::optional<Value>(const T&)> get;
    std::function<void(T&, const Value&)> set;  // throws config_error on a wrong type
  };

  template <class M>
  Bindings& bind(std::string name, M T::*member);

  template <class E>
  Bindings& bind_enum(std::string name, E T::*member, std::vector<std::pair<std::string, E>> names);

  const Member* find(std::string_view name) const;
  const std::vector<std::pair<std::string, Member>>& members() const noexcept { return members_; }

 private:
  std::vector<std::pair<std::string, Member>> members_;
};

// A struct value with its bindings; fixes apply to the struct's members.
template <class T>
class TypedConfig final : public ConfigAccess {
 public:
  TypedConfig(T value, std::shared_ptr<const Bindings<T>> bindings);

  const T& value() const noexcept { return value_; }
  T& value() noexcept { return value_; }

  std::vector<KeyPath> find(std::string_view key) const override;
  std::optional<Value> get(const KeyPath& path) const override;
  void set(const KeyPath& path, const Value& value) override;
  void remove(const KeyPath& path) override;
  std::unique_ptr<ConfigAccess> clone() const override;
  void assign_from(const ConfigAccess& other) override;
  ConfigKind kind() const override { return ConfigKind::host_config; }

 private:
  T value_;
  std::shared_ptr<const Bindings<T>> bindings_;
};

}  // namespace errshim

#include "errshim/detail/typed_config_impl.hpp"
