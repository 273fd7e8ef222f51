//! Fuzzes the Python (Triton) tokenizer and every Triton rule: any bytes, as a `.py` file, must
//! scan without panicking. Run: `bench/fuzz.sh python_lex 60`.
#![no_main]

use kplan_scan::{scan_text, FileKind, ScanCtx};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

fn ctx() -> &'static ScanCtx<'static> {
    static CTX: OnceLock<ScanCtx<'static>> = OnceLock::new();
    CTX.get_or_init(|| {
        ScanCtx::with_targets(kplan_kb::Kb::builtin(), &["sm_90a", "gfx942", "gfx1100"])
            .expect("built-in targets")
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let src = kplan_scan::python::lex::lex(&text);
    for i in 0..src.toks.len().min(4096) {
        let _ = src.s(i);
        let _ = src.number(i);
    }
    let _ = scan_text(ctx(), Path::new("fuzz.py"), FileKind::Python, &text);
});
