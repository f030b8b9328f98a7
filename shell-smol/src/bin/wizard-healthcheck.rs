//! `wizard-healthcheck`: the container health check of `wizard-server` (the runtime image
//! has no shell and no curl). It sends `GET /health` to the server in the same container
//! and exits 0 when the answer is `200`, 1 otherwise, within 2 seconds in all.
//!
//! The port comes from `BIND` (default `0.0.0.0:8000`), the same variable the server
//! reads; an unspecified bind address (`0.0.0.0`, `[::]`) is reached over loopback.
//! The standard library and `lexopt` only (`--help`, `--version`; any other argument
//! is refused with exit 2), so the binary stays tiny and has nothing to go wrong.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The whole check, connect to last byte, must finish within this.
const TIMEOUT: Duration = Duration::from_secs(2);
/// `BIND`'s default (PROTOCOL.md section 5).
const DEFAULT_BIND: &str = "0.0.0.0:8000";
/// Enough for any status line; the body is not read.
const RESPONSE_BYTES_MAX: usize = 512;

const USAGE: &str = "usage: wizard-healthcheck [--help] [--version]

Asks the wizard-server in this container for GET /health (the port from BIND) and
exits 0 when it answers 200, 1 otherwise.
";

fn main() -> ExitCode {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let flag = match parser.next() {
        Ok(None) => None,
        Ok(Some(Short('h') | Long("help"))) => Some(true),
        Ok(Some(Short('V') | Long("version"))) => Some(false),
        Ok(Some(other)) => return refuse(&other.unexpected()),
        Err(e) => return refuse(&e),
    };
    if flag.is_some() {
        match parser.next() {
            Ok(None) => {}
            Ok(Some(other)) => return refuse(&other.unexpected()),
            Err(e) => return refuse(&e),
        }
    }
    match flag {
        Some(true) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(false) => {
            println!(
                "wizard-healthcheck {} ({})",
                env!("CARGO_PKG_VERSION"),
                env!("WIZARD_COMMIT")
            );
            return ExitCode::SUCCESS;
        }
        None => {}
    }
    let bind = std::env::var("BIND")
        .ok()
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| DEFAULT_BIND.to_owned());
    match check(&bind) {
        Ok(()) => {
            println!("ok");
            ExitCode::SUCCESS
        }
        Err(reason) => {
            println!("unhealthy: {reason}");
            ExitCode::FAILURE
        }
    }
}

#[allow(clippy::print_stderr)]
fn refuse(e: &lexopt::Error) -> ExitCode {
    eprint!("{e}\n{USAGE}");
    ExitCode::from(2)
}

/// The address to ask: `BIND`'s port on loopback, or on `BIND`'s own address when it
/// names one.
fn target(bind: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = bind
        .parse()
        .map_err(|_| format!("BIND {bind:?} is not an address like 0.0.0.0:8000"))?;
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    Ok(SocketAddr::new(ip, addr.port()))
}

fn check(bind: &str) -> Result<(), String> {
    let addr = target(bind)?;
    let deadline = Instant::now() + TIMEOUT;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| "timed out".to_owned())
    };
    let mut tcp = TcpStream::connect_timeout(&addr, left()?).map_err(|e| format!("{addr}: {e}"))?;
    tcp.set_write_timeout(Some(left()?))
        .map_err(|e| e.to_string())?;
    tcp.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("send: {e}"))?;
    let mut response = Vec::with_capacity(RESPONSE_BYTES_MAX);
    let mut buf = [0u8; 256];
    // Read until the status line is complete (or the peer closes), never past the deadline.
    while !response.contains(&b'\n') && response.len() < RESPONSE_BYTES_MAX {
        tcp.set_read_timeout(Some(left()?))
            .map_err(|e| e.to_string())?;
        let n = tcp.read(&mut buf).map_err(|e| format!("receive: {e}"))?;
        if n == 0 {
            break;
        }
        response.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    let status = status_code(&response).ok_or("no HTTP status line")?;
    if status == 200 {
        Ok(())
    } else {
        Err(format!("GET /health answered {status}"))
    }
}

/// The status code of an `HTTP/1.x NNN ...` response.
fn status_code(response: &[u8]) -> Option<u16> {
    let line = response.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspecified_bind_addresses_are_reached_over_loopback() {
        assert_eq!(target("0.0.0.0:8000").ok(), "127.0.0.1:8000".parse().ok());
        assert_eq!(target("[::]:9000").ok(), "[::1]:9000".parse().ok());
        assert_eq!(target("10.1.2.3:81").ok(), "10.1.2.3:81".parse().ok());
        assert!(target("nonsense").is_err());
    }

    #[test]
    fn status_lines_are_parsed() {
        assert_eq!(status_code(b"HTTP/1.1 200 OK\r\n"), Some(200));
        assert_eq!(
            status_code(b"HTTP/1.1 503 Service Unavailable\r\n"),
            Some(503)
        );
        assert_eq!(status_code(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(status_code(b""), None);
    }
}
