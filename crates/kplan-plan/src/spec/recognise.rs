//! An op name kplan has no exact name for, read from its words: `sparse-attention` and
//! `mla-decode` are attention, `segment-reduce` a reduction, `fused-qk-norm-rope` a norm,
//! `kmeans-assign` the knowledge base's k-means entry. The first word of the name that starts a
//! compound (the longest, up to four words) naming an op class, an alias or a knowledge base
//! entry decides; the plan says which words it read.

use super::{norm_name, Op};
use kplan_kb::Kb;

/// What a word of an op name named.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Recognised {
    /// An op class, with the `kind` its alias implies.
    Class(Op, Option<&'static str>),
    /// A knowledge-only entry of the op knowledge base, by id.
    Knowledge(String),
}

/// Words that name an op only as a whole name (`linear` is a GEMM, but `linear-recurrence` is
/// no GEMM; `sample` is sampling, `downsample-...` is not).
const WHOLE_NAME_ONLY: &[&str] = &[
    "linear",
    "dense",
    "sample",
    "mm",
    "custom",
    "fully-connected",
];

/// What `word` (normalised) names, if anything.
fn named(word: &str, kb: &Kb) -> Option<Recognised> {
    if word.len() < 2 || WHOLE_NAME_ONLY.contains(&word) {
        return None;
    }
    if let Some(o) = Op::parse(word).filter(|o| *o != Op::Custom) {
        return Some(Recognised::Class(o, None));
    }
    if let Some((_, o, k)) = Op::ALIASES.iter().find(|(a, _, _)| *a == word) {
        return Some(Recognised::Class(*o, *k));
    }
    for o in &kb.ops {
        if norm_name(&o.id) == word || o.aliases.iter().any(|a| norm_name(a) == word) {
            if o.knowledge_only {
                return Some(Recognised::Knowledge(o.id.clone()));
            }
            if let Some(op) = Op::parse(&o.id).filter(|o| *o != Op::Custom) {
                return Some(Recognised::Class(op, None));
            }
        }
    }
    None
}

/// The longest compound of words (up to four) that names an op class or a knowledge base entry,
/// at the first word of `op_name` (normalised, dash-separated; `2:4` reads as two words) where
/// one starts, with the words read: `2:4-sparse-gemm` is the structured-sparse entry, not the
/// `sparse-gemm` alias of SpGEMM inside it.
pub(crate) fn recognise(op_name: &str, kb: &Kb) -> Option<(Recognised, String)> {
    let words: Vec<&str> = op_name
        .split(['-', ':'])
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() < 2 {
        return None;
    }
    // A communication word decides wherever it stands (`gemm-reduce-scatter`,
    // `matmul-allreduce`): a kernel that talks to other GPUs is designed around the
    // communication (peer access, flags, overlap), and its compute is one part of it.
    for i in 0..words.len() {
        for len in (1..=MAX_COMPOUND.min(words.len() - i)).rev() {
            let compound = words[i..i + len].join("-");
            if let Some(r) = named(&compound, kb) {
                if matches!(&r, Recognised::Knowledge(id) if id == COMMUNICATION) {
                    return Some((r, compound));
                }
            }
        }
    }
    for i in 0..words.len() {
        for len in (1..=MAX_COMPOUND.min(words.len() - i)).rev() {
            let compound = words[i..i + len].join("-");
            if let Some(r) = named(&compound, kb) {
                return Some((r, compound));
            }
        }
    }
    None
}

/// The other op words of a name made of several ops (`softmax-then-topk-over-gemm-output`):
/// every longest compound after the one [`recognise`] read that names an op class, an alias or
/// a knowledge base entry, in order, each once.
pub(crate) fn other_ops(op_name: &str, read: &str, kb: &Kb) -> Vec<String> {
    let words: Vec<&str> = op_name
        .split(['-', ':'])
        .filter(|w| !w.is_empty())
        .collect();
    let mut out: Vec<String> = Vec::new();
    let mut skipped_read = false;
    let mut i = 0;
    while i < words.len() {
        let mut step = 1;
        for len in (1..=MAX_COMPOUND.min(words.len() - i)).rev() {
            let compound = words[i..i + len].join("-");
            if named(&compound, kb).is_some() {
                if compound == read && !skipped_read {
                    skipped_read = true;
                } else if compound != read && !out.contains(&compound) {
                    out.push(compound);
                }
                step = len;
                break;
            }
        }
        i += step;
    }
    out
}

/// The knowledge base entry of collective communication, which decides a fused op's reading.
const COMMUNICATION: &str = "collective";

/// The most words a compound op name of the knowledge base has (`semi-structured-sparse-gemm`).
const MAX_COMPOUND: usize = 4;
