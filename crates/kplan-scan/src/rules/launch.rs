//! Launch-configuration parsing shared by `hardcoded-tile` and `launch-bounds-warp`.

use crate::lex::Src;

/// `<<<grid, block[, smem[, stream]]>>>`: token ranges of the arguments and the `>>>` token.
pub fn launch_args(src: &Src, open: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let n = src.toks.len();
    let end = (open + 1..n.min(open + 400)).find(|&k| src.is(k, ">>>"))?;
    let mut parts = Vec::new();
    let mut st = open + 1;
    let mut k = open + 1;
    while k < end {
        if matches!(src.s(k), "(" | "[" | "{") {
            if let Some(m) = src.mate(k) {
                if m < end {
                    k = m + 1;
                    continue;
                }
            }
        }
        if src.is(k, ",") {
            parts.push((st, k.saturating_sub(1)));
            st = k + 1;
        }
        k += 1;
    }
    parts.push((st, end.saturating_sub(1)));
    Some((parts, end))
}

/// Block size given directly as an integer literal or `dim3(lit[, lit[, lit]])`: the product.
pub fn literal_block(src: &Src, a: usize, b: usize) -> Option<u64> {
    if a == b {
        return src.int(a);
    }
    if src.is(a, "dim3") && src.is(a + 1, "(") && src.mate(a + 1) == Some(b) {
        let mut prod = 1u64;
        let mut k = a + 2;
        while k < b {
            let v = src.int(k)?;
            prod = prod.checked_mul(v)?;
            k += 1;
            if src.is(k, ",") {
                k += 1;
            }
        }
        return Some(prod);
    }
    None
}
