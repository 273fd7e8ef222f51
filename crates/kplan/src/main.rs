//! The `kplan` command line: argument parsing and exit codes. The work lives in the library
//! crates; each verb has one module under `cmd/`.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod cmd;

/// Plan, scan, build and verify GPU kernels that must ship on NVIDIA (CUDA), AMD (ROCm/HIP)
/// and a CPU fallback.
#[derive(Parser)]
#[command(name = "kplan", version, about, long_about = None)]
struct Cli {
    /// Use the knowledge base in DIR (sources.toml, architectures.toml, devices.toml,
    /// features.toml, and optionally measurements.toml) instead of the built-in one.
    #[arg(long, global = true, value_name = "DIR")]
    kb: Option<PathBuf>,
    /// When to colour the output: auto (when writing to a terminal and NO_COLOR is unset),
    /// always, never.
    #[arg(long, global = true, value_enum, default_value_t, value_name = "WHEN")]
    color: cmd::ColorWhen,
    /// Print results only: no warnings, summaries or progress.
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write the backend-agnostic kernel plan for a kernel spec (TOML).
    Plan(cmd::plan::Args),
    /// Find portability hazards in CUDA/HIP/Triton source trees.
    Scan(cmd::scan::Args),
    /// List the scanner's rules.
    Rules(cmd::scan::RulesArgs),
    /// Explain one scanner rule: what, why, example, use instead.
    Explain(cmd::scan::ExplainArgs),
    /// Write the GitHub Actions workflow for a kernel spec's CI matrix (plan section 7).
    Ci(cmd::ci::Args),
    /// Write a kernel project for the plan's strategy: header, kernel skeleton, CPU fallback,
    /// verify harness, build files and CI workflow.
    New(cmd::new::Args),
    /// Write the portability header for a set of targets.
    Header(cmd::header::Args),
    /// Compile a kernel for every target with the real compilers and report resource usage.
    Build(cmd::build::Args),
    /// Run a reference kernel on a backend and check it against the CPU reference.
    Verify(cmd::run::VerifyArgs),
    /// Time a reference kernel on a backend against the hardware's roofline.
    Bench(cmd::run::BenchArgs),
    /// List the knowledge base's targets, or show one.
    Targets(cmd::kb::TargetsArgs),
    /// List the knowledge base's features and where each is available.
    Features(cmd::kb::FeaturesArgs),
    /// List the operation knowledge base's op classes, or show one (libraries, algorithms, risks).
    Ops(cmd::kb::OpsArgs),
    /// Show the compilers and libraries found for each backend, and how to install what is missing.
    Doctor(cmd::doctor::Args),
    /// Serve kplan's verbs as Model Context Protocol tools over stdio, for coding agents.
    Mcp(cmd::mcp::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let out = cmd::Output {
        color: cli.color,
        quiet: cli.quiet,
    };
    let ctx = match cmd::Ctx::new(cli.kb.as_deref(), out) {
        Ok(c) => c,
        Err(e) => return cmd::report(e, out),
    };
    let result = match cli.command {
        Command::Plan(a) => cmd::plan::run(&ctx, a),
        Command::Scan(a) => cmd::scan::run(&ctx, a),
        Command::Rules(a) => cmd::scan::rules(&ctx, a),
        Command::Explain(a) => cmd::scan::explain(&ctx, a),
        Command::Ci(a) => cmd::ci::run(&ctx, a),
        Command::New(a) => cmd::new::run(&ctx, a),
        Command::Header(a) => cmd::header::run(&ctx, a),
        Command::Build(a) => cmd::build::run(&ctx, a),
        Command::Verify(a) => cmd::run::verify(&ctx, a),
        Command::Bench(a) => cmd::run::bench(&ctx, a),
        Command::Targets(a) => cmd::kb::targets(&ctx, a),
        Command::Features(a) => cmd::kb::features(&ctx, a),
        Command::Ops(a) => cmd::kb::ops(&ctx, a),
        Command::Doctor(a) => cmd::doctor::run(&ctx, a),
        Command::Mcp(a) => cmd::mcp::run(&ctx, cli.kb.clone(), a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => cmd::report(e, out),
    }
}
