//! Text positions: byte offset -> 1-based line and column, in one place for every crate.
//!
//! Columns count Unicode scalar values (characters) from the line start; a leading byte-order
//! mark is not a character of line 1. Lines end at `\n` (a `\r` before it belongs to the line).
//! Lookups are O(log lines) plus at most [`BLOCK`] bytes of counting: line starts are
//! precomputed, and for text that is not pure ASCII, the number of characters before every
//! block boundary too, so a finding deep in a 10 MB line costs the same as one at its start.

/// Bytes between character-count checkpoints.
pub const BLOCK: usize = 256;

const BOM: &str = "\u{feff}";

/// Line starts (and character checkpoints) of one text.
#[derive(Debug, Clone)]
pub struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of each line's first byte; `starts[0] == 0`.
    starts: Vec<usize>,
    /// `chars[k]`: characters in `text[..k * BLOCK]`. Empty when the text is ASCII.
    chars: Vec<usize>,
    /// Length of a leading byte-order mark (0 or 3).
    bom: usize,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let b = text.as_bytes();
        let mut starts = Vec::with_capacity(b.len() / 40 + 1);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', b).map(|i| i + 1));
        let chars = if text.is_ascii() {
            Vec::new()
        } else {
            let mut v = Vec::with_capacity(b.len() / BLOCK + 1);
            let mut n = 0usize;
            v.push(0);
            for block in b.chunks(BLOCK) {
                n += count_chars(block);
                v.push(n);
            }
            v
        };
        let bom = if text.starts_with(BOM) { BOM.len() } else { 0 };
        LineIndex {
            text,
            starts,
            chars,
            bom,
        }
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Number of lines (a text without a final newline still has its last line; an empty text
    /// has one empty line).
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// 0-based line holding byte `offset` (an offset past the end is on the last line).
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }

    /// Byte offset where 0-based line `line0` starts (the text's end past the last line).
    pub fn line_start(&self, line0: usize) -> usize {
        self.starts.get(line0).copied().unwrap_or(self.text.len())
    }

    /// Byte offset just past line `line0`'s content (before its `\n`, and a `\r` before that).
    pub fn line_end(&self, line0: usize) -> usize {
        let start = self.line_start(line0);
        let mut end = match self.starts.get(line0 + 1) {
            Some(&next) => next - 1,
            None => self.text.len(),
        };
        if end > start && self.text.as_bytes()[end - 1] == b'\r' {
            end -= 1;
        }
        end.max(start)
    }

    /// Line `line0`'s content, without its line ending (a byte-order mark is left out).
    pub fn line_text(&self, line0: usize) -> &'a str {
        let s = self
            .line_start(line0)
            .max(if line0 == 0 { self.bom } else { 0 });
        let e = self.line_end(line0).max(s);
        self.text.get(s..e).unwrap_or("")
    }

    /// Characters in `text[..offset]` (`offset` need not be a character boundary: a partial
    /// character counts as one).
    pub fn chars_before(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        if self.chars.is_empty() {
            return offset;
        }
        let k = offset / BLOCK;
        self.chars[k] + count_chars(&self.text.as_bytes()[k * BLOCK..offset])
    }

    /// 1-based (line, column) of byte `offset`; the column counts characters.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let l = self.line_of(offset);
        let mut start = self.line_start(l);
        if l == 0 {
            start = start.max(self.bom.min(offset));
        }
        let col = self.chars_before(offset) - self.chars_before(start);
        (l + 1, col + 1)
    }

    /// [`LineIndex::line_col`] as `u32`s (saturating), the width diagnostics store.
    pub fn line_col_u32(&self, offset: usize) -> (u32, u32) {
        let (l, c) = self.line_col(offset);
        (sat(l), sat(c))
    }

    /// 1-based column of byte `offset` on 0-based line `line0` (characters).
    pub fn column_in(&self, line0: usize, offset: usize) -> usize {
        let mut start = self.line_start(line0);
        if line0 == 0 {
            start = start.max(self.bom);
        }
        let offset = offset.max(start).min(self.text.len());
        self.chars_before(offset) - self.chars_before(start) + 1
    }
}

fn sat(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Characters starting in `b`: bytes that are not UTF-8 continuation bytes.
fn count_chars(b: &[u8]) -> usize {
    b.iter().filter(|&&x| (x & 0xC0) != 0x80).count()
}

/// 1-based (line, column in characters) of byte `offset` in `text`, for a one-off position
/// (an error message). Many lookups in one text: build a [`LineIndex`] once.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_col(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: count from the start, the slow obvious way.
    fn naive(text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let before = &text.as_bytes()[..offset];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let ls = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map(|p| p + 1)
            .unwrap_or(0);
        let ls = if ls == 0 && text.starts_with(BOM) {
            3.min(offset)
        } else {
            ls
        };
        (line, count_chars(&text.as_bytes()[ls..offset]) + 1)
    }

    #[test]
    fn matches_the_naive_count_everywhere() {
        let long: String = "aé\u{1F600}".repeat(400);
        for text in [
            "",
            "a",
            "\n",
            "ab\ncd\n",
            "ab\r\ncd",
            "\u{feff}abc\ndef",
            "\u{feff}",
            "é\nüx\n\n\u{1F600}z",
            long.as_str(),
        ] {
            let idx = LineIndex::new(text);
            for off in 0..=text.len() + 2 {
                assert_eq!(idx.line_col(off), naive(text, off), "{text:?} @ {off}");
            }
        }
    }

    #[test]
    fn bom_is_not_a_column_and_lines_drop_their_endings() {
        let t = "\u{feff}int x;\r\nint y;";
        let idx = LineIndex::new(t);
        assert_eq!(idx.line_col(3), (1, 1));
        assert_eq!(idx.line_col(t.find('x').unwrap()), (1, 5));
        assert_eq!(idx.line_text(0), "int x;");
        assert_eq!(idx.line_text(1), "int y;");
        assert_eq!(idx.line_count(), 2);
        assert_eq!(idx.column_in(1, t.find('y').unwrap()), 5);
    }
}
