//! Fixture specs of the risk rules, written from their parts, and the planning the registry
//! test runs them through.
//!
//! A rule's fixtures start from one of the bases here (or one of its own) and change the line
//! the rule turns on: `ELEMENTWISE.targets(&["h100", "a100"])` is the elementwise spec planned
//! for two NVIDIA targets.

/// A kernel spec for a fixture: the `[kernel]` table's name, op, dtypes, problem (the body of
/// its inline table) and further lines, the `[backends]` targets, the `[abstraction]` allowed
/// list (no table where empty) and tables after those.
#[derive(Debug, Clone, Copy)]
pub struct Fx {
    pub name: &'static str,
    pub op: &'static str,
    pub dtypes: &'static [&'static str],
    pub problem: &'static str,
    pub kernel: &'static [&'static str],
    pub targets: &'static [&'static str],
    pub allowed: &'static [&'static str],
    pub tables: &'static str,
}

/// An fp32 elementwise kernel of 2^20 values, hand-written as single-source HIP for an H100
/// and an MI300X.
pub const ELEMENTWISE: Fx = Fx {
    name: "k",
    op: "elementwise",
    dtypes: &["fp32"],
    problem: "n = 1048576",
    kernel: &[],
    targets: &["h100", "mi300x"],
    allowed: &["hip-single-source"],
    tables: "",
};

/// A 4096-cubed fp16 GEMM accumulating in fp32, otherwise as [`ELEMENTWISE`].
pub const GEMM: Fx = ELEMENTWISE
    .op("gemm")
    .dtypes(&["fp16", "fp32"])
    .problem("m = 4096, n = 4096, k = 4096");

impl Fx {
    pub const fn name(self, name: &'static str) -> Fx {
        Fx { name, ..self }
    }
    pub const fn op(self, op: &'static str) -> Fx {
        Fx { op, ..self }
    }
    pub const fn dtypes(self, dtypes: &'static [&'static str]) -> Fx {
        Fx { dtypes, ..self }
    }
    pub const fn problem(self, problem: &'static str) -> Fx {
        Fx { problem, ..self }
    }
    /// Further `[kernel]` lines (`kv_dtype = "fp8"`), in place of the base's.
    pub const fn kernel(self, kernel: &'static [&'static str]) -> Fx {
        Fx { kernel, ..self }
    }
    pub const fn targets(self, targets: &'static [&'static str]) -> Fx {
        Fx { targets, ..self }
    }
    /// The allowed abstractions; none leaves the `[abstraction]` table out.
    pub const fn allowed(self, allowed: &'static [&'static str]) -> Fx {
        Fx { allowed, ..self }
    }
    /// Tables after `[abstraction]` (`[requirements]\nlatency_us = 50`).
    pub const fn tables(self, tables: &'static str) -> Fx {
        Fx { tables, ..self }
    }

    /// The spec's TOML text.
    pub fn toml(&self) -> String {
        let list = |v: &[&str]| {
            v.iter()
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut s = format!(
            "[kernel]\nname = \"{}\"\nop = \"{}\"\ndtypes = [{}]\nproblem = {{ {} }}\n",
            self.name,
            self.op,
            list(self.dtypes),
            self.problem
        );
        for line in self.kernel {
            s.push_str(line);
            s.push('\n');
        }
        s.push_str(&format!("[backends]\ntargets = [{}]\n", list(self.targets)));
        if !self.allowed.is_empty() {
            s.push_str(&format!(
                "[abstraction]\nallowed = [{}]\n",
                list(self.allowed)
            ));
        }
        if !self.tables.is_empty() {
            s.push_str(self.tables);
            s.push('\n');
        }
        s
    }
}

/// Plans a spec with the compiled KB and returns the risk ids.
#[cfg(test)]
pub fn risk_ids(spec: &str) -> Vec<String> {
    plan(spec).risks.iter().map(|r| r.id.clone()).collect()
}

#[cfg(test)]
pub fn plan(spec: &str) -> crate::model::Plan {
    let kb = kplan_kb::Kb::builtin();
    let s = crate::parse_spec(spec, kb).expect("spec parses");
    crate::build_plan(&s, kb, &Default::default())
}
