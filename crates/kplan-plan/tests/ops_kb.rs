//! The operation knowledge base (kplan-kb's ops.toml) and the spec's op classes stay in step:
//! every op class has an entry, every entry is an op class, and each entry carries what the plan
//! needs (libraries per backend, algorithms, at least two op-specific risks, all sourced).

use kplan_kb::Kb;
use kplan_plan::spec::Op;

#[test]
fn every_op_class_has_knowledge_and_nothing_else_does() {
    let kb = Kb::builtin();
    let mut ids: Vec<&str> = kb
        .ops
        .iter()
        .filter(|o| !o.knowledge_only)
        .map(|o| o.id.as_str())
        .collect();
    ids.sort_unstable();
    let mut want: Vec<&str> = Op::ALL.iter().map(|o| o.as_str()).collect();
    want.sort_unstable();
    assert_eq!(ids, want);
    // A knowledge-only entry (no work model) is no op class and no alias of one: a spec naming
    // it would otherwise get the class's model.
    for o in kb.ops.iter().filter(|o| o.knowledge_only) {
        for n in std::iter::once(&o.id).chain(o.aliases.iter()) {
            assert!(Op::parse(n).is_none(), "{n} is an op class");
            assert!(
                !Op::ALIASES.iter().any(|a| a.0 == n.as_str()),
                "{n} is an op alias"
            );
        }
    }
}

#[test]
fn each_op_names_libraries_algorithms_and_risks_with_sources() {
    let kb = Kb::builtin();
    for o in &kb.ops {
        if o.id == "custom" {
            continue;
        }
        assert!(!o.algorithm.is_empty(), "{}: no algorithm", o.id);
        let fwd = o
            .risk
            .iter()
            .filter(|r| r.direction.as_deref() != Some("backward"))
            .count();
        assert!(
            fwd >= 2,
            "{}: fewer than two op-specific forward risks",
            o.id
        );
        assert!(
            !o.library.is_empty(),
            "{}: no library (name the baseline)",
            o.id
        );
        for v in ["nvidia", "amd"] {
            assert!(
                o.libraries_for(v).next().is_some() || o.id == "stencil",
                "{}: no library for {v}",
                o.id
            );
        }
        for r in &o.risk {
            assert!(kb.source(&r.source).is_some(), "{}: {} source", o.id, r.id);
        }
    }
    // Risk ids are unique across op classes (one id, one hazard).
    let mut all: Vec<&str> = kb
        .ops
        .iter()
        .flat_map(|o| o.risk.iter().map(|r| r.id.as_str()))
        .collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n);
}

#[test]
fn every_risk_condition_parses_and_reads_only_known_names() {
    use kplan_plan::decide::when;
    let kb = Kb::builtin();
    let problem_keys: Vec<&str> = Op::ALL
        .iter()
        .flat_map(|o| o.problem_keys().0.iter().copied())
        .collect();
    for o in &kb.ops {
        let conditions = o
            .risk
            .iter()
            .filter_map(|r| r.when.as_ref().map(|w| (r.id.clone(), w)))
            .chain(o.library.iter().filter_map(|l| {
                l.when
                    .as_ref()
                    .map(|w| (format!("{} library {}", o.id, l.name), w))
            }));
        for (id, w) in conditions {
            let c = when::parse(w).unwrap_or_else(|e| panic!("{id}: `{w}`: {e}"));
            let mut names = Vec::new();
            c.names(&mut names);
            for (n, k) in names {
                let known = match k {
                    'n' => {
                        problem_keys.contains(&n.as_str())
                            || when::DERIVED_NUMS.contains(&n.as_str())
                    }
                    'f' => when::FLAGS.contains(&n.as_str()),
                    _ => when::TEXTS.contains(&n.as_str()),
                };
                assert!(
                    known,
                    "{id}: `{n}` ({k}) in `{w}` is not a name conditions can read"
                );
            }
        }
    }
}

#[test]
fn a_library_with_a_condition_says_what_it_lacks() {
    let kb = Kb::builtin();
    for o in &kb.ops {
        for l in &o.library {
            if l.when.is_some() {
                assert!(
                    l.limit.as_deref().is_some_and(|t| !t.is_empty()),
                    "{}: library {} has `when` but no `limit`",
                    o.id,
                    l.name
                );
            }
        }
    }
}
