// A STAND-IN for a real inference layer, for the samples. It does no
// inference: it throws the messages candle and transformers really raise
// (copied from their sources; see patterns/), wrapped the way they reach a
// C++ program across an FFI or Python boundary.
#pragma once

#include <stdexcept>
#include <string>

namespace standin {

// What a C++ binding of a Rust crate typically throws: the anyhow/candle
// error rendered with "Error:" and a "Caused by:" chain.
struct ffi_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What an embedded Python interpreter binding throws: the formatted traceback.
struct python_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct MetavoiceConfig {
  bool kv_cache_enabled = true;  // as a checkpoint's config.json may ship it
  std::string attn_kernel_type = "TorchAttn";
};

struct Model {
  std::string name;
};

// candle-transformers/src/models/metavoice.rs, SelfAttention::new
inline Model candle_metavoice_new(const MetavoiceConfig& cfg) {
  if (cfg.attn_kernel_type != "TorchAttn") throw ffi_error("Error: only TorchAttn is supported");
  if (cfg.kv_cache_enabled)
    throw ffi_error(
        "Error: failed to build the metavoice first stage\n\n"
        "Caused by:\n"
        "    kv_cache_enabled=true is not supported\n\n"
        "Stack backtrace:\n"
        "   0: candle_core::error::Error::bt\n"
        "   1: candle_transformers::models::metavoice::transformer::SelfAttention::new\n");
  return {"metavoice"};
}

// candle-nn/src/ops.rs, Sdpa::metal_fwd: a head dim the Metal kernel lacks.
inline void candle_sdpa_metal(int head_dim) {
  throw ffi_error("Error: Meta SDPA does not support q head dim " + std::to_string(head_dim) + ": q dims [1, 32, 7, " +
                  std::to_string(head_dim) + "], k dims [1, 8, 7, " + std::to_string(head_dim) +
                  "], v dims [1, 8, 7, " + std::to_string(head_dim) + "].");
}

// transformers src/transformers/generation/utils.py, _prepare_cache_for_generation
inline std::string transformers_generate(const std::string& model, const std::string& cache_implementation) {
  if (cache_implementation == "quantized" && model == "whisper-tiny")
    throw python_error(
        "Traceback (most recent call last):\n"
        "  File \"/srv/app/generate.py\", line 41, in run\n"
        "    out = model.generate(**inputs, cache_implementation=\"quantized\")\n"
        "  File \"/usr/lib/python3/dist-packages/transformers/generation/utils.py\", line 2441, in generate\n"
        "    self._prepare_cache_for_generation(\n"
        "  File \"/usr/lib/python3/dist-packages/transformers/generation/utils.py\", line 2003, in "
        "_prepare_cache_for_generation\n"
        "    raise ValueError(\n"
        "ValueError: This model does not support the quantized cache. If you want your model to support quantized "
        "cache, please open an issue and tag @zucchini-nlp.\n");
  return "token";
}

}  // namespace standin
