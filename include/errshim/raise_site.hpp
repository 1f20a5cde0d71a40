// Where a message says it was raised, and which of its entry's pins that is.
//
//   const errshim::SiteResolution r = errshim::resolve_site(diagnosis);
//   if (r.pin) fmt::print("raised at {}:{}\n", r.pin->path, r.pin->line);
//   else if (!r.stated.empty()) fmt::print("says {}:{}\n", r.stated[0].path, r.stated[0].line);
//
// An entry raised from several places (its source and also_at) names them
// all; the message often tells which: torch's "Exception raised from F at
// PATH:LINE", "Triggered internally at PATH:LINE", caffe2's "[enforce fail
// at FILE:LINE]", a Rust backtrace frame in a candle crate, the innermost
// Python frame in torch's or transformers' own files. The matcher uses the
// same reading to break a tie between two entries that match equally well.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace errshim {

struct Diagnosis;  // errshim/diagnosis.hpp
struct SourcePin;  // errshim/catalog.hpp

// One place a message says it was raised from, as the message spells it.
struct StatedSite {
  std::string library;  // "libtorch", "torch", "transformers", "candle"
  std::string path;  // "../aten/src/ATen/native/TensorShape.cpp", "candle-core/src/tensor.rs"
  int line = 0;  // 0: the message names no line (a bare Rust frame)
  std::string function;  // "check_cat_shape_except_dim", "candle_nn::ops::softmax", may be empty
  std::string form;  // "c10", "warning", "enforce", "rust-frame", "python-frame"
};

// How well a stated site agrees with a pin.
enum class SiteFit { none, file, line };

struct SiteResolution {
  std::vector<StatedSite> stated;  // as stated_sites() gives them
  // The entry's pin a stated site confirms (its source, or one of also_at),
  // or nullptr when the message states none of them (or nothing at all).
  const SourcePin* pin = nullptr;
  SiteFit fit = SiteFit::none;
};

// The sites `message` states, in its order: each torch location line, the
// first candle frames of a Rust backtrace (innermost first), and per Python
// traceback the innermost frame in each library's files. At most a few;
// reads at most the input limit; throws only std::bad_alloc.
std::vector<StatedSite> stated_sites(std::string_view message);

// How `site` agrees with `pin`: the same file (path suffix at a directory
// boundary, a crate's versioned directory and Python's site-packages read
// as the repository's layout), and the same line.
SiteFit site_fit(const SourcePin& pin, const StatedSite& site);

// The sites `d.raw` states and the pin of `d.entry` they confirm (the best
// fit; on a tie, the source before also_at, in catalog order).
SiteResolution resolve_site(const Diagnosis& d);

}  // namespace errshim
