//! Fuzzes `kplan.toml` reading: any text must load or fail with a located error, and a loaded
//! configuration must resolve its targets, without panicking. Run: `bench/fuzz.sh config_parse 60`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match kplan_scan::Config::parse(Path::new("kplan.toml"), text, &kplan_scan::check_rule_id) {
        Ok(cfg) => {
            let _ = cfg.rule_enabled("warp-size-literal", Path::new("src/a.cu"));
            let _ = kplan_scan::ScanCtx::new(kplan_kb::Kb::builtin(), &[], cfg);
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
