//! `watch`'s HTTP servers (the `http` feature): `--listen` (`POST /v1/trace`) and
//! `--metrics-listen` (`GET /metrics`, the `metrics` feature), bound before the monitor starts
//! (a port in use is said at once, port 0 has its number) and started once it runs.

use std::sync::Arc;

use color_eyre::eyre::{WrapErr as _, bail};

use crate::cli::watch_args::WatchArgs;
use litehit_live::http::limits::{self, ConnectionLimits};
use litehit_live::http::{Endpoints, HttpListener, HttpOptions, HttpServer};
use litehit_live::ingest::IngestConfig;

use super::watch::seconds;

/// The sockets bound and the budgets checked, before the monitor starts.
pub(super) struct Bound {
    listener: Option<HttpListener>,
    metrics_listener: Option<HttpListener>,
    shared: bool,
    budgets: HttpBudgets,
}

/// The running servers; they serve until dropped.
pub(super) struct Servers {
    _trace: Option<HttpServer>,
    _metrics: Option<HttpServer>,
}

impl Bound {
    /// Binds `--listen` and `--metrics-listen` and checks the budgets; the ingest `config`
    /// learns the address and shares the refusal counters.
    pub(super) fn bind(args: &WatchArgs, config: &mut IngestConfig) -> color_eyre::Result<Self> {
        if args.metrics_listen.is_some() && !cfg!(feature = "metrics") {
            bail!(
                "--metrics-listen: this litehit was built without metrics (the `metrics` \
                 feature); build it with the default features to serve /metrics"
            );
        }
        let (listener, metrics_listener, shared) = bind_listeners(args)?;
        config.listen = listener.as_ref().map(HttpListener::local_addr);
        let budgets = http_budgets(args)?;
        if listener.is_some() || metrics_listener.is_some() {
            config.http_counters = Some(Arc::clone(&budgets.limits.counters));
        }
        Ok(Self {
            listener,
            metrics_listener,
            shared,
            budgets,
        })
    }

    /// Starts the servers for the running monitor `live`.
    pub(super) fn start(self, live: &litehit_live::LiveHandle) -> color_eyre::Result<Servers> {
        let (trace, metrics) = start_servers(
            &self.budgets,
            live,
            self.listener,
            self.metrics_listener,
            self.shared,
        )?;
        Ok(Servers {
            _trace: trace,
            _metrics: metrics,
        })
    }
}

/// Binds `--listen`, warning when the address is not loopback and no `--listen-token-file`
/// authenticates the posts.
fn bind_listener(
    address: std::net::SocketAddr,
    token_given: bool,
) -> color_eyre::Result<HttpListener> {
    if let Some(warning) = listen_warning(address, token_given) {
        eprintln!("litehit: warning: {warning}");
    }
    Ok(HttpListener::bind(address)?)
}

/// The warning for a `--listen` address that others can reach without a token.
fn listen_warning(address: std::net::SocketAddr, token_given: bool) -> Option<String> {
    (!address.ip().is_loopback() && !token_given).then(|| {
        format!(
            "--listen {address} is not a loopback address: anyone who reaches it can post rows; \
             give --listen-token-file (or put an authenticating proxy in front, see \
             docs/SIDECAR.md)"
        )
    })
}

/// Binds `--listen` and `--metrics-listen` (one socket when they name the same address,
/// `shared`).
fn bind_listeners(
    args: &WatchArgs,
) -> color_eyre::Result<(Option<HttpListener>, Option<HttpListener>, bool)> {
    let shared = args.metrics_listen.is_some() && args.metrics_listen == args.listen;
    let token_given = args.listen_token_file.is_some();
    let listener = args
        .listen
        .map(|address| bind_listener(address, token_given))
        .transpose()?;
    let metrics_listener = args
        .metrics_listen
        .filter(|_| !shared)
        .map(bind_metrics_listener)
        .transpose()?;
    Ok((listener, metrics_listener, shared))
}

/// The HTTP servers' budgets and checks, from the flags (both servers share `limits`, so the
/// connection cap and the counters are the run's).
struct HttpBudgets {
    trace: HttpOptions,
    limits: ConnectionLimits,
}

/// `--max-body-total`, `--http-idle-timeout`, `--max-connections`, `--allowed-host` and
/// `--listen-token-file`, checked.
fn http_budgets(args: &WatchArgs) -> color_eyre::Result<HttpBudgets> {
    let max_body_total_bytes = match args.max_body_total {
        Some(total) if total < args.max_body => bail!(
            "--max-body-total {total} is less than --max-body {}: one body could never be held",
            args.max_body
        ),
        Some(total) => total,
        None => args
            .max_body
            .saturating_mul(litehit_live::http::DEFAULT_BODIES_IN_MEMORY),
    };
    let open_files = limits::open_files_limit();
    let max_connections = match args.max_connections {
        None => limits::default_max_connections(open_files),
        Some(connections) => {
            if let Some(open_files) = open_files
                && connections.saturating_add(limits::RESERVED_FDS) > open_files
            {
                bail!(
                    "--max-connections {connections} leaves the monitor too few file                      descriptors: the open-files limit is {open_files} (ulimit -n) and {} are                      kept for its own files; give at most {} or raise the limit",
                    limits::RESERVED_FDS,
                    open_files.saturating_sub(limits::RESERVED_FDS)
                );
            }
            usize::try_from(connections).unwrap_or(usize::MAX)
        }
    };
    let token = args
        .listen_token_file
        .as_deref()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .wrap_err_with(|| format!("reading --listen-token-file {}", path.display()))?;
            let token = text.trim();
            if token.is_empty() {
                bail!("--listen-token-file {}: the file is empty", path.display());
            }
            Ok(token.to_owned())
        })
        .transpose()?;
    Ok(HttpBudgets {
        trace: HttpOptions {
            max_body_bytes: args.max_body,
            max_body_total_bytes,
            token,
        },
        limits: ConnectionLimits {
            idle_timeout: seconds("--http-idle-timeout", args.http_idle_timeout)?,
            max_connections,
            allowed_hosts: args.allowed_host.clone(),
            counters: Arc::default(),
        },
    })
}

/// Starts the HTTP servers on the bound sockets and says where they listen; they serve
/// until dropped.
fn start_servers(
    http: &HttpBudgets,
    live: &litehit_live::LiveHandle,
    listener: Option<HttpListener>,
    metrics_listener: Option<HttpListener>,
    shared: bool,
) -> color_eyre::Result<(Option<HttpServer>, Option<HttpServer>)> {
    let server = listener
        .map(|listener| {
            let endpoints = Endpoints {
                trace: Some(http.trace.clone()),
                metrics: shared,
                limits: http.limits.clone(),
            };
            HttpServer::start_with(listener, endpoints, live)
        })
        .transpose()?;
    if let Some(server) = &server {
        eprintln!(
            "litehit: listening on http://{}{}",
            server.local_addr(),
            litehit_live::http::TRACE_PATH
        );
    }
    let metrics_server = metrics_listener
        .map(|listener| {
            let endpoints = Endpoints {
                trace: None,
                metrics: true,
                limits: http.limits.clone(),
            };
            HttpServer::start_with(listener, endpoints, live)
        })
        .transpose()?;
    if let Some(address) = metrics_server
        .as_ref()
        .or(server.as_ref().filter(|_| shared))
        .map(HttpServer::local_addr)
    {
        eprintln!(
            "litehit: metrics on http://{address}{}",
            litehit_live::http::METRICS_PATH
        );
    }
    Ok((server, metrics_server))
}

/// Binds `--metrics-listen`, warning when the address is not loopback (anyone who reaches it
/// reads the instance names and hit rates).
fn bind_metrics_listener(address: std::net::SocketAddr) -> color_eyre::Result<HttpListener> {
    if !address.ip().is_loopback() {
        eprintln!(
            "litehit: warning: --metrics-listen {address} is not a loopback address and the \
             endpoint has no authentication: anyone who reaches it reads the metrics"
        );
    }
    Ok(HttpListener::bind(address)?)
}

#[cfg(test)]
mod tests {
    use super::listen_warning;

    #[test]
    fn a_reachable_listen_address_warns_only_without_a_token() {
        let open: std::net::SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let local: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(
            listen_warning(open, false)
                .unwrap()
                .contains("--listen-token-file")
        );
        assert_eq!(listen_warning(open, true), None);
        assert_eq!(listen_warning(local, false), None);
    }
}
