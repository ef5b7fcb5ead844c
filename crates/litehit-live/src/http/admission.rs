//! Who may talk to the servers: the `Host` and `Origin` checks against browsers (DNS
//! rebinding, cross-origin posts from a web page), the JSON-lines `Content-Type` a post must
//! carry, and the optional bearer token.
//!
//! A browser can reach a loopback port from any web page: a CORS-"simple" `POST` (no
//! preflight: `text/plain`, a form type, or no type at all) is sent whatever the reply, and a
//! name rebound to 127.0.0.1 reads a `GET` reply. So on a loopback bind `Host` must name this
//! host (a loopback address, `localhost`, or an `--allowed-host` name); on every bind an
//! `Origin`, when sent, must be the server's own as the request names it (`http://` or
//! `https://` and the `Host`), and a post must say it is JSON lines, which a page can only
//! send after a preflight this server never answers.
//!
//! What it must never do: read the body or route (that is [`super`]'s).

use hyper::HeaderMap;
use hyper::header;
use std::net::IpAddr;

/// The media types a post may carry (parameters such as `charset` are ignored).
pub const ACCEPTED_CONTENT_TYPES: [&str; 3] = [
    "application/x-ndjson",
    "application/jsonl",
    "application/json",
];

/// Whether `headers` name this server: on a loopback bind, `Host` is a loopback address,
/// `localhost` or one of `allowed_hosts` (any port); on any bind, an `Origin` is the
/// server's own. `Err` says what was wrong.
pub fn check_host_and_origin(
    headers: &HeaderMap,
    loopback_bind: bool,
    allowed_hosts: &[String],
) -> Result<(), String> {
    let host = headers
        .get(header::HOST)
        .map(|value| value.to_str().unwrap_or("").trim());
    if loopback_bind {
        match host {
            None => return Err("no Host header; name the server (127.0.0.1:PORT)".to_owned()),
            Some(host) if !is_local_name(host_name(host), allowed_hosts) => {
                return Err(format!(
                    "Host {host:?} is not this host (a loopback address, localhost, or an \
                     --allowed-host name)"
                ));
            }
            Some(_) => {}
        }
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("").trim();
    let own = host.is_some_and(|host| {
        [("http://", host), ("https://", host)]
            .iter()
            .any(|(scheme, host)| {
                origin.len() == scheme.len() + host.len()
                    && origin[..scheme.len()].eq_ignore_ascii_case(scheme)
                    && origin[scheme.len()..].eq_ignore_ascii_case(host)
            })
    });
    if own {
        Ok(())
    } else {
        Err(format!(
            "Origin {origin:?} is not this server's: requests from web pages are refused"
        ))
    }
}

/// The name part of a `Host` value: `[::1]:8080` → `::1`, `localhost:8080` → `localhost`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(name, _)| name);
    }
    host.rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|byte| byte.is_ascii_digit()))
        .map_or(host, |(name, _)| name)
}

fn is_local_name(name: &str, allowed_hosts: &[String]) -> bool {
    let name = name.trim_end_matches('.');
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        || allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(name))
}

/// Whether a post's `Content-Type` is a JSON-lines one; `Err` names what was sent.
pub fn check_content_type(headers: &HeaderMap) -> Result<(), String> {
    let sent = headers
        .get(header::CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let media_type = sent
        .as_deref()
        .and_then(|value| value.split(';').next())
        .map(str::trim);
    if media_type.is_some_and(|media_type| {
        ACCEPTED_CONTENT_TYPES
            .iter()
            .any(|accepted| accepted.eq_ignore_ascii_case(media_type))
    }) {
        return Ok(());
    }
    let sent = sent.map_or_else(|| "none".to_owned(), |sent| format!("{sent:?}"));
    Err(format!(
        "Content-Type {sent} is not accepted; send -H 'Content-Type: application/x-ndjson' \
         (or application/jsonl, application/json)"
    ))
}

/// Whether `headers` carry `Authorization: Bearer TOKEN` (compared in constant time).
pub fn has_token(headers: &HeaderMap, token: &str) -> bool {
    let Some(sent) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, credentials) = value.trim().split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(credentials.trim())
        })
    else {
        return false;
    };
    sent.len() == token.len()
        && sent
            .bytes()
            .zip(token.bytes())
            .fold(0_u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn loopback_binds_take_only_local_hosts_and_the_allowed_names() {
        let allowed = ["monitor.internal".to_owned()];
        for host in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:8080",
            "LOCALHOST",
            "[::1]:8080",
            "monitor.internal:443",
        ] {
            let map = headers(&[("host", host)]);
            assert_eq!(
                check_host_and_origin(&map, true, &allowed),
                Ok(()),
                "{host}"
            );
        }
        for host in [
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "10.0.0.1:8080",
        ] {
            let map = headers(&[("host", host)]);
            let error = check_host_and_origin(&map, true, &allowed).unwrap_err();
            assert!(error.contains("is not this host"), "{error}");
            // A non-loopback bind is reached by names its scrapers choose.
            assert_eq!(check_host_and_origin(&map, false, &allowed), Ok(()));
        }
        assert!(check_host_and_origin(&HeaderMap::new(), true, &allowed).is_err());
    }

    #[test]
    fn an_origin_must_be_the_servers_own() {
        let own = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert_eq!(check_host_and_origin(&own, true, &[]), Ok(()));
        for origin in ["http://evil.example", "http://127.0.0.1:3000", "null"] {
            let mut map = headers(&[("host", "127.0.0.1:8080")]);
            map.insert("origin", HeaderValue::from_static(origin));
            let error = check_host_and_origin(&map, true, &[]).unwrap_err();
            assert!(error.contains("is not this server's"), "{error}");
            assert!(check_host_and_origin(&map, false, &[]).is_err(), "{origin}");
        }
    }

    #[test]
    fn posts_must_say_json_lines() {
        for accepted in [
            "application/x-ndjson",
            "application/jsonl; charset=utf-8",
            "Application/JSON",
        ] {
            let map = headers(&[("content-type", accepted)]);
            assert_eq!(check_content_type(&map), Ok(()), "{accepted}");
        }
        for simple in [
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            let map = headers(&[("content-type", simple)]);
            let error = check_content_type(&map).unwrap_err();
            assert!(error.contains("application/x-ndjson"), "{error}");
        }
        let error = check_content_type(&HeaderMap::new()).unwrap_err();
        assert!(error.contains("Content-Type none"), "{error}");
    }

    #[test]
    fn the_token_is_a_bearer_token_matched_whole() {
        let sent = headers(&[("authorization", "Bearer s3cret")]);
        assert!(has_token(&sent, "s3cret"));
        assert!(!has_token(&sent, "s3cre"));
        assert!(!has_token(&sent, "s3cret2"));
        assert!(!has_token(
            &headers(&[("authorization", "Basic s3cret")]),
            "s3cret"
        ));
        assert!(!has_token(&HeaderMap::new(), "s3cret"));
    }
}
