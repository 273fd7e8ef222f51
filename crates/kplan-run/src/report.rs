//! Renders a committed GPU run (`bench/results/*.json`, written by `bench/run-gpu.sh`) as the
//! Markdown table of docs/bench.md and the bar chart docs/bench.svg. Every figure comes from the
//! JSON; a test regenerates both files and diffs them.

use serde_json::Value;
use std::fmt::Write;

/// One row of the table: a kernel case with kplan's default and best configuration and the
/// anchors of the same run.
#[derive(Debug, Clone)]
pub struct Row {
    pub kernel: String,
    pub dtype: String,
    pub shape: String,
    pub default_config: String,
    pub default_gbs: f64,
    /// The default configuration inside a CUDA graph (launch cost excluded), and that cost.
    pub default_graph_gbs: Option<f64>,
    pub default_overhead_us: Option<f64>,
    pub best_config: String,
    pub best_gbs: f64,
    pub peak_gbs: Option<f64>,
    pub copy_gbs: Option<f64>,
    /// A copy of the case's own bytes timed as the kernel is (one launch, flush, events).
    pub copy_same_gbs: Option<f64>,
    /// kplan's default and Triton timed in alternating rounds (bench/anchors.py): the median,
    /// lowest and highest per-round kplan / Triton speed ratio, and the rounds.
    pub interleaved: Option<(f64, f64, f64, u64)>,
    pub torch_gbs: Option<f64>,
    pub triton_gbs: Option<f64>,
    /// The default configuration built from kernels/ through CuPy and timed by bench/anchors.py
    /// like torch and Triton (do_bench; graph).
    pub kplan_dobench_gbs: Option<f64>,
    pub kplan_dobench_graph_gbs: Option<f64>,
    pub triton_graph_gbs: Option<f64>,
    pub checked: bool,
}

/// A case's goal: fraction of the copy bandwidth measured in the same run, and minimum
/// speed-ups over kplan's Triton kernel and over torch eager (each optional).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Goal {
    pub frac_copy: Option<f64>,
    pub vs_triton: Option<f64>,
    pub vs_torch: Option<f64>,
}

impl Goal {
    fn describe(&self) -> String {
        let mut v = Vec::new();
        if let Some(f) = self.frac_copy {
            v.push(format!(">= {:.0}% copy", f * 100.0));
        }
        if let Some(x) = self.vs_triton {
            v.push(format!(">= {x:.1}x Triton"));
        }
        if let Some(x) = self.vs_torch {
            v.push(format!(">= {x:.1}x torch"));
        }
        v.join(", ")
    }
}

impl Row {
    /// The goal for this case, judged on the default configuration.
    pub fn goal(&self) -> Option<Goal> {
        let cols: usize = self
            .shape
            .split('x')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let none = Goal {
            frac_copy: None,
            vs_triton: None,
            vs_torch: None,
        };
        match (self.kernel.as_str(), self.dtype.as_str()) {
            ("reduce_sum", _) => Some(Goal {
                vs_torch: Some(1.0),
                ..none
            }),
            ("add", "bf16") => Some(Goal {
                frac_copy: Some(0.97),
                ..none
            }),
            ("softmax" | "rmsnorm", "bf16") => Some(Goal {
                frac_copy: (cols >= 4096).then_some(0.92),
                vs_triton: Some(1.0),
                ..none
            }),
            ("quantize_fp8", "bf16") => Some(Goal {
                frac_copy: Some(0.90),
                ..none
            }),
            _ => None,
        }
    }

    /// The goal's parts this row misses, each with by how much; None when there is no goal.
    pub fn misses(&self) -> Option<Vec<String>> {
        let g = self.goal()?;
        let mut m = Vec::new();
        if !self.checked {
            m.push("output not checked against the reference".to_string());
        }
        if let Some(f) = g.frac_copy {
            match self.copy_gbs {
                Some(c) if self.default_gbs / c >= f => {}
                Some(c) => m.push(format!(
                    "{:.1}% of copy against {:.0}% ({:.1} points short){}",
                    100.0 * self.default_gbs / c,
                    f * 100.0,
                    100.0 * (f - self.default_gbs / c),
                    self.copy_same_gbs
                        .map(|cs| format!(
                            " (a copy of the same bytes, timed the same way: {cs:.0} GB/s = {:.1}% of copy; the kernel reaches {:.1}% of it)",
                            100.0 * cs / c,
                            100.0 * self.default_gbs / cs
                        ))
                        .unwrap_or_default()
                )),
                None => m.push("no copy bandwidth measured".into()),
            }
        }
        for (what, want, anchor) in [
            ("Triton", g.vs_triton, self.triton_gbs),
            ("torch eager", g.vs_torch, self.torch_gbs),
        ] {
            if let Some(x) = want {
                match anchor {
                    Some(a) if self.default_gbs / a >= x => {}
                    Some(a) => m.push(format!(
                        "{:.3}x {what} against {x:.1}x ({:.1}% slower){}",
                        self.default_gbs / a,
                        100.0 * (1.0 - self.default_gbs / a),
                        match (what, self.interleaved) {
                            ("Triton", Some((med, lo, hi, n))) => format!(
                                " (interleaved do_bench rounds: {med:.3}x, {lo:.3}x to {hi:.3}x over {n} rounds)"
                            ),
                            _ => String::new(),
                        }
                    )),
                    None => m.push(format!("no {what} anchor in the run")),
                }
            }
        }
        Some(m)
    }
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Collects the table rows from a run document.
pub fn rows(doc: &Value) -> Vec<Row> {
    let bench = &doc["bench"];
    let peak = f(&bench["peak_gbs"]);
    let copy = f(&bench["copy_gbs"]);
    let empty = Vec::new();
    let recs = bench["records"].as_array().unwrap_or(&empty);
    let anchors = doc["anchors"]["records"].as_array().unwrap_or(&empty);
    let anchor_field = |imp: &str, k: &str, d: &str, s: &str, field: &str| -> Option<f64> {
        anchors
            .iter()
            .find(|a| a["impl"] == imp && a["kernel"] == k && a["dtype"] == d && a["shape"] == s)
            .and_then(|a| f(&a[field]))
    };
    let anchor = |imp: &str, k: &str, d: &str, s: &str| anchor_field(imp, k, d, s, "gbs");
    let mut out: Vec<Row> = Vec::new();
    for r in recs {
        let (k, d, s) = (
            r["kernel"].as_str().unwrap_or(""),
            r["dtype"].as_str().unwrap_or(""),
            r["shape"].as_str().unwrap_or(""),
        );
        let gbs = f(&r["gbs"]).unwrap_or(0.0);
        let cfg = r["config"].as_str().unwrap_or("").to_string();
        let ok = r["output_checked"].as_bool().unwrap_or(false);
        if let Some(row) = out
            .iter_mut()
            .find(|x| x.kernel == k && x.dtype == d && x.shape == s)
        {
            if ok && gbs > row.best_gbs {
                row.best_gbs = gbs;
                row.best_config = cfg.clone();
            }
            if r["default"].as_bool().unwrap_or(false) {
                row.default_config = cfg;
                row.default_gbs = gbs;
                row.default_graph_gbs = f(&r["graph_gbs"]);
                row.default_overhead_us = f(&r["launch_overhead_ms"]).map(|m| m * 1e3);
                row.copy_same_gbs = f(&r["copy_same_gbs"]);
                row.checked = ok;
            }
            continue;
        }
        let is_default = r["default"].as_bool().unwrap_or(false);
        out.push(Row {
            kernel: k.into(),
            dtype: d.into(),
            shape: s.into(),
            default_config: if is_default {
                cfg.clone()
            } else {
                String::new()
            },
            default_gbs: if is_default { gbs } else { 0.0 },
            default_graph_gbs: if is_default { f(&r["graph_gbs"]) } else { None },
            default_overhead_us: if is_default {
                f(&r["launch_overhead_ms"]).map(|m| m * 1e3)
            } else {
                None
            },
            best_config: cfg,
            best_gbs: if ok { gbs } else { 0.0 },
            peak_gbs: peak,
            copy_gbs: copy,
            copy_same_gbs: f(&r["copy_same_gbs"]),
            interleaved: anchors
                .iter()
                .find(|a| {
                    a["impl"] == "interleaved"
                        && a["kernel"] == k
                        && a["dtype"] == d
                        && a["shape"] == s
                })
                .and_then(|a| {
                    // ratio_* are Triton time / kplan time: kplan's speed over Triton's
                    Some((
                        f(&a["ratio_median"])?,
                        f(&a["ratio_min"])?,
                        f(&a["ratio_max"])?,
                        a["rounds"].as_u64()?,
                    ))
                }),
            torch_gbs: anchor("torch", k, d, s),
            triton_gbs: anchor("triton", k, d, s),
            kplan_dobench_gbs: anchor("kplan", k, d, s),
            kplan_dobench_graph_gbs: anchor_field("kplan", k, d, s, "graph_gbs"),
            triton_graph_gbs: anchor_field("triton", k, d, s, "graph_gbs"),
            checked: ok,
        });
    }
    out
}

fn pct(x: f64, p: Option<f64>) -> String {
    p.map(|p| format!("{:.1}%", 100.0 * x / p))
        .unwrap_or_else(|| "-".into())
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into())
}

/// docs/bench.md.
pub fn render_markdown(doc: &Value, source: &str) -> String {
    let bench = &doc["bench"];
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<!-- @generated by `cargo xtask generate` from {source}; do not edit -->"
    );
    let _ = writeln!(s, "# Reference kernels on real GPUs\n");
    let _ = writeln!(
        s,
        "Measured by `bench/run-gpu.sh` on {} (nvidia-smi: {}; CUDA driver API {}, {} SMs), {} to {}; every figure below is read from [{source}](../{source}).",
        bench["device"].as_str().unwrap_or("?"),
        doc["machine"]["nvidia_smi"].as_str().unwrap_or("?"),
        bench["driver"].as_str().unwrap_or("?"),
        bench["sm_count"],
        doc["started"].as_str().unwrap_or("?"),
        doc["finished"].as_str().unwrap_or("?"),
    );
    let _ = writeln!(
        s,
        "Timing: CUDA events around each launch, L2 flushed (a {} MB memset) before every run, median of {} runs after {} warm-up launches; GB/s counts each input read once and each output written once. Peak: {} GB/s (KB device `{}`); device-to-device copy measured in the same run: {:.0} GB/s. Anchors: {}, torch {}, Triton {}.\n",
        bench["flush_bytes"].as_u64().unwrap_or(0) >> 20,
        bench["reps"],
        bench["warmup"],
        opt(f(&bench["peak_gbs"])),
        bench["kb_device"].as_str().unwrap_or("-"),
        f(&bench["copy_gbs"]).unwrap_or(0.0),
        doc["anchors"]["timing"].as_str().unwrap_or("-"),
        doc["anchors"]["torch"].as_str().unwrap_or("-"),
        doc["anchors"]["triton"].as_str().unwrap_or("-"),
    );
    let _ = writeln!(
        s,
        "## Correctness (`kplan verify --backend cuda`, same run)\n"
    );
    let _ = writeln!(s, "| kernel | status | runs | failures | configurations |");
    let _ = writeln!(s, "|---|---|---:|---:|---|");
    if let Some(v) = doc["verify"].as_object() {
        for (k, r) in v {
            let configs = r["configs"]
                .as_array()
                .map(|a| a.len().to_string())
                .unwrap_or_else(|| "-".into());
            let runs = r["runs"]
                .as_u64()
                .or(r["cases"].as_u64())
                .map(|x| x.to_string())
                .unwrap_or_else(|| "-".into());
            let fails = r["failures"]
                .as_u64()
                .or(r["failed"].as_u64())
                .map(|x| x.to_string())
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "| {k} | {} | {runs} | {fails} | {configs} |",
                r["status"].as_str().unwrap_or("?")
            );
        }
    }
    let _ = writeln!(s, "\n## Bandwidth (GB/s)\n");
    // the same-size copy column only for runs that measured it
    let same = rows(doc).iter().any(|r| r.copy_same_gbs.is_some());
    let _ = writeln!(
        s,
        "`default` is the configuration kernels/tiles.toml chooses, and the goals are judged on it; `best` the fastest configuration timed in the run (`kplan bench --alternatives`). `graph`: the default configuration's bandwidth inside a CUDA graph of {} (flush, launch) pairs less the flushes alone, i.e. without the per-launch cost; `launch`: the event-timed median minus the graph time per launch. `% copy`: of the device-to-device copy of the same run.{} Goals: the issue's targets.\n",
        doc["bench"]["records"][0]["graph_launches"],
        if same {
            " `% same-size copy`: of a copy of the case's own bytes (half read, half written) timed as the kernel is, one launch after an L2 flush, which counts the launch and the ramp of a transfer this size."
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "| kernel | dtype | shape | default | GB/s | % copy |{} graph GB/s | launch (us) | best | GB/s | torch | Triton | default / torch | default / Triton | goal | met |",
        if same { " % same-size copy |" } else { "" }
    );
    let _ = writeln!(
        s,
        "|---|---|---|---|---:|---:|{}---:|---:|---|---:|---:|---:|---:|---:|---|---|",
        if same { "---:|" } else { "" }
    );
    let ratio = |a: f64, b: Option<f64>| {
        b.map(|b| format!("{:.2}x", a / b))
            .unwrap_or_else(|| "-".into())
    };
    for r in rows(doc) {
        let (goal, met) = match (r.goal(), r.misses()) {
            (Some(g), Some(m)) => (
                g.describe(),
                if m.is_empty() { "yes" } else { "**no**" }.to_string(),
            ),
            _ => ("-".to_string(), "-".to_string()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | `{}` | {:.0} | {} |{} {} | {} | `{}` | {:.0} | {} | {} | {} | {} | {} | {} |",
            r.kernel,
            r.dtype,
            r.shape,
            r.default_config,
            r.default_gbs,
            pct(r.default_gbs, r.copy_gbs),
            if same {
                format!(" {} |", pct(r.default_gbs, r.copy_same_gbs))
            } else {
                String::new()
            },
            opt(r.default_graph_gbs),
            r.default_overhead_us
                .map(|u| format!("{u:.1}"))
                .unwrap_or_else(|| "-".into()),
            r.best_config,
            r.best_gbs,
            opt(r.torch_gbs),
            opt(r.triton_gbs),
            ratio(r.default_gbs, r.torch_gbs),
            ratio(r.default_gbs, r.triton_gbs),
            goal,
            met
        );
    }
    let _ = writeln!(s, "\n### One timing method for every implementation\n");
    let _ = writeln!(
        s,
        "bench/anchors.py built kplan's default configuration of each case from kernels/ (CuPy's NVRTC) and timed it exactly as torch and Triton: `do_bench` (events, L2 cleared) and the CUDA-graph method above ({}).\n",
        doc["anchors"]["graph_timing"].as_str().unwrap_or("-")
    );
    let _ = writeln!(
        s,
        "| kernel | dtype | shape | kplan do_bench | Triton do_bench | kplan / Triton | kplan graph | Triton graph | kplan / Triton (graph) |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|---:|");
    for r in rows(doc) {
        if r.kplan_dobench_gbs.is_none() || r.triton_gbs.is_none() {
            continue;
        }
        let k = r.kplan_dobench_gbs.unwrap_or(0.0);
        let kg = r.kplan_dobench_graph_gbs.unwrap_or(0.0);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} | {} | {} | {:.0} | {} | {} |",
            r.kernel,
            r.dtype,
            r.shape,
            k,
            opt(r.triton_gbs),
            ratio(k, r.triton_gbs),
            kg,
            opt(r.triton_graph_gbs),
            ratio(kg, r.triton_graph_gbs),
        );
    }
    let spread: Vec<Value> = doc["anchors"]["records"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|r| r["impl"] == "interleaved" && r["ratio_median"].is_number())
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if !spread.is_empty() {
        let _ = writeln!(s, "\n### Run-to-run spread\n");
        let _ = writeln!(
            s,
            "bench/anchors.py timed kplan's default configuration and kplan's Triton kernel again on one input in {} alternating rounds (`do_bench` each, kplan first in even rounds). `spread`: slowest over fastest round of one implementation, less 1; `kplan / Triton`: Triton's time over kplan's per round (above 1: kplan faster), the median and the range. Differences within the range are not resolved by this timing.\n",
            spread[0]["rounds"]
        );
        let _ = writeln!(
            s,
            "| kernel | dtype | shape | kplan GB/s | Triton GB/s | kplan spread | Triton spread | kplan / Triton | range |"
        );
        let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|---|");
        for r in &spread {
            let num = |k: &str| f(&r[k]).unwrap_or(f64::NAN);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.0} | {:.0} | {:.1}% | {:.1}% | {:.3}x | {:.3}x to {:.3}x |",
                r["kernel"].as_str().unwrap_or("?"),
                r["dtype"].as_str().unwrap_or("?"),
                r["shape"].as_str().unwrap_or("?"),
                num("kplan_gbs"),
                num("triton_gbs"),
                100.0 * num("kplan_spread"),
                100.0 * num("triton_spread"),
                num("ratio_median"),
                num("ratio_min"),
                num("ratio_max"),
            );
        }
    }
    let _ = writeln!(s, "\n![bandwidth per case](bench.svg)\n");
    let _ = writeln!(s, "## Goals missed\n");
    let mut any = false;
    for r in rows(doc) {
        let Some(m) = r.misses() else { continue };
        if !m.is_empty() {
            any = true;
            let _ = writeln!(
                s,
                "- {} {} {} (`{}`): {}",
                r.kernel,
                r.dtype,
                r.shape,
                r.default_config,
                m.join("; ")
            );
        }
    }
    if !any {
        let _ = writeln!(s, "None.");
    }
    let _ = writeln!(
        s,
        "\nWhat limits the kernels that miss a goal is read from the Nsight Compute profile in docs/verify.md (taken on the same kind of machine with `bench/profile-gpu.sh`), not from this table."
    );
    s
}

/// docs/bench.svg: horizontal bars per case (kplan best, torch, Triton) against the peak.
pub fn render_svg(doc: &Value, source: &str) -> String {
    let rows = rows(doc);
    let peak = rows.first().and_then(|r| r.peak_gbs).unwrap_or(5000.0);
    let (left, width, bar, gap) = (230.0, 520.0, 9.0, 10.0);
    let group = 3.0 * bar + gap;
    let height = 60.0 + group * rows.len() as f64 + 40.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"11\">",
        left + width + 90.0
    );
    let _ = writeln!(
        s,
        "<!-- @generated from {source} by `cargo xtask generate`; do not edit -->"
    );
    let _ = writeln!(
        s,
        "<text x=\"10\" y=\"18\" font-size=\"13\">GB/s on {} (peak {:.0} GB/s, dashed); bars: kplan (best config), torch eager, Triton</text>",
        doc["bench"]["device"].as_str().unwrap_or("?"),
        peak
    );
    let x = |g: f64| left + width * (g / peak).min(1.2) / 1.2;
    let _ = writeln!(
        s,
        "<line x1=\"{0:.1}\" y1=\"30\" x2=\"{0:.1}\" y2=\"{1:.1}\" stroke=\"#555\" stroke-dasharray=\"4,3\"/>",
        x(peak),
        height - 30.0
    );
    let colors = ["#1f77b4", "#ff7f0e", "#2ca02c"];
    for (i, r) in rows.iter().enumerate() {
        let y0 = 40.0 + group * i as f64;
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{} {} {}</text>",
            left - 6.0,
            y0 + 1.6 * bar,
            r.kernel,
            r.dtype,
            r.shape
        );
        for (j, v) in [Some(r.best_gbs), r.torch_gbs, r.triton_gbs]
            .iter()
            .enumerate()
        {
            if let Some(v) = v {
                let y = y0 + bar * j as f64;
                let _ = writeln!(
                    s,
                    "<rect x=\"{left}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\">{v:.0}</text>",
                    x(*v) - left,
                    bar - 1.0,
                    colors[j],
                    x(*v) + 3.0,
                    y + bar - 2.0
                );
            }
        }
    }
    let _ = writeln!(s, "</svg>");
    s
}
