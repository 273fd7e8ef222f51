//! Fuzzes the kernel spec parser (`kplan plan SPEC.toml`): any text must parse or fail with an
//! error that renders, and a parsed spec must plan, without panicking.
//! Run: `bench/fuzz.sh spec_parse 60`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let kb = kplan_kb::Kb::builtin();
    match kplan_plan::parse_spec(text, kb) {
        Ok(spec) => {
            let plan = kplan_plan::build_plan(&spec, kb, &kplan_plan::PlanInputs::default());
            let _ = kplan_plan::render::markdown(&plan);
            let _ = kplan_plan::render::json(&plan);
        }
        Err(e) => {
            let _ = e.render("fuzz.toml", text);
        }
    }
});
