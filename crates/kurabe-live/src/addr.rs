//! `--prometheus-addr ADDR`: `:PORT` (loopback, 127.0.0.1), `HOST:PORT`
//! with an IP literal or `localhost`, `[V6]:PORT`; all interfaces only
//! when asked for by name (`0.0.0.0:PORT`, `[::]:PORT`).
//!
//! Owns the grammar and its error text. Must not bind: that is
//! [`crate::endpoint`]'s, so a taken port is its error.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// An `ADDR` that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--prometheus-addr '{given}': {reason}; expected [HOST]:PORT, e.g. :9464 (127.0.0.1 only) or 0.0.0.0:9464 (every interface)")]
pub struct AddrError {
    /// The address as given.
    pub given: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Parse `ADDR` into the socket address to listen on.
pub fn parse(given: &str) -> Result<SocketAddr, AddrError> {
    let err = |reason| AddrError {
        given: given.to_owned(),
        reason,
    };
    let (host, port) = given.rsplit_once(':').ok_or(err("no :PORT"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| err("the port is not a number 0-65535"))?;
    let ip = match host {
        "" | "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h if h.starts_with('[') && h.ends_with(']') => h[1..h.len() - 1]
            .parse::<std::net::Ipv6Addr>()
            .map(IpAddr::V6)
            .map_err(|_| err("not an IPv6 address in the brackets"))?,
        h => h.parse::<Ipv4Addr>().map(IpAddr::V4).map_err(|_| {
            err("the host is not an IP address or localhost (IPv6 goes in brackets)")
        })?,
    };
    Ok(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_loopback_and_every_interface_must_be_named() {
        assert_eq!(parse(":9464").unwrap(), "127.0.0.1:9464".parse().unwrap());
        assert_eq!(
            parse("localhost:0").unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(parse("0.0.0.0:80").unwrap(), "0.0.0.0:80".parse().unwrap());
        assert_eq!(parse("[::]:80").unwrap(), "[::]:80".parse().unwrap());
        assert_eq!(parse("[::1]:80").unwrap(), "[::1]:80".parse().unwrap());
    }

    #[test]
    fn bad_addresses_say_what_is_wrong() {
        assert_eq!(parse("9464").unwrap_err().reason, "no :PORT");
        assert_eq!(
            parse(":99999").unwrap_err().reason,
            "the port is not a number 0-65535"
        );
        assert!(parse("example.com:80").is_err());
        assert!(parse("::1:80").is_err());
        let e = parse("[x]:1").unwrap_err().to_string();
        assert!(
            e.starts_with("--prometheus-addr '[x]:1': not an IPv6"),
            "{e}"
        );
    }
}
