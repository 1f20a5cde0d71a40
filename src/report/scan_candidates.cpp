// The candidate search: a scalar definition, and SSE2/AVX2 kernels that test
// 16/32 positions at once with a few probe bytes per marker and confirm each
// probe hit with the scalar definition (so all kernels agree exactly).

#include "scan_candidates.hpp"

#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#define ERRSHIM_SCAN_X86 1
#include <immintrin.h>
#endif

namespace errshim::detail {

namespace {

// The markers, lower case; matched ASCII case-insensitively.
constexpr const char* kMarkers[] = {"err", "fatal", "critical", "panic", "traceback", "exception", "terminate"};

char fold(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

// The definition: is there a candidate at `p` (begin <= p < end)?
bool candidate_at(const char* begin, const char* end, const char* p) noexcept {
  const char c = *p;
  if (c == '\x1b') return true;
  if ((c == 'E' || c == 'F') && (p == begin || p[-1] == '\n' || p[-1] == '\r') && p + 1 < end && p[1] >= '0' &&
      p[1] <= '9')
    return true;
  const std::size_t room = static_cast<std::size_t>(end - p);
  for (const char* m : kMarkers) {
    const std::size_t n = std::strlen(m);
    if (n > room || fold(c) != m[0]) continue;
    std::size_t i = 1;
    while (i < n && fold(p[i]) == m[i]) ++i;
    if (i == n) return true;
  }
  return false;
}

std::size_t scalar(const char* begin, const char* end, const char* from, std::uint64_t& newlines) noexcept {
  for (const char* p = from; p < end; ++p) {
    if (candidate_at(begin, end, p)) return static_cast<std::size_t>(p - begin);
    newlines += *p == '\n';
  }
  return static_cast<std::size_t>(end - begin);
}

#ifdef ERRSHIM_SCAN_X86
// Bytes read past the window's start by the widest probe (offset 8).
constexpr std::size_t kReach = 9;

// Both kernels follow one recipe, written out for each width. Probe bytes
// (first two letters and a later one of each marker, case folded with
// |0x20, which is exact for letters) make a mask of possible starts; each is
// confirmed with candidate_at. Newlines are counted 16/32 at a time.
#define ERRSHIM_PROBES(V, LOAD, SET1, OR, AND, EQ, MIN, SUB)                                              \
  const V fold_bit = SET1(0x20);                                                                          \
  const V v0 = LOAD(p), vp = LOAD(p - 1), v1 = LOAD(p + 1);                                               \
  const V l0 = OR(v0, fold_bit), l1 = OR(v1, fold_bit), l2 = OR(LOAD(p + 2), fold_bit);                   \
  const V l4 = OR(LOAD(p + 4), fold_bit), l7 = OR(LOAD(p + 7), fold_bit), l8 = OR(LOAD(p + 8), fold_bit); \
  const V e0 = EQ(l0, SET1('e')), t0 = EQ(l0, SET1('t')), r1 = EQ(l1, SET1('r')), a1 = EQ(l1, SET1('a')); \
  V m = AND(e0, AND(r1, EQ(l2, SET1('r')))); /* err */                                                    \
  m = OR(m, AND(e0, AND(EQ(l2, SET1('c')), EQ(l8, SET1('n'))))); /* exception */                          \
  m = OR(m, AND(t0, AND(r1, EQ(l8, SET1('k'))))); /* traceback */                                         \
  m = OR(m, AND(t0, AND(EQ(l1, SET1('e')), EQ(l8, SET1('e'))))); /* terminate */                          \
  m = OR(m, AND(EQ(l0, SET1('f')), AND(a1, EQ(l4, SET1('l'))))); /* fatal */                              \
  m = OR(m, AND(EQ(l0, SET1('p')), AND(a1, EQ(l4, SET1('c'))))); /* panic */                              \
  m = OR(m, AND(EQ(l0, SET1('c')), AND(r1, EQ(l7, SET1('l'))))); /* critical */                           \
  m = OR(m, EQ(v0, SET1('\x1b')));                                                                        \
  const V after_break = OR(EQ(vp, SET1('\n')), EQ(vp, SET1('\r')));                                       \
  const V glog_letter = OR(EQ(v0, SET1('E')), EQ(v0, SET1('F')));                                         \
  const V d = SUB(v1, SET1('0'));                                                                         \
  m = OR(m, AND(after_break, AND(glog_letter, EQ(MIN(d, SET1(9)), d))));                                  \
  const V nl = EQ(v0, SET1('\n'));

#define ERRSHIM_KERNEL_BODY(WIDTH, MASK_T, MOVEMASK, POPCOUNT)                                           \
  const char* p = begin + 1;                                                                             \
  if (begin < end && candidate_at(begin, end, begin)) return 0;                                          \
  if (begin < end) newlines += *begin == '\n';                                                           \
  for (; end - p >= static_cast<std::ptrdiff_t>(WIDTH + kReach); p += WIDTH) {                           \
    ERRSHIM_PROBES_FOR_WIDTH                                                                             \
    MASK_T hits = static_cast<MASK_T>(MOVEMASK(m));                                                      \
    const MASK_T lines = static_cast<MASK_T>(MOVEMASK(nl));                                              \
    while (hits != 0) {                                                                                  \
      const unsigned bit = static_cast<unsigned>(__builtin_ctz(hits));                                   \
      if (candidate_at(begin, end, p + bit)) {                                                           \
        newlines += static_cast<std::uint64_t>(POPCOUNT(lines & ((static_cast<MASK_T>(1) << bit) - 1))); \
        return static_cast<std::size_t>(p + bit - begin);                                                \
      }                                                                                                  \
      hits &= hits - 1;                                                                                  \
    }                                                                                                    \
    newlines += static_cast<std::uint64_t>(POPCOUNT(lines));                                             \
  }                                                                                                      \
  return scalar(begin, end, p, newlines);

#define ERRSHIM_PROBES_FOR_WIDTH                                                                              \
  ERRSHIM_PROBES(__m128i, sse_load, _mm_set1_epi8, _mm_or_si128, _mm_and_si128, _mm_cmpeq_epi8, _mm_min_epu8, \
                 _mm_sub_epi8)
__m128i sse_load(const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
std::size_t sse2(const char* begin, const char* end, std::uint64_t& newlines) noexcept {
  ERRSHIM_KERNEL_BODY(16, std::uint32_t, _mm_movemask_epi8, __builtin_popcount)
}
#undef ERRSHIM_PROBES_FOR_WIDTH

#define ERRSHIM_PROBES_FOR_WIDTH                                                                            \
  ERRSHIM_PROBES(__m256i, avx_load, _mm256_set1_epi8, _mm256_or_si256, _mm256_and_si256, _mm256_cmpeq_epi8, \
                 _mm256_min_epu8, _mm256_sub_epi8)
__attribute__((target("avx2"))) __m256i avx_load(const char* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
__attribute__((target("avx2,popcnt"))) std::size_t avx2(const char* begin, const char* end,
                                                        std::uint64_t& newlines) noexcept {
  ERRSHIM_KERNEL_BODY(32, std::uint32_t, _mm256_movemask_epi8, __builtin_popcount)
}
#undef ERRSHIM_PROBES_FOR_WIDTH
#undef ERRSHIM_KERNEL_BODY
#undef ERRSHIM_PROBES

bool has_avx2() noexcept {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  return yes;
}
#endif

}  // namespace

bool candidate_kernel_available(CandidateKernel kernel) noexcept {
  switch (kernel) {
    case CandidateKernel::scalar:
    case CandidateKernel::best: return true;
#ifdef ERRSHIM_SCAN_X86
    case CandidateKernel::sse2: return true;
    case CandidateKernel::avx2: return has_avx2();
#else
    default: return false;
#endif
  }
  return false;
}

std::size_t find_candidate(const char* begin, const char* end, std::uint64_t& newlines,
                           CandidateKernel kernel) noexcept {
  newlines = 0;
#ifdef ERRSHIM_SCAN_X86
  if (kernel == CandidateKernel::best) kernel = has_avx2() ? CandidateKernel::avx2 : CandidateKernel::sse2;
  if (kernel == CandidateKernel::avx2 && has_avx2()) return avx2(begin, end, newlines);
  if (kernel == CandidateKernel::sse2) return sse2(begin, end, newlines);
#else
  (void)kernel;
#endif
  return scalar(begin, end, begin, newlines);
}

}  // namespace errshim::detail
