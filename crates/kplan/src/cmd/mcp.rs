//! `kplan mcp`: a Model Context Protocol server over stdio (JSON-RPC, one message a line) whose
//! tools are kplan's verbs. Each call runs this same `kplan` executable with the verb's
//! arguments and `--format json`, so a tool returns exactly the JSON contract the CLI documents
//! (as `structuredContent` when it is an object, and as text) and fails with exactly the message
//! the CLI prints (a tool error, `isError: true`). Nothing is written to stdout but protocol
//! messages.

use super::Ctx;
use anyhow::Context;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {}

/// Output schema of `plan` (docs/plan.schema.json, the contract `kplan plan --format json`
/// follows).
const PLAN_SCHEMA: &str = include_str!("../../../../docs/plan.schema.json");

/// How long one tool call may run before its process group is stopped: a `bench` or a `build`
/// for every target takes minutes, a call that hangs must not hold the server.
const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Output schema of `scan`: the JSON contract of docs/scan.md.
fn scan_schema() -> Value {
    json!({
        "type": "object",
        "required": ["files_scanned", "lines_scanned", "findings"],
        "properties": {
            "files_scanned": {"type": "integer", "minimum": 0},
            "lines_scanned": {"type": "integer", "minimum": 0},
            "findings": {"type": "array", "items": {
                "type": "object",
                "required": ["rule", "severity", "path", "line", "column", "end_line",
                             "end_column", "message", "help", "targets"],
                "properties": {
                    "rule": {"type": "string"},
                    "severity": {"enum": ["error", "warning", "note"]},
                    "path": {"type": "string"},
                    "line": {"type": "integer", "minimum": 1},
                    "column": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1},
                    "end_column": {"type": "integer", "minimum": 1},
                    "message": {"type": "string"},
                    "help": {"type": "string"},
                    "targets": {"type": "array", "items": {"type": "string"}}
                }
            }}
        }
    })
}

/// Output schema of `build`: the JSON contract of docs/build.md.
fn build_schema() -> Value {
    let num = json!({"type": ["number", "null"]});
    json!({
        "type": "object",
        "required": ["results"],
        "properties": {"results": {"type": "array", "items": {
            "type": "object",
            "required": ["target", "status", "compiler", "diagnostics"],
            "properties": {
                "target": {"type": "string"},
                "status": {"enum": ["ok", "failed", "skipped"]},
                "compiler": {"type": ["string", "null"]},
                "registers": num, "sgprs": num, "shared_bytes": num, "spill_bytes": num,
                "wave_size": num, "occupancy": num, "seconds": num,
                "diagnostics": {"type": "string"}
            }
        }}}
    })
}

/// An object with these keys required (their values described only by `properties`, when given).
fn keys(required: &[&str], properties: Value) -> Value {
    json!({"type": "object", "required": required, "properties": properties})
}

/// Output schema of `explain`: the rule as `kplan explain --format json` prints it.
fn explain_schema() -> Value {
    let s = json!({"type": "string"});
    keys(
        &[
            "id",
            "summary",
            "what",
            "why",
            "example",
            "use_instead",
            "severity",
            "scope",
            "lang",
            "features",
            "markdown",
        ],
        json!({
            "id": s, "summary": s, "what": s, "why": s, "example": s, "use_instead": s,
            "severity": {"enum": ["error", "warning", "note"]},
            "lang": {"type": "string"},
            "features": {"type": "array", "items": s},
            "markdown": {"type": "string", "description": "The rule's page, as `kplan explain` prints it."}
        }),
    )
}

/// Output schema of `header`: the header's text (C++), as `kplan header` prints it.
fn header_schema() -> Value {
    keys(
        &["header"],
        json!({"header": {"type": "string", "description": "The portability header (C++)."}}),
    )
}

/// Output schema of a list-or-show verb: `list` is the JSON of the verb alone, `show` that of
/// `VERB show NAME` (a list that is a JSON array comes as `items`).
fn list_or_show(list: Value, show: Value) -> Value {
    json!({"type": "object", "anyOf": [list, show]})
}

/// Output schema of `verify`: one report (docs/verify.md; a Triton kernel's is the same), or
/// `items` when several ran.
fn verify_schema() -> Value {
    let report = json!({"anyOf": [
        keys(&["kernel", "backend", "status", "runs", "failures", "cases"], json!({
            "status": {"enum": ["passed", "failed", "skipped"]},
            "cases": {"type": "array", "items": {"type": "object"}}
        })),
        {"type": "object"}
    ]});
    json!({"type": "object", "anyOf": [
        keys(&["items"], json!({"items": {"type": "array", "items": report}})),
        report
    ]})
}

fn strings(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

/// One tool: its name, what it does, its input schema, its output schema (when the verb's
/// JSON is an object with a documented contract), and whether it only reads.
struct Spec {
    name: &'static str,
    description: &'static str,
    input: Value,
    output: Option<Value>,
    read_only: bool,
}

fn specs() -> Vec<Spec> {
    let plan_schema: Value = serde_json::from_str(PLAN_SCHEMA).unwrap_or(Value::Null);
    vec![
        Spec {
            name: "plan",
            description: "Write the backend-agnostic kernel plan (JSON, docs/plan.schema.json) for a kernel spec: give `spec_toml` (the spec's TOML text, docs/plan.md documents every key) or `spec` (a path).",
            input: json!({"type": "object", "properties": {
                "spec_toml": {"type": "string", "description": "The kernel spec as TOML text."},
                "spec": {"type": "string", "description": "Path to a kernel spec (TOML)."},
                "source": strings("Existing CUDA/HIP source directories whose NVIDIA-specific features join the risk register.")
            }}),
            output: plan_schema.is_object().then_some(plan_schema),
            read_only: true,
        },
        Spec {
            name: "scan",
            description: "Find portability hazards in CUDA/HIP/Triton source files or trees (the JSON of `kplan scan --format json`); kplan.toml applies as in the CLI.",
            input: json!({"type": "object", "required": ["paths"], "properties": {
                "paths": strings("Files or directories to scan."),
                "targets": strings("Targets in scope (sm_90a, gfx942, ...); default: kplan.toml, else sm_90a, gfx942, gfx1100."),
                "select": strings("Run only these rules (replaces kplan.toml's select and ignore)."),
                "ignore": strings("Do not run these rules (added to kplan.toml's ignore)."),
                "config": {"type": "string", "description": "kplan.toml to use for every path."}
            }}),
            output: Some(scan_schema()),
            read_only: true,
        },
        Spec {
            name: "explain",
            description: "Explain one scanner rule: what, why, example, use instead (the JSON of `kplan explain --format json`, the page as `markdown`).",
            input: json!({"type": "object", "required": ["rule"], "properties": {
                "rule": {"type": "string", "description": "Rule id (the `rule` of a scan finding)."}
            }}),
            output: Some(explain_schema()),
            read_only: true,
        },
        Spec {
            name: "header",
            description: "Write the portability header (C++) for a set of targets, or for a spec's backends.",
            input: json!({"type": "object", "properties": {
                "targets": strings("Targets (sm_90a, gfx942, h100, cpu-x86_64-avx2); default: every backend."),
                "spec": {"type": "string", "description": "Path to a kernel spec whose [backends] give the targets."}
            }}),
            output: Some(header_schema()),
            read_only: true,
        },
        Spec {
            name: "build",
            description: "Compile a kernel file for every target with the real compilers and report resource usage (the JSON of docs/build.md).",
            input: json!({"type": "object", "required": ["file"], "properties": {
                "file": {"type": "string", "description": "CUDA/HIP single-source file (.cu, .hip, .cpp) or Triton file (.py)."},
                "targets": strings("Targets; default: kplan.toml's, else this host's CPU and every GPU architecture whose compiler is installed."),
                "defines": strings("Preprocessor definitions NAME=VALUE."),
                "include": strings("Extra include directories."),
                "timeout": {"type": "integer", "minimum": 1, "description": "Per-compile time limit in seconds."}
            }}),
            output: Some(build_schema()),
            read_only: true,
        },
        Spec {
            name: "verify",
            description: "Run a reference kernel (or a harness TOML, or a Triton file) on a backend and check it against the CPU reference (the JSON of docs/verify.md).",
            input: json!({"type": "object", "required": ["kernel"], "properties": {
                "kernel": {"type": "string", "description": "Kernel name (rmsnorm, softmax, ...), a harness .toml or a Triton .py."},
                "backend": {"enum": ["cpu", "cpu-simt", "cuda"]},
                "sizes": {"type": "string", "description": "Problem sizes, as --sizes takes them."},
                "dtype": {"type": "string", "description": "fp32 or bf16."}
            }}),
            output: Some(verify_schema()),
            read_only: true,
        },
        Spec {
            name: "targets",
            description: "The knowledge base's targets (JSON), or every fact of one (`name`: architecture, device or alias).",
            input: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            output: Some(list_or_show(
                keys(&["architectures", "devices"], json!({
                    "architectures": {"type": "array", "items": {"type": "object"}},
                    "devices": {"type": "array", "items": {"type": "object"}}
                })),
                keys(&["name", "resolved_via", "arch", "device", "devices_of_arch", "features", "sources"], json!({
                    "resolved_via": {"enum": ["arch", "device"]},
                    "arch": {"type": "object"},
                    "features": {"type": "object"}
                })),
            )),
            read_only: true,
        },
        Spec {
            name: "features",
            description: "The knowledge base's features and where each is available (JSON), or one (`name`: feature id).",
            input: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            output: Some(list_or_show(
                keys(&["features"], json!({"features": {"type": "array", "items": {"type": "object"}}})),
                keys(&["feature", "sources"], json!({"feature": {"type": "object"}})),
            )),
            read_only: true,
        },
        Spec {
            name: "ops",
            description: "The operation knowledge base's op classes (JSON, the list as `items`), or one (`name`): libraries, algorithms, risks.",
            input: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            output: Some(list_or_show(
                keys(&["items"], json!({"items": {"type": "array", "items": keys(&["id", "name"], json!({}))}})),
                keys(&["id", "name", "latency_bound", "tile_hint"], json!({})),
            )),
            read_only: true,
        },
        Spec {
            name: "doctor",
            description: "The compilers and libraries found for each backend, their versions, and how to install what is missing (JSON).",
            input: json!({"type": "object", "properties": {}}),
            output: Some(keys(&["backends"], json!({"backends": {"type": "array", "items": keys(
                &["backend", "title", "can_build", "components"],
                json!({"can_build": {"type": "boolean"}, "components": {"type": "array"}}),
            )}}))),
            read_only: true,
        },
    ]
}

fn object(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// A call's arguments turned into the CLI's, or the message for an argument that is wrong.
struct Invocation {
    args: Vec<String>,
    /// An inline spec written to a file for the call, shown as `spec_toml` in messages.
    inline: Option<(tempfile::TempDir, PathBuf)>,
}

fn str_arg(a: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn list_arg(a: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(v)) => v
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("`{key}` must be an array of strings"))
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be an array of strings")),
    }
}

fn invocation(tool: &str, a: &Map<String, Value>) -> Result<Invocation, String> {
    let s = |v: &str| v.to_string();
    let mut inline = None;
    let mut args: Vec<String> = Vec::new();
    let known: &[&str] = match tool {
        "plan" => &["spec_toml", "spec", "source"],
        "scan" => &["paths", "targets", "select", "ignore", "config"],
        "explain" => &["rule"],
        "header" => &["targets", "spec"],
        "build" => &["file", "targets", "defines", "include", "timeout"],
        "verify" => &["kernel", "backend", "sizes", "dtype"],
        "targets" | "features" | "ops" => &["name"],
        "doctor" => &[],
        _ => return Err(format!("unknown tool `{tool}`")),
    };
    if let Some(k) = a.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "unknown argument `{k}` for `{tool}` (expected one of: {})",
            known.join(", ")
        ));
    }
    let required = |key: &str| -> Result<String, String> {
        str_arg(a, key)?.ok_or_else(|| format!("`{tool}` needs `{key}`"))
    };
    match tool {
        "plan" => {
            args.push(s("plan"));
            match (str_arg(a, "spec_toml")?, str_arg(a, "spec")?) {
                (Some(text), None) => {
                    let dir = tempfile::Builder::new()
                        .prefix("kplan-mcp-")
                        .tempdir()
                        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
                    let p = dir.path().join("spec.toml");
                    std::fs::write(&p, text)
                        .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
                    args.push(p.display().to_string());
                    inline = Some((dir, p));
                }
                (None, Some(path)) => args.push(path),
                (Some(_), Some(_)) => return Err("give `spec_toml` or `spec`, not both".into()),
                (None, None) => {
                    return Err("`plan` needs `spec_toml` (TOML text) or `spec` (a path)".into())
                }
            }
            for d in list_arg(a, "source")? {
                args.extend([s("--source"), d]);
            }
            args.extend([s("--format"), s("json")]);
        }
        "scan" => {
            args.push(s("scan"));
            let paths = list_arg(a, "paths")?;
            if paths.is_empty() {
                return Err("`scan` needs `paths` (files or directories)".into());
            }
            args.push(s("--"));
            args.extend(paths);
            for (k, flag) in [
                ("targets", "--targets"),
                ("select", "--select"),
                ("ignore", "--ignore"),
            ] {
                let v = list_arg(a, k)?;
                if !v.is_empty() {
                    args.insert(1, format!("{flag}={}", v.join(",")));
                }
            }
            if let Some(c) = str_arg(a, "config")? {
                args.insert(1, format!("--config={c}"));
            }
            args.insert(1, s("--fail-on=never"));
            args.insert(1, s("--format=json"));
        }
        "explain" => args.extend([s("explain"), s("--format=json"), s("--"), required("rule")?]),
        "header" => {
            args.push(s("header"));
            let t = list_arg(a, "targets")?;
            if !t.is_empty() {
                args.push(format!("--targets={}", t.join(",")));
            }
            if let Some(spec) = str_arg(a, "spec")? {
                args.push(format!("--spec={spec}"));
            }
        }
        "build" => {
            let file = required("file")?;
            args.extend([s("build"), s("--format=json")]);
            let t = list_arg(a, "targets")?;
            if !t.is_empty() {
                args.push(format!("--targets={}", t.join(",")));
            }
            for d in list_arg(a, "defines")? {
                args.push(format!("-D{d}"));
            }
            for i in list_arg(a, "include")? {
                args.extend([s("-I"), i]);
            }
            match a.get("timeout") {
                None | Some(Value::Null) => {}
                Some(v) => match v.as_u64() {
                    Some(n) => args.push(format!("--timeout={n}")),
                    None => return Err("`timeout` must be a positive integer (seconds)".into()),
                },
            }
            args.extend([s("--"), file]);
        }
        "verify" => {
            let kernel = required("kernel")?;
            args.extend([s("verify"), s("--format=json")]);
            for (k, flag) in [
                ("backend", "--backend"),
                ("sizes", "--sizes"),
                ("dtype", "--dtype"),
            ] {
                if let Some(v) = str_arg(a, k)? {
                    args.push(format!("{flag}={v}"));
                }
            }
            args.extend([s("--"), kernel]);
        }
        "targets" | "features" | "ops" => {
            args.push(s(tool));
            if let Some(n) = str_arg(a, "name")? {
                args.extend([s("show"), n]);
            }
            args.push(s("--format=json"));
        }
        "doctor" => args.extend([s("doctor"), s("--format=json")]),
        _ => unreachable!("checked above"),
    }
    Ok(Invocation { args, inline })
}

struct Server {
    exe: PathBuf,
    /// `--kb DIR` given to `kplan mcp`, passed on to every call.
    kb: Option<PathBuf>,
    tools: Vec<Tool>,
    /// The tools whose JSON is returned as structured content (those with an output schema).
    structured: Vec<&'static str>,
    text_only: Vec<&'static str>,
}

impl Server {
    fn new(kb: Option<PathBuf>) -> anyhow::Result<Server> {
        let exe = std::env::current_exe().context("cannot find the kplan executable")?;
        let mut tools = Vec::new();
        let mut structured = Vec::new();
        for s in specs() {
            let mut t = Tool::new(s.name, s.description, object(s.input));
            if let Some(o) = s.output {
                t = t.with_raw_output_schema(object(o));
                structured.push(s.name);
            }
            let mut ann = ToolAnnotations::new();
            ann.read_only_hint = Some(s.read_only);
            ann.open_world_hint = Some(false);
            tools.push(t.annotate(ann));
        }
        Ok(Server {
            exe,
            kb,
            tools,
            structured,
            text_only: vec!["header"],
        })
    }

    /// Runs one call to completion (blocking).
    fn call(&self, name: &str, arguments: Map<String, Value>) -> CallToolResult {
        let inv = match invocation(name, &arguments) {
            Ok(i) => i,
            Err(m) => {
                return CallToolResult::error(vec![ContentBlock::text(format!("error: {m}"))])
            }
        };
        let mut cmd = std::process::Command::new(&self.exe);
        if let Some(kb) = &self.kb {
            cmd.arg("--kb").arg(kb);
        }
        cmd.arg("--color=never").args(&inv.args);
        // through the process runner: stdin closed, both pipes drained, the process group
        // killed when a call runs past its limit
        let out = match kplan_build::process::run_command(cmd, CALL_TIMEOUT) {
            Ok(o) => o,
            Err(e) => {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "error: cannot run {}: {e}",
                    self.exe.display()
                ))])
            }
        };
        if out.timed_out {
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "error: kplan {name} ran past {} s and was stopped",
                CALL_TIMEOUT.as_secs()
            ))]);
        }
        let (mut stdout, mut stderr) = (out.stdout, out.stderr);
        if let Some((_, p)) = &inv.inline {
            let shown = p.display().to_string();
            stdout = stdout.replace(&shown, "spec_toml");
            stderr = stderr.replace(&shown, "spec_toml");
        }
        let code = out.code;
        // 0: done; 1: done with findings or failed targets (the JSON says which); 2 or a
        // signal: the CLI's error
        if !matches!(code, Some(0) | Some(1)) {
            let msg = if stderr.trim().is_empty() {
                match out.status {
                    Some(st) => format!("error: kplan {name} ended with {st}"),
                    None => format!("error: kplan {name} could not be waited for"),
                }
            } else {
                stderr.trim_end().to_string()
            };
            return CallToolResult::error(vec![ContentBlock::text(msg)]);
        }
        let value: Value = if self.text_only.contains(&name) {
            // a text verb: its text as `header`, the name its output schema gives it
            json!({ "header": stdout })
        } else {
            match serde_json::from_str(&stdout) {
                Ok(v) => v,
                Err(e) => {
                    return CallToolResult::error(vec![ContentBlock::text(format!(
                        "error: kplan {name} did not print JSON ({e}): {}",
                        stderr.trim_end()
                    ))])
                }
            }
        };
        // every tool has an output schema, which describes an object: a JSON array (a list of
        // op classes, several verify reports) comes as `items`
        let value = match value {
            Value::Array(items) => json!({ "items": items }),
            v => v,
        };
        let mut r = if self.structured.contains(&name) || value.is_object() {
            CallToolResult::structured(value)
        } else {
            CallToolResult::success(vec![ContentBlock::text(stdout)])
        };
        if !stderr.trim().is_empty() {
            r.content
                .push(ContentBlock::text(stderr.trim_end().to_string()));
        }
        r
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("kplan", env!("CARGO_PKG_VERSION"));
        info.with_instructions(
            "kplan plans, scans, builds and verifies GPU kernels that must ship on NVIDIA (CUDA), AMD (ROCm/HIP) and a CPU fallback. Start with `plan` (a kernel spec in TOML) or `scan` (existing CUDA/HIP/Triton code); `explain` a finding's rule; `doctor` says which compilers `build` and `verify` can use.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.get_tool(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let me = Server {
            exe: self.exe.clone(),
            kb: self.kb.clone(),
            tools: Vec::new(),
            structured: self.structured.clone(),
            text_only: self.text_only.clone(),
        };
        let r = tokio::task::spawn_blocking(move || me.call(&name, args))
            .await
            .map_err(|e| ErrorData::internal_error(format!("tool call failed: {e}"), None))?;
        Ok(r.into())
    }
}

pub fn run(_ctx: &Ctx, kb: Option<PathBuf>, _args: Args) -> anyhow::Result<u8> {
    let server = Server::new(kb)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("MCP session did not start: {e}"))?;
        service
            .waiting()
            .await
            .map_err(|e| anyhow::anyhow!("MCP session ended with an error: {e}"))?;
        anyhow::Ok(())
    })?;
    Ok(0)
}
