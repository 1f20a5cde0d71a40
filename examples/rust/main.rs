// A Rust program on candle asks errshim what an error means, through the C
// interface (include/errshim/c_api.h) and nothing else: no crates, only
// `extern "C"` declarations, linked against the shared library errshim_c.
//
//   rustc --edition 2021 examples/rust/main.rs -L native=build -l dylib=errshim_c \
//         -C link-arg=-Wl,-rpath,$PWD/build -o errshim_rust_example
//
// With candle the text would come from `format!("{err:?}")` or `err.to_string()`
// of a `candle_core::Error`; here it is the message Metal's SDPA kernel gives.

use std::ffi::{c_char, c_int, CStr, CString};
use std::ptr;

// Opaque handles: only ever used behind pointers that errshim hands out.
#[repr(C)]
struct ErrshimCatalog {
    _private: [u8; 0],
}
#[repr(C)]
struct ErrshimDiagnosis {
    _private: [u8; 0],
}

// errshim_status values (c_api.h).
const ERRSHIM_OK: c_int = 0;
const ERRSHIM_NO_MATCH: c_int = 1;

extern "C" {
    fn errshim_version() -> *const c_char;
    fn errshim_status_name(status: c_int) -> *const c_char;
    fn errshim_string_free(text: *mut c_char);
    fn errshim_diagnose(
        catalog: *const ErrshimCatalog,
        message: *const c_char,
        length: usize,
        context: *const c_char,
        out: *mut *mut ErrshimDiagnosis,
        error: *mut *mut c_char,
    ) -> c_int;
    fn errshim_diagnosis_free(diagnosis: *mut ErrshimDiagnosis);
    fn errshim_diagnosis_matched(diagnosis: *const ErrshimDiagnosis) -> c_int;
    fn errshim_diagnosis_id(diagnosis: *const ErrshimDiagnosis) -> *const c_char;
    fn errshim_diagnosis_source_repo(diagnosis: *const ErrshimDiagnosis) -> *const c_char;
    fn errshim_diagnosis_source_path(diagnosis: *const ErrshimDiagnosis) -> *const c_char;
    fn errshim_diagnosis_source_line(diagnosis: *const ErrshimDiagnosis) -> c_int;
    fn errshim_diagnosis_capture(diagnosis: *const ErrshimDiagnosis, name: *const c_char) -> *const c_char;
    fn errshim_diagnosis_remediation_count(diagnosis: *const ErrshimDiagnosis) -> usize;
    fn errshim_diagnosis_remediation(diagnosis: *const ErrshimDiagnosis, index: usize) -> *const c_char;
    fn errshim_diagnosis_remediation_safety(diagnosis: *const ErrshimDiagnosis, index: usize) -> *const c_char;
    fn errshim_diagnosis_json(diagnosis: *const ErrshimDiagnosis) -> *mut c_char;
}

/// A string lent by errshim, copied out; None for NULL.
fn lent(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: errshim returns NUL-terminated UTF-8 that lives as long as
        // the handle it came from, which outlives this call.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// A string errshim gave away: copied, then freed with errshim_string_free.
fn owned(p: *mut c_char) -> Option<String> {
    let s = lent(p);
    // SAFETY: p came from errshim and is freed exactly once (NULL is allowed).
    unsafe { errshim_string_free(p) };
    s
}

/// The safe face of a diagnosis: owns the handle and frees it on drop.
struct Diagnosis(*mut ErrshimDiagnosis);

impl Drop for Diagnosis {
    fn drop(&mut self) {
        // SAFETY: the handle came from errshim_diagnose and is freed once.
        unsafe { errshim_diagnosis_free(self.0) }
    }
}

impl Diagnosis {
    /// Looks `message` up in the catalog embedded in the library.
    fn of(message: &str, context: Option<&str>) -> Result<Option<Diagnosis>, String> {
        let context = context.map(|c| CString::new(c).map_err(|e| e.to_string())).transpose()?;
        let mut out: *mut ErrshimDiagnosis = ptr::null_mut();
        let mut error: *mut c_char = ptr::null_mut();
        // SAFETY: message is passed with its length (it need not be NUL-terminated),
        // the out-parameters point at locals.
        let status = unsafe {
            errshim_diagnose(
                ptr::null(),
                message.as_ptr() as *const c_char,
                message.len(),
                context.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                &mut out,
                &mut error,
            )
        };
        match status {
            ERRSHIM_OK => Ok(Some(Diagnosis(out))),
            ERRSHIM_NO_MATCH => {
                drop(Diagnosis(out)); // a handle comes back for "no match" too
                Ok(None)
            }
            other => {
                let name = lent(unsafe { errshim_status_name(other) }).unwrap_or_default();
                Err(format!("{}: {}", name, owned(error).unwrap_or_default()))
            }
        }
    }

    fn id(&self) -> String {
        lent(unsafe { errshim_diagnosis_id(self.0) }).unwrap_or_default()
    }
    fn capture(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        lent(unsafe { errshim_diagnosis_capture(self.0, name.as_ptr()) })
    }
    fn remediation(&self) -> Vec<(String, Option<String>)> {
        let n = unsafe { errshim_diagnosis_remediation_count(self.0) };
        (0..n)
            .map(|i| {
                let text = lent(unsafe { errshim_diagnosis_remediation(self.0, i) }).unwrap_or_default();
                let safety = lent(unsafe { errshim_diagnosis_remediation_safety(self.0, i) });
                (text, safety)
            })
            .collect()
    }
}

fn main() {
    let version = lent(unsafe { errshim_version() }).unwrap_or_default();
    let candle_error = "Error: Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], \
                        k dims [1, 8, 7, 48], v dims [1, 8, 7, 48].";
    println!("errshim {version}; candle said:\n  {candle_error}\n");

    let d = match Diagnosis::of(candle_error, Some("device=metal")) {
        Ok(Some(d)) => d,
        Ok(None) => {
            println!("errshim_rust_example: FAIL: not recognised");
            std::process::exit(1);
        }
        Err(e) => {
            println!("errshim_rust_example: FAIL: {e}");
            std::process::exit(1);
        }
    };
    let id = d.id();
    let repo = lent(unsafe { errshim_diagnosis_source_repo(d.0) }).unwrap_or_default();
    let path = lent(unsafe { errshim_diagnosis_source_path(d.0) }).unwrap_or_default();
    let line = unsafe { errshim_diagnosis_source_line(d.0) };
    let steps = d.remediation();
    println!("{id}");
    println!("  raised at: {repo} {path}:{line}");
    println!("  q_head:    {}", d.capture("q_head").unwrap_or_default());
    if let Some((text, safety)) = steps.first() {
        let safety = safety.as_deref().map_or(String::new(), |s| format!(" [{s}]"));
        println!("  1. {}{safety}", text.lines().next().unwrap_or(""));
    }
    let json = owned(unsafe { errshim_diagnosis_json(d.0) }).unwrap_or_default();
    println!("  json:      {} bytes", json.len());

    // Nothing unknown is invented: an unrelated error stays unmatched.
    let unknown = Diagnosis::of("Error: the weather is bad today", None);

    let ok = unsafe { errshim_diagnosis_matched(d.0) } == 1
        && id == "candle.sdpa.unsupported_head_dim"
        && d.capture("q_head").as_deref() == Some("48")
        && !steps.is_empty()
        && line > 0
        && json.starts_with("{\"matched\": true")
        && matches!(unknown, Ok(None));
    if ok {
        println!("errshim_rust_example: OK {id}");
    } else {
        println!("errshim_rust_example: FAIL");
        std::process::exit(1);
    }
}
