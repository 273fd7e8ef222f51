//! `kplan scan`, `kplan rules`, `kplan explain`: the portability scanner's verbs.

use super::{strict, with_output, write_output, Ctx};
use anyhow::Context;
use kplan_scan::{render, Severity};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// rustc-style: each finding with its source line and a caret.
    Human,
    /// One line a finding: `path:line:col: severity[rule] message`.
    Concise,
    Json,
    Sarif,
    Github,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Note,
    Never,
}

#[derive(clap::Args)]
pub struct Args {
    /// Files or directories to scan (directories are walked respecting .gitignore).
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Targets in scope, comma-separated (architectures, devices or aliases: sm_90a,gfx942).
    /// Default: `targets` in kplan.toml, else sm_90a,gfx942,gfx1100.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub targets: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Print the number of findings per rule instead of the findings (human, concise or json).
    #[arg(long)]
    pub statistics: bool,
    /// Run only these rules, comma-separated (`all` for every rule); replaces `select` and
    /// `ignore` of kplan.toml, as in ruff.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub select: Vec<String>,
    /// Do not run these rules, comma-separated; added to `ignore` of kplan.toml.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub ignore: Vec<String>,
    /// Exit with code 1 when a finding at or above this severity is reported.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// List the NVIDIA-specific features used, with counts and locations, instead of findings.
    #[arg(long)]
    pub inventory: bool,
    /// Configuration file for every scanned path (default: for each file, the kplan.toml
    /// nearest to it: its directory, then each parent).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit with code 1 when any file is skipped (unreadable, binary, not a regular file), as
    /// KPLAN_STRICT=1 does.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Human,
    Json,
}

#[derive(clap::Args)]
pub struct RulesArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    pub format: ListFormat,
}

#[derive(clap::Args)]
pub struct ExplainArgs {
    /// Rule id (see `kplan rules`).
    #[arg(value_name = "RULE")]
    pub rule: String,
    /// Output format: human (the rule's page, Markdown) or json (the rule as `kplan rules
    /// --format json` lists it, with the page as `markdown`).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    pub format: ListFormat,
}

/// Checks `--select` / `--ignore` ids against the registry (`all` and `*` stand for every rule).
fn check_rule_ids(flag: &str, ids: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for id in ids.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if id != "all" && id != "*" {
            if let Some(sugg) = kplan_scan::check_rule_id(id) {
                let hint = sugg
                    .map(|x| format!(" (did you mean `{x}`?)"))
                    .unwrap_or_default();
                anyhow::bail!("{flag}: unknown rule `{id}`{hint}; `kplan rules` lists them");
            }
        }
        out.push(id.to_string());
    }
    Ok(out)
}

pub fn run(ctx: &Ctx, args: Args) -> anyhow::Result<u8> {
    let select = check_rule_ids("--select", &args.select)?;
    let ignore = check_rule_ids("--ignore", &args.ignore)?;
    if args.statistics && matches!(args.format, Format::Sarif | Format::Github) {
        anyhow::bail!(
            "--statistics prints counts per rule: use it with --format human, concise or json"
        );
    }
    let adjust = |c: &mut kplan_scan::Config| c.apply_rule_selection(&select, &ignore);
    let given = match args.config.as_deref() {
        Some(p) => Some(kplan_scan::load_config(p)?),
        None => None,
    };
    if args.inventory {
        let inv = kplan_scan::inventory_tree(ctx.kb(), &args.targets, given, &args.paths, &adjust)?;
        with_output(args.output.as_deref(), |w| match args.format {
            Format::Json | Format::Sarif | Format::Github => render::inventory_json_to(&inv, w),
            Format::Human | Format::Concise => {
                w.write_all(render::inventory_human(&inv).as_bytes())
            }
        })
        .context("cannot write the report")?;
        return Ok(0);
    }
    let machine = matches!(args.format, Format::Json | Format::Sarif);
    let progress = ctx.out.progress_bar("scanning files".into(), 0, machine);
    let res = kplan_scan::scan_tree_progress(
        ctx.kb(),
        &args.targets,
        given,
        &args.paths,
        &adjust,
        &|done, total| progress.set(done, total),
    )?;
    drop(progress);
    let quiet = ctx.out.quiet;
    if !quiet {
        for n in &res.skipped {
            eprintln!(
                "warning: {}: {}",
                kplan_scan::display_path(&n.path),
                n.message
            );
        }
    }
    let skips = skip_summary(&res.skipped);
    if let (Some(line), false) = (&skips, quiet) {
        eprintln!("warning: {line}");
    }
    let color = ctx.out.stdout_color(args.output.is_some());
    with_output(args.output.as_deref(), |w| match args.format {
        Format::Human | Format::Concise if args.statistics => {
            w.write_all(render::statistics_human(&res, &kplan_scan::all_rules(), !quiet).as_bytes())
        }
        Format::Json if args.statistics => w.write_all(render::statistics_json(&res).as_bytes()),
        Format::Human => render::human_styled_to(&res, w, color, !quiet),
        Format::Concise => render::concise_to(&res, w, color, !quiet),
        Format::Json => render::json_to(&res, w),
        Format::Sarif => {
            render::sarif_to(&res, &kplan_scan::all_rules(), env!("CARGO_PKG_VERSION"), w)
        }
        Format::Github => render::github_to(&res, w),
    })
    .context("cannot write the report")?;
    let threshold = match args.fail_on {
        FailOn::Error => Some(Severity::Error),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Note => Some(Severity::Note),
        FailOn::Never => None,
    };
    let fail = threshold.is_some_and(|t| res.findings.iter().any(|f| f.severity >= t));
    if !fail && skips.is_some() && strict(args.strict) {
        eprintln!("error: files were skipped and --strict (or KPLAN_STRICT=1) is set");
        return Ok(1);
    }
    Ok(u8::from(fail))
}

/// `N files skipped (K reason, ...)`, reasons counted, or None when nothing was skipped.
fn skip_summary(skipped: &[kplan_scan::FileNote]) -> Option<String> {
    if skipped.is_empty() {
        return None;
    }
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for n in skipped {
        // "cannot read: Permission denied (os error 13)" -> "cannot read"
        let r = n.message.split(':').next().unwrap_or(&n.message);
        let r = r
            .split(" (")
            .next()
            .unwrap_or(r)
            .trim_end_matches(", skipped");
        *reasons.entry(r.to_string()).or_default() += 1;
    }
    let list: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    Some(format!(
        "{} skipped ({})",
        if skipped.len() == 1 {
            "1 file".to_string()
        } else {
            format!("{} files", skipped.len())
        },
        list.join(", ")
    ))
}

pub fn rules(_ctx: &Ctx, args: RulesArgs) -> anyhow::Result<u8> {
    let rules = kplan_scan::all_rules();
    let text = match args.format {
        ListFormat::Json => {
            let mut s = serde_json::to_string_pretty(&rules)?;
            s.push('\n');
            s
        }
        ListFormat::Human => {
            let w = rules.iter().map(|r| r.id.len()).max().unwrap_or(0);
            let mut s = String::new();
            for r in &rules {
                s.push_str(&format!(
                    "{:<w$}  {:<7}  {:<6}  {}\n",
                    r.id,
                    r.severity.as_str(),
                    r.lang.as_str(),
                    r.summary
                ));
            }
            s
        }
    };
    write_output(None, &text)?;
    Ok(0)
}

pub fn explain(_ctx: &Ctx, args: ExplainArgs) -> anyhow::Result<u8> {
    match kplan_scan::rule(&args.rule) {
        Some(r) => {
            let text = match args.format {
                ListFormat::Human => r.doc_markdown(),
                ListFormat::Json => {
                    let mut v = serde_json::to_value(r)?;
                    if let Some(o) = v.as_object_mut() {
                        o.insert("markdown".into(), r.doc_markdown().into());
                    }
                    serde_json::to_string_pretty(&v)? + "\n"
                }
            };
            write_output(None, &text)?;
            Ok(0)
        }
        None => Err(kplan_scan::ScanError::UnknownRule {
            id: args.rule.clone(),
            suggestion: kplan_scan::check_rule_id(&args.rule).flatten(),
        }
        .into()),
    }
}
