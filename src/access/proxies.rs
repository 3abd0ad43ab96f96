//! `serve.trusted_proxies`: the addresses whose requests may name a user
//! (`serve.acl_user_header`). Anyone else's header is ignored, so a reader who reaches
//! the server directly cannot choose the rules that apply to them.

use std::net::IpAddr;

/// Addresses and networks (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

impl TrustedProxies {
    /// Parses the configured list; names the entry that is not an address or network.
    pub fn parse(list: &[String]) -> Result<TrustedProxies, String> {
        let mut out = Vec::new();
        for entry in list {
            let bad = || {
                format!(
                    "serve.trusted_proxies: {entry:?} is not an address or a network (like \"127.0.0.1\", \"10.0.0.0/8\" or \"::1\")"
                )
            };
            let (addr, len) = match entry.trim().split_once('/') {
                Some((a, l)) => (a, Some(l.parse::<u8>().map_err(|_| bad())?)),
                None => (entry.trim(), None),
            };
            let ip: IpAddr = addr.parse().map_err(|_| bad())?;
            let ip = ip.to_canonical();
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let len = len.unwrap_or(max);
            if len > max {
                return Err(bad());
            }
            out.push((ip, len));
        }
        Ok(TrustedProxies(out))
    }

    /// Whether a request from `peer` may name a user.
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.0.iter().any(|&(net, len)| match (net, peer) {
            (IpAddr::V4(n), IpAddr::V4(p)) => {
                prefix(u32::from(n) as u128, u32::from(p) as u128, len, 32)
            }
            (IpAddr::V6(n), IpAddr::V6(p)) => prefix(u128::from(n), u128::from(p), len, 128),
            _ => false,
        })
    }
}

/// Whether `a` and `b`, numbers of `bits` bits, share their first `len` bits.
fn prefix(a: u128, b: u128, len: u8, bits: u32) -> bool {
    let len = u32::from(len);
    len == 0 || (a ^ b) >> (bits - len) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_networks_are_trusted_and_nothing_else() {
        let t =
            TrustedProxies::parse(&["127.0.0.1".into(), "10.0.0.0/8".into(), "fd00::/8".into()])
                .unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(t.trusts(ip("127.0.0.1")));
        assert!(t.trusts(ip("::ffff:127.0.0.1")));
        assert!(!t.trusts(ip("127.0.0.2")));
        assert!(t.trusts(ip("10.200.3.4")));
        assert!(!t.trusts(ip("11.0.0.1")));
        assert!(t.trusts(ip("fd12::1")));
        assert!(!t.trusts(ip("fe80::1")));
        assert!(!TrustedProxies::default().trusts(ip("127.0.0.1")));
        assert!(TrustedProxies::parse(&["0.0.0.0/0".into()])
            .unwrap()
            .trusts(ip("8.8.8.8")));
        for bad in ["localhost", "10.0.0.0/33", "::1/129", "1.2.3.4/x"] {
            let e = TrustedProxies::parse(&[bad.into()]).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
