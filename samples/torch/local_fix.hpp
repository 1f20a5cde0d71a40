// A deliberately small, local stand-in for remediation: applies the FIRST
// remediation step's `fix.set` of a diagnosis to the attention block's config
// struct, when its safety class is one the caller allows. errshim's own
// remediation engine (config bindings, bundles, conflicts) is separate; this
// only shows that the catalog's fixes are concrete enough to act on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>

#include <errshim/errshim.hpp>

#include "attention_block.hpp"

namespace torch_attention {

// "{expected}" -> the captured value; other text is kept.
inline std::optional<std::string> local_resolve(const std::string& text, const errshim::Diagnosis& d) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    const std::size_t close = text.find('}', i);
    if (close == std::string::npos) return std::nullopt;
    const std::string* value = d.capture(text.substr(i + 1, close - i - 1));
    if (!value) return std::nullopt;  // the message did not carry it
    out += *value;
    i = close;
  }
  return out;
}

// Sets one AttentionConfig member by its catalog key. False when the key is
// not a member or the value does not fit its type.
inline bool local_set(AttentionConfig& c, const std::string& key, const std::string& value) {
  std::int64_t* number = key == "embed_dim"                 ? &c.embed_dim
                         : key == "num_heads"               ? &c.num_heads
                         : key == "num_kv_heads"            ? &c.num_kv_heads
                         : key == "max_position_embeddings" ? &c.max_position_embeddings
                         : key == "max_cache_len"           ? &c.max_cache_len
                         : key == "max_batch_size"          ? &c.max_batch_size
                         : key == "cache_head_dim"          ? &c.cache_head_dim
                                                            : nullptr;
  if (number) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(value, &used);
      if (used != value.size()) return false;
      *number = v;
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
  std::string* text = key == "dtype"                  ? &c.dtype
                      : key == "cache_dtype"          ? &c.cache_dtype
                      : key == "cache_device"         ? &c.cache_device
                      : key == "cache_implementation" ? &c.cache_implementation
                      : key == "position_embedding"   ? &c.position_embedding
                                                      : nullptr;
  if (!text) return false;
  *text = value;
  return true;
}

// The config with the first remediation's fix applied, or nullopt when that
// step has no `set`, its safety is not allowed, or a key/value does not fit.
inline std::optional<AttentionConfig> apply_first_fix_locally(AttentionConfig config, const errshim::Diagnosis& d,
                                                              std::initializer_list<errshim::Safety> allowed) {
  if (!d.entry || d.entry->remediation.empty()) return std::nullopt;
  const std::optional<errshim::Fix>& fix = d.entry->remediation.front().fix;
  if (!fix || fix->set.empty()) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), fix->safety) == allowed.end()) return std::nullopt;
  for (const auto& [key, value] : fix->set) {
    const std::optional<std::string> resolved = local_resolve(value.text, d);
    if (!resolved || !local_set(config, key, *resolved)) return std::nullopt;
  }
  return config;
}

}  // namespace torch_attention
