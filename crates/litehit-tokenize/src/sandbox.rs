//! Rendering untrusted chat templates in a child process under a memory budget.
//!
//! minijinja's fuel bounds a render's steps, not its memory: `{% set ns.s = ns.s ~ ns.s %}`
//! doubles a string in one step, and an allocation that fails aborts the process. So the
//! template is rendered in a child process (the same program, started with
//! [`RENDERER_ARG`], which calls [`serve`]) whose address space is limited (`RLIMIT_AS`) to
//! what it maps at start plus the budget. A render that runs out of memory kills only the
//! child: the request fails with an error naming the template, and the next request starts
//! a new child. A render that runs out of fuel is an ordinary minijinja error.
//!
//! The protocol, over the child's stdin and stdout, is frames of a 4-byte little-endian
//! length and that many bytes: first the [`Init`] (JSON), answered by a status frame; then,
//! per request, `body_path`, a NUL byte and the log line, answered by a status byte (0: the
//! rendered prompt follows, 1: an error message follows) and a frame.

use std::ffi::OsString;
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use serde_json::Value;

use crate::template::{ChatTemplate, TemplateOptions, TokenizerConfig};

/// The first argument that makes a program serve as a renderer ([`serve`]).
pub const RENDERER_ARG: &str = "__litehit-render-chat-template";

/// How to start a renderer: a program that calls [`serve`] when given [`RENDERER_ARG`].
#[derive(Debug, Clone)]
pub struct RendererCommand {
    pub program: PathBuf,
}

impl RendererCommand {
    /// The running program itself (its `main` must check [`is_renderer_invocation`]).
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self {
            program: std::env::current_exe()?,
        })
    }
}

/// Whether this process was started as a renderer.
pub fn is_renderer_invocation() -> bool {
    std::env::args_os().nth(1) == Some(OsString::from(RENDERER_ARG))
}

/// What a renderer needs to build the template.
#[derive(Debug, Clone)]
pub struct Init {
    pub source: String,
    pub source_name: String,
    pub bos_token: Option<String>,
    pub eos_token: Option<String>,
    pub add_generation_prompt: bool,
    pub kwargs: Vec<(String, Value)>,
    pub fuel: u64,
    pub memory_bytes: u64,
}

impl Init {
    fn to_json(&self) -> Vec<u8> {
        let kwargs: Vec<Value> = self
            .kwargs
            .iter()
            .map(|(name, value)| serde_json::json!([name, value]))
            .collect();
        serde_json::json!({
            "source": self.source, "source_name": self.source_name,
            "bos_token": self.bos_token, "eos_token": self.eos_token,
            "add_generation_prompt": self.add_generation_prompt, "kwargs": kwargs,
            "fuel": self.fuel, "memory_bytes": self.memory_bytes,
        })
        .to_string()
        .into_bytes()
    }

    fn from_json(bytes: &[u8]) -> Option<Self> {
        let json: Value = serde_json::from_slice(bytes).ok()?;
        let text = |field: &str| json.get(field).and_then(Value::as_str).map(str::to_owned);
        let kwargs = json
            .get("kwargs")?
            .as_array()?
            .iter()
            .map(|pair| Some((pair.get(0)?.as_str()?.to_owned(), pair.get(1)?.clone())))
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            source: text("source")?,
            source_name: text("source_name")?,
            bos_token: text("bos_token"),
            eos_token: text("eos_token"),
            add_generation_prompt: json.get("add_generation_prompt")?.as_bool()?,
            kwargs,
            fuel: json.get("fuel")?.as_u64()?,
            memory_bytes: json.get("memory_bytes")?.as_u64()?,
        })
    }
}

/// A renderer process, started again after it dies.
#[derive(Debug)]
pub struct Sandbox {
    command: RendererCommand,
    init: Vec<u8>,
    memory_bytes: u64,
    worker: Mutex<Option<Worker>>,
}

#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing stdin ends the child's loop; it holds nothing worth waiting for.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sandbox {
    /// Starts the renderer, which compiles the template and renders the probe conversation;
    /// the error is why either failed.
    pub fn start(command: RendererCommand, init: &Init) -> Result<Self, String> {
        let sandbox = Self {
            command,
            init: init.to_json(),
            memory_bytes: init.memory_bytes,
            worker: Mutex::new(None),
        };
        let worker = sandbox.spawn()?;
        *sandbox.lock() = Some(worker);
        Ok(sandbox)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Worker>> {
        self.worker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn spawn(&self) -> Result<Worker, String> {
        let mut child = Command::new(&self.command.program)
            .arg(RENDERER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| {
                format!(
                    "cannot start the template renderer {}: {error}",
                    self.command.program.display()
                )
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the template renderer has no pipes".to_owned());
        };
        let mut worker = Worker {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        };
        match worker.exchange(&[&self.init]) {
            Ok(Ok(_)) => Ok(worker),
            Ok(Err(message)) => Err(message),
            Err(_) => Err(self.death(&mut worker, "on the probe conversation")),
        }
    }

    /// Why the renderer died.
    fn death(&self, worker: &mut Worker, when: &str) -> String {
        use std::os::unix::process::ExitStatusExt as _;
        let status = worker.child.wait();
        let mib = self.memory_bytes >> 20;
        match status {
            // An allocation that fails aborts (SIGABRT); the kernel may kill instead.
            Ok(status) if matches!(status.signal(), Some(6 | 9)) => {
                format!("rendering {when} exceeded the template memory budget ({mib} MiB)")
            }
            Ok(status) => format!("the template renderer ended {when} ({status})"),
            Err(error) => format!("the template renderer ended {when} ({error})"),
        }
    }

    /// Renders the body at `body_path` of the line `text`.
    pub fn render(&self, text: &str, body_path: &str) -> Result<String, String> {
        let mut guard = self.lock();
        if guard.is_none() {
            *guard = Some(self.spawn()?);
        }
        let Some(worker) = guard.as_mut() else {
            return Err("the template renderer is not running".to_owned());
        };
        if let Ok(reply) = worker.exchange(&[body_path.as_bytes(), b"\0", text.as_bytes()]) {
            return reply;
        }
        let message = self.death(worker, "this request");
        // Started again for the next request.
        *guard = None;
        Err(message)
    }
}

impl Worker {
    /// Sends one frame of `parts` and reads the answer: `Ok(Ok(text))`, `Ok(Err(message))`,
    /// or `Err` when the child is gone.
    fn exchange(&mut self, parts: &[&[u8]]) -> std::io::Result<Result<String, String>> {
        let len: usize = parts.iter().map(|part| part.len()).sum();
        let len = u32::try_from(len).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        self.stdin.write_all(&len.to_le_bytes())?;
        for part in parts {
            self.stdin.write_all(part)?;
        }
        self.stdin.flush()?;
        let mut status = [0_u8; 1];
        self.stdout.read_exact(&mut status)?;
        let body = read_frame(&mut self.stdout)?;
        let text = String::from_utf8_lossy(&body).into_owned();
        Ok(if status[0] == 0 { Ok(text) } else { Err(text) })
    }
}

fn read_frame(input: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0_u8; 4];
    input.read_exact(&mut len)?;
    let mut body = vec![0; u32::from_le_bytes(len) as usize];
    input.read_exact(&mut body)?;
    Ok(body)
}

fn write_reply(output: &mut impl Write, reply: &Result<String, String>) -> std::io::Result<()> {
    let (status, text) = match reply {
        Ok(text) => (0_u8, text),
        Err(text) => (1_u8, text),
    };
    let len = u32::try_from(text.len()).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    output.write_all(&[status])?;
    output.write_all(&len.to_le_bytes())?;
    output.write_all(text.as_bytes())?;
    output.flush()
}

/// The renderer's loop (the child's whole life): read the [`Init`], limit the address space,
/// build the template, then render requests until stdin closes. Returns when stdin closes or
/// a pipe breaks.
pub fn serve(input: impl Read, output: impl Write) -> std::io::Result<()> {
    let mut input = BufReader::new(input);
    let mut output = std::io::BufWriter::new(output);
    let init = read_frame(&mut input)?;
    let Some(init) = Init::from_json(&init) else {
        return write_reply(&mut output, &Err("bad renderer init".to_owned()));
    };
    if let Err(message) = limit_address_space(init.memory_bytes) {
        return write_reply(&mut output, &Err(message));
    }
    let config = TokenizerConfig {
        chat_template: None,
        bos_token: init.bos_token,
        eos_token: init.eos_token,
    };
    let options = TemplateOptions {
        add_generation_prompt: init.add_generation_prompt,
        kwargs: init.kwargs,
    };
    let template = match ChatTemplate::with_fuel(
        init.source,
        init.source_name,
        &config,
        &options,
        init.fuel,
    ) {
        Ok(template) => template,
        Err(error) => {
            let message = match error {
                crate::TokenizeError::Template { message, .. } => message,
                other => other.to_string(),
            };
            return write_reply(&mut output, &Err(message));
        }
    };
    write_reply(&mut output, &Ok(String::new()))?;
    loop {
        let request = match read_frame(&mut input) {
            Ok(request) => request,
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(error) => return Err(error),
        };
        let reply = match request.iter().position(|&byte| byte == 0) {
            Some(at) => match (
                std::str::from_utf8(&request[..at]),
                std::str::from_utf8(&request[at + 1..]),
            ) {
                (Ok(body_path), Ok(text)) => template.render_body(text, body_path),
                _ => Err("the request is not UTF-8".to_owned()),
            },
            None => Err("bad renderer request".to_owned()),
        };
        write_reply(&mut output, &reply)?;
    }
}

/// `RLIMIT_AS` at what the process maps now plus `budget_bytes`.
fn limit_address_space(budget_bytes: u64) -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|error| format!("reading /proc/self/status: {error}"))?;
    let mapped_kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmSize:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmSize in /proc/self/status")?;
    let limit = mapped_kib.saturating_mul(1024).saturating_add(budget_bytes);
    let current = rustix::process::getrlimit(rustix::process::Resource::As);
    // Never above a limit already set (`ulimit -v` on the parent).
    let limit = [current.current, current.maximum]
        .into_iter()
        .flatten()
        .fold(limit, u64::min);
    rustix::process::setrlimit(
        rustix::process::Resource::As,
        rustix::process::Rlimit {
            current: Some(limit),
            maximum: Some(limit),
        },
    )
    .map_err(|error| format!("setting the renderer's memory limit: {error}"))
}
