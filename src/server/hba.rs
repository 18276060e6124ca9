//! Client authentication rules in PostgreSQL's `pg_hba.conf` format:
//! `TYPE DATABASE USER [ADDRESS [MASK]] METHOD`, first match wins.
//!
//! Part of `server`; may import `catalog` and `error`.

use std::net::IpAddr;

use crate::catalog::Catalog;
use crate::error::Result;
use crate::{bail, err};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnType {
    Local,
    Host,
    HostSsl,
    HostNoSsl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Trust,
    Reject,
    ScramSha256,
    Md5,
    Password,
}

#[derive(Debug, Clone)]
enum Address {
    All,
    Net(IpAddr, u8),
}

#[derive(Debug, Clone)]
pub struct Rule {
    conn: ConnType,
    databases: Vec<String>,
    users: Vec<String>,
    address: Address,
    pub method: Method,
}

/// The rules; the default (no file) trusts loopback and rejects the rest.
#[derive(Debug, Clone)]
pub struct Hba {
    rules: Vec<Rule>,
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',').map(|x| x.trim_matches('"').to_string()).filter(|x| !x.is_empty()).collect()
}

fn prefix_of_mask(mask: IpAddr) -> Option<u8> {
    let bits: u128 = match mask {
        IpAddr::V4(m) => (u32::from(m) as u128) << 96,
        IpAddr::V6(m) => u128::from(m),
    };
    let ones = bits.leading_ones();
    (bits.checked_shl(ones).unwrap_or(0) == 0).then_some(ones as u8).map(|o| if mask.is_ipv4() { o.min(32) } else { o })
}

fn in_net(addr: IpAddr, net: IpAddr, bits: u8) -> bool {
    let (a, n, width) = match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u32::from(a) as u128, u32::from(n) as u128, 32u32),
        (IpAddr::V6(a), IpAddr::V6(n)) => (u128::from(a), u128::from(n), 128),
        (IpAddr::V6(a), IpAddr::V4(n)) => match a.to_ipv4_mapped() {
            Some(a) => (u32::from(a) as u128, u32::from(n) as u128, 32),
            None => return false,
        },
        (IpAddr::V4(_), IpAddr::V6(_)) => return false,
    };
    let bits = (bits as u32).min(width);
    if bits == 0 {
        return true;
    }
    let shift = width - bits;
    (a >> shift) == (n >> shift)
}

impl Hba {
    pub fn default_rules() -> Hba {
        let v4 = Rule {
            conn: ConnType::Host,
            databases: vec!["all".into()],
            users: vec!["all".into()],
            address: Address::Net("127.0.0.1".parse().unwrap(), 8),
            method: Method::Trust,
        };
        let mut v6 = v4.clone();
        v6.address = Address::Net("::1".parse().unwrap(), 128);
        Hba { rules: vec![v4, v6] }
    }

    pub fn load(path: &str) -> Result<Hba> {
        let text = std::fs::read_to_string(path).map_err(|e| err!(InvalidParameterValue, "could not open hba file \"{path}\": {e}"))?;
        Hba::parse(&text).map_err(|e| err!(InvalidParameterValue, "invalid hba file \"{path}\": {}", e.message))
    }

    pub fn parse(text: &str) -> Result<Hba> {
        let mut rules = vec![];
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let at = || format!("line {}", n + 1);
            let conn = match f[0] {
                "local" => ConnType::Local,
                "host" => ConnType::Host,
                "hostssl" => ConnType::HostSsl,
                "hostnossl" => ConnType::HostNoSsl,
                other => bail!(InvalidParameterValue, "invalid connection type \"{other}\" at {}", at()),
            };
            if f.len() < if conn == ConnType::Local { 4 } else { 5 } {
                bail!(InvalidParameterValue, "end-of-line before authentication method at {}", at());
            }
            let databases = split_list(f[1]);
            let users = split_list(f[2]);
            let mut i = 3;
            let address = if conn == ConnType::Local {
                Address::All
            } else {
                let a = f[3];
                i = 4;
                if a == "all" {
                    Address::All
                } else if let Some((ip, bits)) = a.split_once('/') {
                    let ip: IpAddr = ip.parse().map_err(|_| err!(InvalidParameterValue, "invalid IP address \"{a}\" at {}", at()))?;
                    let bits: u8 =
                        bits.parse().map_err(|_| err!(InvalidParameterValue, "invalid CIDR mask in address \"{a}\" at {}", at()))?;
                    Address::Net(ip, bits)
                } else if let Ok(ip) = a.parse::<IpAddr>() {
                    let mask: IpAddr = f.get(4).and_then(|m| m.parse().ok()).ok_or_else(|| {
                        err!(InvalidParameterValue, "specifying both host name and CIDR mask is invalid: \"{a}\" at {}", at())
                    })?;
                    i = 5;
                    let bits = prefix_of_mask(mask).ok_or_else(|| err!(InvalidParameterValue, "invalid IP mask at {}", at()))?;
                    Address::Net(ip, bits)
                } else if a == "samehost" || a == "localhost" {
                    Address::Net("127.0.0.1".parse().unwrap(), 8)
                } else {
                    bail!(InvalidParameterValue, "host names are not supported: \"{a}\" at {}", at());
                }
            };
            let Some(m) = f.get(i) else {
                bail!(InvalidParameterValue, "end-of-line before authentication method at {}", at());
            };
            let method = match *m {
                "trust" => Method::Trust,
                "reject" => Method::Reject,
                "scram-sha-256" => Method::ScramSha256,
                "md5" => Method::Md5,
                "password" => Method::Password,
                other => bail!(InvalidParameterValue, "invalid authentication method \"{other}\" at {}", at()),
            };
            rules.push(Rule { conn, databases, users, address, method });
        }
        Ok(Hba { rules })
    }

    /// The first rule for this connection, if any.
    pub fn find(&self, cat: &Catalog, addr: Option<IpAddr>, ssl: bool, database: &str, user: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| {
            let conn_ok = match r.conn {
                ConnType::Local => addr.is_none(),
                ConnType::Host => addr.is_some(),
                ConnType::HostSsl => addr.is_some() && ssl,
                ConnType::HostNoSsl => addr.is_some() && !ssl,
            };
            let addr_ok = match (&r.address, addr) {
                (Address::All, _) => true,
                (Address::Net(net, bits), Some(a)) => in_net(a, *net, *bits),
                (Address::Net(..), None) => false,
            };
            let db_ok = r.databases.iter().any(|d| match d.as_str() {
                "all" => true,
                "sameuser" => database == user,
                "samerole" | "samegroup" => cat.role_closure(user, false).iter().any(|x| x == database),
                d => d == database,
            });
            let user_ok = r.users.iter().any(|u| {
                if u == "all" {
                    true
                } else if let Some(role) = u.strip_prefix('+') {
                    cat.role_closure(user, false).iter().any(|x| x == role)
                } else {
                    u == user
                }
            });
            conn_ok && addr_ok && db_ok && user_ok
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches_addresses() {
        let h = Hba::parse(
            "# comment\nlocal all all trust\nhost all all 10.0.0.0/8 reject\nhostssl all all 0.0.0.0/0 scram-sha-256\nhost db1,db2 alice 192.168.1.0 255.255.255.0 md5\n",
        )
        .unwrap();
        assert_eq!(h.rules.len(), 4);
        assert!(in_net("10.1.2.3".parse().unwrap(), "10.0.0.0".parse().unwrap(), 8));
        assert!(!in_net("11.1.2.3".parse().unwrap(), "10.0.0.0".parse().unwrap(), 8));
        assert!(in_net("::ffff:127.0.0.1".parse().unwrap(), "127.0.0.1".parse().unwrap(), 32));
        assert_eq!(prefix_of_mask("255.255.255.0".parse().unwrap()), Some(24));
        assert_eq!(prefix_of_mask("255.0.255.0".parse().unwrap()), None);
        assert!(Hba::parse("host all all 1.2.3.4/32 kerberos").is_err());
        assert!(Hba::parse("host all all").is_err());
    }
}
