/* errshim's C interface, for FFI callers (Python ctypes, Rust extern "C",
 * Go cgo, ...) and plain C programs. It is C11 and C++ compatible.
 *
 * Rules that hold for every function here:
 *
 *  - No exception ever crosses this interface: every failure comes back as an
 *    errshim_status, and the functions that can fail take an optional
 *    `char** error` out-parameter that receives a message (set to NULL on
 *    success; pass NULL to ignore it).
 *  - Ownership is explicit. A returned `char*` (or one stored through a
 *    `char**`) belongs to the caller: free it with errshim_string_free(). A
 *    returned `const char*` is lent by the handle it came from and stays valid
 *    until that handle is freed. Handles are freed with their own *_free
 *    function; every *_free accepts NULL.
 *  - Strings are UTF-8. Lent strings are never NULL for a valid handle; ""
 *    means "absent". Look-ups by index or name return NULL when there is no
 *    such item.
 *  - Message and config texts are passed with a length, so they may come
 *    straight from a buffer; pass ERRSHIM_NUL_TERMINATED to have strlen() used.
 *
 * Threads: a catalog handle may be used by any number of threads at once,
 * including while another thread adds to it (a diagnosis made during an add
 * sees the catalog from before or after it, never a mix). Result handles are
 * plain values: share one between threads only for reading.
 */
#ifndef ERRSHIM_C_API_H
#define ERRSHIM_C_API_H

#include <stddef.h>

#if defined(_WIN32)
#define ERRSHIM_C_EXPORT
#elif defined(__GNUC__)
#define ERRSHIM_C_EXPORT __attribute__((visibility("default")))
#else
#define ERRSHIM_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Pass as a length to mean "the text is NUL-terminated". */
#define ERRSHIM_NUL_TERMINATED ((size_t)-1)

/* Every function that can fail returns one of these. The values are stable. */
typedef enum errshim_status {
  ERRSHIM_OK = 0,
  ERRSHIM_NO_MATCH = 1, /* the catalog does not recognise the message */
  ERRSHIM_NO_FIX = 2, /* recognised, but no fix is allowed on this config */
  ERRSHIM_INVALID_ARGUMENT = 3, /* NULL where a value is needed, bad context or policy text */
  ERRSHIM_CATALOG_ERROR = 4, /* a catalog source that does not load (the message lists every problem) */
  ERRSHIM_CONFIG_ERROR = 5, /* a config text that does not parse, or cannot take the fix */
  ERRSHIM_OUT_OF_MEMORY = 6,
  ERRSHIM_INTERNAL_ERROR = 7, /* a bug in errshim: please report the message */
  /* Not a status: makes every int up to it a value of the type, so C++ can
     read a code this version does not know (errshim_status_name) soundly. */
  ERRSHIM_STATUS_MAX_ENUM = 0x7FFFFFFF
} errshim_status;

/* "ok", "no-match", ... for logs; never NULL ("unknown" for other values). */
ERRSHIM_C_EXPORT const char* errshim_status_name(errshim_status status);

/* errshim's version, "0.1.0". Static storage. */
ERRSHIM_C_EXPORT const char* errshim_version(void);

/* Frees a string this interface gave to the caller. NULL is a no-op. */
ERRSHIM_C_EXPORT void errshim_string_free(char* text);

/* ------------------------------------------------------------------ catalogs */

/* A catalog: the entries errshim knows. Functions that take a catalog accept
 * NULL for the catalog embedded in the library. */
typedef struct errshim_catalog errshim_catalog;

/* A new catalog holding the embedded entries (with_embedded != 0) or none. */
ERRSHIM_C_EXPORT errshim_status errshim_catalog_new(int with_embedded, errshim_catalog** out, char** error);

/* Adds a layer on top: a .yaml or .yml file, a folder whose YAML files
 * (not recursive) form one layer, or a .snapshot file (`errshim snapshot`:
 * the same catalog, loaded without parsing YAML, for large catalogs). An entry whose id already exists replaces
 * it. The catalog with the layer is built, its regexes compiled and it is
 * linted (as errshim lint, and CatalogStore::reload) before it replaces the
 * current one: when any of that fails, ERRSHIM_CATALOG_ERROR lists every
 * problem and the catalog stays as it was. Each add
 * builds the catalog again from all its layers (files are read again), so
 * add everything at start-up rather than per request. */
ERRSHIM_C_EXPORT errshim_status errshim_catalog_add_path(errshim_catalog* catalog, const char* path, char** error);

/* Adds a layer from YAML text; `name` (may be NULL) names it in messages. */
ERRSHIM_C_EXPORT errshim_status errshim_catalog_add_yaml(errshim_catalog* catalog, const char* yaml, size_t length,
                                                         const char* name, char** error);

/* Number of entries; 0 for NULL. */
ERRSHIM_C_EXPORT size_t errshim_catalog_size(const errshim_catalog* catalog);

ERRSHIM_C_EXPORT void errshim_catalog_free(errshim_catalog* catalog);

/* ----------------------------------------------------------------- diagnosis */

/* The outcome of looking a message up: matched or not. */
typedef struct errshim_diagnosis errshim_diagnosis;

/* Looks `message` up in `catalog` (NULL: embedded). `context` (may be NULL)
 * is what the caller knows of where the error happened, e.g.
 * "transformers=4.57,device=metal": entries scoped elsewhere are passed over.
 * Returns ERRSHIM_OK (matched) or ERRSHIM_NO_MATCH, and in both cases stores
 * a handle in *out; on any other status *out is NULL. The lookup is reported
 * to the observers (errshim_observe), as errshim_fix_config's is. */
ERRSHIM_C_EXPORT errshim_status errshim_diagnose(const errshim_catalog* catalog, const char* message, size_t length,
                                                 const char* context, errshim_diagnosis** out, char** error);

ERRSHIM_C_EXPORT void errshim_diagnosis_free(errshim_diagnosis* diagnosis);

/* 1 when an entry matched, else 0. */
ERRSHIM_C_EXPORT int errshim_diagnosis_matched(const errshim_diagnosis* diagnosis);

/* The whole diagnosis as one line of JSON, the same object as
 * `errshim explain --json` prints ({"matched": false} when unmatched).
 * Free with errshim_string_free; NULL only when out of memory. */
ERRSHIM_C_EXPORT char* errshim_diagnosis_json(const errshim_diagnosis* diagnosis);

/* Fields of the matched entry, lent by the handle ("" when unmatched). */
ERRSHIM_C_EXPORT const char* errshim_diagnosis_id(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_cause(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_trigger(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_library(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_kind(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_severity(const errshim_diagnosis* diagnosis);
/* The message the entry was found in (log prefixes and wrappers removed). */
ERRSHIM_C_EXPORT const char* errshim_diagnosis_message(const errshim_diagnosis* diagnosis);
/* The class the wrapper named ("ValueError"), "" when none. */
ERRSHIM_C_EXPORT const char* errshim_diagnosis_exception_class(const errshim_diagnosis* diagnosis);

/* Where upstream raises the error. Line is 0 when unknown or unmatched. */
ERRSHIM_C_EXPORT const char* errshim_diagnosis_source_repo(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_source_path(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT int errshim_diagnosis_source_line(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_source_commit(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_source_symbol(const errshim_diagnosis* diagnosis);

/* Remediation steps, most likely to work first. The safety class of step i's
 * fix ("safe", "slower", "changes-output", "manual"), or NULL when the step
 * has no machine-readable fix or i is out of range. */
ERRSHIM_C_EXPORT size_t errshim_diagnosis_remediation_count(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_remediation(const errshim_diagnosis* diagnosis, size_t index);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_remediation_safety(const errshim_diagnosis* diagnosis, size_t index);

/* Values read out of the message by the entry's placeholders, in order. */
ERRSHIM_C_EXPORT size_t errshim_diagnosis_capture_count(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_capture_name(const errshim_diagnosis* diagnosis, size_t index);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_capture_value(const errshim_diagnosis* diagnosis, size_t index);
/* The value captured as `name`, or NULL. */
ERRSHIM_C_EXPORT const char* errshim_diagnosis_capture(const errshim_diagnosis* diagnosis, const char* name);

/* Things that went wrong while matching without stopping it (an entry hit
 * the regex complexity limit, the input was cut to the size cap). */
ERRSHIM_C_EXPORT size_t errshim_diagnosis_problem_count(const errshim_diagnosis* diagnosis);
ERRSHIM_C_EXPORT const char* errshim_diagnosis_problem(const errshim_diagnosis* diagnosis, size_t index);

/* ---------------------------------------------------------------- config fix */

/* The outcome of errshim_fix_config. */
typedef struct errshim_fix errshim_fix;

/* Diagnoses `message` and applies the first remediation step whose fix the
 * policy allows to `config` (JSON or YAML text; the format is JSON when the
 * text starts with '{' or '['). The caller's text is not touched: the result
 * holds a new text in the same format.
 *
 * Policy: `allowed` is a comma list of safety classes that may be applied,
 * from "safe", "slower", "changes-output" (NULL or "": "safe,slower"; "manual"
 * is never applied). `pinned` is a comma list of keys (names or dotted paths)
 * the user set on purpose and that no fix may change (NULL: none).
 *
 * Returns ERRSHIM_OK (a step was applied), ERRSHIM_NO_MATCH or ERRSHIM_NO_FIX,
 * each with a handle in *out (for NO_FIX it tells why each step was refused);
 * on any other status *out is NULL. */
ERRSHIM_C_EXPORT errshim_status errshim_fix_config(const errshim_catalog* catalog, const char* message,
                                                   size_t message_length, const char* context, const char* config,
                                                   size_t config_length, const char* allowed, const char* pinned,
                                                   errshim_fix** out, char** error);

/* The same, never applying the steps in `skip` (a comma list of 0-based step
 * numbers of the matched entry, NULL or "": none): those a caller's own retry
 * loop applied before, so the next allowed step is chosen instead (as the
 * C++ remediate() does). */
ERRSHIM_C_EXPORT errshim_status errshim_fix_config_skipping(const errshim_catalog* catalog, const char* message,
                                                            size_t message_length, const char* context,
                                                            const char* config, size_t config_length,
                                                            const char* allowed, const char* pinned, const char* skip,
                                                            errshim_fix** out, char** error);

ERRSHIM_C_EXPORT void errshim_fix_free(errshim_fix* fix);

/* 1 when a step was applied, else 0. */
ERRSHIM_C_EXPORT int errshim_fix_applied(const errshim_fix* fix);
/* The config after the fix (the input, unchanged, when none was applied). */
ERRSHIM_C_EXPORT const char* errshim_fix_config_text(const errshim_fix* fix);
/* "json" or "yaml": the format of the input, kept in the output. */
ERRSHIM_C_EXPORT const char* errshim_fix_format(const errshim_fix* fix);
/* The entry that matched ("" for no match). */
ERRSHIM_C_EXPORT const char* errshim_fix_entry_id(const errshim_fix* fix);
/* The remediation step applied, 0-based; -1 when none was. */
ERRSHIM_C_EXPORT int errshim_fix_step(const errshim_fix* fix);
/* That step's text and safety class ("" when none was applied). */
ERRSHIM_C_EXPORT const char* errshim_fix_step_text(const errshim_fix* fix);
ERRSHIM_C_EXPORT const char* errshim_fix_safety(const errshim_fix* fix);
/* The diagnosis the fix answers (NULL for no match); lent by the fix handle. */
ERRSHIM_C_EXPORT const errshim_diagnosis* errshim_fix_diagnosis(const errshim_fix* fix);

/* What was decided, as one line of JSON:
 * {"applied": bool, "entry": id|null, "step": n|null, "safety": s|null,
 *  "changes": [{"path", "before", "after", "created"}], "decisions": [<Decision audit
 *  records, one per step considered, with the reason of each refusal>]}.
 * Free with errshim_string_free; NULL only when out of memory. */
ERRSHIM_C_EXPORT char* errshim_fix_json(const errshim_fix* fix);

/* ------------------------------------------------------------ observing lookups */

/* Where a lookup was made (errshim::LookupSite). The values are stable. */
typedef enum errshim_lookup_site {
  ERRSHIM_SITE_GUARD = 0, /* C++ errshim::guard */
  ERRSHIM_SITE_RETHROW_TRANSLATED = 1, /* C++ errshim::rethrow_translated */
  ERRSHIM_SITE_REMEDIATE = 2, /* C++ errshim::remediate, the error of a failed call */
  ERRSHIM_SITE_DIAGNOSE = 3, /* C++ errshim::diagnose */
  ERRSHIM_SITE_C_DIAGNOSE = 4, /* errshim_diagnose */
  ERRSHIM_SITE_C_FIX_CONFIG = 5 /* errshim_fix_config */
} errshim_lookup_site;

/* One catalog lookup, as an observer sees it. Every pointer is lent for the
 * duration of the callback only: copy what you keep. Later versions may add
 * fields at the end. */
typedef struct errshim_lookup {
  const char* message; /* the text looked up (not NUL-terminated: use message_length) */
  size_t message_length;
  const char* entry_id; /* the entry that matched, NUL-terminated; NULL when unrecognised */
  const char* fingerprint; /* unrecognised: its fingerprint (16 hex digits, equal for every worker's
                              copy of one error; `errshim scan --json` gives the same); NULL when matched */
  const char* fingerprint_text; /* unrecognised: the message the fingerprint hashes, its variable parts
                                   masked ("RuntimeError: shard <num> lost"); NULL when matched */
  int site; /* an errshim_lookup_site */
  long long elapsed_ns; /* the lookup alone, in nanoseconds */
} errshim_lookup;

typedef void (*errshim_lookup_callback)(const errshim_lookup* lookup, void* user_data);

/* A registered observer; errshim_observer_free unregisters it. */
typedef struct errshim_observer errshim_observer;

/* Registers `callback` for every catalog lookup this library makes in the
 * process, on every thread (errshim_diagnose and errshim_fix_config, and
 * the C++ calls when the host uses them from this library), until the
 * handle is freed. The callback runs on the thread that made the lookup,
 * possibly on several at once, and gets `user_data` back. It must not
 * unwind through errshim (no C++ exception, no longjmp): a C++ exception
 * is caught and ignored, and the lookup's result is the same as with no
 * observer. Lookups the callback makes itself are not reported. */
ERRSHIM_C_EXPORT errshim_status errshim_observe(errshim_lookup_callback callback, void* user_data,
                                                errshim_observer** out, char** error);

/* Unregisters the observer. When it returns, the callback is not running on
 * another thread and is not called again, so `user_data` may be freed (called
 * from inside the callback itself, it does not wait for that call). NULL is
 * a no-op. */
ERRSHIM_C_EXPORT void errshim_observer_free(errshim_observer* observer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ERRSHIM_C_API_H */
