// errshim::normalize: each wrapper form users really receive, and the edges.

#include "errshim/normalize.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using errshim::normalize;
using errshim::Normalized;
using errshim::Segment;

// Messages as the libraries raise them.
constexpr const char* kKvCache = "kv_cache_enabled=true is not supported";
constexpr const char* kMetaSdpa =
    "Meta SDPA does not support q dims [1, 32, 7, 128], k dims [1, 32, 7, 64], v dims [1, 32, 7, 64].";
constexpr const char* kQuantizedCache =
    "This model does not support the quantized cache. If you want your model to support quantized cache, "
    "please open an issue and tag @zucchini-nlp.";
constexpr const char* kViewShape = "shape '[2, 7, 5, 64]' is invalid for input of size 7168";
constexpr const char* kKvRepeat = "only kv-repeat = 1 is supported";

// A libtorch backtrace as c10::Error::what() prints it.
const std::string kC10Frames =
    "Exception raised from infer_size_impl at ../aten/src/ATen/InferSize.h:90 (most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f5e1b2a7d87 in "
    "/opt/libtorch/lib/libc10.so)\n"
    "frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x64 "
    "(0x7f5e1b25875f in /opt/libtorch/lib/libc10.so)\n"
    "frame #2: <unknown function> + 0x1a0c6c2 (0x7f5e0460c6c2 in /opt/libtorch/lib/libtorch_cpu.so)\n"
    "frame #3: at::native::view(at::Tensor const&, c10::ArrayRef<long>) + 0x4d (0x7f5e0500f8bd in "
    "/opt/libtorch/lib/libtorch_cpu.so)\n"
    "frame #4: main + 0x1f3 (0x55d0c3a4b2f3 in ./infer)\n"
    "frame #5: __libc_start_main + 0xf3 (0x7f5e03b6a083 in /lib/x86_64-linux-gnu/libc.so.6)\n";

// The traceback transformers users get for the quantized cache error.
std::string quantized_cache_traceback() {
  return std::string(
             "Traceback (most recent call last):\n"
             "  File \"/app/generate.py\", line 41, in <module>\n"
             "    main()\n"
             "  File \"/app/generate.py\", line 35, in main\n"
             "    out = model.generate(**inputs, cache_implementation=\"quantized\")\n"
             "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
             "  File \"/usr/lib/python3.12/site-packages/torch/utils/_contextlib.py\", line 116, in "
             "decorate_context\n"
             "    return func(*args, **kwargs)\n"
             "           ^^^^^^^^^^^^^^^^^^^^^\n"
             "  File \"/usr/lib/python3.12/site-packages/transformers/generation/utils.py\", line 1622, in "
             "_prepare_cache_for_generation\n"
             "    raise ValueError(\n"
             "ValueError: ") +
         kQuantizedCache + "\n";
}

// `text` with `tag` before each of its lines, as a process tag is on every
// line a launcher relays (torchrun, Ray, docker compose).
std::string tag_every_line(const std::string& text, const std::string& tag) {
  std::string out;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t nl = text.find('\n', start);
    out += tag + text.substr(start, nl == std::string::npos ? std::string::npos : nl - start + 1);
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

std::vector<std::string> texts(const Normalized& n) {
  std::vector<std::string> out;
  for (const Segment& s : n.segments) out.push_back(s.text);
  return out;
}

std::vector<std::string> classes(const Normalized& n) {
  std::vector<std::string> out;
  for (const Segment& s : n.segments) out.push_back(s.exception_class);
  return out;
}

// Expects exactly one segment.
void expect_one(const Normalized& n, const std::string& text, const std::string& cls) {
  ASSERT_EQ(n.segments.size(), 1u) << "segments: " << ::testing::PrintToString(texts(n));
  EXPECT_EQ(n.segments[0].text, text);
  EXPECT_EQ(n.segments[0].exception_class, cls);
}

// ---------------------------------------------------------------- plain text

TEST(Normalize, PlainMessageIsOneSegment) {
  expect_one(normalize(kKvCache), kKvCache, "");
  EXPECT_FALSE(normalize(kKvCache).truncated);
}

TEST(Normalize, EmptyInputGivesNoSegments) {
  EXPECT_TRUE(normalize("").segments.empty());
  EXPECT_TRUE(normalize(" \n\t\r\n  \n").segments.empty());
}

TEST(Normalize, PlainMultiLineMessageKeptWhole) {
  expect_one(normalize("\n  first line\nsecond line  \n   indented third\n\n"),
             "first line\nsecond line\n   indented third", "");
}

TEST(Normalize, TrailingWhitespaceAndCarriageReturnsTrimmed) {
  expect_one(normalize(std::string(kKvCache) + " \t\r\n\r\n"), kKvCache, "");
}

TEST(Normalize, EnforceFailBracketIsNotALogTag) {
  const char* msg =
      "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried to allocate "
      "1073741824 bytes.";
  expect_one(normalize(msg), msg, "");
  expect_one(normalize(std::string("RuntimeError: ") + msg), msg, "RuntimeError");
}

TEST(Normalize, ErrnoBracketIsNotALogTag) {
  expect_one(normalize("[Errno 2] No such file or directory: 'model.safetensors'"),
             "[Errno 2] No such file or directory: 'model.safetensors'", "");
}

TEST(Normalize, LoneCarriageReturnSplitsProgressRedraws) {
  expect_one(normalize("Loading weights: 10%\rLoading weights: 100%\rValueError: " + std::string(kQuantizedCache)),
             kQuantizedCache, "ValueError");
}

// ------------------------------------------------------------- ANSI and bytes

TEST(Normalize, AnsiColoursStripped) {
  expect_one(normalize("\x1b[1;31mERROR\x1b[0m \x1b[2m2026-11-30 10:01:42\x1b[0m " + std::string(kKvCache) + "\x1b[0m"),
             kKvCache, "");
}

TEST(Normalize, AnsiColouredPythonTraceback) {
  // Python 3.13 colours its tracebacks.
  const std::string input =
      "Traceback (most recent call last):\n"
      "  File \x1b[35m\"/app/config.py\"\x1b[0m, line \x1b[35m7\x1b[0m, in \x1b[35m<module>\x1b[0m\n"
      "    \x1b[31mcfg[\"rope_scaling\"]\x1b[0m\x1b[1;31m[\"factor\"]\x1b[0m\n"
      "    \x1b[31m~~~~~~~~~~~~~~~~~~~~\x1b[0m\x1b[1;31m^^^^^^^^^^\x1b[0m\n"
      "\x1b[1;35mKeyError\x1b[0m: \x1b[35m'factor'\x1b[0m\n";
  expect_one(normalize(input), "'factor'", "KeyError");
}

TEST(Normalize, NulBytesRemoved) {
  static constexpr char kRaw[] = "ValueError: kv_cache_enabled=true\0 is not\0 supported";
  const std::string input(kRaw, sizeof kRaw - 1);
  expect_one(normalize(input), kKvCache, "ValueError");
}

TEST(Normalize, InvalidUtf8PassesThrough) {
  const std::string msg = "bad token \xff\xfe\xc3 in vocab";
  expect_one(normalize("ValueError: " + msg), msg, "ValueError");
}

TEST(Normalize, BinaryGarbageNeverFails) {
  std::uint32_t state = 12345;
  std::string junk;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    junk += static_cast<char>(state >> 24);
  }
  const Normalized n = normalize(junk);
  EXPECT_LE(n.segments.size(), errshim::kMaxSegments);
  for (const Segment& s : n.segments) EXPECT_LE(s.text.size(), errshim::kMaxSegmentBytes);
  // The message is still found after the garbage.
  const Normalized found = normalize(junk +
                                     "\n\nTraceback (most recent call last):\n  File \"x.py\", line 1, in "
                                     "<module>\nValueError: " +
                                     kQuantizedCache + "\n");
  ASSERT_FALSE(found.segments.empty());
  EXPECT_EQ(found.segments.back().text, kQuantizedCache);
}

// ----------------------------------------------------------------- log prefixes

// One message under each log prefix a line can carry: the prefix goes, the message stays.
struct PrefixCase {
  const char* name;
  const char* prefix;
  const char* message;
};

std::ostream& operator<<(std::ostream& os, const PrefixCase& c) { return os << c.name; }

class NormalizeLogPrefix : public ::testing::TestWithParam<PrefixCase> {};

TEST_P(NormalizeLogPrefix, PrefixStrippedMessageKept) {
  const PrefixCase& c = GetParam();
  expect_one(normalize(std::string(c.prefix) + c.message), c.message, "");
}

// clang-format off
const PrefixCase kPrefixCases[] = {
  {"IsoTimestampWithMillisecondsAndLevel", "2026-11-30 10:01:42,123 ERROR ", kKvCache},
  {"IsoTimestampWithZone", "2026-11-30T10:01:42.123Z WARN ", kKvCache},
  {"IsoTimestampWithOffsetAndBars", "2026-11-30T10:01:42.123456+01:00 | CRITICAL | ", kKvCache},
  {"BracketedTimestampAndLevel", "[2026-11-30 10:01:42] [error] ", kKvCache},
  {"BracketedTimestampLevelAndTarget", "[2026-11-30T10:01:42Z ERROR candle_app] ", kKvCache},
  {"GlogPrefix", "E1130 10:01:42.123456  1234 model_runner.cc:12] ", kViewShape},
  {"PythonLoggingRootLogger", "ERROR:root:", kKvRepeat},
  {"PythonLoggingDottedLogger", "ERROR:transformers.generation:", kQuantizedCache},
  {"PythonLoggingFormatWithDashes", "2026-11-30 10:01:42,123 - transformers.generation.utils - WARNING - ",
   kQuantizedCache},
  {"TimeAloneWithFractionAndLevel", "10:01:42.123 ERROR ", kKvCache},
  {"LevelWithColonAndPadding", "INFO:     ", kKvCache},
  {"LevelWithDash", "CRITICAL - ", kKvCache},
  {"RustTracingTarget", "2026-11-30T10:01:42.123456Z ERROR candle_examples::metavoice: ", kKvCache},
  {"DockerComposeTag", "worker-3  | ", kKvCache},
  {"RayWorkerTag", "(RayWorker pid=123) ", kKvCache},
  {"RayWorkerTagWithAddress", "(RayWorkerWrapper pid=4242, ip=10.0.0.2) ", kKvCache},
  {"TorchrunRankTag", "[rank0]: ", kKvCache},
  {"BracketWorkerTag", "[worker 2] ", kKvCache},
  {"StackedRankAndC10Warning", "[rank1]:[W1130 10:01:42.386744323 ProcessGroupNCCL.cpp:1250] ", kKvCache},
  {"StackedRayAndRecord", "(RayWorker pid=77) 2026-11-30 10:01:42,001 ERROR ", kKvCache},
  // The message's own words ("kv-repeat = 1", " - ", " | ") are not a prefix.
  {"NoPrefixMessageWithEqualsSign", "", kKvRepeat},
  {"PythonLoggingDashesBeforeMessageWithEqualsSign", "2026-11-30 10:01:42,123 - ERROR - ", kKvRepeat},
  {"LevelBeforeMessageWithEqualsSign", "ERROR ", kKvRepeat},
  {"DockerComposeTagBeforeMessageWithEqualsSign", "worker-3  | ", kKvRepeat},
  {"NoPrefixMessageWithDashAndBar", "", "model.generate - failed | retry: 3"},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(Normalize, NormalizeLogPrefix, ::testing::ValuesIn(kPrefixCases),
                         [](const ::testing::TestParamInfo<PrefixCase>& info) { return std::string(info.param.name); });

TEST(Normalize, TimeAloneAtLineStartIsKept) {
  expect_one(normalize("12:30:00 is not a valid time"), "12:30:00 is not a valid time", "");
}

TEST(Normalize, PaddedLevelColumnStripped) {
  // logging's "%(levelname)-8s %(message)s"
  expect_one(normalize("INFO     loading model\nWARNING  only kv-repeat = 1 is supported\n"),
             "loading model\nonly kv-repeat = 1 is supported", "");
}

TEST(Normalize, PrefixesStrippedFromEveryLineWhenNothingIsRecognised) {
  expect_one(normalize("2026-11-30 10:01:42 ERROR cannot load the model\n"
                       "2026-11-30 10:01:42 ERROR only kv-repeat = 1 is supported\n"),
             "cannot load the model\nonly kv-repeat = 1 is supported", "");
}

// ------------------------------------------------------------------- Python

TEST(Normalize, PythonTracebackWithTildeCaretMarkers) {
  const char* input =
      "Traceback (most recent call last):\n"
      "  File \"/app/config.py\", line 7, in <module>\n"
      "    factor = cfg[\"rope_scaling\"][\"factor\"]\n"
      "             ~~~~~~~~~~~~~~~~~~~^^^^^^^^^^\n"
      "KeyError: 'factor'\n";
  expect_one(normalize(input), "'factor'", "KeyError");
}

TEST(Normalize, PythonDottedExceptionClass) {
  const char* input =
      "Traceback (most recent call last):\n"
      "  File \"/app/run.py\", line 9, in <module>\n"
      "    model.to(\"cuda\")\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
      "23.64 GiB of which 1.06 GiB is free.\n";
  expect_one(normalize(input),
             "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which "
             "1.06 GiB is free.",
             "torch.OutOfMemoryError");
}

TEST(Normalize, PythonCustomClassWithoutErrorSuffix) {
  const char* input =
      "Traceback (most recent call last):\n"
      "  File \"/app/compile.py\", line 3, in <module>\n"
      "    compiled(x)\n"
      "torch._dynamo.exc.Unsupported: call_function BuiltinVariable(breakpoint) [] {}\n";
  expect_one(normalize(input), "call_function BuiltinVariable(breakpoint) [] {}", "torch._dynamo.exc.Unsupported");
}

TEST(Normalize, PythonMultiLineMessage) {
  const char* input =
      "Traceback (most recent call last):\n"
      "  File \"/app/load.py\", line 4, in <module>\n"
      "    model.load_state_dict(sd)\n"
      "RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:\n"
      "\tsize mismatch for lm_head.weight: copying a param with shape torch.Size([32000, 4096]) from "
      "checkpoint, the shape in current model is torch.Size([32001, 4096]).\n"
      "\n"
      "Some trailing output\n";
  expect_one(normalize(input),
             "Error(s) in loading state_dict for LlamaForCausalLM:\n\tsize mismatch for lm_head.weight: copying a "
             "param with shape torch.Size([32000, 4096]) from checkpoint, the shape in current model is "
             "torch.Size([32001, 4096]).",
             "RuntimeError");
}

TEST(Normalize, PythonChainDirectCauseRootFirst) {
  const std::string input = std::string(
                                "Traceback (most recent call last):\n"
                                "  File \"/app/attn.py\", line 40, in sdpa\n"
                                "    raise NotImplementedError(msg)\n"
                                "NotImplementedError: ") +
                            kMetaSdpa +
                            "\n\n"
                            "The above exception was the direct cause of the following exception:\n\n"
                            "Traceback (most recent call last):\n"
                            "  File \"/app/run.py\", line 12, in <module>\n"
                            "    model(**batch)\n"
                            "  File \"/app/attn.py\", line 90, in forward\n"
                            "    raise RuntimeError(\"attention backend failed\") from e\n"
                            "RuntimeError: attention backend failed\n";
  const Normalized n = normalize(input);
  EXPECT_EQ(texts(n), (std::vector<std::string>{kMetaSdpa, "attention backend failed"}));
  EXPECT_EQ(classes(n), (std::vector<std::string>{"NotImplementedError", "RuntimeError"}));
}

TEST(Normalize, PythonChainDuringHandlingRootFirst) {
  const std::string input = std::string(
                                "Traceback (most recent call last):\n"
                                "  File \"/app/cache.py\", line 21, in build\n"
                                "    cache = QuantizedCache(cfg)\n"
                                "ValueError: ") +
                            kQuantizedCache +
                            "\n\n"
                            "During handling of the above exception, another exception occurred:\n\n"
                            "Traceback (most recent call last):\n"
                            "  File \"/app/cache.py\", line 24, in build\n"
                            "    fallback[\"dynamic\"]\n"
                            "KeyError: 'dynamic'\n";
  const Normalized n = normalize(input);
  EXPECT_EQ(texts(n), (std::vector<std::string>{kQuantizedCache, "'dynamic'"}));
  EXPECT_EQ(classes(n), (std::vector<std::string>{"ValueError", "KeyError"}));
}

TEST(Normalize, PythonExceptionWithoutMessageIsSkipped) {
  const char* input =
      "Traceback (most recent call last):\n"
      "  File \"/app/generate.py\", line 41, in <module>\n"
      "    time.sleep(10)\n"
      "KeyboardInterrupt\n";
  EXPECT_TRUE(normalize(input).segments.empty());
}

TEST(Normalize, WrapperWithoutMessageFallsBackToUnclaimedLines) {
  const char* input =
      "2026-11-30 10:01:42,123 - ERROR - only kv-repeat = 1 is supported\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/generate.py\", line 41, in <module>\n"
      "    time.sleep(10)\n"
      "KeyboardInterrupt\n";
  expect_one(normalize(input), kKvRepeat, "");
}

TEST(Normalize, TracebackCutShortByCrash) {
  const char* input =
      "Traceback (most recent call last):\n"
      "  File \"/app/generate.py\", line 41, in <module>\n"
      "    model.generate(**inputs)\n"
      "Segmentation fault (core dumped)\n";
  expect_one(normalize(input), "Segmentation fault (core dumped)", "");
}

TEST(Normalize, PythonBareExceptionLine) {
  expect_one(normalize(std::string("ValueError: ") + kQuantizedCache), kQuantizedCache, "ValueError");
}

TEST(Normalize, PythonTracebackWithInterleavedLogRecord) {
  const std::string input =
      "Traceback (most recent call last):\n"
      "  File \"/app/generate.py\", line 35, in main\n"
      "2026-11-30 10:01:42,500 - INFO - heartbeat from another thread\n"
      "    out = model.generate(**inputs)\n"
      "ValueError: " +
      std::string(kQuantizedCache) + "\n";
  expect_one(normalize(input), kQuantizedCache, "ValueError");
}

// One traceback (transformers' quantized cache error) in each form a log
// delivers it: the exception is read the same way from all of them.
struct TracebackFormCase {
  const char* name;  // the log form
  std::string (*wrap)(const std::string& traceback);
};

std::ostream& operator<<(std::ostream& os, const TracebackFormCase& c) { return os << c.name; }

class NormalizeTracebackForm : public ::testing::TestWithParam<TracebackFormCase> {};

TEST_P(NormalizeTracebackForm, ExceptionReadFromTheTraceback) {
  expect_one(normalize(GetParam().wrap(quantized_cache_traceback())), kQuantizedCache, "ValueError");
}

const TracebackFormCase kTracebackForms[] = {
    {"AsPythonPrintsIt", [](const std::string& tb) { return tb; }},
    {"CrLfLineEnds",
     [](const std::string& tb) {
       std::string out;
       for (char c : tb) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
       return out;
     }},
    // logger.exception(): a prefixed record, the bare traceback, then more records.
    {"LoggerExceptionBetweenRecords",
     [](const std::string& tb) {
       return "2026-11-30 10:01:42,123 - ERROR - generation failed\n" + tb +
              "2026-11-30 10:01:43,000 - INFO - shutting down\n";
     }},
    {"TorchrunRankTagOnEveryLine", [](const std::string& tb) { return tag_every_line(tb, "[rank0]: "); }},
    {"RayWorkerTagOnEveryLine", [](const std::string& tb) { return tag_every_line(tb, "(RayWorker pid=123) "); }},
    {"DockerComposeTagOnEveryLine", [](const std::string& tb) { return tag_every_line(tb, "worker-3  | "); }},
    // Two handlers printing the same exception: one segment, not two.
    {"PrintedTwice", [](const std::string& tb) { return tb + "\n" + tb; }},
};

INSTANTIATE_TEST_SUITE_P(Normalize, NormalizeTracebackForm, ::testing::ValuesIn(kTracebackForms),
                         [](const ::testing::TestParamInfo<TracebackFormCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(Normalize, PythonRuntimeErrorWithC10Backtrace) {
  const std::string input =
      "Traceback (most recent call last):\n"
      "  File \"/app/attn.py\", line 51, in forward\n"
      "    q = q.view(bsz, q_len, self.num_heads, self.head_dim)\n"
      "RuntimeError: " +
      std::string(kViewShape) + "\n" + kC10Frames;
  expect_one(normalize(input), kViewShape, "RuntimeError");
}

TEST(Normalize, PythonCudaErrorWithBlankLineBeforeC10Backtrace) {
  const std::string input =
      "RuntimeError: CUDA error: device-side assert triggered\n"
      "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
      "be incorrect.\n"
      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
      "\n"
      "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call "
      "first):\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f0 in /opt/torch/lib/libc10.so)\n";
  expect_one(normalize(input),
             "CUDA error: device-side assert triggered\nCUDA kernel errors might be asynchronously reported at some "
             "other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
             "CUDA_LAUNCH_BLOCKING=1",
             "RuntimeError");
}

// --------------------------------------------------------------------- Rust

TEST(Normalize, RustCausedByNumberedRootFirst) {
  const std::string input = std::string(
                                "Error: failed to build the model\n"
                                "\n"
                                "Caused by:\n"
                                "    0: loading the metavoice transformer\n"
                                "    1: ") +
                            kKvCache + "\n";
  const Normalized n = normalize(input);
  EXPECT_EQ(texts(n),
            (std::vector<std::string>{kKvCache, "loading the metavoice transformer", "failed to build the model"}));
  EXPECT_EQ(classes(n), (std::vector<std::string>{"", "", ""}));
}

TEST(Normalize, RustCausedBySingleUnnumbered) {
  const std::string input = std::string("Error: failed to build the model\n\nCaused by:\n    ") + kKvCache + "\n";
  EXPECT_EQ(texts(normalize(input)), (std::vector<std::string>{kKvCache, "failed to build the model"}));
}

TEST(Normalize, RustMultiLineCause) {
  const std::string input =
      "Error: failed to build the model\n\nCaused by:\n"
      "    0: loading weights\n"
      "    1: cannot find tensor model.layers.0.self_attn.q_proj.weight\n"
      "       in any of the 2 safetensors files\n";
  EXPECT_EQ(texts(normalize(input)),
            (std::vector<std::string>{
                "cannot find tensor model.layers.0.self_attn.q_proj.weight\nin any of the 2 safetensors files",
                "loading weights", "failed to build the model"}));
}

TEST(Normalize, RustStackBacktraceDropped) {
  const std::string input = std::string("Error: ") + kKvCache +
                            "\n"
                            "\n"
                            "Stack backtrace:\n"
                            "   0: candle_core::error::Error::bt\n"
                            "             at /root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/"
                            "candle-core-0.8.0/src/error.rs:257:25\n"
                            "   1: candle_transformers::models::metavoice::transformer::SelfAttention::new\n"
                            "             at ./candle-transformers/src/models/metavoice.rs:449:13\n"
                            "   2: std::rt::lang_start::{{closure}}\n"
                            "             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/std/src/rt.rs:"
                            "159:18\n";
  expect_one(normalize(input), kKvCache, "");
}

TEST(Normalize, RustCausedByThenBacktrace) {
  const std::string input = std::string(
                                "Error: failed to build the model\n\nCaused by:\n"
                                "    0: loading the metavoice transformer\n"
                                "    1: ") +
                            kKvCache +
                            "\n\nStack backtrace:\n"
                            "   0: anyhow::error::<impl anyhow::Error>::msg\n"
                            "             at /root/.cargo/registry/src/anyhow-1.0.86/src/error.rs:83:36\n"
                            "   1: metavoice::main\n";
  EXPECT_EQ(texts(normalize(input)),
            (std::vector<std::string>{kKvCache, "loading the metavoice transformer", "failed to build the model"}));
}

TEST(Normalize, RustWithBacktraceDisplayFramesDropped) {
  // candle's WithBacktrace prints its frames right after the message.
  const std::string input = std::string("Error: ") + kKvCache +
                            "\n"
                            "   0: candle_core::error::Error::bt\n"
                            "             at /root/.cargo/registry/src/candle-core-0.8.0/src/error.rs:257:25\n"
                            "   1: metavoice::main\n"
                            "             at ./src/main.rs:22:5\n";
  expect_one(normalize(input), kKvCache, "");
}

TEST(Normalize, RustCausedByWithoutErrorLine) {
  // tracing's error!("{e:?}") on an anyhow error.
  const std::string input = std::string(
                                "2026-11-30T10:01:42.123Z ERROR metavoice::model: failed to build the model\n"
                                "\n"
                                "Caused by:\n"
                                "    ") +
                            kKvCache + "\n";
  EXPECT_EQ(texts(normalize(input)), (std::vector<std::string>{kKvCache, "failed to build the model"}));
}

TEST(Normalize, ColorEyreNumberedReport) {
  const std::string input = std::string(
                                "Error: \n"
                                "   0: failed to build the model\n"
                                "   1: ") +
                            kKvCache +
                            "\n\nLocation:\n   src/main.rs:22\n\n"
                            "Backtrace omitted. Run with RUST_BACKTRACE=1 environment variable to display it.\n";
  EXPECT_EQ(texts(normalize(input)), (std::vector<std::string>{kKvCache, "failed to build the model"}));
}

TEST(Normalize, CandleDebugMsg) {
  expect_one(normalize("Error: Msg(\"kv_cache_enabled=true is not supported\")\n"), kKvCache, "Msg");
}

TEST(Normalize, CandleDebugWithBacktrace) {
  const std::string input =
      "Error: WithBacktrace { inner: Msg(\"kv_cache_enabled=true is not supported\"), backtrace: Backtrace [{ fn: "
      "\"candle_core::error::Error::bt\", file: \"/root/.cargo/registry/src/candle-core-0.8.0/src/error.rs\", "
      "line: 257 }, { fn: \"metavoice::main\", file: \"./src/main.rs\", line: 22 }] }\n";
  expect_one(normalize(input), kKvCache, "Msg");
}

TEST(Normalize, CandleDebugStringEscapes) {
  expect_one(normalize(R"(Error: Msg("say \"hi\" \\ then\n\tnext caf\u{e9} \u{1f600}"))"),
             "say \"hi\" \\ then\n\tnext caf\xc3\xa9 \xf0\x9f\x98\x80", "Msg");
}

TEST(Normalize, CandleDebugStructVariantKeptAsDebugText) {
  const std::string input =
      "Error: WithBacktrace { inner: ShapeMismatchBinaryOp { lhs: [1, 784], rhs: [1, 784], op: \"matmul\" }, "
      "backtrace: Backtrace [{ fn: \"candle_core::error::Error::bt\", file: \"src/error.rs\", line: 200 }] }";
  expect_one(normalize(input), "ShapeMismatchBinaryOp { lhs: [1, 784], rhs: [1, 784], op: \"matmul\" }",
             "ShapeMismatchBinaryOp");
}

TEST(Normalize, RustPanicNewForm) {
  const char* input =
      "thread 'main' panicked at candle-examples/examples/mistral/main.rs:231:17:\n"
      "not implemented: compile with '--features flash-attn'\n"
      "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
  expect_one(normalize(input), "not implemented: compile with '--features flash-attn'", "panic");
}

TEST(Normalize, RustPanicNewFormWithThreadIdAndBacktrace) {
  const char* input =
      "thread 'tokio-runtime-worker' (48213) panicked at src/engine.rs:88:9:\n"
      "assertion `left == right` failed\n"
      "  left: 64\n"
      " right: 128\n"
      "stack backtrace:\n"
      "   0: rust_begin_unwind\n"
      "             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/std/src/panicking.rs:665:5\n"
      "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n";
  expect_one(normalize(input), "assertion `left == right` failed\n  left: 64\n right: 128", "panic");
}

TEST(Normalize, RustPanicOldForm) {
  const char* input =
      "thread 'main' panicked at 'not implemented: compile with '--features flash-attn'', src/main.rs:10:5\n"
      "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
  expect_one(normalize(input), "not implemented: compile with '--features flash-attn'", "panic");
}

TEST(Normalize, RustPanicOldFormMultiLine) {
  const char* input =
      "thread 'main' panicked at 'first line\nsecond line', src/main.rs:10:5\n"
      "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
  expect_one(normalize(input), "first line\nsecond line", "panic");
}

TEST(Normalize, RustPanicOnUnwrapOfCandleError) {
  const char* input =
      "thread 'main' panicked at src/main.rs:22:51:\n"
      "called `Result::unwrap()` on an `Err` value: WithBacktrace { inner: Msg(\"kv_cache_enabled=true is not "
      "supported\"), backtrace: Backtrace [{ fn: \"candle_core::error::Error::bt\", file: \"src/error.rs\", line: "
      "257 }] }\n"
      "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
  expect_one(normalize(input), kKvCache, "panic");
}

// ------------------------------------------------------------------ libtorch

TEST(Normalize, LibtorchC10Error) {
  expect_one(normalize(std::string(kViewShape) + "\n" + kC10Frames), kViewShape, "c10::Error");
}

TEST(Normalize, LibtorchC10ErrorAfterOtherOutput) {
  const std::string input = "Loading TorchScript module from model.pt\n\n" + std::string(kViewShape) + "\n" +
                            kC10Frames + "Aborted (core dumped)\n";
  expect_one(normalize(input), kViewShape, "c10::Error");
}

TEST(Normalize, LibtorchOldFormLocationSuffix) {
  const std::string input =
      std::string(kViewShape) +
      " (infer_size at /pytorch/aten/src/ATen/InferSize.h:20)\n"
      "frame #0: std::function<std::string ()>::operator()() const + 0x11 (0x7f9a2c6b2e91 in "
      "/opt/libtorch/lib/libc10.so)\n"
      "frame #1: c10::Error::Error(c10::SourceLocation, std::string const&) + 0x2a (0x7f9a2c6b22ea in "
      "/opt/libtorch/lib/libc10.so)\n";
  expect_one(normalize(input), kViewShape, "c10::Error");
}

TEST(Normalize, CppTerminateWhat) {
  const std::string input =
      "terminate called after throwing an instance of 'c10::Error'\n  what():  " + std::string(kViewShape) + "\n" +
      kC10Frames + "Aborted (core dumped)\n";
  expect_one(normalize(input), kViewShape, "c10::Error");
}

TEST(Normalize, LibcxxAbiTerminate) {
  const std::string input =
      "libc++abi: terminating due to uncaught exception of type c10::Error: " + std::string(kViewShape) + "\n" +
      kC10Frames;
  expect_one(normalize(input), kViewShape, "c10::Error");
}

// -------------------------------------------------------------------- bounds

TEST(Normalize, OversizedInputKeepsHeadAndTail) {
  std::string input = std::string("Error: ") + kKvCache + "\n\nStack backtrace:\n";
  while (input.size() < 3 * errshim::kMaxInputBytes)
    input += "   7: candle_core::tensor::Tensor::matmul\n             at ./candle-core/src/tensor.rs:1151:9\n";
  input += "\n" + quantized_cache_traceback();
  const Normalized n = normalize(input);
  EXPECT_TRUE(n.truncated);
  EXPECT_EQ(texts(n), (std::vector<std::string>{kKvCache, kQuantizedCache}));
}

TEST(Normalize, HundredThousandFrameTraceback) {
  std::string input = "Traceback (most recent call last):\n";
  for (int i = 0; i < 100000; ++i) {
    input += "  File \"/app/model.py\", line " + std::to_string(100 + i % 900) + ", in forward\n";
    input += "    return self.layers[i](hidden_states)\n";
  }
  input += "RecursionError: maximum recursion depth exceeded\n";
  const Normalized n = normalize(input);
  EXPECT_TRUE(n.truncated);
  expect_one(n, "maximum recursion depth exceeded", "RecursionError");
}

TEST(Normalize, FiftyMegabyteLogEndingInTraceback) {
  const std::string record = "2026-11-30 10:01:42,123 - INFO - step 1200 loss 1.9931 lr 2.0e-05\n";
  std::string input;
  input.reserve(50u << 20);
  while (input.size() + record.size() < (50u << 20) - 4096) input += record;
  input += quantized_cache_traceback();
  const Normalized n = normalize(input);
  EXPECT_TRUE(n.truncated);
  expect_one(n, kQuantizedCache, "ValueError");
}

TEST(Normalize, FiftyMegabyteSingleLine) {
  std::string input = std::string("Error: ") + kKvCache + " ";
  input.append(50u << 20, 'x');
  const Normalized n = normalize(input);
  EXPECT_TRUE(n.truncated);
  ASSERT_EQ(n.segments.size(), 1u);
  EXPECT_EQ(n.segments[0].text.size(), errshim::kMaxSegmentBytes);
  EXPECT_EQ(n.segments[0].text.rfind(kKvCache, 0), 0u);
}

TEST(Normalize, SegmentCappedOnUtf8Boundary) {
  std::string msg;
  while (msg.size() < 2 * errshim::kMaxSegmentBytes) msg += "\xe2\x82\xac";  // U+20AC, 3 bytes
  const Normalized n = normalize("ValueError: " + msg);
  ASSERT_EQ(n.segments.size(), 1u);
  const std::string& text = n.segments[0].text;
  EXPECT_LE(text.size(), errshim::kMaxSegmentBytes);
  EXPECT_GT(text.size(), errshim::kMaxSegmentBytes - 3);
  EXPECT_EQ(text.size() % 3, 0u);
}

TEST(Normalize, SegmentCountCapped) {
  std::string input;
  for (int i = 0; i < 100; ++i) input += "ValueError: distinct failure number " + std::to_string(i) + "\n\n";
  const Normalized n = normalize(input);
  ASSERT_EQ(n.segments.size(), errshim::kMaxSegments);
  EXPECT_EQ(n.segments.front().text, "distinct failure number 0");  // the earliest, nearest the root, are kept
}

// Pieces of every wrapper glued at random and cut at random byte offsets:
// nothing may throw or break the output's invariants.
TEST(Normalize, ShuffledFragmentsKeepInvariants) {
  const std::vector<std::string> pieces = {
      quantized_cache_traceback(),
      kC10Frames,
      "Error: \n   0: a\n   1: b\n",
      "Error: Msg(\"unterminated \\u{zz",
      "Error: WithBacktrace { inner: Msg(\"x\"), backtrace: Backtrace [{ fn: \"(\" ",
      "\nCaused by:\n    0: x\n       y\n    1: z\n",
      "thread 'main' panicked at 'never closed\n",
      "thread 'main' panicked at src/main.rs:1:1:\n",
      "terminate called after throwing an instance of 'c10::Error'\n",
      "The above exception was the direct cause of the following exception:\n",
      "[rank0]:[W1130 10:01:42.1 x.cpp:1] ",
      "(RayWorker pid=1) ",
      "worker-3  | ",
      "\x1b[31m\x1b]8;;http://x\x07link\x1b]8;;\x07\x1b[",
      std::string("\0\xff\xc3\r\r\n\t", 7),
      "ValueError: ",
      "  File \"x.py\", line 1, in f\n",
      "frame #0: f + 0x1\n",
      "\n\n",
  };
  std::uint32_t state = 99;
  auto next = [&state](std::uint32_t bound) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % bound;
  };
  for (int round = 0; round < 3000; ++round) {
    std::string input;
    const std::uint32_t count = 1 + next(12);
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::string& piece = pieces[next(static_cast<std::uint32_t>(pieces.size()))];
      input += piece.substr(next(static_cast<std::uint32_t>(piece.size()) + 1));
    }
    const Normalized n = normalize(input);
    EXPECT_LE(n.segments.size(), errshim::kMaxSegments);
    for (const Segment& s : n.segments) {
      EXPECT_FALSE(s.text.empty());
      EXPECT_LE(s.text.size(), errshim::kMaxSegmentBytes);
      EXPECT_EQ(s.text.find('\x1b'), std::string::npos);
      EXPECT_EQ(s.text.find('\0'), std::string::npos);
      EXPECT_NE(s.text.back(), ' ');
      EXPECT_NE(s.text.back(), '\n');
    }
  }
}

// One input of each wrapper, for the tests below.
std::vector<std::string> wrapper_samples() {
  const std::string tb = quantized_cache_traceback();
  const std::string tagged = tag_every_line(tb, "[rank0]: ");
  return {
      std::string("Error: ") + kMetaSdpa + " (while loading MistralForCausalLM)",
      kKvRepeat,
      "2026-11-30 10:01:42,123 - ERROR - generation failed\n" + tb + "2026-11-30 10:01:43,000 - INFO - done\n",
      "Traceback (most recent call last):\n  File \"/app/a.py\", line 3, in f\n    g()\nRuntimeError: " +
          std::string(kViewShape) + "\n\nThe above exception was the direct cause of the following exception:\n\n" + tb,
      tagged,
      std::string("Error: failed to build the model\n\nCaused by:\n    0: loading the metavoice transformer\n    1: ") +
          kKvCache + "\n\nStack backtrace:\n   0: anyhow::error::msg\n             at /src/error.rs:83:36\n",
      std::string(kViewShape) + "\n" + kC10Frames,
      "thread 'main' panicked at src/main.rs:10:5:\n" + std::string(kKvRepeat) +
          "\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
      "Error: Msg(\"" + std::string(kKvCache) + "\")",
      "worker-3  | INFO loading\nworker-3  | " + std::string(kKvCache) + "\nplain text, two lines\n",
  };
}

// Clean input is read in place, input with escapes or NULs is copied
// without them: which path ran must not show. Colour codes, a hyperlink or
// a NUL spliced in at any offset leave the segments as they were.
TEST(Normalize, EscapesAndNulsSplicedAnywhereChangeNothing) {
  const std::vector<std::string> noise = {"\x1b[1;31m", "\x1b]8;;http://x\x07", std::string(1, '\0')};
  for (const std::string& input : wrapper_samples()) {
    const Normalized want = normalize(input);
    ASSERT_FALSE(want.segments.empty()) << input;
    for (const std::string& n : noise) {
      for (std::size_t at = 0; at <= input.size(); ++at) {
        const Normalized got = normalize(input.substr(0, at) + n + input.substr(at));
        ASSERT_EQ(texts(got), texts(want)) << "at " << at << " of:\n" << input;
        ASSERT_EQ(classes(got), classes(want)) << "at " << at << " of:\n" << input;
      }
    }
  }
}

// Lines end at LF, CRLF or a lone CR alike.
TEST(Normalize, LfCrLfAndLoneCrLineEndsGiveTheSameSegments) {
  for (const std::string& input : wrapper_samples()) {
    const Normalized want = normalize(input);
    std::string crlf, cr;
    for (char c : input) {
      crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
      cr += c == '\n' ? '\r' : c;
    }
    EXPECT_EQ(texts(normalize(crlf)), texts(want)) << input;
    EXPECT_EQ(classes(normalize(crlf)), classes(want)) << input;
    EXPECT_EQ(texts(normalize(cr)), texts(want)) << input;
    EXPECT_EQ(classes(normalize(cr)), classes(want)) << input;
  }
}

}  // namespace
