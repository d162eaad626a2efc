//! Remote-address rules (`RemoteAddressStrategyFactory.java`): `globalWhiteRemoteAddresses` and
//! an account's `whiteRemoteAddress`.
//!
//! ```text
//! blank / absent        matches nothing
//! * | *.*.*.* | *:*:*:*:*:*:*:*   matches everything
//! 192.168.1.{1,2,3}     a set (last part in braces, IPv4 or IPv6)
//! 10.0.0.1,10.0.0.2     a set (comma-separated)
//! 192.168.1.*  192.168.*.*  192.168.1.10-20  192.168.0-9.*   an IPv4 range: the first part that is
//!                       `*` or `a-b` is the range, the parts after it are ignored (as Java)
//! 10.0.0.1  ::1         one address (IPv6 compared in expanded form)
//! ```
//! IPv6 ranges (`2::ac5:78:1-200:*`) are refused when the file is loaded: ferrocket does not
//! implement them yet.
//!
//! May import: nothing outside `acl/` (the area's rule: docs/architecture.md).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One parsed address rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddressRule {
    /// Blank: never matches (an account without `whiteRemoteAddress` must sign).
    Blank,
    /// `*`: every address.
    Any,
    /// A set of addresses in canonical form ([`canonical`]).
    Set(HashSet<String>),
    /// An IPv4 range: `head` is the parts before the ranged one (each ending in '.'), `index` the
    /// ranged part (1..=3), `start..=end` its values.
    Range { head: String, index: usize, start: u32, end: u32 },
}

impl AddressRule {
    /// Parses a rule; the error says what is wrong with it.
    pub fn parse(rule: Option<&str>) -> Result<Self, String> {
        let rule = match rule.map(str::trim) {
            None | Some("") => return Ok(Self::Blank),
            Some(r) => r,
        };
        if matches!(rule, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(Self::Any);
        }
        if rule.ends_with('}') {
            let open = rule.rfind('{').ok_or_else(|| bad(rule))?;
            let prefix = &rule[..open];
            if !(prefix.ends_with('.') || prefix.ends_with(':')) {
                return Err(bad(rule));
            }
            let addrs = rule[open + 1..rule.len() - 1].split(',').filter(|s| !s.is_empty());
            return set(addrs.map(|tail| format!("{prefix}{}", tail.trim())));
        }
        if rule.contains(',') {
            return set(rule.split(',').filter(|s| !s.is_empty()).map(|s| s.trim().to_owned()));
        }
        if rule.contains('*') || rule.contains('-') {
            return range(rule);
        }
        set(std::iter::once(rule.to_owned()))
    }

    /// Whether `host` (an address as [`host_of`] writes it) matches.
    pub fn matches(&self, host: &str) -> bool {
        match self {
            Self::Blank => false,
            Self::Any => true,
            Self::Set(addrs) => canonical(host).is_some_and(|h| addrs.contains(&h)),
            Self::Range { head, index, start, end } => {
                if host.parse::<Ipv4Addr>().is_err() || !host.starts_with(head.as_str()) {
                    return false;
                }
                let part = host.split('.').nth(*index);
                part.and_then(|p| p.parse::<u32>().ok()).is_some_and(|v| (*start..=*end).contains(&v))
            }
        }
    }
}

fn bad(rule: &str) -> String {
    format!("Netaddress examine Exception netaddress is {rule}")
}

fn set(addrs: impl Iterator<Item = String>) -> Result<AddressRule, String> {
    let mut out = HashSet::new();
    for a in addrs {
        out.insert(canonical(&a).ok_or_else(|| bad(&a))?);
    }
    Ok(AddressRule::Set(out))
}

fn range(rule: &str) -> Result<AddressRule, String> {
    if rule.contains(':') {
        return Err(format!("IPv6 address ranges are not supported yet: {rule}"));
    }
    let parts: Vec<&str> = rule.split('.').map(str::trim).collect();
    if parts.len() != 4 {
        return Err(format!("Netaddress examine scope Exception netaddress is {rule}"));
    }
    for index in 1..=3 {
        let value = parts[index];
        let (start, end) = if value == "*" {
            (0, 255)
        } else if let Some((a, b)) = value.split_once('-') {
            let parse = |s: &str| s.trim().parse::<u32>().ok().filter(|v| *v <= 255);
            match (parse(a), parse(b)) {
                (Some(s), Some(e)) if !a.is_empty() && s <= e => (s, e),
                _ => {
                    return Err(format!("RangeRemoteAddressStrategy netaddress examine scope Exception value {value}"))
                }
            }
        } else {
            continue;
        };
        // The parts before the ranged one must be octets (AclUtils.verify).
        if parts[..index].iter().any(|p| p.parse::<u8>().is_err()) {
            return Err(format!("Netaddress examine scope Exception netaddress is {rule}"));
        }
        let head: String = parts[..index].iter().map(|p| format!("{p}.")).collect();
        return Ok(AddressRule::Range { head, index, start, end });
    }
    Err(format!("Netaddress examine scope Exception netaddress is {rule}"))
}

/// An address in the form rules compare: IPv4 dotted, IPv6 as eight upper-case 4-digit groups
/// (`AclUtils.expandIP`); `None` if it is not an address.
pub fn canonical(addr: &str) -> Option<String> {
    let addr = addr.trim();
    if let Ok(v4) = addr.parse::<Ipv4Addr>() {
        return Some(v4.to_string());
    }
    let v6 = addr.parse::<Ipv6Addr>().ok()?;
    Some(v6.segments().iter().map(|s| format!("{s:04X}")).collect::<Vec<_>>().join(":"))
}

/// The host part of a peer address as the Java broker sees it (`Inet4Address`/`Inet6Address`
/// `getHostAddress`): an IPv4-mapped IPv6 peer is its IPv4 address.
pub fn host_of(ip: IpAddr) -> String {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => v6.segments().iter().map(|s| format!("{s:x}")).collect::<Vec<_>>().join(":"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> AddressRule {
        AddressRule::parse(Some(s)).unwrap()
    }

    #[test]
    fn blank_any_one_and_sets() {
        assert!(!AddressRule::parse(None).unwrap().matches("127.0.0.1"));
        assert!(!rule(" ").matches("127.0.0.1"));
        assert!(rule("*").matches("10.1.2.3"));
        assert!(rule("*.*.*.*").matches("::1"));
        assert!(rule("127.0.0.1").matches("127.0.0.1"));
        assert!(!rule("127.0.0.1").matches("127.0.0.2"));
        assert!(rule("::1").matches(&host_of("::1".parse().unwrap())));
        let braces = rule("192.168.1.{1,7}");
        assert!(braces.matches("192.168.1.7") && !braces.matches("192.168.1.2"));
        let commas = rule("10.0.0.1, 10.0.0.3");
        assert!(commas.matches("10.0.0.3") && !commas.matches("10.0.0.2"));
    }

    #[test]
    fn ipv4_ranges_as_java_reads_them() {
        let last = rule("192.168.1.*");
        assert!(last.matches("192.168.1.200") && !last.matches("192.168.2.1"));
        let third = rule("192.168.*.*");
        assert!(third.matches("192.168.77.1") && !third.matches("192.169.0.1"));
        let span = rule("192.168.1.10-20");
        assert!(span.matches("192.168.1.10") && span.matches("192.168.1.20") && !span.matches("192.168.1.21"));
        let mid = rule("10.0-9.*.*");
        assert!(mid.matches("10.9.1.1") && !mid.matches("10.10.1.1"));
        assert!(!last.matches("::1"));
    }

    #[test]
    fn bad_rules_are_named() {
        for bad in ["300.1.1.1", "1.1.1", "1.1.1.-5", "1.1.1.9-2", "abc", "2::1-200:*", "1.1.{1,x}"] {
            let err = AddressRule::parse(Some(bad)).unwrap_err();
            assert!(err.contains(bad.split('{').next().unwrap()) || err.contains('x'), "{bad}: {err}");
        }
    }

    #[test]
    fn mapped_ipv6_peers_are_ipv4() {
        assert_eq!(host_of("::ffff:127.0.0.1".parse().unwrap()), "127.0.0.1");
        assert_eq!(host_of("::1".parse().unwrap()), "0:0:0:0:0:0:0:1");
        assert_eq!(canonical("0:0:0:0:0:0:0:1").unwrap(), "0000:0000:0000:0000:0000:0000:0000:0001");
    }
}
