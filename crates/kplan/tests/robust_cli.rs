//! Bad input and odd outputs end to end: no panic, `-o` that never damages what is at the path,
//! stdout errors and closed pipes, visible skips and `--strict`, per-path configuration, and
//! output that does not depend on the thread count.

use kplan_test_support::cli::{self, scratch as tmpdir, stderr, stdout};
use kplan_test_support::{kplan_command, toolchain};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn kplan_env(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = kplan_command!();
    c.args(args).current_dir(cwd).env_remove("KPLAN_STRICT");
    cli::output(c.envs(env.iter().copied()))
}
fn kplan(args: &[&str], cwd: &Path) -> Output {
    kplan_env(args, cwd, &[])
}

const KERNEL: &str = "__global__ void k(int* x) { x[threadIdx.x % 32] = 0; }\n";

fn mkfifo(p: &Path) {
    let s = Command::new("mkfifo").arg(p).status().expect("mkfifo");
    assert!(s.success());
}

#[test]
fn the_three_lines_that_panicked_scan_and_plan_source() {
    let d = tmpdir("panic");
    std::fs::write(d.join("a.cu"), "#if (é)\n#endif\n__global__ void k(){}\n").unwrap();
    std::fs::write(d.join("b.cu"), KERNEL).unwrap();
    let o = kplan(&["scan", ".", "--format", "json"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files_scanned"], 2);
}

#[test]
fn output_through_a_symlink_keeps_the_link_and_the_mode() {
    let d = tmpdir("symlink");
    std::fs::write(d.join("a.cu"), KERNEL).unwrap();
    std::fs::write(d.join("real.txt"), "old").unwrap();
    std::fs::set_permissions(d.join("real.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("real.txt", d.join("link.txt")).unwrap();
    let o = kplan(&["scan", "a.cu", "-o", "link.txt"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let m = std::fs::symlink_metadata(d.join("link.txt")).unwrap();
    assert!(m.file_type().is_symlink(), "the link was replaced");
    let real = std::fs::metadata(d.join("real.txt")).unwrap();
    assert_eq!(real.permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(d.join("real.txt")).unwrap();
    assert!(text.contains("warp-size-literal"), "{text}");
    // a new file: created, no temporary left behind
    let o = kplan(&["scan", "a.cu", "-o", "new.txt"], &d);
    assert_eq!(o.status.code(), Some(1));
    assert!(std::fs::read_to_string(d.join("new.txt"))
        .unwrap()
        .contains("warp-size-literal"));
    let names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("kplan-tmp")), "{names:?}");
    // a link to a file that does not exist yet: the file is created, the link stays
    std::os::unix::fs::symlink("later.txt", d.join("dangling.txt")).unwrap();
    let o = kplan(&["scan", "a.cu", "-o", "dangling.txt"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(d.join("dangling.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(d.join("later.txt").is_file());
}

#[test]
fn output_to_a_fifo_and_dev_null_writes_through() {
    let d = tmpdir("fifo");
    std::fs::write(d.join("a.cu"), KERNEL).unwrap();
    let fifo = d.join("out.fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            std::fs::File::open(fifo)
                .unwrap()
                .read_to_string(&mut s)
                .unwrap();
            s
        })
    };
    let o = kplan(&["scan", "a.cu", "-o", "out.fifo"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let got = reader.join().unwrap();
    assert!(got.contains("warp-size-literal"), "{got}");
    let m = std::fs::symlink_metadata(&fifo).unwrap();
    use std::os::unix::fs::FileTypeExt;
    assert!(m.file_type().is_fifo(), "the FIFO was replaced");
    let o = kplan(&["scan", "a.cu", "-o", "/dev/null"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn full_disk_on_stdout_or_output_exits_2() {
    let d = tmpdir("full");
    std::fs::write(d.join("a.cu"), KERNEL).unwrap();
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full on this system");
        return;
    }
    let o = kplan_test_support::kplan_command!()
        .args(["scan", "a.cu"])
        .current_dir(&d)
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
    let o = kplan(&["scan", "a.cu", "-o", "/dev/full"], &d);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/dev/full"), "{}", stderr(&o));
}

#[test]
fn closed_pipe_ends_quietly() {
    let d = tmpdir("pipe");
    // far more output than a pipe buffer holds
    std::fs::write(d.join("a.cu"), KERNEL.repeat(3000)).unwrap();
    let mut child = kplan_test_support::kplan_command!()
        .args(["scan", "a.cu"])
        .current_dir(&d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    out.read_exact(&mut first).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stderr(&o), "", "a closed pipe is not an error to report");
}

#[test]
fn unreadable_named_path_exits_2() {
    let d = tmpdir("unreadable");
    let o = kplan(&["scan", "missing.cu"], &d);
    assert_eq!(o.status.code(), Some(2));
    std::fs::write(d.join("a.cu"), KERNEL).unwrap();
    std::fs::set_permissions(d.join("a.cu"), std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(d.join("a.cu")).is_ok() {
        eprintln!("skipped: permission bits do not stop this user (root) from reading");
        return;
    }
    let o = kplan(&["scan", "a.cu"], &d);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a.cu"), "{}", stderr(&o));
}

#[test]
fn skipped_files_are_counted_and_strict_fails() {
    let d = tmpdir("skips");
    std::fs::write(d.join("a.cu"), "int x;\n").unwrap();
    std::fs::write(d.join("b.cu"), b"\x00\x01binary").unwrap();
    mkfifo(&d.join("c.cu"));
    let o = kplan(&["scan", "."], &d);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("c.cu: not a regular file"), "{e}");
    assert!(
        e.contains("2 files skipped (1 binary file, 1 not a regular file)"),
        "{e}"
    );
    let o = kplan(&["scan", ".", "--strict"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = kplan_env(&["scan", "."], &d, &[("KPLAN_STRICT", "1")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // a FIFO named on the command line: a note, never opened (opening would block)
    let o = kplan(&["scan", "c.cu"], &d);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}

#[test]
fn configuration_is_the_nearest_kplan_toml_of_each_file() {
    let d = tmpdir("nearest");
    for (sub, t) in [("a", "gfx942"), ("b", "sm_90a")] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
        std::fs::write(
            d.join(sub).join("kplan.toml"),
            format!("targets = [\"{t}\"]\n"),
        )
        .unwrap();
        std::fs::write(d.join(sub).join("x.cu"), KERNEL).unwrap();
    }
    for order in [["a", "b"], ["b", "a"]] {
        let o = kplan(&["scan", order[0], order[1], "--format", "json"], &d);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let f: Vec<(&str, &serde_json::Value)> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "warp-size-literal")
            .map(|f| (f["path"].as_str().unwrap(), &f["targets"]))
            .collect();
        // wave64 only in a/: the lane literal bites there, not under b/'s NVIDIA-only scope
        assert_eq!(f, [("a/x.cu", &serde_json::json!(["gfx942"]))], "{order:?}");
    }
    // an error in one of them names it
    std::fs::write(d.join("b/kplan.toml"), "targets = [\"sm_9O\"]\n").unwrap();
    let o = kplan(&["scan", "a", "b"], &d);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("kplan.toml:1:12: unknown target `sm_9O`"),
        "{}",
        stderr(&o)
    );
    std::fs::write(d.join("b/kplan.toml"), "targets = []\n").unwrap();
    let o = kplan(&["scan", "b"], &d);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("kplan.toml:1:11: `targets` is empty"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn output_is_byte_identical_for_any_thread_count() {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut outs = Vec::new();
    for threads in ["1", "2", "4"] {
        for format in ["human", "json"] {
            let o = kplan_env(
                &[
                    "scan",
                    "crates/kplan-scan/tests",
                    "kernels",
                    "--format",
                    format,
                ],
                &tree,
                &[("RAYON_NUM_THREADS", threads)],
            );
            assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
            outs.push((format, o.stdout));
        }
    }
    for (format, out) in &outs[2..] {
        let first = &outs.iter().find(|(f, _)| f == format).unwrap().1;
        assert!(
            out == first,
            "{format} output differs between thread counts"
        );
    }
    assert!(outs[0].1.len() > 10_000);
}

#[test]
fn long_lines_are_clipped_around_the_span() {
    let d = tmpdir("clip");
    let pad = "int a = 1; ".repeat(20_000);
    let text = format!("__global__ void k(int* x) {{ {pad} x[threadIdx.x % 32] = 0; {pad} }}\n");
    std::fs::write(d.join("a.cu"), &text).unwrap();
    let column = text[..text.find("threadIdx").unwrap()].chars().count() + 1;
    let o = kplan(&["scan", "a.cu"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.len() < 4_000,
        "{} bytes of output for one finding",
        s.len()
    );
    assert!(s.contains("1 │ …") && s.contains("int a = 1…\n"), "{s}");
    assert!(s.contains("x[threadIdx.x % 32]"), "{s}");
    assert!(s.contains(&format!("a.cu:1:{column}\n")), "{s}");
}

#[test]
fn build_on_a_binary_file_is_one_clear_error() {
    let d = tmpdir("binary");
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    std::fs::write(d.join("k.cu"), bytes).unwrap();
    let o = kplan(&["build", "k.cu"], &d);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("not a text file"), "{e}");
    assert!(e.lines().count() <= 2, "{e}");
}

#[test]
fn verify_with_an_empty_kernels_dir_is_an_error() {
    let d = tmpdir("emptykernels");
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let o = kplan(&["verify", "rmsnorm", "--kernels", "empty"], &d);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds none of the kernel files"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn build_targets_default_to_kplan_toml_and_strict_fails_on_a_skip() {
    let d = tmpdir("buildtargets");
    std::fs::write(
        d.join("k.cpp"),
        "extern \"C\" int f(int x) { return x + 1; }\n",
    )
    .unwrap();
    std::fs::write(d.join("kplan.toml"), "targets = [\"cpu-x86_64-avx2\"]\n").unwrap();
    let o = kplan(&["build", "k.cpp", "--format", "json"], &d);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_default();
    let text = v.to_string();
    assert!(text.contains("cpu-x86_64-avx2"), "{text}{}", stderr(&o));
    assert!(!text.contains("gfx") && !text.contains("sm_"), "{text}");
    std::fs::write(d.join("kplan.toml"), "targets = [\"cpu-x86-64-avx9\"]\n").unwrap();
    let o = kplan(&["build", "k.cpp"], &d);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("kplan.toml:1:12: unknown target"),
        "{}",
        stderr(&o)
    );
    // gfx950 needs a newer clang than the one tests use, or no clang is there: skipped either way
    std::fs::remove_file(d.join("kplan.toml")).unwrap();
    let o = kplan(&["build", "k.cpp", "--targets", "gfx950"], &d);
    if o.status.code() == Some(0) && stdout(&o).contains("skipped") {
        let o = kplan(&["build", "k.cpp", "--targets", "gfx950", "--strict"], &d);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let o = kplan_env(
            &["build", "k.cpp", "--targets", "gfx950"],
            &d,
            &[("KPLAN_STRICT", "1")],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    } else {
        eprintln!("skipped: gfx950 built here (a clang that knows it), no skip to make strict");
    }
}

#[test]
fn build_on_a_triton_syntax_error_exits_2_once() {
    let d = tmpdir("tritonsyntax");
    std::fs::write(
        d.join("bad.py"),
        "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr:\n    pass\n",
    )
    .unwrap();
    let o = kplan(&["build", "bad.py", "--targets", "sm_90a,gfx942"], &d);
    if o.status.code() == Some(0) && stdout(&o).contains("cannot import triton") {
        return toolchain::skip("Triton is not importable here (source scripts/test-env.sh)");
    }
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("bad.py:4") && e.contains("SyntaxError"), "{e}");
    assert_eq!(e.matches("SyntaxError").count(), 1, "{e}");
}

#[test]
fn build_of_plain_cuda_says_why_hip_and_cpu_fail_before_compiler_output() {
    let d = tmpdir("plaincuda");
    std::fs::write(
        d.join("k.cu"),
        "__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n",
    )
    .unwrap();
    let o = kplan(
        &["build", "k.cu", "--targets", "gfx942,cpu-x86_64-avx2"],
        &d,
    );
    let e = stderr(&o);
    assert!(
        e.starts_with("note: k.cu includes neither a HIP runtime header"),
        "{e}"
    );
    // with the portability header included, no such note
    std::fs::write(
        d.join("k.cu"),
        "#include \"kplan_portability.h\"\n__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n",
    )
    .unwrap();
    let o = kplan(&["build", "k.cu", "--targets", "gfx942"], &d);
    assert!(!stderr(&o).contains("includes neither"), "{}", stderr(&o));
}

#[test]
fn verify_compile_errors_name_the_users_file() {
    let d = tmpdir("verifypaths");
    let root = kplan_test_support::workspace_root();
    let src = std::fs::read_to_string(root.join("kernels/rmsnorm.cu")).unwrap();
    let broken = src.replacen("{", "{ this is not C++;", 1);
    std::fs::create_dir_all(d.join("mine")).unwrap();
    std::fs::write(d.join("mine/rmsnorm.cu"), broken).unwrap();
    let o = kplan(
        &[
            "verify",
            "mine/rmsnorm.cu",
            "--backend",
            "cpu",
            "--sizes",
            "8",
            "--dtype",
            "fp32",
        ],
        &d,
    );
    let out = stdout(&o);
    if out.contains("skipped: no C++ compiler") {
        return toolchain::skip("no C++ compiler here");
    }
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("mine/rmsnorm.cu:"), "{out}");
    let tmp = std::env::temp_dir().display().to_string();
    assert!(
        !out.lines()
            .any(|l| l.contains(&tmp) && l.contains("rmsnorm.cu:")),
        "{out}"
    );
}

/// A kernel with inline PTX and a shuffle (inventory features `inline-ptx` and
/// `warp-shuffle-sync`).
const PTX_KERNEL: &str = "__global__ void k(float* x) {\n  float v = x[threadIdx.x];\n  v += __shfl_down_sync(0xffffffff, v, 1);\n  asm volatile(\"membar.gl;\");\n  x[0] = v;\n}\n";

/// Two trees with different `kplan.toml`: `a/` ignores the inline-assembly rule, `b/` has none.
fn two_configured_trees(name: &str) -> kplan_test_support::cli::Scratch {
    let d = tmpdir(name);
    for sub in ["a", "b"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
        std::fs::write(d.join(sub).join("k.cu"), PTX_KERNEL).unwrap();
    }
    std::fs::write(
        d.join("a/kplan.toml"),
        "ignore = [\"inline-asm-unguarded\"]\n",
    )
    .unwrap();
    d
}

/// `feature -> [path:line:col]` of an inventory in JSON.
fn inventory_locations(o: &Output) -> Vec<(String, Vec<String>)> {
    let v: serde_json::Value = serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)));
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let locs = i["locations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    format!(
                        "{}:{}:{}",
                        l["path"].as_str().unwrap(),
                        l["line"],
                        l["column"]
                    )
                })
                .collect();
            (i["feature"].as_str().unwrap().to_string(), locs)
        })
        .collect()
}

#[test]
fn inventory_reads_the_nearest_kplan_toml_of_each_file() {
    let d = two_configured_trees("inventory-nearest");
    for order in [["a", "b"], ["b", "a"]] {
        let o = kplan(
            &[
                "scan",
                "--inventory",
                order[0],
                order[1],
                "--format",
                "json",
            ],
            &d,
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let inv = inventory_locations(&o);
        let ptx = inv.iter().find(|(f, _)| f == "inline-ptx");
        // a/ ignores the rule that reports inline PTX; b/ does not
        assert_eq!(
            ptx.map(|(_, l)| l.clone()),
            Some(vec!["b/k.cu:4:3".to_string()]),
            "{order:?}: {inv:?}"
        );
        let shfl = inv.iter().find(|(f, _)| f == "warp-shuffle-sync").unwrap();
        assert_eq!(shfl.1, ["a/k.cu:3:8", "b/k.cu:3:8"], "{order:?}");
    }
    // --config applies one file to both trees
    std::fs::write(d.join("none.toml"), "").unwrap();
    let o = kplan(
        &[
            "scan",
            "--inventory",
            "a",
            "b",
            "--config",
            "none.toml",
            "--format",
            "json",
        ],
        &d,
    );
    let inv = inventory_locations(&o);
    let ptx = inv.iter().find(|(f, _)| f == "inline-ptx").unwrap();
    assert_eq!(ptx.1, ["a/k.cu:4:3", "b/k.cu:4:3"]);
    // an error in the second tree's configuration is reported, not passed over
    std::fs::write(d.join("b/kplan.toml"), "targets = [\"sm_9O\"]\n").unwrap();
    let o = kplan(&["scan", "--inventory", "a", "b"], &d);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("kplan.toml:1:12: unknown target `sm_9O`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn plan_source_reads_the_nearest_kplan_toml_of_each_file() {
    let d = two_configured_trees("plan-nearest");
    std::fs::write(
        d.join("spec.toml"),
        "[kernel]\nname = \"n\"\nop = \"norm\"\ndtypes = [\"bf16\"]\nproblem = { rows = 1024, cols = 4096 }\n\n[backends]\ntargets = [\"sm_90a\", \"gfx942\"]\n",
    )
    .unwrap();
    for order in [["a", "b"], ["b", "a"]] {
        let o = kplan(
            &[
                "plan",
                "spec.toml",
                "--format",
                "json",
                "--source",
                order[0],
                "--source",
                order[1],
            ],
            &d,
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let ptx = v["risks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == "source-inline-ptx")
            .expect("inline PTX of b/ in the risk register");
        let ev: Vec<&str> = ptx["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e.as_str())
            .collect();
        assert!(
            ev.iter().any(|e| e.ends_with("b/k.cu:4:3")),
            "{order:?}: {ev:?}"
        );
        assert!(
            !ev.iter().any(|e| e.contains("a/k.cu")),
            "{order:?}: {ev:?}"
        );
    }
}

/// Whether this machine runs CUDA (then a CUDA run is no skip and the strict checks below do not
/// apply).
fn cuda_skips(o: &Output) -> bool {
    let s = stdout(o);
    if s.contains("skipped") {
        return true;
    }
    eprintln!("skipped: a CUDA device ran the check here, so there is no skip to make strict");
    false
}

#[test]
fn verify_without_a_gpu_is_a_visible_skip_and_strict_fails() {
    let d = tmpdir("verifystrict");
    let args = [
        "verify",
        "reduce_sum",
        "--backend",
        "cuda",
        "--sizes",
        "1000",
    ];
    let o = kplan(&args, &d);
    if !cuda_skips(&o) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).starts_with("reduce_sum on cuda: skipped: "),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("warning: 1 of 1 checks skipped"),
        "{}",
        stderr(&o)
    );
    let strict: Vec<&str> = args.iter().copied().chain(["--strict"]).collect();
    let o = kplan(&strict, &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--strict"), "{}", stderr(&o));
    let o = kplan_env(&args, &d, &[("KPLAN_STRICT", "1")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // KPLAN_STRICT other than 1 is not strict
    let o = kplan_env(&args, &d, &[("KPLAN_STRICT", "0")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // the JSON report says it too, and --strict still fails
    let json: Vec<&str> = strict.iter().copied().chain(["--format", "json"]).collect();
    let o = kplan(&json, &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["status"], "skipped", "{v}");
}

#[test]
fn verify_of_a_harness_without_a_gpu_is_a_visible_skip_and_strict_fails() {
    let d = tmpdir("harnessstrict");
    let root = kplan_test_support::workspace_root();
    let harness = root.join("kernels/reduce_sum.toml");
    let h = harness.to_str().unwrap();
    let o = kplan(&["verify", h, "--backend", "cuda"], &d);
    if !cuda_skips(&o) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("on cuda: skipped: "), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("1 of 1 checks skipped"),
        "{}",
        stderr(&o)
    );
    let o = kplan(&["verify", h, "--backend", "cuda", "--strict"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = kplan_env(
        &["verify", h, "--backend", "cuda"],
        &d,
        &[("KPLAN_STRICT", "1")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn bench_without_a_gpu_is_a_visible_skip_and_strict_fails() {
    let d = tmpdir("benchstrict");
    let args = [
        "bench", "add", "--sizes", "4096", "--reps", "1", "--warmup", "0",
    ];
    let o = kplan(&args, &d);
    if !cuda_skips(&o) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).starts_with("bench skipped: "), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("warning: 1 of 1 benchmarks skipped"),
        "{}",
        stderr(&o)
    );
    let strict: Vec<&str> = args.iter().copied().chain(["--strict"]).collect();
    let o = kplan(&strict, &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = kplan_env(&args, &d, &[("KPLAN_STRICT", "1")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn per_file_ignores_of_a_nested_kplan_toml_apply_when_scanning_from_above() {
    let d = tmpdir("nestedignores");
    std::fs::create_dir_all(d.join("a/vendor")).unwrap();
    std::fs::write(
        d.join("a/kplan.toml"),
        "[per-file-ignores]\n\"vendor/**\" = [\"all\"]\n",
    )
    .unwrap();
    std::fs::write(d.join("a/vendor/v.cu"), KERNEL).unwrap();
    std::fs::write(d.join("a/own.cu"), KERNEL).unwrap();
    for (cwd, path) in [(d.to_path_buf(), "a"), (d.join("a"), ".")] {
        let o = kplan(&["scan", path, "--format", "json"], &cwd);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let paths: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert!(
            paths.iter().all(|p| !p.contains("vendor")),
            "{path}: {paths:?}"
        );
        assert!(
            paths.iter().any(|p| p.ends_with("own.cu")),
            "{path}: {paths:?}"
        );
    }
}
