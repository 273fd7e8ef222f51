//! The output options every verb shares (`--color`, `--quiet`, `--format human`) and scan's
//! `--format concise`, `--statistics`, `--select` / `--ignore` (merged with kplan.toml).

use kplan_test_support::cli::{self, stderr, stdout};
use kplan_test_support::kplan_command;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

fn kplan(args: &[&str], cwd: Option<&Path>, env: &[(&str, &str)]) -> Output {
    let mut c = kplan_command!();
    c.args(args)
        .env_remove("NO_COLOR")
        .envs(env.iter().copied());
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    cli::output(&mut c)
}

fn fixtures() -> PathBuf {
    kplan_test_support::fixtures::dir()
}

fn json_findings(args: &[&str], cwd: Option<&Path>) -> Vec<serde_json::Value> {
    let mut a = vec!["scan", "--format", "json"];
    a.extend_from_slice(args);
    let o = kplan(&a, cwd, &[]);
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["findings"].as_array().unwrap().clone()
}

/// Findings per rule id, from the JSON contract.
fn per_rule(findings: &[serde_json::Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for f in findings {
        *m.entry(f["rule"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    m
}

#[test]
fn concise_is_one_line_per_finding_matching_json() {
    let f = fixtures();
    let p = f.to_str().unwrap();
    let findings = json_findings(&[p], None);
    assert!(findings.len() > 40);
    let o = kplan(&["scan", p, "--format", "concise"], None, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        findings.len() + 1,
        "one line a finding, then the summary"
    );
    for (line, f) in lines.iter().zip(&findings) {
        let want = format!(
            "{}:{}:{}: {}[{}] {}",
            f["path"].as_str().unwrap(),
            f["line"],
            f["column"],
            f["severity"].as_str().unwrap(),
            f["rule"].as_str().unwrap(),
            f["message"].as_str().unwrap().replace('\n', " ")
        );
        assert_eq!(*line, want);
    }
    assert!(lines.last().unwrap().contains(" in "), "summary line last");
    assert!(!text.contains('\x1b'), "no colour into a pipe");
    // --quiet: the findings only
    let q = kplan(&["scan", p, "--format", "concise", "--quiet"], None, &[]);
    assert_eq!(stdout(&q).lines().count(), findings.len());
}

#[test]
fn statistics_count_per_rule_as_json_does() {
    let f = fixtures();
    let p = f.to_str().unwrap();
    let want = per_rule(&json_findings(&[p], None));
    let o = kplan(&["scan", p, "--statistics", "--format", "json"], None, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    let got: BTreeMap<String, usize> = rows
        .iter()
        .map(|r| {
            (
                r["rule"].as_str().unwrap().to_string(),
                r["count"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    assert_eq!(got, want);
    let counts: Vec<u64> = rows.iter().map(|r| r["count"].as_u64().unwrap()).collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "most frequent first"
    );
    // the table: one row a rule ("count  rule  severity  summary"), then the summary line
    let o = kplan(&["scan", p, "--statistics"], None, &[]);
    let text = stdout(&o);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), want.len() + 1);
    for r in &rows[..want.len()] {
        let mut cols = r.split_whitespace();
        let n: usize = cols.next().unwrap().parse().unwrap();
        let rule = cols.next().unwrap();
        assert_eq!(want.get(rule), Some(&n), "{r}");
    }
    let bad = kplan(&["scan", p, "--statistics", "--format", "sarif"], None, &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--statistics"), "{}", stderr(&bad));
}

/// Two rules that fire in the fixture tree, the most frequent first.
fn two_rules(all: &BTreeMap<String, usize>) -> (String, String) {
    let mut v: Vec<(&String, &usize)> = all
        .iter()
        .filter(|(r, _)| !r.starts_with("triton"))
        .collect();
    v.sort_by(|a, b| b.1.cmp(a.1));
    (v[0].0.clone(), v[1].0.clone())
}

#[test]
fn select_and_ignore_on_the_command_line_merge_with_kplan_toml() {
    let f = fixtures();
    let p = f.to_str().unwrap();
    let all = per_rule(&json_findings(&[p], None));
    let (a, b) = two_rules(&all);
    // command line only
    let sel = per_rule(&json_findings(&[p, "--select", &a], None));
    assert_eq!(sel.keys().collect::<Vec<_>>(), [&a]);
    assert_eq!(sel[&a], all[&a]);
    let ign = per_rule(&json_findings(&[p, "--ignore", &format!("{a},{b}")], None));
    assert!(!ign.contains_key(&a) && !ign.contains_key(&b));
    assert_eq!(
        ign.values().sum::<usize>(),
        all.values().sum::<usize>() - all[&a] - all[&b]
    );
    // with a kplan.toml that selects `a` and `b`: the command line's ignore is added to it, its
    // select replaces select and ignore
    let dir = kplan_test_support::tempdir("output-select");
    let tree = dir.path().join("src");
    for r in [&a, &b] {
        let from = f.join(r).join("fire.cu");
        std::fs::create_dir_all(tree.join(r)).unwrap();
        std::fs::copy(&from, tree.join(r).join("fire.cu")).unwrap();
    }
    std::fs::write(
        dir.path().join("kplan.toml"),
        format!("select = [\"{a}\", \"{b}\"]\nignore = [\"{b}\"]\n"),
    )
    .unwrap();
    let cwd = Some(dir.path());
    let base = per_rule(&json_findings(&["src"], cwd));
    assert_eq!(base.keys().collect::<Vec<_>>(), [&a], "kplan.toml alone");
    let more = per_rule(&json_findings(&["src", "--ignore", &a], cwd));
    assert!(
        more.is_empty(),
        "--ignore adds to kplan.toml's ignore: {more:?}"
    );
    let over = per_rule(&json_findings(&["src", "--select", &b], cwd));
    assert_eq!(
        over.keys().collect::<Vec<_>>(),
        [&b],
        "--select replaces select and ignore"
    );
    // a typo is an error with the closest id
    let typo = format!("{a}x");
    let o = kplan(&["scan", p, "--select", &typo], None, &[]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("unknown rule `{typo}`")) && e.contains(&a),
        "{e}"
    );
}

#[test]
fn color_always_never_auto_and_no_color() {
    let f = fixtures();
    let p = f.to_str().unwrap();
    for format in ["human", "concise"] {
        let always = kplan(
            &["scan", p, "--format", format, "--color", "always"],
            None,
            &[],
        );
        assert!(
            stdout(&always).contains("\x1b["),
            "{format}: --color always colours"
        );
        // an explicit --color always wins over NO_COLOR, as no-color.org asks
        let forced = kplan(
            &["scan", p, "--format", format, "--color", "always"],
            None,
            &[("NO_COLOR", "1")],
        );
        assert!(stdout(&forced).contains("\x1b["));
        let never = kplan(
            &["scan", p, "--format", format, "--color", "never"],
            None,
            &[],
        );
        let auto = kplan(&["scan", p, "--format", format], None, &[]);
        assert!(!stdout(&never).contains('\x1b'));
        assert!(
            !stdout(&auto).contains('\x1b'),
            "auto: a pipe gets no colour"
        );
        // the same text once the colour is taken out
        let plain = strip_ansi(&stdout(&always));
        assert_eq!(plain, stdout(&never), "{format}");
    }
    // errors on stderr
    let e = kplan(
        &["--color", "always", "scan", "--select", "nope", p],
        None,
        &[],
    );
    assert!(
        stderr(&e).starts_with("\x1b[1;31merror\x1b[0m: "),
        "{}",
        stderr(&e)
    );
    let e = kplan(&["scan", "--select", "nope", p], None, &[]);
    assert!(stderr(&e).starts_with("error: "));
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\x1b' && it.peek() == Some(&'[') {
            for d in it.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn quiet_drops_warnings_and_summary() {
    let dir = kplan_test_support::tempdir("output-quiet");
    std::fs::write(dir.path().join("blob.cu"), b"\x00\x01binary").unwrap();
    let cu = fixtures().join("full-mask-literal/fire.cu");
    std::fs::copy(&cu, dir.path().join("k.cu")).unwrap();
    let d = dir.path().to_str().unwrap();
    let loud = kplan(&["scan", d], None, &[]);
    assert!(stderr(&loud).contains("warning:"), "{}", stderr(&loud));
    assert!(stdout(&loud).contains(" in 1 file"), "{}", stdout(&loud));
    let quiet = kplan(&["scan", d, "-q"], None, &[]);
    assert_eq!(quiet.status.code(), loud.status.code());
    assert_eq!(stderr(&quiet), "");
    let s = stdout(&quiet);
    assert!(s.contains("full-mask-literal"), "{s}");
    assert!(!s.contains(" in 1 file"), "{s}");
}

#[test]
fn format_human_in_every_verb_with_a_format() {
    let root = kplan_test_support::workspace_root();
    let spec = root.join("examples/rmsnorm.toml");
    let spec = spec.to_str().unwrap();
    let human = kplan(&["plan", spec, "--format", "human"], None, &[]);
    let md = kplan(&["plan", spec, "--format", "md"], None, &[]);
    let default = kplan(&["plan", spec], None, &[]);
    assert_eq!(human.status.code(), Some(0), "{}", stderr(&human));
    assert_eq!(stdout(&human), stdout(&md), "md stays an alias");
    assert_eq!(stdout(&human), stdout(&default));
    assert!(
        stdout(&human).lines().any(|l| l.starts_with("# ")),
        "a Markdown title"
    );
    // -o: the plan in the file, a one-line summary on the terminal (none with --quiet)
    let dir = kplan_test_support::tempdir("output-plan");
    let out = dir.path().join("plan.md");
    let o = kplan(&["plan", spec, "-o", out.to_str().unwrap()], None, &[]);
    assert_eq!(o.status.code(), Some(0));
    // the file is the same plan plus the link to its roofline chart, written beside it
    let file = std::fs::read_to_string(&out).unwrap();
    let chart = "![Roofline per target: the roofline, the expected band at this op's intensity and the measured point where one exists](plan.svg)\n\n";
    assert_eq!(file.replacen(chart, "", 1), stdout(&human));
    assert!(file.contains(chart), "{file}");
    let svg = std::fs::read_to_string(dir.path().join("plan.svg")).unwrap();
    assert!(svg.starts_with("<svg "), "{svg}");
    let e = stderr(&o);
    assert!(
        e.starts_with(&format!(
            "wrote {} and its roofline chart {}: rmsnorm",
            out.display(),
            dir.path().join("plan.svg").display()
        )),
        "{e}"
    );
    assert!(
        e.contains("verdict ") && e.contains("sm_90a") && e.contains(" risks ("),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
    let q = kplan(
        &["plan", spec, "-q", "-o", out.to_str().unwrap()],
        None,
        &[],
    );
    assert_eq!(stderr(&q), "");
    for args in [
        &["targets", "--format", "human"][..],
        &["features", "--format", "human"],
        &["ops", "--format", "human"],
        &["rules", "--format", "human"],
        &["scan", "--format", "human", "--targets", "sm_90a"],
    ] {
        let o = kplan(args, Some(&root.join("include")), &[]);
        assert!(
            o.status.code().is_some_and(|c| c < 2),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    for verb in ["build", "verify", "bench"] {
        let o = kplan(&[verb, "--help"], None, &[]);
        assert!(stdout(&o).contains("human"), "{verb} --help lists human");
    }
}
