//! The HTTP server (the `http` feature): the listening socket, the request checks (path,
//! method, encoding, size, [`super::limits`], `admission.rs`) and the replies; with the
//! `metrics` feature also `GET /metrics`. See the module above for what it answers.

use std::convert::Infallible;
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde::Serialize;
use tokio::sync::oneshot;

use crate::{IngestEvent, LiveError, LiveHandle, Result};

use super::admission;
use super::length_guard::LengthGuard;
use super::limits::{self, BodyLease, ConnectionLimits, HttpCounters, Refused};
use super::{
    BatchRefused, BatchReport, DEFAULT_BODIES_IN_MEMORY, DEFAULT_MAX_BODY_BYTES, HttpBatch,
    TRACE_PATH,
};

/// At shutdown, requests being read get this long to be answered.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// Threads that read and decompress bodies, at most (`LITEHIT_THREADS` caps them; parsing is
/// the ingest thread's).
const WORKER_THREADS: usize = 2;
/// After a failed `accept` (out of file descriptors), wait this long before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What the endpoint accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// Larger bodies get 413, as sent and once decompressed (`--max-body`).
    pub max_body_bytes: u64,
    /// Bytes all bodies being read hold at once, as declared or as they arrive, and once
    /// decompressed (`--max-body-total`); a body over it gets 503 (at least `max_body_bytes`).
    pub max_body_total_bytes: u64,
    /// Posts must carry `Authorization: Bearer TOKEN` (`--listen-token-file`).
    pub token: Option<String>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_body_total_bytes: DEFAULT_BODIES_IN_MEMORY * DEFAULT_MAX_BODY_BYTES,
            token: None,
        }
    }
}

/// A bound socket, before the server runs (bound first, so that a port in use is said at
/// startup and port 0 has its real number before the monitor starts).
#[derive(Debug)]
pub struct HttpListener {
    listener: std::net::TcpListener,
    local_addr: SocketAddr,
}

impl HttpListener {
    pub fn bind(address: SocketAddr) -> Result<Self> {
        let listen_error = |source| LiveError::Listen { address, source };
        let listener = std::net::TcpListener::bind(address).map_err(listen_error)?;
        listener.set_nonblocking(true).map_err(listen_error)?;
        let local_addr = listener.local_addr().map_err(listen_error)?;
        Ok(Self {
            listener,
            local_addr,
        })
    }

    /// The address bound (with the port chosen by the system for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

/// What one server serves: `POST /v1/trace` (`--listen`), `GET /metrics`
/// (`--metrics-listen`), or both when the two flags name the same address.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    /// `POST /v1/trace`, with its limits.
    pub trace: Option<HttpOptions>,
    /// `GET /metrics`: the latest snapshot in the Prometheus text format.
    pub metrics: bool,
    /// Open connections, idle time and the names a loopback bind answers to.
    pub limits: ConnectionLimits,
}

/// The running endpoint; dropping it stops accepting, lets requests being read finish (for
/// up to [`SHUTDOWN_GRACE`]) and ends its threads.
#[derive(Debug)]
pub struct HttpServer {
    local_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpServer {
    /// Serves `POST /v1/trace` on `listener`, handing bodies to `live`'s ingest thread.
    pub fn start(listener: HttpListener, options: HttpOptions, live: &LiveHandle) -> Result<Self> {
        let endpoints = Endpoints {
            trace: Some(options),
            ..Endpoints::default()
        };
        Self::start_with(listener, endpoints, live)
    }

    /// Serves `endpoints` on `listener` (trace bodies go to `live`'s ingest thread, scrapes
    /// read its latest snapshot).
    pub fn start_with(
        listener: HttpListener,
        endpoints: Endpoints,
        live: &LiveHandle,
    ) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            // `LITEHIT_THREADS` caps this pool too (an invalid one, refused by `watch` at
            // start, to one thread).
            .worker_threads(
                litehit_core::threads::available(None)
                    .map_or(1, |cap| cap.get().min(WORKER_THREADS)),
            )
            .thread_name("litehit-http")
            .enable_io()
            .enable_time()
            .build()
            .map_err(LiveError::io("starting the HTTP runtime"))?;
        let local_addr = listener.local_addr;
        let state = Arc::new(State {
            events: live.events.clone(),
            trace: endpoints.trace.is_some(),
            options: endpoints.trace.unwrap_or_default(),
            #[cfg(feature = "metrics")]
            metrics: endpoints
                .metrics
                .then(|| crate::metrics::Exporter::new(live.snapshots())),
            loopback_bind: local_addr.ip().is_loopback(),
            limits: endpoints.limits,
        });
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("litehit-http".to_owned())
            .spawn(move || runtime.block_on(serve(listener.listener, state, stopped)))
            .map_err(LiveError::io("starting the HTTP thread"))?;
        Ok(Self {
            local_addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // The server task ends only on this signal; if it is gone, it already ended.
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panicked server thread has already reported through the panic hook.
            let _ = thread.join();
        }
    }
}

/// What every request handler shares.
#[derive(Debug)]
struct State {
    events: Sender<IngestEvent>,
    /// Whether `POST /v1/trace` is served here.
    trace: bool,
    options: HttpOptions,
    /// `GET /metrics`, when served here (with the `metrics` feature).
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::Exporter>,
    /// Whether the socket is bound to a loopback address (then `Host` is checked).
    loopback_bind: bool,
    limits: ConnectionLimits,
}

impl State {
    fn counters(&self) -> &Arc<HttpCounters> {
        &self.limits.counters
    }
}

async fn serve(
    listener: std::net::TcpListener,
    state: Arc<State>,
    mut stopped: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("litehit: the HTTP endpoint could not start: {error}");
            return;
        }
    };
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => {
                let Ok((stream, _peer)) = accepted else {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                };
                let counters = Arc::clone(state.counters());
                let Some(open) = counters.open_connection(state.limits.max_connections) else {
                    // Over the cap: said at once and closed, so the descriptor is back now.
                    counters.count(Refused::ConnectionCap);
                    let _ = stream.try_write(limits::OVER_CAP_REPLY);
                    continue;
                };
                let service_state = Arc::clone(&state);
                let service = hyper::service::service_fn(move |request| {
                    let state = Arc::clone(&service_state);
                    async move { Ok::<_, Infallible>(handle(request, &state).await) }
                });
                // A connection that has not sent a whole head this long after it opened, or
                // after its last reply, is closed (half-sent requests, idle keep-alives).
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(state.limits.idle_timeout)
                    .serve_connection(TokioIo::new(LengthGuard::new(stream)), service);
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    // A client that hangs up mid-request is its own problem, not the monitor's;
                    // one that idled past the timeout is counted.
                    if connection.await.is_err_and(|error| error.is_timeout()) {
                        counters.count(Refused::Timeout);
                    }
                    drop(open);
                });
            }
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
}

/// A request refused before (or instead of) reading it: status and message, and the counter
/// it goes to (if it is one of the budgets' or checks').
struct Refusal {
    status: StatusCode,
    message: String,
    counted: Option<Refused>,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            counted: None,
        }
    }

    fn counted(status: StatusCode, message: impl Into<String>, refused: Refused) -> Self {
        Self {
            counted: Some(refused),
            ..Self::new(status, message)
        }
    }
}

async fn handle(request: Request<Incoming>, state: &State) -> Response<Full<Bytes>> {
    if let Err(message) = admission::check_host_and_origin(
        request.headers(),
        state.loopback_bind,
        &state.limits.allowed_hosts,
    ) {
        return refusal_response(
            state,
            &Refusal::counted(StatusCode::FORBIDDEN, message, Refused::HostOrOrigin),
        );
    }
    #[cfg(feature = "metrics")]
    if let Some(exporter) = &state.metrics
        && request.uri().path() == super::METRICS_PATH
    {
        return metrics_response(&request, exporter);
    }
    match read_batch(request, state).await {
        Ok(report) => json_response(StatusCode::OK, &report),
        Err(refusal) => refusal_response(state, &refusal),
    }
}

/// The reply to a refused request (counted, if it is one of the budgets' or checks').
fn refusal_response(state: &State, refusal: &Refusal) -> Response<Full<Bytes>> {
    let mut response = json_response(
        refusal.status,
        &serde_json::json!({ "error": refusal.message }),
    );
    let headers = response.headers_mut();
    match refusal.status {
        StatusCode::METHOD_NOT_ALLOWED => {
            headers.insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        StatusCode::UNAUTHORIZED => {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        _ => {}
    }
    if let Some(refused) = refusal.counted {
        state.counters().count(refused);
        if refused == Refused::BodyMemory {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
    }
    response
}

async fn read_batch(
    request: Request<Incoming>,
    state: &State,
) -> std::result::Result<BatchReport, Refusal> {
    let path = request.uri().path();
    if !state.trace {
        return Err(Refusal::new(
            StatusCode::NOT_FOUND,
            format!("no such endpoint: {path}; scrape {}", super::METRICS_PATH),
        ));
    }
    if path != TRACE_PATH {
        return Err(Refusal::new(
            StatusCode::NOT_FOUND,
            format!("no such endpoint: {path}; post trace lines to {TRACE_PATH}"),
        ));
    }
    if request.method() != Method::POST {
        return Err(Refusal::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "method {} is not allowed on {TRACE_PATH}; use POST",
                request.method()
            ),
        ));
    }
    admit_post(request.headers(), state)?;
    let gzip = is_gzip(&request)?;
    let max = state.options.max_body_bytes;
    let too_large = || {
        Refusal::counted(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is over the limit of {max} bytes (--max-body)"),
            Refused::BodySize,
        )
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > max) {
        return Err(too_large());
    }
    let limit = usize::try_from(max).unwrap_or(usize::MAX);
    let memory = BodyMemory {
        counters: state.counters(),
        total_bytes: state.options.max_body_total_bytes,
    };
    let mut lease = BodyLease::new(state.counters());
    // What a body declares is taken from the budget before any byte of it is held, so
    // declarations alone cannot hold more than the budget (the bytes come as they arrive).
    if let Some(length) = declared
        && !memory.grow(&mut lease, length)
    {
        return Err(memory.refusal(length));
    }
    let idle_timeout = state.limits.idle_timeout;
    let body = read_body(
        request.into_body(),
        limit,
        declared,
        idle_timeout,
        &memory,
        &mut lease,
    )
    .await
    .map_err(|error| match error {
        BodyError::TooLarge => too_large(),
        BodyError::OutOfMemory(bytes) => memory.refusal(bytes as u64),
        BodyError::Idle => idle_refusal(idle_timeout),
        BodyError::Read(message) => Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("reading the body failed: {message}"),
        ),
    })?;
    // The lease is held until the ingest thread has read the body (the end of this function).
    let (body, _lease) = if gzip && !body.is_empty() {
        gunzip_within(body, state, lease).await?
    } else {
        (body, lease)
    };
    let (reply, answer) = oneshot::channel();
    let stopping = || {
        Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the monitor is stopping; the batch was not read",
        )
    };
    state
        .events
        .send(IngestEvent::HttpBatch(HttpBatch { body, reply }))
        .map_err(|_| stopping())?;
    match answer.await {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(BatchRefused::Finished)) => Err(Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the monitor has finished (--exit-at-eof) and reads no more rows",
        )),
        Err(_) => Err(stopping()),
    }
}

/// The bearer token (with `--listen-token-file`) and the JSON-lines `Content-Type` of a post.
fn admit_post(headers: &hyper::HeaderMap, state: &State) -> std::result::Result<(), Refusal> {
    if let Some(token) = &state.options.token
        && !admission::has_token(headers, token)
    {
        return Err(Refusal::counted(
            StatusCode::UNAUTHORIZED,
            "no bearer token, or not the one of --listen-token-file: send \
             'Authorization: Bearer TOKEN'",
            Refused::Token,
        ));
    }
    admission::check_content_type(headers).map_err(|message| {
        Refusal::counted(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            message,
            Refused::ContentType,
        )
    })
}

/// Decompresses a gzip `body` on a blocking thread, its lines held within `lease` (grown
/// from the body-memory budget); returns the lines and the lease.
async fn gunzip_within(
    body: Vec<u8>,
    state: &State,
    mut lease: BodyLease,
) -> std::result::Result<(Vec<u8>, BodyLease), Refusal> {
    let counters = Arc::clone(state.counters());
    let total_bytes = state.options.max_body_total_bytes;
    let max = state.options.max_body_bytes;
    let (lines, lease) = tokio::task::spawn_blocking(move || {
        let memory = BodyMemory {
            counters: &counters,
            total_bytes,
        };
        let lines = gunzip(&body, max, |bytes| memory.grow(&mut lease, bytes as u64));
        (lines, lease)
    })
    .await
    .map_err(|error| {
        Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("decompressing the body failed: {error}"),
        )
    })?;
    let memory = BodyMemory {
        counters: state.counters(),
        total_bytes,
    };
    let lines = lines.map_err(|error| match error {
        GunzipError::Refused(refusal) => refusal,
        GunzipError::OutOfMemory(bytes) => memory.refusal(bytes as u64),
    })?;
    Ok((lines, lease))
}

/// Whether the body is gzip (`Content-Encoding: gzip`); any other encoding but `identity` is
/// refused.
fn is_gzip(request: &Request<Incoming>) -> std::result::Result<bool, Refusal> {
    let Some(value) = request.headers().get(header::CONTENT_ENCODING) else {
        return Ok(false);
    };
    let encoding = value
        .to_str()
        .map(|text| text.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match encoding.as_str() {
        "" | "identity" => Ok(false),
        "gzip" | "x-gzip" => Ok(true),
        _ => Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "Content-Encoding {:?} is not supported; send the body plain or gzip",
                String::from_utf8_lossy(value.as_bytes())
            ),
        )),
    }
}

/// Why a body could not be read.
enum BodyError {
    /// Over `--max-body`.
    TooLarge,
    /// Holding it needed this many bytes, over `--max-body-total` or more than memory had.
    OutOfMemory(usize),
    /// No byte came for `--http-idle-timeout`.
    Idle,
    Read(String),
}

/// The 408 to a body that paused longer than `--http-idle-timeout`.
fn idle_refusal(idle_timeout: Duration) -> Refusal {
    Refusal::counted(
        StatusCode::REQUEST_TIMEOUT,
        format!(
            "the body paused longer than {} s (--http-idle-timeout)",
            idle_timeout.as_secs_f64()
        ),
        Refused::Timeout,
    )
}

/// The body-memory budget every request's lease is taken from.
struct BodyMemory<'a> {
    counters: &'a Arc<HttpCounters>,
    total_bytes: u64,
}

impl BodyMemory<'_> {
    /// Grows `lease` to hold at least `bytes`; false when the budget has not that much left.
    fn grow(&self, lease: &mut BodyLease, bytes: u64) -> bool {
        let more = bytes.saturating_sub(lease.bytes());
        more == 0 || self.counters.grow_lease(lease, more, self.total_bytes)
    }

    /// The 503 for a body the budget (or memory) cannot hold now; the monitor goes on.
    fn refusal(&self, bytes: u64) -> Refusal {
        Refusal::counted(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "bodies being read hold too much memory to take {bytes} bytes more (at most {} \
                 bytes at once, --max-body-total); retry later",
                self.total_bytes
            ),
            Refused::BodyMemory,
        )
    }
}

/// Reads a body of at most `limit` bytes into one buffer that grows, as bytes arrive, within
/// `lease` (grown from `memory` as needed) and fallibly (a body memory cannot hold is a 503 to
/// its client, never an abort nor a stop).
async fn read_body(
    body: Incoming,
    limit: usize,
    declared: Option<u64>,
    idle_timeout: Duration,
    memory: &BodyMemory<'_>,
    lease: &mut BodyLease,
) -> std::result::Result<Vec<u8>, BodyError> {
    let mut body = Limited::new(body, limit);
    let mut bytes: Vec<u8> = Vec::new();
    // The buffer never grows past what was declared (already checked against the limit).
    let declared = declared.and_then(|length| usize::try_from(length).ok());
    loop {
        let Some(frame) = tokio::time::timeout(idle_timeout, body.frame())
            .await
            .map_err(|_| BodyError::Idle)?
        else {
            break;
        };
        let frame = frame.map_err(|error| {
            if error.downcast_ref::<LengthLimitError>().is_some() {
                BodyError::TooLarge
            } else {
                BodyError::Read(error.to_string())
            }
        })?;
        if let Ok(data) = frame.into_data() {
            let needed = bytes.len().saturating_add(data.len());
            if needed > bytes.capacity() {
                let capacity = needed
                    .max(bytes.capacity().saturating_mul(2))
                    .min(declared.unwrap_or(limit).max(needed));
                if !memory.grow(lease, capacity as u64) {
                    return Err(BodyError::OutOfMemory(capacity));
                }
                bytes
                    .try_reserve_exact(capacity - bytes.len())
                    .map_err(|_| BodyError::OutOfMemory(capacity))?;
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes)
}

/// Why a gzip body could not be decompressed.
enum GunzipError {
    Refused(Refusal),
    /// The decompressed lines needed this many bytes, over `--max-body-total` or more than
    /// memory had.
    OutOfMemory(usize),
}

/// Decompresses a gzip body (several members are read as one stream, as `gzip -c a b`
/// writes them), refusing one that grows past `max_bytes`; the output grows fallibly, each
/// growth first allowed by `may_hold` (given the output's new capacity).
fn gunzip(
    body: &[u8],
    max_bytes: u64,
    mut may_hold: impl FnMut(usize) -> bool,
) -> std::result::Result<Vec<u8>, GunzipError> {
    const STEP: usize = 64 * 1024;
    let mut lines = Vec::new();
    let mut decoder = flate2::read::MultiGzDecoder::new(body).take(max_bytes.saturating_add(1));
    let ceiling = usize::try_from(max_bytes.saturating_add(1)).unwrap_or(usize::MAX);
    loop {
        if lines.capacity() - lines.len() < STEP {
            // Never more than one byte past the limit (which `take` stops at), and always
            // room for one more byte.
            let capacity = lines
                .capacity()
                .saturating_mul(2)
                .max(lines.len().saturating_add(STEP))
                .min(ceiling)
                .max(lines.len().saturating_add(1));
            if capacity > lines.capacity() {
                if !may_hold(body.len().saturating_add(capacity)) {
                    return Err(GunzipError::OutOfMemory(capacity));
                }
                lines
                    .try_reserve_exact(capacity - lines.len())
                    .map_err(|_| GunzipError::OutOfMemory(capacity))?;
            }
        }
        let start = lines.len();
        lines.resize(lines.capacity(), 0);
        let read = match decoder.read(&mut lines[start..]) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {
                lines.truncate(start);
                continue;
            }
            Err(error) => {
                return Err(GunzipError::Refused(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    format!("the body is not valid gzip: {error}"),
                )));
            }
        };
        lines.truncate(start + read);
        if read == 0 {
            break; // a read into some room gave none: the end
        }
    }
    if lines.len() as u64 > max_bytes {
        return Err(GunzipError::Refused(Refusal::counted(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body decompresses to more than {max_bytes} bytes (--max-body)"),
            Refused::BodySize,
        )));
    }
    Ok(lines)
}

/// `GET /metrics` (or `HEAD`): the latest snapshot's exposition, in the format the `Accept`
/// header negotiates ([`crate::metrics::Format::negotiate`]).
#[cfg(feature = "metrics")]
fn metrics_response(
    request: &Request<Incoming>,
    exporter: &crate::metrics::Exporter,
) -> Response<Full<Bytes>> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &serde_json::json!({ "error": format!(
                "method {} is not allowed on {}; use GET",
                request.method(),
                super::METRICS_PATH
            ) }),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    // The classic text format unless OpenMetrics is asked for, as client libraries choose.
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    let format = crate::metrics::Format::negotiate(accept);
    let Ok(text) = exporter.scrape_as(format) else {
        return json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &serde_json::json!({ "error": "encoding the metrics failed" }),
        );
    };
    let mut response = Response::new(Full::new(Bytes::from(text)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    headers.insert(header::VARY, HeaderValue::from_static("accept"));
    response
}

fn json_response(status: StatusCode, value: &impl Serialize) -> Response<Full<Bytes>> {
    let mut body = serde_json::to_vec(value).unwrap_or_default();
    body.push(b'\n');
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::RejectedLine;
    use std::io::Write as _;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn gunzip_reads_concatenated_members() {
        let mut body = gzip(b"a\n");
        body.extend(gzip(b"b\n"));
        assert_eq!(gunzip(&body, 100, |_| true).ok().unwrap(), b"a\nb\n");
    }

    #[test]
    fn gunzip_refuses_garbage_and_bombs() {
        let refused = |body: &[u8], max| match gunzip(body, max, |_| true) {
            Err(GunzipError::Refused(refusal)) => refusal,
            _ => panic!("refused expected"),
        };
        let garbage = refused(b"not gzip at all", 100);
        assert_eq!(garbage.status, StatusCode::BAD_REQUEST);
        assert!(
            garbage.message.contains("not valid gzip"),
            "{}",
            garbage.message
        );
        let bomb = refused(&gzip(&[b'x'; 1000]), 999);
        assert_eq!(bomb.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            gunzip(&gzip(&[b'x'; 1000]), 1000, |_| true)
                .ok()
                .unwrap()
                .len(),
            1000
        );
    }

    #[test]
    fn gunzip_grows_only_as_far_as_it_may_hold() {
        let packed = gzip(&vec![b'x'; 200_000]);
        let mut largest = 0;
        let lines = gunzip(&packed, 200_000, |bytes| {
            largest = largest.max(bytes);
            true
        });
        assert_eq!(lines.ok().unwrap().len(), 200_000);
        // The compressed body and at most one byte past the limit.
        assert!(largest <= packed.len() + 200_001, "{largest}");
        let refused = gunzip(&packed, 200_000, |bytes| bytes < 100_000);
        assert!(matches!(refused, Err(GunzipError::OutOfMemory(_))));
    }

    #[test]
    fn report_serializes_as_documented() {
        let report = BatchReport {
            accepted: 2,
            rejected: 1,
            rejected_lines: vec![RejectedLine {
                line: 3,
                reason: "invalid JSON".to_owned(),
            }],
        };
        assert_eq!(
            serde_json::to_string(&report).unwrap(),
            r#"{"accepted":2,"rejected":1,"rejected_lines":[{"line":3,"reason":"invalid JSON"}]}"#
        );
    }
}
