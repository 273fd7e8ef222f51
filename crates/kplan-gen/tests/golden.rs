//! The committed `include/kplan_portability.h` is `kplan header` for every backend; this test
//! regenerates it and fails on any difference (`UPDATE_GOLDEN=1` rewrites it).

use std::path::PathBuf;

#[test]
fn committed_header_is_up_to_date() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../include/kplan_portability.h");
    let want = kplan_gen::render_header(&kplan_gen::HeaderConfig::all());
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run with UPDATE_GOLDEN=1",
            path.display()
        )
    });
    assert!(
        have == want,
        "{} is stale: run `UPDATE_GOLDEN=1 cargo test -p kplan-gen`",
        path.display()
    );
}
