//! Tile parameters per target from the plan's section 6, as the macros of
//! `kernels/<file>_config.h` and the configurations the harness sweeps.

use crate::family::Family;
use kplan_plan::Plan;
use std::fmt::Write;

/// One GPU target's tile values.
#[derive(Debug, Clone)]
struct TargetTile {
    /// As the spec wrote it.
    target: String,
    arch: String,
    /// (macro without prefix, value)
    values: Vec<(&'static str, u64)>,
    /// The plan's configuration and autotune candidates, quoted in the header.
    configuration: String,
    candidates: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Tiles {
    targets: Vec<TargetTile>,
    macros: &'static [&'static str],
}

fn pow2_block(v: u64) -> u64 {
    let v = v.clamp(32, 1024);
    if v.is_power_of_two() {
        v
    } else {
        v.next_power_of_two().min(1024)
    }
}

fn describe(m: &str) -> &'static str {
    match m {
        "BLOCK" => "threads per block (a power of two)",
        "ITEMS" => "elements per thread",
        "GRID" => "most blocks of the first pass (a persistent grid: 4 per SM / CU)",
        "TILE" => "the simple kernel's square block tile (TILE x TILE threads, one output each)",
        "TILE_M" => "the tuned kernel's block tile in M (section 6)",
        "TILE_N" => "the tuned kernel's block tile in N (section 6)",
        "TILE_K" => "the tuned kernel's K step (section 6)",
        _ => "",
    }
}

impl Tiles {
    pub fn new(plan: &Plan, f: &Family) -> Tiles {
        let macros = f.tile_macros();
        let mut targets: Vec<TargetTile> = Vec::new();
        for t in &plan.tiles {
            let Some(b) = plan.backend_matrix.iter().find(|b| b.target == t.target) else {
                continue;
            };
            if b.vendor != "nvidia" && b.vendor != "amd" {
                continue;
            }
            if targets.iter().any(|x| x.arch == b.arch) {
                continue;
            }
            let get = |k: &str| t.tile.get(k).copied();
            let values = macros
                .iter()
                .map(|m| {
                    let v = match *m {
                        "BLOCK" => pow2_block(t.block_threads as u64),
                        "ITEMS" => get("elems_per_thread").unwrap_or(4).clamp(1, 64),
                        "GRID" => b
                            .compute_units
                            .map(|c| (c as u64 * 4).clamp(16, 4096))
                            .unwrap_or(1024),
                        "TILE" => 16,
                        "TILE_M" => get("m").unwrap_or(64),
                        "TILE_N" => get("n").unwrap_or(64),
                        "TILE_K" => get("k").unwrap_or(32),
                        _ => 0,
                    };
                    (*m, v)
                })
                .collect();
            targets.push(TargetTile {
                target: t.target.clone(),
                arch: b.arch.clone(),
                values,
                configuration: t.configuration.clone(),
                candidates: t.candidates.clone(),
            });
        }
        Tiles { targets, macros }
    }

    fn values_of(&self, m: &str) -> Vec<(String, u64)> {
        self.targets
            .iter()
            .filter_map(|t| {
                t.values
                    .iter()
                    .find(|(k, _)| *k == m)
                    .map(|(_, v)| (t.arch.clone(), *v))
            })
            .collect()
    }

    /// The value used where no target's test matches (host pass, CPU build, cpu-simt): the most
    /// common one among the targets, the first on a tie.
    pub fn default_of(&self, m: &str) -> u64 {
        let vals = self.values_of(m);
        let mut best: Option<(u64, usize)> = None;
        for (_, v) in &vals {
            let n = vals.iter().filter(|(_, w)| w == v).count();
            let better = match best {
                None => true,
                Some((_, bn)) => n > bn,
            };
            if better {
                best = Some((*v, n));
            }
        }
        best.map(|(v, _)| v).unwrap_or(match m {
            "BLOCK" => 256,
            "ITEMS" => 4,
            "GRID" => 1024,
            "TILE" => 16,
            "TILE_M" | "TILE_N" => 64,
            _ => 32,
        })
    }

    /// What the harness sweeps for `m`: every per-target default (at most three: the smallest,
    /// the default and the largest), plus a 32-thread block for kernels that reduce across the
    /// block (a block smaller than a 64-lane wavefront).
    pub fn harness_values(&self, m: &str, f: &Family) -> Vec<u64> {
        let mut v: Vec<u64> = self.values_of(m).into_iter().map(|(_, v)| v).collect();
        let d = self.default_of(m);
        v.push(d);
        v.sort();
        v.dedup();
        if v.len() > 3 {
            v = vec![v[0], d, v[v.len() - 1]];
            v.sort();
            v.dedup();
        }
        let reduces = !matches!(f, Family::Elementwise { .. } | Family::Gemm);
        if m == "BLOCK" && reduces && !v.contains(&32) {
            v.insert(0, 32);
        }
        v
    }

    /// The macros block of `kernels/<file>_config.h`.
    pub fn render(&self, prefix: &str) -> String {
        let mut o = String::new();
        o.push_str("\n/* Tile parameters. Plan section 6, per target:\n");
        for t in &self.targets {
            let _ = writeln!(o, " *   {} ({}): {}", t.target, t.arch, t.configuration);
            if !t.candidates.is_empty() {
                let _ = writeln!(o, " *     autotune candidates: {}", t.candidates.join("; "));
            }
        }
        if self.targets.is_empty() {
            o.push_str(" *   (the plan has no GPU tile: the defaults below are kplan's)\n");
        }
        o.push_str(" */\n");
        for m in self.macros {
            let d = self.default_of(m);
            let vals = self.values_of(m);
            let _ = writeln!(o, "/* {prefix}_{m}: {} */", describe(m));
            let _ = writeln!(o, "#ifndef {prefix}_{m}");
            // group the targets whose value differs from the default, by value
            let mut groups: Vec<(u64, Vec<String>)> = Vec::new();
            for (arch, v) in &vals {
                if *v == d {
                    continue;
                }
                match groups.iter_mut().find(|(g, _)| g == v) {
                    Some((_, a)) => a.push(arch.clone()),
                    None => groups.push((*v, vec![arch.clone()])),
                }
            }
            if groups.is_empty() {
                let _ = writeln!(o, "#  define {prefix}_{m} {d}");
            } else {
                for (i, (v, archs)) in groups.iter().enumerate() {
                    let cond: Vec<String> = archs.iter().map(|a| arch_test(a)).collect();
                    let _ = writeln!(
                        o,
                        "#  {} {} /* {} */",
                        if i == 0 { "if" } else { "elif" },
                        cond.join(" || "),
                        archs.join(", ")
                    );
                    let _ = writeln!(o, "#    define {prefix}_{m} {v}");
                }
                let _ = writeln!(
                    o,
                    "#  else /* every other target, the host pass and the CPU */"
                );
                let _ = writeln!(o, "#    define {prefix}_{m} {d}");
                let _ = writeln!(o, "#  endif");
            }
            let _ = writeln!(o, "#endif");
        }
        if self.macros.contains(&"BLOCK") {
            let _ = writeln!(
                o,
                "static_assert({prefix}_BLOCK >= 1 && {prefix}_BLOCK <= 1024 && ({prefix}_BLOCK & ({prefix}_BLOCK - 1)) == 0,\n              \"{prefix}_BLOCK must be a power of two, at most 1024\");"
            );
        }
        o
    }
}

/// The preprocessor test for the device pass of one architecture.
fn arch_test(arch: &str) -> String {
    if let Some(sm) = arch.strip_prefix("sm_") {
        let digits: String = sm.chars().take_while(|c| c.is_ascii_digit()).collect();
        format!("(defined(__CUDA_ARCH__) && __CUDA_ARCH__ == {digits}0)")
    } else {
        format!("defined(__{}__)", arch.replace('-', "_"))
    }
}
