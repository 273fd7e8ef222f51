//! What kplan cannot read in a key the plan can do without is set aside with a note; what the
//! plan is made from is still an error with its line and column.

use kplan_kb::Kb;
use kplan_plan::parse_spec;

const BASE: &str = "[kernel]\nname = \"k\"\nop = \"stencil\"\ndtypes = [\"fp32\"]\n";

fn notes(text: &str) -> Vec<String> {
    match parse_spec(text, Kb::builtin()) {
        Ok(s) => s.notes.iter().map(|n| n.message.clone()).collect(),
        Err(e) => panic!("rejected: {}", e.render("t.toml", text)),
    }
}

fn error(text: &str) -> String {
    match parse_spec(text, Kb::builtin()) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.render("t.toml", text),
    }
}

#[test]
fn an_unreadable_optional_value_is_set_aside_with_a_note() {
    let t = format!("{BASE}problem = {{ nx = 512, ny = 512, points = 5 }}\n[backends]\ntargets = [\"sm_90a\", \"gfx942\"]\n[requirements]\ndeterminism = \"same candidate set every run, order may differ\"\n");
    let n = notes(&t);
    assert!(
        n.iter()
            .any(|m| m.contains("`requirements.determinism` set aside")),
        "{n:#?}"
    );
}

#[test]
fn a_list_where_one_word_is_expected_is_set_aside() {
    let t = format!("{BASE}problem = {{ nx = 512, ny = 512, points = 5 }}\ndirection = [\"forward\", \"backward\"]\n[backends]\ntargets = [\"sm_90a\"]\n");
    let n = notes(&t);
    assert!(
        n.iter().any(|m| m.contains("`kernel.direction` set aside")),
        "{n:#?}"
    );
}

#[test]
fn a_problem_size_kplan_does_not_model_is_set_aside() {
    // `nc` is no misspelt `nx`: a size kplan does not model, set aside whatever its name
    let t = format!("{BASE}problem = {{ nx = 64, ny = 64, nz = 64, points = 7, nc = 3 }}\n[backends]\ntargets = [\"sm_90a\"]\n");
    let n = notes(&t);
    assert!(
        n.iter()
            .any(|m| m.contains("`kernel.problem.nc` set aside")),
        "{n:#?}"
    );
}

#[test]
fn what_the_plan_is_made_from_is_still_an_error() {
    // every target unknown: the error names the first one, at its place
    let t = format!(
        "{BASE}problem = {{ nx = 512, points = 5 }}\n[backends]\ntargets = [\"not-a-gpu-9000\"]\n"
    );
    let e = error(&t);
    assert!(
        e.starts_with("t.toml:7:12: error: unknown target `not-a-gpu-9000`"),
        "{e}"
    );
    // an unknown dtype
    let t = "[kernel]\nname = \"k\"\nop = \"gemm\"\ndtypes = [\"bf16\"]\nweight_dtype = \"q4_9\"\nproblem = { m = 1, n = 8, k = 8 }\n[backends]\ntargets = [\"sm_90a\"]\n";
    assert!(error(t).starts_with("t.toml:5:"), "{}", error(t));
    // a misspelt key
    let t = format!("{BASE}problem = {{ nx = 512, points = 5 }}\n[backends]\ntargets = [\"sm_90a\"]\n[requirements]\nlatncy_us = 3\n");
    assert!(
        error(&t).contains("unknown field `latncy_us`"),
        "{}",
        error(&t)
    );
    // no op
    let t = "[kernel]\nname = \"k\"\ndtypes = [\"bf16\"]\n[backends]\ntargets = [\"sm_90a\"]\n";
    assert!(error(t).contains("missing field `op`"), "{}", error(t));
}

#[test]
fn a_spec_without_a_name_is_named_after_its_op() {
    let t = "[kernel]\nop = \"stencil\"\ndtypes = [\"fp32\"]\nproblem = { nx = 64, points = 5 }\n[backends]\ntargets = [\"gfx942\"]\n";
    let s = parse_spec(t, Kb::builtin()).unwrap_or_else(|e| panic!("{}", e.render("t", t)));
    assert_eq!(s.name, "stencil");
    assert!(s.notes.iter().any(|n| n.message.contains("has no `name`")));
}

#[test]
fn values_of_the_wrong_shape_are_set_aside_not_planned() {
    // a problem that is not a table
    let t = "[kernel]\nname = \"k\"\nop = \"gemm\"\ndtypes = [\"bf16\"]\nproblem = 3\n[backends]\ntargets = [\"sm_80\"]\n";
    let s = parse_spec(t, Kb::builtin()).unwrap_or_else(|e| panic!("{}", e.render("t", t)));
    let n: Vec<&str> = s.notes.iter().map(|n| n.message.as_str()).collect();
    assert!(
        n.iter().any(|m| m.contains("`kernel.problem` set aside")),
        "{n:#?}"
    );
}
