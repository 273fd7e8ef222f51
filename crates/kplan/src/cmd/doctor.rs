//! `kplan doctor`: what each backend's toolchain discovery finds on this machine, the versions,
//! and how to install what is missing. The discovery is the one `kplan build` and `kplan verify`
//! use (`kplan_build::toolchain`).

use super::{write_output, Ctx};
use kplan_build::toolchain::{self, BackendSurvey};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    /// `{"backends": [{"backend", "title", "can_build", "components": [...]}]}`
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Time limit in seconds for each `--version` query.
    #[arg(long, default_value_t = 20, value_name = "SECS")]
    pub timeout: u64,
}

pub fn run(ctx: &Ctx, args: Args) -> anyhow::Result<u8> {
    anyhow::ensure!(args.timeout > 0, "--timeout must be at least 1 second");
    let progress = ctx
        .out
        .progress("looking for toolchains".into(), args.format == Format::Json);
    let survey = toolchain::survey(Duration::from_secs(args.timeout));
    drop(progress);
    let text = match args.format {
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({ "backends": survey }))? + "\n"
        }
        Format::Human => human(&survey, ctx.out.stdout_color(false)),
    };
    write_output(None, &text)?;
    Ok(0)
}

fn human(survey: &[BackendSurvey], color: bool) -> String {
    let (ok, bad, bold, reset) = if color {
        ("\x1b[32m", "\x1b[33m", "\x1b[1m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    let mut s = String::new();
    for b in survey {
        let state = if b.can_build {
            format!("{ok}can build{reset}")
        } else {
            format!("{bad}cannot build{reset}")
        };
        s.push_str(&format!(
            "{bold}{}{reset} [{}]: {state}\n",
            b.title, b.backend
        ));
        for c in &b.components {
            match (&c.path, &c.problem) {
                (Some(p), None) => {
                    s.push_str(&format!(
                        "  {ok}found{reset}    {}: {}",
                        c.name,
                        p.display()
                    ));
                    if let Some(v) = &c.found_via {
                        s.push_str(&format!(" (via {v})"));
                    }
                    if let Some(v) = &c.version {
                        s.push_str(&format!(", {v}"));
                    }
                    s.push('\n');
                }
                (p, Some(problem)) => {
                    s.push_str(&format!("  {bad}missing{reset}  {}: {problem}", c.name));
                    if let Some(p) = p {
                        s.push_str(&format!(" ({})", p.display()));
                    }
                    s.push_str(&format!("; needed for {}\n", c.needed_for));
                    if let Some(i) = c.install {
                        s.push_str(&format!("           install: {i}\n"));
                    }
                }
                (None, None) => {}
            }
        }
        s.push('\n');
    }
    s.push_str("Overrides: KPLAN_NVCC, KPLAN_NVRTC, KPLAN_HIP_CLANG, KPLAN_HIP_PATH, KPLAN_PYTHON, KPLAN_CXX (docs/install.md).\n");
    s
}
