// Value vocabularies: one value has several spellings across the layers a
// config can belong to (a dtype is `Float` in a libtorch message,
// `torch.float32` in Python, "float32" in a transformers config.json and
// `f32`/`F32` in candle). A fix value is mapped into the spelling the target
// config uses before it is written, never written as the message spelled it.
// And config kinds: which keys each kind of config is read for.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "errshim/config.hpp"

namespace errshim::detail {

enum class Vocabulary { dtype, device, attn_implementation, cache_implementation };
std::string_view to_string(Vocabulary) noexcept;  // "dtype", "device", "attn-implementation", "cache-implementation"
std::optional<Vocabulary> parse_vocabulary(std::string_view name) noexcept;
std::string known_vocabularies();  // for messages

// The vocabulary of a well-known key, by its last part: `dtype`,
// `torch_dtype`, `*_dtype`; `device`, `*_device`; `attn_implementation`;
// `cache_implementation`.
std::optional<Vocabulary> vocabulary_of_key(std::string_view key);

// `value` (any known spelling) in the spelling `hint` uses (a value of the
// same vocabulary the config already holds), or, without a hint, the usual
// spelling of `kind`. nullopt with `why` when the value is not a member of
// the vocabulary or has no spelling where it goes (int8 in candle).
std::optional<std::string> map_value(Vocabulary vocabulary, std::string_view value, const std::string* hint,
                                     ConfigKind kind, std::string& why);

// Whether a config of `kind` is read for `key` (its last part): false for a
// key the kind never reads (attn_implementation in generation_config.json),
// nullopt for a kind whose keys are open (a model's config.json, a struct).
std::optional<bool> kind_reads(ConfigKind kind, std::string_view key);

}  // namespace errshim::detail
