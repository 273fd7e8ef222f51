//! Fuzzes the CUDA/HIP structure pass and every rule: any bytes, as a `.cu` file, must scan
//! without panicking. Run: `cargo +nightly fuzz run scan_file` (from the repository root).
#![no_main]

use kplan_scan::{scan_text, FileKind, ScanCtx};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

fn ctx() -> &'static ScanCtx<'static> {
    static CTX: OnceLock<ScanCtx<'static>> = OnceLock::new();
    CTX.get_or_init(|| ScanCtx::with_targets(kplan_kb::Kb::builtin(), &["sm_90a", "gfx942", "gfx1100"]).expect("built-in targets"))
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = kplan_scan::lex::lex(&text);
    let _ = scan_text(ctx(), Path::new("fuzz.cu"), FileKind::Cuda, &text);
    let _ = kplan_scan::cuda::feature_uses(ctx(), Path::new("fuzz.cu"), &text);
});
