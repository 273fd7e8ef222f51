//! `cargo xtask generate [--check] [--only NAME]...`, `cargo xtask list`.

use kplan_test_support::golden::Mode;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask generate [--check] [--only NAME]...\n       cargo xtask list\n\n\
generate   rewrite every generated file from its source (--check: change nothing, exit 1 when one differs)\n\
list       the table of generated files";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("generate") => generate(&args[1..]),
        Some("list") => {
            for g in xtask::TABLE {
                println!("{:<18} {:<42} {}", g.name, g.path, g.from);
            }
            ExitCode::SUCCESS
        }
        Some("-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn generate(args: &[String]) -> ExitCode {
    let mut mode = Mode::Write;
    let mut only: Vec<&'static xtask::Generated> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => mode = Mode::Check,
            "--only" => match it.next().and_then(|n| xtask::entry(n)) {
                Some(g) => only.push(g),
                None => {
                    eprintln!("error: --only takes one of: {}", names());
                    return ExitCode::from(2);
                }
            },
            other => {
                eprintln!("error: unexpected argument `{other}`\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if only.is_empty() {
        only = xtask::TABLE.iter().collect();
    }
    let root = xtask::root();
    let mut clean = true;
    let mut checked = 0;
    let mut written = 0;
    for g in only {
        match xtask::run(&root, g, mode) {
            Ok(r) => {
                checked += r.checked;
                written += r.written.len();
                for p in &r.written {
                    println!("wrote {}", p.display());
                }
                if !r.is_clean() {
                    clean = false;
                    eprint!("{}: {}", g.name, r.describe());
                }
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                return ExitCode::from(2);
            }
        }
    }
    match (mode, clean) {
        (Mode::Check, true) => {
            println!("{checked} generated files up to date");
            ExitCode::SUCCESS
        }
        (Mode::Check, false) => ExitCode::from(1),
        (Mode::Write, _) => {
            println!("{checked} generated files, {written} rewritten");
            ExitCode::SUCCESS
        }
    }
}

fn names() -> String {
    xtask::TABLE
        .iter()
        .map(|g| g.name)
        .collect::<Vec<_>>()
        .join(", ")
}
