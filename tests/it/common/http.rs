//! Plain HTTP/1.1 over loopback for the tests of the monitor's endpoints: one request per
//! connection, read to its end (bounded by a read timeout).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

/// `GET path` on a fresh connection; status line, headers and body.
pub fn get(port: u16, path: &str) -> (u16, String, String) {
    request_get(port, path, "")
}

/// `GET path` with `Accept: accept` on a fresh connection; status line, headers and body.
pub fn get_accepting(port: u16, path: &str, accept: &str) -> (u16, String, String) {
    request_get(port, path, &format!("Accept: {accept}\r\n"))
}

/// `GET path` with the extra header lines `headers` (each ending in CRLF), read to its end.
fn request_get(port: u16, path: &str, headers: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").expect("headers, then a body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status code");
    (status, head.to_owned(), body.to_owned())
}
