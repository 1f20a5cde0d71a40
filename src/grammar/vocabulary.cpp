#include "vocabulary.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

#include "chars.hpp"
#include "fix_values.hpp"

namespace errshim::detail {

namespace {

bool starts_with(std::string_view s, std::string_view head) { return s.substr(0, head.size()) == head; }

// ---- dtypes ---------------------------------------------------------------------

// The spelling families a dtype is written in. A config keeps one of them;
// the hint (a dtype the config already holds) says which.
enum Family : std::size_t {
  kLibtorch,  // c10::ScalarType names, as libtorch messages print them: Float, Half, BFloat16
  kTorch,  // Python: torch.float16
  kTransformers,  // config.json / from_pretrained strings: "float16", "bfloat16", "auto"
  kCandleLower,  // candle's DType::as_str and serde form: f16, bf16
  kCandleUpper,  // candle's Debug form, as its messages print it: F16, BF16
  kFamilies,
};

struct DtypeRow {
  std::array<std::string_view, kFamilies> spelling;  // "" where the family has none
  std::vector<std::string_view> aliases;  // more spellings read (lower case), never written
};

const std::vector<DtypeRow>& dtype_rows() {
  static const std::vector<DtypeRow> rows = {
      {{"Float", "torch.float32", "float32", "f32", "F32"}, {"float", "fp32", "torch.float", "kfloat"}},
      {{"Half", "torch.float16", "float16", "f16", "F16"}, {"half", "fp16", "torch.half", "khalf"}},
      {{"BFloat16", "torch.bfloat16", "bfloat16", "bf16", "BF16"}, {"kbfloat16"}},
      {{"Double", "torch.float64", "float64", "f64", "F64"}, {"double", "fp64", "torch.double", "kdouble"}},
      {{"Char", "torch.int8", "int8", "", ""}, {"kchar", "i8"}},
      {{"Byte", "torch.uint8", "uint8", "u8", "U8"}, {"kbyte"}},
      {{"Short", "torch.int16", "int16", "i16", "I16"}, {"short", "torch.short", "kshort"}},
      {{"Int", "torch.int32", "int32", "i32", "I32"}, {"int", "torch.int", "kint"}},
      {{"Long", "torch.int64", "int64", "i64", "I64"}, {"long", "torch.long", "klong"}},
      {{"", "torch.uint32", "uint32", "u32", "U32"}, {}},
      {{"Bool", "torch.bool", "bool", "", ""}, {"kbool"}},
      {{"ComplexFloat", "torch.complex64", "complex64", "", ""}, {"complexfloat", "torch.cfloat"}},
      {{"ComplexDouble", "torch.complex128", "complex128", "", ""}, {"complexdouble", "torch.cdouble"}},
      {{"Float8_e4m3fn", "torch.float8_e4m3fn", "float8_e4m3fn", "f8e4m3", "F8E4M3"}, {"fp8_e4m3"}},
      {{"Float8_e5m2", "torch.float8_e5m2", "float8_e5m2", "", ""}, {"fp8_e5m2"}},
      // "auto" is transformers' own: load in the checkpoint's dtype.
      {{"", "", "auto", "", ""}, {}},
  };
  return rows;
}

// The row and family of a spelling; the family is nullopt for an alias,
// which says what the dtype is but not how the config spells it.
struct DtypeHit {
  const DtypeRow* row = nullptr;
  std::optional<Family> family;
};

DtypeHit find_dtype(std::string_view v) {
  for (const DtypeRow& row : dtype_rows()) {
    for (std::size_t f = 0; f < kFamilies; ++f)
      if (!row.spelling[f].empty() && row.spelling[f] == v) return {&row, static_cast<Family>(f)};
  }
  // Case, a "c10::" or "at::" prefix and "torch." aliases say nothing of the
  // config's family; they are read, never written.
  std::string l = ascii_lower(v);
  for (std::string_view prefix : {"c10::scalartype::", "c10::", "at::", "dtype."})
    if (starts_with(l, prefix)) l.erase(0, prefix.size());
  for (const DtypeRow& row : dtype_rows()) {
    for (std::string_view s : row.spelling)
      if (!s.empty() && ascii_lower(s) == l) return {&row, std::nullopt};
    for (std::string_view a : row.aliases)
      if (a == l) return {&row, std::nullopt};
  }
  return {};
}

Family default_family(ConfigKind kind) {
  switch (kind) {
    case ConfigKind::candle_config: return kCandleLower;
    default: return kTransformers;
  }
}

std::optional<std::string> map_dtype(std::string_view value, const std::string* hint, ConfigKind kind,
                                     std::string& why) {
  const DtypeHit hit = find_dtype(value);
  if (!hit.row) {
    why = fmt::format("'{}' is not a dtype errshim knows (libtorch, torch, transformers or candle spelling)",
                      value.substr(0, 80));
    return std::nullopt;
  }
  Family target = default_family(kind);
  std::string from = fmt::format("the usual spelling of a {} config", to_string(kind));
  if (hint) {
    const DtypeHit h = find_dtype(*hint);
    if (h.row && h.family) {
      target = *h.family;
      // "bool"/"int8" etc. read alike in torch and transformers; the hint
      // "float16" is both transformers and the bare torch name: same spelling.
      from = fmt::format("the spelling of '{}' in the config", *hint);
    }
  }
  const std::string_view out = hit.row->spelling[target];
  if (out.empty()) {
    why = fmt::format("dtype '{}' has no spelling in this config's vocabulary ({})", value.substr(0, 80), from);
    return std::nullopt;
  }
  return std::string(out);
}

// ---- devices --------------------------------------------------------------------

// Device types of libtorch (c10::DeviceType, lower case as torch.device takes
// them) and candle. A libtorch message prints "CUDA", "CPU", "MPS", "Meta".
const std::vector<std::string_view> kTorchDevices = {"cpu", "cuda", "mps",  "meta",   "xpu",
                                                     "hip", "xla",  "lazy", "vulkan", "npu",
                                                     "hpu", "mtia", "ipu",  "maia",   "privateuseone"};
const std::vector<std::string_view> kCandleDevices = {"cpu", "cuda", "metal"};

std::optional<std::string> map_device(std::string_view value, const std::string* hint, ConfigKind kind,
                                      std::string& why) {
  const std::size_t colon = value.find(':');
  std::string type = ascii_lower(value.substr(0, colon));
  const std::string_view index = colon == std::string_view::npos ? std::string_view() : value.substr(colon + 1);
  if (colon != std::string_view::npos &&
      (index.empty() || index.size() > 3 || !std::all_of(index.begin(), index.end(), is_digit))) {
    why = fmt::format("'{}' is not a device: the index after ':' is a number", value.substr(0, 80));
    return std::nullopt;
  }
  if (type == "gpu") type = "cuda";
  bool candle = kind == ConfigKind::candle_config;
  if (hint) {
    const std::string h = ascii_lower(hint->substr(0, hint->find(':')));
    if (h == "metal") candle = true;
    if (h == "mps") candle = false;
  }
  // The Apple GPU is "mps" to torch and "metal" to candle.
  if (candle && type == "mps") type = "metal";
  if (!candle && type == "metal") type = "mps";
  const auto& known = candle ? kCandleDevices : kTorchDevices;
  if (std::find(known.begin(), known.end(), type) == known.end()) {
    why = fmt::format("'{}' is not a {} device ({})", value.substr(0, 80), candle ? "candle" : "torch",
                      fmt::join(known, ", "));
    return std::nullopt;
  }
  return index.empty() ? type : fmt::format("{}:{}", type, index);
}

// ---- attention and cache implementations ------------------------------------------

struct NameRow {
  std::string_view name;  // transformers' spelling, the one written
  std::vector<std::string_view> aliases;  // read (compared in lower case, '-' as '_')
};

const std::vector<NameRow>& attn_rows() {
  static const std::vector<NameRow> rows = {
      {"eager", {"manual", "math", "torchattn"}},
      {"sdpa", {"scaled_dot_product_attention", "torch_sdpa", "sdpa_attention"}},
      {"flash_attention_2",
       {"flash_attn_2", "flash_attn2", "flashattention2", "flash_attention2", "fa2", "flash_attn"}},
      {"flash_attention_3", {"flash_attn_3", "flash_attn3", "flashattention3", "flash_attention3", "fa3"}},
      {"flex_attention", {"flex"}},
      {"paged_attention", {}},
      {"sdpa_paged", {}},
      {"eager_paged", {}},
  };
  return rows;
}

const std::vector<NameRow>& cache_rows() {
  static const std::vector<NameRow> rows = {
      {"dynamic", {"dynamiccache"}},
      {"static", {"staticcache"}},
      {"offloaded", {"offloadedcache"}},
      {"offloaded_static", {"offloadedstaticcache"}},
      {"sliding_window", {"slidingwindowcache"}},
      {"hybrid", {"hybridcache"}},
      {"hybrid_chunked", {"hybridchunkedcache"}},
      {"offloaded_hybrid", {"offloadedhybridcache"}},
      {"offloaded_hybrid_chunked", {"offloadedhybridchunkedcache"}},
      {"mamba", {"mambacache"}},
      {"quantized", {"quantizedcache", "quantoquantizedcache", "hqqquantizedcache"}},
  };
  return rows;
}

std::optional<std::string> map_name(const std::vector<NameRow>& rows, std::string_view what, std::string_view value,
                                    std::string& why) {
  std::string l = ascii_lower(value);
  std::replace(l.begin(), l.end(), '-', '_');
  for (const NameRow& row : rows) {
    if (row.name == l) return std::string(row.name);
    for (std::string_view a : row.aliases)
      if (a == l) return std::string(row.name);
  }
  std::vector<std::string_view> names;
  for (const NameRow& row : rows) names.push_back(row.name);
  why = fmt::format("'{}' is not {} errshim knows ({})", value.substr(0, 80), what, fmt::join(names, ", "));
  return std::nullopt;
}

// ---- keys each config kind is read for --------------------------------------------

// GenerationConfig's attributes (transformers generation/configuration_utils.py):
// what generation_config.json and generate() read. A key outside this list in
// such a config is ignored by transformers (or, as a generate() kwarg, passed
// to the model, which refuses what it does not take).
const std::vector<std::string_view> kGenerationKeys = {
    "max_length", "max_new_tokens", "min_length", "min_new_tokens", "early_stopping", "max_time", "stop_strings",
    "do_sample", "num_beams", "num_beam_groups", "penalty_alpha", "dola_layers", "use_cache", "cache_implementation",
    "cache_config", "return_legacy_cache", "prefill_chunk_size", "temperature", "top_k", "top_p", "min_p", "typical_p",
    "epsilon_cutoff", "eta_cutoff", "diversity_penalty", "repetition_penalty", "encoder_repetition_penalty",
    "length_penalty", "no_repeat_ngram_size", "bad_words_ids", "force_words_ids", "renormalize_logits", "constraints",
    "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty",
    "suppress_tokens", "begin_suppress_tokens", "forced_decoder_ids", "sequence_bias", "token_healing",
    "guidance_scale", "low_memory", "watermarking_config", "num_return_sequences", "output_attentions",
    "output_hidden_states", "output_scores", "output_logits", "return_dict_in_generate", "pad_token_id", "bos_token_id",
    "eos_token_id", "encoder_no_repeat_ngram_size", "decoder_start_token_id", "is_assistant", "num_assistant_tokens",
    "num_assistant_tokens_schedule", "assistant_confidence_threshold", "prompt_lookup_num_tokens",
    "max_matching_ngram_size", "assistant_early_exit", "assistant_lookbehind", "target_lookbehind", "disable_compile",
    "compile_config", "transformers_version", "_from_model_config",
    // cache_config's own keys, reached as cache_config.<key>
    "backend", "nbits", "axis_key", "axis_value", "q_group_size", "residual_length", "compute_dtype", "device"};

// generate() takes the generation keys and these arguments of its own.
// clang-format off
const std::vector<std::string_view> kGenerateArguments = {
    "generation_config", "logits_processor", "stopping_criteria", "prefix_allowed_tokens_fn", "synced_gpus",
    "assistant_model", "streamer", "negative_prompt_ids", "negative_prompt_attention_mask", "use_model_defaults",
    "custom_generate", "tokenizer", "assistant_tokenizer", "input_ids", "inputs", "attention_mask",
    "past_key_values", "cache_position", "position_ids", "decoder_input_ids", "encoder_outputs"};
// clang-format on

bool listed(const std::vector<std::string_view>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

std::string_view to_string(Vocabulary v) noexcept {
  switch (v) {
    case Vocabulary::dtype: return "dtype";
    case Vocabulary::device: return "device";
    case Vocabulary::attn_implementation: return "attn-implementation";
    case Vocabulary::cache_implementation: return "cache-implementation";
  }
  return "dtype";
}

std::optional<Vocabulary> parse_vocabulary(std::string_view name) noexcept {
  for (Vocabulary v :
       {Vocabulary::dtype, Vocabulary::device, Vocabulary::attn_implementation, Vocabulary::cache_implementation})
    if (to_string(v) == name) return v;
  return std::nullopt;
}

std::string known_vocabularies() { return "dtype, device, attn-implementation, cache-implementation"; }

std::optional<Vocabulary> vocabulary_of_key(std::string_view key) {
  const std::string_view name = last_part(key);
  if (name == "dtype" || ends_with(name, "_dtype")) return Vocabulary::dtype;
  if (name == "device" || ends_with(name, "_device")) return Vocabulary::device;
  if (name == "attn_implementation" || name == "_attn_implementation") return Vocabulary::attn_implementation;
  if (name == "cache_implementation") return Vocabulary::cache_implementation;
  return std::nullopt;
}

std::optional<std::string> map_value(Vocabulary vocabulary, std::string_view value, const std::string* hint,
                                     ConfigKind kind, std::string& why) {
  switch (vocabulary) {
    case Vocabulary::dtype: return map_dtype(value, hint, kind, why);
    case Vocabulary::device: return map_device(value, hint, kind, why);
    case Vocabulary::attn_implementation: return map_name(attn_rows(), "an attention implementation", value, why);
    case Vocabulary::cache_implementation: return map_name(cache_rows(), "a cache implementation", value, why);
  }
  return std::nullopt;
}

std::optional<bool> kind_reads(ConfigKind kind, std::string_view key) {
  const std::string_view name = last_part(key);
  switch (kind) {
    case ConfigKind::generation_config: return listed(kGenerationKeys, name);
    case ConfigKind::generate_kwargs: return listed(kGenerationKeys, name) || listed(kGenerateArguments, name);
    default: return std::nullopt;
  }
}

}  // namespace errshim::detail
