// Synthetic catalogs of realistic inference-layer errors, and messages that
// match them or not. Shared by the benchmarks and the equivalence test
// (tests/matcher_equivalence_test.cpp), so both exercise the same shapes.
//
// A template is a "frame" modelled on real candle / transformers / libtorch
// messages (literal English with placeholders: dims lists, dtypes, names,
// numbers), its <slots> filled with vocabulary (model classes, parameter
// names, features, ops). Frames share words ("does not support", "must
// match", "dims") the way real catalogs do, so the prefilter's choice of a
// selective literal matters. Deterministic for a seed.
//
// `adversarial` adds what the equivalence test needs and a production
// catalog has only a little of: generic entries that match many messages,
// priorities, `unless`, applies_to scopes, raw patterns (anchors, word
// boundaries, alternations, case-insensitive flags), capture_patterns,
// repeated names (backreferences) and multi-line placeholders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <errshim/catalog.hpp>

#include "template.hpp"  // src/: compile_template, regex_escape

namespace errshim::synth {

// splitmix64: the same numbers on every platform (std distributions differ).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }
  template <class T, std::size_t N>
  const T& pick(const T (&a)[N]) {
    return a[below(N)];
  }

 private:
  std::uint64_t s_;
};

namespace vocab {
// clang-format off
inline const char* const kModelStem[] = {"Llama", "Mistral", "Mixtral", "Qwen2", "Gemma", "Phi3", "Falcon", "Whisper",
                                         "T5", "Bert", "Bloom", "Gpt2", "GptNeoX", "Olmo", "StableLm", "Starcoder2",
                                         "Mamba", "MetaVoice", "Mimi", "Moshi", "Stella", "Jina", "DeepSeekV2", "Yi",
                                         "Baichuan", "ChatGlm", "InternLm", "Persimmon", "RecurrentGemma", "Segformer"};
inline const char* const kModelPart[] = {"Attention", "Mlp", "Model", "ForCausalLM", "DecoderLayer", "Embeddings",
                                         "RotaryEmbedding", "Encoder", "Decoder", "SdpaAttention", "FlashAttention2",
                                         "SparseMoeBlock", "RmsNorm", "VisionTower", "Config"};
inline const char* const kParamHead[] = {"num",  "max",     "head",  "hidden", "rope",   "kv",    "sliding", "attn",
                                         "intermediate", "vocab", "layer", "rms", "partial", "router", "expert",
                                         "pad",  "bos",     "eos",   "window", "cache", "q_lora", "kv_lora", "topk",
                                         "n_shared", "rotary", "conv", "state", "time_step", "codebook", "quant"};
inline const char* const kParamTail[] = {"heads", "dim", "size", "window", "theta", "scaling", "groups", "layers",
                                         "eps", "dropout", "rank", "experts", "factor", "len", "token_id", "ratio",
                                         "bias", "dtype", "implementation", "enabled", "position_embeddings",
                                         "key_value_heads", "per_tok", "kernel", "stride"};
inline const char* const kFeature[] = {"sliding window attention", "flash attention 2", "a quantized kv cache",
                                       "paged attention", "rope scaling", "bf16 accumulation", "tensor parallelism",
                                       "static cache", "speculative decoding", "grouped query attention",
                                       "alibi positions", "cross attention", "prefix caching", "fp8 weights",
                                       "gradient checkpointing", "the sdpa kernel", "causal masking",
                                       "dynamic ntk scaling", "beam search", "multi-query attention",
                                       "left padding", "chunked prefill", "int4 matmul", "fused rms norm",
                                       "the metal backend", "the cuda graph", "stateful decoding", "mixed precision"};
inline const char* const kOp[] = {"matmul", "conv1d", "conv2d", "index_select", "softmax_last_dim", "rms_norm",
                                  "rotary_emb", "sdpa", "cat", "narrow", "where_cond", "gather", "scatter_add",
                                  "broadcast_add", "layer_norm", "embedding", "avg_pool2d", "upsample_nearest2d",
                                  "argmax_keepdim", "to_dtype", "copy_strided_src", "reduce_sum", "affine", "powf",
                                  "slice_scatter", "index_add", "conv_transpose1d", "max_pool2d", "cumsum", "topk"};
inline const char* const kNamespace[] = {"candle_nn::ops", "candle_core::cpu_backend", "candle_core::cuda_backend",
                                         "candle_core::metal_backend", "candle_transformers::models", "torch.nn.functional",
                                         "transformers.modeling_utils", "c10::cuda", "at::native", "vllm.attention"};
inline const char* const kDtype[] = {"F16", "BF16", "F32", "F64", "U8", "U32", "I64", "F8E4M3", "float16",
                                     "bfloat16", "torch.float32", "torch.int8"};
inline const char* const kDevice[] = {"cuda:0", "cuda:1", "cpu", "metal", "mps:0", "Cpu", "Cuda(0)"};
inline const char* const kName[] = {"model.layers.0.self_attn.q_proj.weight", "lm_head.weight", "embed_tokens",
                                    "encoder.conv1", "model.norm.weight", "decoder.block.3", "wte", "attn.c_attn.bias",
                                    "mlp.gate_up_proj", "vision_tower.patch_embed"};
// clang-format on
}  // namespace vocab

// One piece of a template: literal text, or a placeholder with the syntax it
// is written in and the kind of value it shows.
struct Piece {
  enum class Kind { text, dims, dtype, number, name, device, any } kind = Kind::text;
  std::string text;  // the literal, or the placeholder as written ("{q_dims:?}", "%d")
};

struct SynthEntry {
  std::string id;
  std::vector<Piece> pieces;  // template pieces; empty for a raw pattern
  std::string pattern;  // raw pattern entries only
  std::string raw_example;  // raw pattern entries: a message it matches
  std::vector<std::string> anonymous_names;
  std::map<std::string, std::string> capture_patterns;
  int priority = 0;
  std::vector<std::string> unless;
  std::vector<ScopeCondition> applies_to;

  std::string template_text() const {
    std::string t;
    for (const Piece& p : pieces) t += p.text;
    return t;
  }
};

struct SynthCatalog {
  std::vector<SynthEntry> entries;
};

namespace detail_synth {

inline std::string model(Rng& r) { return std::string(r.pick(vocab::kModelStem)) + r.pick(vocab::kModelPart); }
inline std::string param(Rng& r) { return std::string(r.pick(vocab::kParamHead)) + "_" + r.pick(vocab::kParamTail); }
inline std::string op(Rng& r) {
  return r.chance(40) ? std::string(r.pick(vocab::kNamespace)) + "::" + r.pick(vocab::kOp)
                      : std::string(r.pick(vocab::kOp));
}

inline std::string dims(Rng& r) {
  std::string s = "[";
  const std::size_t n = 1 + r.below(4);
  for (std::size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(1 + r.below(i == n - 1 ? 256 : 64));
  return s + "]";
}

inline std::string value(Piece::Kind k, Rng& r) {
  switch (k) {
    case Piece::Kind::dims: return dims(r);
    case Piece::Kind::dtype: return r.pick(vocab::kDtype);
    case Piece::Kind::number: return std::to_string(r.below(100000));
    case Piece::Kind::name: return r.pick(vocab::kName);
    case Piece::Kind::device: return r.pick(vocab::kDevice);
    case Piece::Kind::any: break;
    case Piece::Kind::text: break;
  }
  switch (r.below(4)) {
    case 0: return dims(r);
    case 1: return r.pick(vocab::kDtype);
    case 2: return std::to_string(r.below(4096));
    default: return param(r);
  }
}

// A frame: text with <M> model, <P> param, <F> feature, <O> op slots filled
// from the vocabulary, and placeholders kept as template syntax:
// {d:name} dims, {t:name} dtype, {n:name} number, {s:name} name,
// {v:name} device; name "_" = anonymous "{}" / "{:?}".
inline const char* const kFrames[] = {
    "<M> does not support <F> with dtype {t:dtype}",
    "<M> does not support q head dim {n:q_head}: q dims {d:q_dims}, k dims {d:k_dims}, v dims {d:v_dims}.",
    "shape mismatch in <O>, lhs: {d:lhs}, rhs: {d:rhs}",
    "unexpected dtype in <O>, expected: {t:expected}, got: {t:got}",
    "<P> must be divisible by <P> (got {n:_})",
    "`<P>`={n:value} is not supported for <M>",
    "only <P> = {n:_} is supported in <M>",
    "<O>: cannot broadcast {d:src} to {d:dst} for <P>",
    "The <M> model does not support <F>. Please set `<P>` to False.",
    "Expected all tensors to be on the same device, but found at least two devices, {v:d1} and {v:d2}! (when "
    "checking argument for argument <P> in method <O>)",
    "<O>: index {n:index} is out of bounds for dimension {n:dim} with size {n:size}",
    "cannot load <M> weights: missing tensor {s:_} for <P>",
    "<P> should be in [{n:lo}, {n:hi}] but is {n:value} for <M>",
    "unsupported <F> for <O> on device {v:device}",
    "<M> requires <P> to be a multiple of {n:multiple}, got {n:got}",
    "the <P> of <M> is {n:a} but <P> is {n:b}: they must match",
    "<O> kernel only supports dims {d:dims} when <F> is enabled",
    "<M>: <F> is not supported on {v:device} yet",
    "dtype mismatch in <O>: lhs {t:lhs} rhs {t:rhs} (<P> must match)",
    "<M> got an unexpected keyword argument '<P>'",
    "no <O> implementation for dtype {t:dtype} on <M>",
    "<P> ({n:_}) is larger than the maximum supported by <M> ({n:max})",
    "invalid <P> {s:_}: <M> expects one of the <F> presets",
    "<O> expects contiguous inputs, got strides {d:strides} for dims {d:dims}",
    "failed to build <M>: <P>={n:value} conflicts with <F>",
    "<M> cannot use <F> because <P> is not set",
};
// Frames never used for entries: misses look like real errors.
inline const char* const kUnknownFrames[] = {
    "worker <M> lost its connection to the scheduler after {n:_} retries",
    "checkpoint shard {n:_} of <M> has an unexpected size for <P>",
    "tokenizer for <M> returned an empty sequence while preparing <F>",
    "profiling <O> on {v:_} took {n:_} ms longer than budgeted",
};

inline std::vector<Piece> parse_frame(const std::string& frame, Rng& r, unsigned syntax) {
  std::vector<Piece> out;
  auto text = [&](const std::string& t) {
    if (!out.empty() && out.back().kind == Piece::Kind::text)
      out.back().text += t;
    else
      out.push_back({Piece::Kind::text, t});
  };
  for (std::size_t i = 0; i < frame.size();) {
    if (frame[i] == '<' && i + 2 < frame.size() && frame[i + 2] == '>') {
      switch (frame[i + 1]) {
        case 'M': text(model(r)); break;
        case 'P': text(param(r)); break;
        case 'F': text(r.pick(vocab::kFeature)); break;
        case 'O': text(op(r)); break;
        default: text(frame.substr(i, 3));
      }
      i += 3;
    } else if (frame[i] == '{' && i + 2 < frame.size() && frame[i + 2] == ':') {
      const std::size_t close = frame.find('}', i);
      const char k = frame[i + 1];
      const std::string name = frame.substr(i + 3, close - i - 3);
      Piece p;
      p.kind = k == 'd'   ? Piece::Kind::dims
               : k == 't' ? Piece::Kind::dtype
               : k == 'n' ? Piece::Kind::number
               : k == 's' ? Piece::Kind::name
               : k == 'v' ? Piece::Kind::device
                          : Piece::Kind::any;
      const bool debug = k == 'd' || k == 't';
      if (syntax == 1 && name != "_") {  // Python style
        p.text = p.kind == Piece::Kind::number && r.chance(50) ? "%(" + name + ")d" : "%(" + name + ")s";
      } else if (name == "_") {
        p.text = syntax == 1 ? (p.kind == Piece::Kind::number ? "%d" : "%s") : debug ? "{:?}" : "{}";
      } else {
        p.text = "{" + name + (debug ? ":?}" : "}");
      }
      out.push_back(std::move(p));
      i = close + 1;
    } else {
      const std::size_t next = std::min(frame.find('<', i + 1), frame.find('{', i + 1));
      std::string t = frame.substr(i, next == std::string::npos ? std::string::npos : next - i);
      // Literal braces and percents in frames are not placeholders.
      std::string escaped;
      for (char c : t) {
        if (c == '{' || c == '}') escaped += c;
        if (c == '%' && syntax == 1) escaped += '%';
        escaped += c;
      }
      text(escaped);
      i = next == std::string::npos ? frame.size() : next;
    }
  }
  return out;
}

// An id-safe word.
inline std::string slug(std::size_t n) {
  std::string s;
  do {
    s += static_cast<char>('a' + n % 26);
    n /= 26;
  } while (n != 0);
  return s;
}

// Raw patterns of the shapes hand-written entries use; each with a message.
inline SynthEntry raw_entry(Rng& r, std::size_t k) {
  SynthEntry e;
  const std::string m = model(r), o = op(r), p = param(r);
  const std::string em = errshim::detail::regex_escape(m), eo = errshim::detail::regex_escape(o),
                    ep = errshim::detail::regex_escape(p);
  switch (k % 7) {
    case 0:  // anchored at a line start, word boundary
      e.pattern = "^" + em + R"(\b.*? failed in )" + eo + R"(: (?<reason>[^\n]+))";
      e.raw_example = m + " init failed in " + o + ": out of memory";
      break;
    case 1:  // alternation inside a group: the literal after it is still required
      e.pattern = R"((?:cannot|can't|could not) allocate (?<bytes>\d+) bytes for )" + ep;
      e.raw_example = "could not allocate 4096 bytes for " + p;
      break;
    case 2:  // top-level alternation: no required literal, always checked
      e.pattern = em + R"( overflowed|overflow in )" + eo;
      e.raw_example = "overflow in " + o;
      break;
    case 3:  // case-insensitive flag: not analysed, always checked
      e.pattern = "(?i)" + ep + R"( is (?<what>deprecated|removed))";
      e.raw_example = p + " IS REMOVED";
      break;
    case 4:  // bounded prefix before the literal, look-behind
      e.pattern = R"((?<=\[)(?<code>[A-Z]{2}\d{3})\] )" + em + " rejected " + ep;
      e.raw_example = "[XY123] " + m + " rejected " + p;
      break;
    case 5:  // backreference and counted repetition
      e.pattern = R"((?<d>\d+)x\k<d> tiles? of )" + eo + R"( (?:are|is) not aligned to \d{2,4} bytes)";
      e.raw_example = "16x16 tiles of " + o + " are not aligned to 128 bytes";
      break;
    default:  // multi-line: the literal on the second line
      e.pattern = eo + R"( failed:\n\s*caused by (?<cause>[^\n]+) in )" + em;
      e.raw_example = o + " failed:\n   caused by bad input in " + m;
      break;
  }
  return e;
}

}  // namespace detail_synth

// `n` entries; ids are "gen.<frame>.<k>".
inline SynthCatalog generate_catalog(std::size_t n, std::uint64_t seed, bool adversarial = false) {
  using namespace detail_synth;
  Rng r(seed);
  SynthCatalog cat;
  std::set<std::string> seen;
  constexpr std::size_t kFrameCount = sizeof(kFrames) / sizeof(kFrames[0]);
  while (cat.entries.size() < n) {
    const std::size_t k = cat.entries.size();
    SynthEntry e;
    if (adversarial && k % 29 == 7) {
      e = raw_entry(r, k / 29);
      e.id = "raw." + slug(k);
      if (!seen.insert(e.pattern).second) continue;
      cat.entries.push_back(std::move(e));
      continue;
    }
    const std::size_t f = r.below(kFrameCount);
    const unsigned syntax = r.chance(30) ? 1 : 0;
    e.pieces = parse_frame(kFrames[f], r, syntax);
    if (adversarial) {
      if (k % 13 == 3) {
        // A generic entry: only the frame's most common words, e.g.
        // "{} does not support {}", so it competes with specific ones.
        std::vector<Piece> generic;
        for (const Piece& p : e.pieces) {
          if (p.kind != Piece::Kind::text) continue;
          const std::size_t at =
              p.text.find(" does not support ") != std::string::npos  ? p.text.find(" does not support ")
              : p.text.find(" is not supported") != std::string::npos ? p.text.find(" is not supported")
              : p.text.find(" must ") != std::string::npos            ? p.text.find(" must ")
                                                                      : std::string::npos;
          if (at == std::string::npos) continue;
          const std::size_t len =
              p.text.find(' ', at + 6) == std::string::npos ? p.text.size() - at : p.text.find(' ', at + 6) - at;
          generic = {
              {Piece::Kind::any, "{}"}, {Piece::Kind::text, p.text.substr(at, len + 1)}, {Piece::Kind::any, "{}"}};
          break;
        }
        if (!generic.empty()) e.pieces = generic;
      }
      if (k % 11 == 5) e.priority = static_cast<int>(r.below(3)) - 1;
      if (k % 17 == 2) e.unless.push_back(std::string(r.pick(vocab::kDtype)) + "|cuda:1");
      if (k % 19 == 4) e.applies_to.push_back({"device", "", {r.chance(50) ? "metal" : "cuda"}});
      if (k % 23 == 6) {
        // Repeat the first named placeholder later on: a backreference.
        for (const Piece& p : e.pieces)
          if (p.kind != Piece::Kind::text && p.text.size() > 2 && p.text[0] == '{' && p.text[1] != '}' &&
              p.text[1] != ':') {
            const Piece again = p;  // a copy: the push_backs below may move e.pieces
            e.pieces.push_back({Piece::Kind::text, " (again "});
            e.pieces.push_back(again);
            e.pieces.push_back({Piece::Kind::text, ")"});
            break;
          }
      }
      if (k % 31 == 9) {
        for (const Piece& p : e.pieces)
          if (p.kind == Piece::Kind::number && p.text.size() > 2 && p.text[0] == '{' && p.text[1] != '}') {
            e.capture_patterns[p.text.substr(1, p.text.size() - 2)] = "\\d+";
            break;
          }
      }
      if (k % 37 == 11 && syntax == 0) {
        // A multi-line Debug placeholder in the middle.
        for (Piece& p : e.pieces)
          if (p.kind == Piece::Kind::dims && p.text == "{:?}") {
            p.text = "{:#?}";
            break;
          }
      }
    }
    // Anonymous placeholders are named in order.
    std::size_t anon = 0;
    for (const Piece& p : e.pieces)
      if (p.text == "{}" || p.text == "{:?}" || p.text == "{:#?}" || p.text == "%s" || p.text == "%d") ++anon;
    for (std::size_t a = 0; a < anon; ++a) e.anonymous_names.push_back("v" + std::to_string(a + 1));
    if (!seen.insert(e.template_text()).second) continue;
    e.id = "gen.f" + std::to_string(f) + "." + slug(k);
    cat.entries.push_back(std::move(e));
  }
  return cat;
}

// A message the entry's template produces, with fresh values.
inline std::string message_for(const SynthEntry& e, Rng& r) {
  if (e.pieces.empty()) return e.raw_example;
  std::string out;
  std::map<std::string, std::string> named;  // a repeated name shows the same value
  for (const Piece& p : e.pieces) {
    if (p.kind == Piece::Kind::text) {
      // Undo the template escapes.
      for (std::size_t i = 0; i < p.text.size(); ++i) {
        out += p.text[i];
        if ((p.text[i] == '{' || p.text[i] == '}' || p.text[i] == '%') && i + 1 < p.text.size() &&
            p.text[i + 1] == p.text[i])
          ++i;
      }
      continue;
    }
    const bool anonymous = p.text == "{}" || p.text == "{:?}" || p.text == "{:#?}" || p.text == "%s" || p.text == "%d";
    std::string v = p.text.find('d') != std::string::npos && p.text.back() == 'd' ? std::to_string(r.below(100000))
                                                                                  : detail_synth::value(p.kind, r);
    if (e.capture_patterns.count(p.text.size() > 2 ? p.text.substr(1, p.text.size() - 2) : ""))
      v = std::to_string(r.below(1000));
    if (!anonymous) {
      const auto [it, fresh] = named.emplace(p.text, v);
      if (!fresh) v = it->second;
    }
    out += v;
  }
  return out;
}

// A message from a frame no entry uses.
inline std::string unknown_message(Rng& r) {
  const auto& frames = detail_synth::kUnknownFrames;
  SynthEntry e;
  e.pieces = detail_synth::parse_frame(frames[r.below(sizeof(frames) / sizeof(frames[0]))], r, 0);
  return message_for(e, r);
}

// Catalog entries built directly (no YAML): what the loader would produce.
inline std::vector<std::shared_ptr<const Entry>> to_entries(const SynthCatalog& cat) {
  std::vector<std::shared_ptr<const Entry>> out;
  out.reserve(cat.entries.size());
  for (const SynthEntry& s : cat.entries) {
    auto e = std::make_shared<Entry>();
    e->id = s.id;
    if (s.pieces.empty()) {
      e->pattern = s.pattern;
    } else {
      e->template_text = s.template_text();
      errshim::detail::CompiledTemplate c =
          errshim::detail::compile_template(e->template_text, s.anonymous_names, s.capture_patterns);
      e->pattern = std::move(c.regex);
      e->capture_names = std::move(c.capture_names);
    }
    e->priority = s.priority;
    e->unless = s.unless;
    e->applies_to = s.applies_to;
    e->library = "synthetic";
    e->kind = "validation";
    out.push_back(std::move(e));
  }
  return out;
}

inline std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

// Catalog files with every entry complete (source, cause, trigger,
// remediation, an example), about the size of a real entry; at most
// `per_file` entries a file (the loader caps a file at 16 MiB).
inline std::vector<std::string> to_yaml_files(const SynthCatalog& cat, std::size_t per_file = 10000,
                                              std::uint64_t seed = 1) {
  Rng r(seed);
  std::vector<std::string> files;
  std::string y;
  for (std::size_t k = 0; k < cat.entries.size(); ++k) {
    const SynthEntry& e = cat.entries[k];
    if (k % per_file == 0) {
      if (k > 0) files.push_back(std::move(y));
      y = "schema: 1\nlibrary: synthetic\ndefaults: {repo: example/synthetic, commit: "
          "0123456789abcdef0123456789abcdef01234567}\nentries:\n";
      y.reserve(std::min(per_file, cat.entries.size() - k) * 900);
    }
    y += "  - id: " + e.id + "\n";
    if (e.pieces.empty()) {
      y += "    pattern: " + yaml_quote(e.pattern) + "\n";
    } else {
      y += "    template: " + yaml_quote(e.template_text()) + "\n";
      if (!e.anonymous_names.empty()) {
        y += "    captures: [";
        for (std::size_t i = 0; i < e.anonymous_names.size(); ++i) y += (i ? ", " : "") + e.anonymous_names[i];
        y += "]\n";
      }
      if (!e.capture_patterns.empty()) {
        y += "    capture_patterns: {";
        bool first = true;
        for (const auto& [k, v] : e.capture_patterns)
          y += (first ? "" : ", ") + k + ": " + yaml_quote(v), first = false;
        y += "}\n";
      }
    }
    y += "    source: {path: src/generated/" + e.id.substr(4, 3) + ".rs, line: " + std::to_string(10 + r.below(2000)) +
         ", symbol: Generated::check}\n";
    y += "    error_class: candle::Error::Msg\n    kind: validation\n";
    y += "    cause: >-\n      The layer checks its configuration before running and refuses a combination it cannot\n"
         "      compute; this message names the value it rejected and what it expected instead.\n";
    y += "    trigger: >-\n      Building or running the model with a config value outside what this code path "
         "supports.\n";
    y += "    remediation:\n      - text: Change the offending config value to one the layer supports.\n"
         "      - text: Use the reference implementation of the layer instead of the fused kernel.\n";
    if (e.priority != 0) y += "    priority: " + std::to_string(e.priority) + "\n";
    if (!e.unless.empty()) y += "    unless: [" + yaml_quote(e.unless[0]) + "]\n";
    y += "    tags: [synthetic]\n";
    y += "    examples:\n      match:\n        - " + yaml_quote(message_for(e, r)) + "\n";
  }
  if (!y.empty()) files.push_back(std::move(y));
  return files;
}

// ---------------------------------------------------------------- messages

enum class Size { short_, medium, long_ };

// The bare message as a user receives it: ~110 B (a Rust error line),
// ~2 KB (a worker log excerpt ending in the error: one segment, scanned
// whole), ~20 KB (a Python traceback with a chained cause; normalisation
// cuts it to the two exception messages).
inline std::string wrap(const std::string& message, Size size, Rng& r) {
  using namespace detail_synth;
  if (size == Size::short_) {
    std::string s = "Error: " + message;
    while (s.size() < 100) s += " (while loading " + model(r) + ")";
    return s;
  }
  if (size == Size::medium) {
    std::string s;
    while (s.size() < 1900) {
      s += "2026-03-0" + std::to_string(1 + r.below(9)) + " 10:0" + std::to_string(r.below(10)) + ":1" +
           std::to_string(r.below(10)) + ",123 INFO worker-" + std::to_string(r.below(8)) + " | ";
      // clang-format off
      switch (r.below(4)) {
        case 0: s += "loading shard " + std::to_string(r.below(8)) + "/8 of " + model(r) + " from /models/cache\n"; break;
        case 1: s += "allocated " + std::to_string(r.below(4096)) + " MiB on " + r.pick(vocab::kDevice) + " for " + param(r) + "\n"; break;
        case 2: s += "compiled " + op(r) + " for dtype " + r.pick(vocab::kDtype) + " in " + std::to_string(r.below(900)) + " ms\n"; break;
        default: s += "request " + std::to_string(r.next() % 1000000) + " scheduled with batch size " + std::to_string(1 + r.below(64)) + "\n";
      }
      // clang-format on
    }
    return s + "2026-03-09 10:09:59,999 ERROR worker-3 | " + message + "\n";
  }
  std::string s = "Traceback (most recent call last):\n";
  auto frames = [&](std::size_t bytes) {
    const std::size_t stop = s.size() + bytes;
    while (s.size() < stop) {
      s += "  File \"/usr/lib/python3/site-packages/transformers/models/" + std::string(r.pick(vocab::kModelStem)) +
           "/modeling.py\", line " + std::to_string(100 + r.below(3000)) + ", in forward\n";
      s += "    hidden_states = self." + param(r) + "(hidden_states, attention_mask=attention_mask, " + param(r) + "=" +
           param(r) + ")\n";
    }
  };
  frames(9000);
  s += "RuntimeError: " + message +
       "\n\nThe above exception was the direct cause of the following exception:\n\n"
       "Traceback (most recent call last):\n";
  frames(9000);
  return s + "ValueError: generation failed for request " + std::to_string(r.below(100000)) + "\n";
}

}  // namespace errshim::synth
