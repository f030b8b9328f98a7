//! [`IpCidr`]: an IP network such as `10.0.0.0/8`, for `TRUSTED_PROXIES`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An IP network: an address and a prefix length, e.g. `10.0.0.0/8` or `fd00::/8`.
///
/// A bare address is a network of one. Host bits below the prefix are cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IpCidr {
    network: IpAddr,
    prefix_len: u8,
}

/// Text that is not an IP address or CIDR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpCidrError {
    BadAddress,
    BadPrefix,
}

impl fmt::Display for IpCidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IpCidrError::BadAddress => "not an IP address or CIDR",
            IpCidrError::BadPrefix => {
                "prefix length out of range (0..=32 for IPv4, 0..=128 for IPv6)"
            }
        })
    }
}

impl std::error::Error for IpCidrError {}

impl IpCidr {
    pub fn new(addr: IpAddr, prefix_len: u8) -> Result<IpCidr, IpCidrError> {
        let network = match addr {
            IpAddr::V4(a) if prefix_len <= 32 => {
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask_v4(prefix_len)))
            }
            IpAddr::V6(a) if prefix_len <= 128 => {
                IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask_v6(prefix_len)))
            }
            _ => return Err(IpCidrError::BadPrefix),
        };
        Ok(IpCidr {
            network,
            prefix_len,
        })
    }

    pub fn network(&self) -> IpAddr {
        self.network
    }

    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// Whether `ip` is in this network. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`)
    /// match IPv4 networks, since dual-stack sockets report IPv4 peers that way.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            IpAddr::V4(_) => ip,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                u32::from(a) & mask_v4(self.prefix_len) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                u128::from(a) & mask_v6(self.prefix_len) == u128::from(net)
            }
            _ => false,
        }
    }
}

fn mask_v4(prefix_len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix_len.min(32)))
        .unwrap_or(0)
}

fn mask_v6(prefix_len: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(prefix_len.min(128)))
        .unwrap_or(0)
}

impl FromStr for IpCidr {
    type Err = IpCidrError;

    fn from_str(s: &str) -> Result<IpCidr, IpCidrError> {
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| IpCidrError::BadAddress)?;
        let full = if addr.is_ipv4() { 32 } else { 128 };
        let prefix_len = match prefix {
            None => full,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse().map_err(|_| IpCidrError::BadPrefix)?
            }
            Some(_) => return Err(IpCidrError::BadPrefix),
        };
        IpCidr::new(addr, prefix_len)
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}
