//! The plan's roofline chart (section 8) as SVG text: per target the roofline min(peak,
//! intensity x bandwidth), the expected band at the op's intensity and the measured point where
//! one exists, on log-log axes. Written by hand (no plotting crate): the same plan gives the
//! same bytes.

use crate::analysis::Bound;
use crate::model::Plan;
use std::fmt::Write;

const W: f64 = 720.0;
const H: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
/// One colour per target, in order (colour-blind safe, Okabe-Ito).
const COLOURS: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#000000",
];

/// One target's line, band and point, all in TFLOP/s at the op's intensity.
struct Series {
    label: String,
    peak: f64,
    bandwidth_gbs: f64,
    band: Option<(f64, f64)>,
    measured: Option<f64>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A value as TFLOP/s at intensity `ai`: GB/s figures are converted with it.
fn as_tflops(v: f64, unit: &str, ai: f64) -> Option<f64> {
    match unit {
        "TFLOP/s" | "TOP/s" => Some(v),
        "GB/s" => Some(v * ai / 1000.0),
        _ => None,
    }
}

/// A number with at most three significant decimals and no trailing zeros.
fn short(v: f64) -> String {
    let t = format!("{v:.3}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    if t.is_empty() || t == "-" {
        "0".into()
    } else {
        t.to_string()
    }
}

/// A decade label: 0.01, 0.1, 1, 10, 100, 1000, 1e4.
fn decade(e: i32) -> String {
    if (-2..=3).contains(&e) {
        let v = 10f64.powi(e);
        if e < 0 {
            format!("{v:.*}", (-e) as usize)
        } else {
            format!("{v:.0}")
        }
    } else {
        format!("1e{e}")
    }
}

/// The roofline chart of `plan`. A plan without an intensity or without any target whose peak
/// and bandwidth are known gets a chart that says so.
pub fn roofline_svg(plan: &Plan) -> String {
    let ai = plan
        .operation
        .intensity
        .filter(|x| *x > 0.0 && x.is_finite());
    let mut series: Vec<Series> = Vec::new();
    for o in &plan.operation.per_target {
        let (Some(peak), Some(bw)) = (o.peak_tflops, o.bandwidth_gbs) else {
            continue;
        };
        if peak <= 0.0 || bw <= 0.0 {
            continue;
        }
        let perf = plan.performance.iter().find(|p| p.target == o.target);
        let unit = perf.and_then(|p| p.unit.clone()).unwrap_or_default();
        let band = match (ai, perf) {
            (Some(ai), Some(p)) => match (p.expected_low, p.expected_high) {
                (Some(l), Some(h)) => as_tflops(l, &unit, ai).zip(as_tflops(h, &unit, ai)),
                _ => None,
            },
            _ => None,
        };
        let measured = match (ai, perf.and_then(|p| p.measured.as_ref())) {
            (Some(ai), Some(m)) => as_tflops(m.value, &m.unit, ai),
            _ => None,
        };
        let arch = plan
            .backend_matrix
            .iter()
            .find(|b| b.target == o.target)
            .map(|b| b.arch.clone())
            .unwrap_or_default();
        series.push(Series {
            label: if arch.is_empty() || arch == o.target {
                o.target.clone()
            } else {
                format!("{} ({arch})", o.target)
            },
            peak,
            bandwidth_gbs: bw,
            band,
            measured: measured.filter(|v| *v > 0.0),
        });
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        o,
        "<title>Roofline: {} ({} math)</title>",
        esc(&plan.kernel.name),
        esc(&plan.operation.math_dtype)
    );
    let _ = writeln!(o, "<rect width=\"{W}\" height=\"{H}\" fill=\"#ffffff\"/>");
    let _ = writeln!(
        o,
        "<text x=\"{LEFT}\" y=\"24\" font-size=\"14\" font-weight=\"bold\">Roofline: {} ({} math)</text>",
        esc(&plan.kernel.name),
        esc(&plan.operation.math_dtype)
    );
    let Some(ai) = ai.filter(|_| !series.is_empty()) else {
        let _ = writeln!(
            o,
            "<text x=\"{LEFT}\" y=\"{}\">No roofline: {}.</text>",
            H / 2.0,
            if ai.is_none() {
                "the problem has no arithmetic intensity"
            } else {
                "the KB lacks the peak or bandwidth of every target"
            }
        );
        o.push_str("</svg>\n");
        return o;
    };
    // Axes: decades around the op's intensity and every ridge point; TFLOP/s from the lowest
    // band or point to above the highest peak.
    let ridges: Vec<f64> = series
        .iter()
        .map(|s| s.peak * 1000.0 / s.bandwidth_gbs)
        .collect();
    let x_lo = ridges.iter().fold(ai, |a, r| a.min(*r)) / 10.0;
    let x_hi = ridges.iter().fold(ai, |a, r| a.max(*r)) * 10.0;
    let (x0, x1) = (x_lo.log10().floor() as i32, x_hi.log10().ceil() as i32);
    let y_max = series.iter().map(|s| s.peak).fold(0.0, f64::max) * 2.0;
    let mut y_min = series
        .iter()
        .map(|s| (10f64.powi(x0) * s.bandwidth_gbs / 1000.0).min(s.peak))
        .fold(f64::INFINITY, f64::min);
    for s in &series {
        for v in s.band.iter().flat_map(|(l, h)| [*l, *h]).chain(s.measured) {
            y_min = y_min.min(v);
        }
    }
    let (y0, y1) = (
        (y_min / 2.0).log10().floor() as i32,
        y_max.log10().ceil() as i32,
    );
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |v: f64| LEFT + (v.log10() - x0 as f64) / ((x1 - x0).max(1) as f64) * pw;
    let y = |v: f64| {
        TOP + ph - (v.max(10f64.powi(y0)).log10() - y0 as f64) / ((y1 - y0).max(1) as f64) * ph
    };
    // grid and tick labels
    let _ = writeln!(o, "<g stroke=\"#dddddd\" stroke-width=\"1\">");
    for e in x0..=x1 {
        let _ = writeln!(
            o,
            "<line x1=\"{0:.1}\" y1=\"{TOP:.1}\" x2=\"{0:.1}\" y2=\"{1:.1}\"/>",
            x(10f64.powi(e)),
            TOP + ph
        );
    }
    for e in y0..=y1 {
        let _ = writeln!(
            o,
            "<line x1=\"{LEFT:.1}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\"/>",
            y(10f64.powi(e)),
            LEFT + pw
        );
    }
    o.push_str("</g>\n");
    let _ = writeln!(
        o,
        "<rect x=\"{LEFT:.1}\" y=\"{TOP:.1}\" width=\"{pw:.1}\" height=\"{ph:.1}\" fill=\"none\" stroke=\"#333333\"/>"
    );
    for e in x0..=x1 {
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x(10f64.powi(e)),
            TOP + ph + 16.0,
            decade(e)
        );
    }
    for e in y0..=y1 {
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            y(10f64.powi(e)) + 4.0,
            decade(e)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte, log)</text>",
        LEFT + pw / 2.0,
        H - 12.0
    );
    let _ = writeln!(
        o,
        "<text x=\"18\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {:.1})\">TFLOP/s (log)</text>",
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
    // the op's intensity
    let _ = writeln!(
        o,
        "<line x1=\"{0:.1}\" y1=\"{TOP:.1}\" x2=\"{0:.1}\" y2=\"{1:.1}\" stroke=\"#555555\" stroke-dasharray=\"4 3\"/>",
        x(ai),
        TOP + ph
    );
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555555\">this op: {} FLOP/byte</text>",
        x(ai) + 4.0,
        TOP + 12.0,
        short(ai)
    );
    let (xa, xb) = (10f64.powi(x0), 10f64.powi(x1));
    for (i, s) in series.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let ridge = s.peak * 1000.0 / s.bandwidth_gbs;
        let _ = writeln!(o, "<g class=\"target\" data-target=\"{}\">", esc(&s.label));
        let _ = writeln!(
            o,
            "<polyline class=\"roofline\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\"/>",
            x(xa),
            y(xa * s.bandwidth_gbs / 1000.0),
            x(ridge),
            y(s.peak),
            x(xb),
            y(s.peak)
        );
        let dx = 6.0 * i as f64 - 3.0 * (series.len() as f64 - 1.0);
        if let Some((l, h)) = s.band {
            let _ = writeln!(
                o,
                "<rect class=\"band\" x=\"{:.1}\" y=\"{:.1}\" width=\"6\" height=\"{:.1}\" fill=\"{c}\" fill-opacity=\"0.35\" stroke=\"{c}\"/>",
                x(ai) + dx - 3.0,
                y(h),
                (y(l) - y(h)).max(1.0)
            );
        }
        if let Some(mv) = s.measured {
            let _ = writeln!(
                o,
                "<circle class=\"measured\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\" stroke=\"#000000\"/>",
                x(ai) + dx,
                y(mv)
            );
        }
        let ly = TOP + 14.0 + 34.0 * i as f64;
        let lx = LEFT + pw + 12.0;
        let _ = writeln!(
            o,
            "<line x1=\"{lx:.1}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"{c}\" stroke-width=\"2\"/>",
            ly - 4.0,
            lx + 16.0
        );
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{ly:.1}\">{}</text>",
            lx + 20.0,
            esc(&s.label)
        );
        let bound = plan
            .performance
            .iter()
            .find(|p| s.label.starts_with(&p.target))
            .and_then(|p| p.bound);
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555555\">{} TFLOP/s, {} GB/s{}</text>",
            lx + 20.0,
            ly + 13.0,
            super::markdown::num(s.peak),
            super::markdown::num(s.bandwidth_gbs),
            match bound {
                Some(Bound::Memory) => ", memory-bound",
                Some(Bound::Compute) => ", compute-bound",
                None => "",
            }
        );
        o.push_str("</g>\n");
    }
    let ly = TOP + 14.0 + 34.0 * series.len() as f64 + 6.0;
    let lx = LEFT + pw + 12.0;
    let _ = writeln!(
        o,
        "<text x=\"{lx:.1}\" y=\"{ly:.1}\" font-size=\"10\" fill=\"#555555\">bar: expected band</text>"
    );
    let _ = writeln!(
        o,
        "<text x=\"{lx:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555555\">dot: measured</text>",
        ly + 13.0
    );
    o.push_str("</svg>\n");
    o
}
