//! The templates (compiled in) and the `{{NAME}}` substitution they use.

/// The name of the `{{NAME}}` placeholder that opens at byte `i` of `b` (upper-case letters,
/// digits and `_`), as the byte range of the name.
fn placeholder_at(b: &[u8], i: usize) -> Option<std::ops::Range<usize>> {
    if b.get(i) != Some(&b'{') || b.get(i + 1) != Some(&b'{') {
        return None;
    }
    let start = i + 2;
    let len = b[start..]
        .iter()
        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || **c == b'_')
        .count();
    let end = start + len;
    (len > 0 && b.get(end) == Some(&b'}') && b.get(end + 1) == Some(&b'}')).then_some(start..end)
}

/// Replaces every `{{NAME}}` (upper-case letters, digits and `_`) with its value from `vars`. A
/// `{` before `{{NAME}}` stays literal (`{{{X}}}` is `{` + X + `}`); a name not in `vars` is
/// left as it is, which the tests reject for every generated file.
pub fn render(tpl: &str, vars: &[(&str, &str)]) -> String {
    let b = tpl.as_bytes();
    let mut out = String::with_capacity(tpl.len() + tpl.len() / 4);
    let mut i = 0;
    let mut lit = 0;
    while i < b.len() {
        if let Some(name) = placeholder_at(b, i) {
            if let Some((_, v)) = vars.iter().find(|(k, _)| *k == &tpl[name.clone()]) {
                out.push_str(&tpl[lit..i]);
                out.push_str(v);
                i = name.end + 2;
                lit = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&tpl[lit..]);
    out
}

/// Whether `text` still holds a `{{NAME}}` placeholder.
#[cfg(test)]
pub fn unfilled(text: &str) -> Option<String> {
    let b = text.as_bytes();
    (0..b.len()).find_map(|i| placeholder_at(b, i).map(|n| text[n].to_string()))
}

macro_rules! templates {
    ($($name:ident = $file:literal;)*) => {
        $(pub const $name: &str = include_str!(concat!("templates/", $file));)*
        /// Every template, by file name (for the tests).
        #[cfg(test)]
        pub const ALL: &[(&str, &str)] = &[$(($file, $name)),*];
    };
}

templates! {
    CONFIG_HEAD = "config_head.h";
    CONFIG_STORAGE_F32 = "config_storage_f32.h";
    CONFIG_STORAGE_16 = "config_storage_16.h";
    CONFIG_BF16 = "config_bf16.h";
    CONFIG_FP16 = "config_fp16.h";
    CONFIG_MATH = "config_math.h";
    BLOCK_REDUCE = "block_reduce.cu";
    K_SOFTMAX = "softmax.cu";
    K_RMSNORM = "rmsnorm.cu";
    K_LAYERNORM = "layernorm.cu";
    K_ELEMENTWISE = "elementwise.cu";
    K_REDUCE_FLAT = "reduce_flat.cu";
    K_REDUCE_ROWS = "reduce_rows.cu";
    K_GEMM = "gemm.cu";
    CPU_HEAD = "cpu_head.h";
    CPU_FILE = "cpu_file.cpp";
    CPU_STORAGE_F32 = "cpu_storage_f32.h";
    CPU_STORAGE_BF16 = "cpu_storage_bf16.h";
    CPU_STORAGE_FP16 = "cpu_storage_fp16.h";
    CPU_SOFTMAX = "cpu_softmax.cpp";
    CPU_RMSNORM = "cpu_rmsnorm.cpp";
    CPU_LAYERNORM = "cpu_layernorm.cpp";
    CPU_ELEMENTWISE = "cpu_elementwise.cpp";
    CPU_REDUCE_FLAT = "cpu_reduce_flat.cpp";
    CPU_REDUCE_ROWS = "cpu_reduce_rows.cpp";
    CPU_GEMM = "cpu_gemm.cpp";
    TEST_HEAD = "test_head.cpp";
    TEST_SOFTMAX = "test_softmax.cpp";
    TEST_RMSNORM = "test_rmsnorm.cpp";
    TEST_LAYERNORM = "test_layernorm.cpp";
    TEST_ELEMENTWISE = "test_elementwise.cpp";
    TEST_REDUCE_FLAT = "test_reduce_flat.cpp";
    TEST_REDUCE_ROWS = "test_reduce_rows.cpp";
    TEST_GEMM = "test_gemm.cpp";
    MAKEFILE = "Makefile";
    CMAKE = "CMakeLists.txt";
    TRITON_HEAD = "triton_head.py";
    TRITON_SOFTMAX = "triton_softmax.py";
    TRITON_RMSNORM = "triton_rmsnorm.py";
    LIB_GEMM = "library_gemm.cpp";
    LIB_MAKEFILE = "library_Makefile";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_literal_braces() {
        let v = [("A", "x"), ("BC", "yz")];
        assert_eq!(render("{{A}}-{{BC}}", &v), "x-yz");
        assert_eq!(render("{{{A}}}", &v), "{x}");
        assert_eq!(render("{{Q}} {{a}} {{", &v), "{{Q}} {{a}} {{");
        assert_eq!(unfilled("a {{Q}} b").as_deref(), Some("Q"));
        assert_eq!(unfilled("{ {x} }} {{a}}"), None);
    }

    #[test]
    fn every_template_is_a_whole_file_with_placeholders_only_of_known_form() {
        for (file, text) in ALL {
            assert!(!text.trim().is_empty() && text.ends_with('\n'), "{file}");
            // every placeholder renders away when given a value
            let mut names = Vec::new();
            let mut rest: &str = text;
            while let Some(n) = unfilled(rest) {
                let at = rest.find(&format!("{{{{{n}}}}}")).unwrap();
                rest = &rest[at + n.len() + 4..];
                names.push(n);
            }
            let vars: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x")).collect();
            assert_eq!(unfilled(&render(text, &vars)), None, "{file}");
        }
    }
}
