//! `watch --engine-metrics [INSTANCE=]URL`: the serving engine's own prefix-cache counters,
//! scraped from its Prometheus endpoint on the monitor's interval, so its windowed hit rate
//! is shown beside LiteHit's for the same window (issue 31 §3). This file reads the endpoint
//! (plain HTTP/1.0, which no server answers chunked) and its exposition; the ingest thread
//! keeps the windows (`ingest/engine_scrape.rs`).
//!
//! What is read, summed over every series of the name (one per model or rank):
//! - vLLM: `vllm:prefix_cache_queries_total` and `vllm:prefix_cache_hits_total` (tokens;
//!   `vllm/v1/metrics/loggers.py`), and `vllm:cache_config_info`'s `num_gpu_blocks` and
//!   `block_size` labels (the engine's pool: the `engine` slot when none was given).
//! - SGLang: `sglang:prompt_tokens_total` and `sglang:cached_tokens_total`
//!   (sgl-project/sglang at 93d04878cfb9, `python/sglang/srt/metrics/collector.py`,
//!   `TokenizerMetricsCollector.__init__`: `name="sglang:prompt_tokens_total"` and
//!   `name="sglang:cached_tokens_total"`, both incremented per finished request by
//!   `observe_one_finished_request`, the cached one only once a request hit, so a page may
//!   lack it until then). Newer versions label the cached tokens by `cache_source` (device,
//!   host, storage): only `device`, the GPU's prefix cache, is read.
//!
//! Only loopback and private addresses are scraped unless the user allows any: a monitor is
//! no port scanner.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs as _};
use std::time::Duration;

/// The most bytes of one metrics page read (a vLLM page is tens of KiB).
const MAX_PAGE_BYTES: u64 = 16 << 20;

/// One engine endpoint, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineEndpoint {
    /// `INSTANCE=` of the flag: the lane its counters compare with; `None`: every instance.
    pub instance_id: Option<String>,
    /// The URL as given.
    pub url: String,
    /// `host:port` for the `Host` header.
    host: String,
    /// The path and query (`/metrics`).
    path: String,
    /// The resolved addresses, each checked.
    addresses: Vec<SocketAddr>,
}

impl EngineEndpoint {
    /// `[INSTANCE=]http://HOST[:PORT][/PATH]`, resolved now; a host that resolves to an
    /// address neither loopback nor private is refused unless `any_address`.
    ///
    /// # Errors
    /// What is wrong with the text, in words.
    pub fn parse(text: &str, any_address: bool) -> Result<Self, String> {
        let (instance_id, url) = match text.split_once('=') {
            Some((instance, url)) if !instance.contains('/') && !instance.is_empty() => {
                (Some(instance.to_owned()), url)
            }
            _ => (None, text),
        };
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("{url}: not an http:// URL (https is not read: engines serve /metrics on plain HTTP)")
        })?;
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/metrics"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("{url}: expected http://HOST[:PORT]/PATH"));
        }
        let with_port = if authority.ends_with(']') || !authority.contains(':') {
            format!("{authority}:80")
        } else {
            authority.to_owned()
        };
        let addresses: Vec<SocketAddr> = with_port
            .to_socket_addrs()
            .map_err(|error| format!("{url}: {error}"))?
            .collect();
        if addresses.is_empty() {
            return Err(format!("{url}: the host resolves to no address"));
        }
        if !any_address
            && let Some(public) = addresses.iter().find(|address| !is_local(address.ip()))
        {
            return Err(format!(
                "{url}: {} is neither a loopback nor a private address; add \
                 --engine-metrics-any-address to scrape it",
                public.ip()
            ));
        }
        Ok(Self {
            instance_id,
            url: url.to_owned(),
            host: authority.to_owned(),
            path: path.to_owned(),
            addresses,
        })
    }

    /// The endpoint's name on the surfaces: its instance, else its URL.
    #[must_use]
    pub fn label(&self) -> &str {
        self.instance_id.as_deref().unwrap_or(&self.url)
    }

    /// One scrape: the page fetched within `timeout` and its counters read.
    ///
    /// # Errors
    /// Why there are no counters (connection, status, no known metric), in words.
    pub fn scrape(&self, timeout: Duration) -> Result<EngineCounters, String> {
        let page = self.fetch(timeout)?;
        EngineCounters::parse(&page)
    }

    fn fetch(&self, timeout: Duration) -> Result<String, String> {
        let mut stream = self
            .addresses
            .iter()
            .find_map(|address| TcpStream::connect_timeout(address, timeout).ok())
            .ok_or_else(|| format!("{}: connection refused or timed out", self.url))?;
        let io = |error: std::io::Error| format!("{}: {error}", self.url);
        stream.set_read_timeout(Some(timeout)).map_err(io)?;
        stream.set_write_timeout(Some(timeout)).map_err(io)?;
        // One write: a server may answer as soon as the request's head is in.
        let request = format!(
            "GET {} HTTP/1.0\r\nHost: {}\r\nAccept: text/plain\r\nUser-Agent: litehit\r\n\r\n",
            self.path, self.host
        );
        stream.write_all(request.as_bytes()).map_err(io)?;
        let mut response = Vec::new();
        stream
            .take(MAX_PAGE_BYTES)
            .read_to_end(&mut response)
            .map_err(io)?;
        let text = String::from_utf8_lossy(&response);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| format!("{}: no HTTP response", self.url))?;
        let status = head
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        if status != "200" {
            return Err(format!("{}: HTTP status {status}", self.url));
        }
        Ok(body.to_owned())
    }
}

/// Whether `ip` is loopback, private (RFC 1918, unique local) or link-local.
fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_local(IpAddr::V4(v4)))
        }
    }
}

/// An engine's cumulative prefix-cache counters, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineCounters {
    /// Prompt tokens looked up in the prefix cache.
    pub query_tokens: u64,
    /// Of those, tokens found cached.
    pub hit_tokens: u64,
    /// `vllm:cache_config_info`'s `num_gpu_blocks` and `block_size`, when the page has them.
    pub pool: Option<(u64, u64)>,
}

impl EngineCounters {
    /// The counters of a Prometheus text page (see the module doc for the names).
    ///
    /// # Errors
    /// Neither vLLM's nor SGLang's counters are on the page.
    pub fn parse(page: &str) -> Result<Self, String> {
        let mut counters = Self::default();
        let mut found = false;
        for line in page.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, labels, value)) = sample(line) else {
                continue;
            };
            let tokens = || value.max(0.0).round();
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a non-negative counter, rounded; saturates"
            )]
            let add = |sum: &mut u64| *sum = sum.saturating_add(tokens() as u64);
            match name {
                "vllm:prefix_cache_queries_total" | "sglang:prompt_tokens_total" => {
                    add(&mut counters.query_tokens);
                    found = true;
                }
                "vllm:prefix_cache_hits_total" => add(&mut counters.hit_tokens),
                "sglang:cached_tokens_total"
                    if label(labels, "cache_source").is_none_or(|source| source == "device") =>
                {
                    add(&mut counters.hit_tokens);
                }
                "vllm:cache_config_info" => {
                    let number = |key| label(labels, key).and_then(|text| text.parse().ok());
                    if let (Some(blocks), Some(size)) =
                        (number("num_gpu_blocks"), number("block_size"))
                    {
                        counters.pool.get_or_insert((blocks, size));
                    }
                }
                _ => {}
            }
        }
        if found {
            Ok(counters)
        } else {
            Err(
                "no vllm:prefix_cache_queries_total or sglang:prompt_tokens_total on the page"
                    .to_owned(),
            )
        }
    }
}

/// A sample line: its name, its label text (between the braces) and its value.
fn sample(line: &str) -> Option<(&str, &str, f64)> {
    let (name, labels, rest) = if let Some(open) = line.find('{') {
        let close = line.rfind('}')?;
        (&line[..open], &line[open + 1..close], &line[close + 1..])
    } else {
        let (name, rest) = line.split_once(char::is_whitespace)?;
        (name, "", rest)
    };
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some((name, labels, value))
}

/// The value of `key` among `labels` (`a="1",b="x"`), unescaped enough for numbers and names.
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = labels;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].trim().trim_start_matches(',').trim();
        let value_start = eq + 2;
        let value_end = rest[value_start..].find('"')? + value_start;
        if name == key {
            return Some(&rest[value_start..value_end]);
        }
        rest = &rest[value_end + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_and_sglang_pages_are_read() {
        let vllm = "# HELP x\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1.5e3\n\
             vllm:prefix_cache_queries_total{engine=\"1\",model_name=\"m\"} 500\n\
             vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 700.0\n\
             vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",num_gpu_blocks=\"2048\"} 1.0\n";
        assert_eq!(
            EngineCounters::parse(vllm),
            Ok(EngineCounters {
                query_tokens: 2000,
                hit_tokens: 700,
                pool: Some((2048, 16)),
            })
        );
        let sglang = "sglang:prompt_tokens_total{model_name=\"m\"} 4096\n\
             sglang:cached_tokens_total{model_name=\"m\",cache_source=\"device\"} 3000\n\
             sglang:cached_tokens_total{model_name=\"m\",cache_source=\"host\"} 168\n";
        assert_eq!(
            EngineCounters::parse(sglang).map(|c| (c.query_tokens, c.hit_tokens)),
            Ok((4096, 3000))
        );
        assert!(EngineCounters::parse("up 1\n").is_err());
    }

    /// SGLang before its `cache_source` label, as prometheus_client writes a counter (a
    /// `_created` sample beside each `_total`), and a page before the first cache hit (the
    /// cached counter is only created by a hit).
    #[test]
    fn sglang_pages_without_the_cache_source_label_are_read() {
        let page = "# HELP sglang:prompt_tokens_total Number of prefill tokens processed.\n\
             # TYPE sglang:prompt_tokens_total counter\n\
             sglang:prompt_tokens_total{model_name=\"m\"} 512.0\n\
             sglang:prompt_tokens_created{model_name=\"m\"} 1.7e9\n\
             sglang:cached_tokens_total{model_name=\"m\"} 128.0\n\
             sglang:cached_tokens_created{model_name=\"m\"} 1.7e9\n";
        assert_eq!(
            EngineCounters::parse(page).map(|c| (c.query_tokens, c.hit_tokens, c.pool)),
            Ok((512, 128, None))
        );
        let before_a_hit = "sglang:prompt_tokens_total{model_name=\"m\"} 64.0\n";
        assert_eq!(
            EngineCounters::parse(before_a_hit).map(|c| (c.query_tokens, c.hit_tokens)),
            Ok((64, 0))
        );
    }

    #[test]
    fn only_local_addresses_unless_allowed() {
        let local = EngineEndpoint::parse("a=http://127.0.0.1:8000/metrics", false).unwrap();
        assert_eq!(local.instance_id.as_deref(), Some("a"));
        assert_eq!(local.path, "/metrics");
        assert!(EngineEndpoint::parse("http://10.1.2.3:8000", false).is_ok());
        assert!(EngineEndpoint::parse("http://[::1]:8000/m", false).is_ok());
        let public = EngineEndpoint::parse("http://8.8.8.8:8000/metrics", false).unwrap_err();
        assert!(public.contains("--engine-metrics-any-address"), "{public}");
        assert!(EngineEndpoint::parse("http://8.8.8.8:8000/metrics", true).is_ok());
        assert!(EngineEndpoint::parse("https://127.0.0.1/metrics", false).is_err());
    }
}
