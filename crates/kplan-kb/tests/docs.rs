//! docs/targets.md is generated from the knowledge base. This test regenerates it and fails
//! when the committed copy differs; `UPDATE_GOLDEN=1 cargo test -p kplan-kb --test docs`
//! rewrites it.

use kplan_kb::{render, Kb};
use std::path::PathBuf;

#[test]
fn targets_md_is_up_to_date() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/targets.md");
    let fresh = render::targets_markdown(Kb::builtin());
    assert!(fresh.starts_with("<!-- @generated"));
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is stale: run `UPDATE_GOLDEN=1 cargo test -p kplan-kb --test docs` and commit it",
        path.display()
    );
}
