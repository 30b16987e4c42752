//! The `Host` check of loopback listeners: a web page that rebinds its own DNS name to
//! 127.0.0.1 reaches the port, but its requests still name its own host.

use std::net::IpAddr;

/// Which `Host` header values a listener accepts.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostPolicy {
    /// Only loopback names and addresses (plus `allowed`) are accepted; set for listeners
    /// bound to a loopback address.
    pub(crate) loopback_only: bool,
    /// Extra host names accepted, lower-cased, without a port: what a reverse proxy in front
    /// of the server forwards.
    pub(crate) allowed: Vec<String>,
}

impl HostPolicy {
    /// Whether a request with this `Host` header (absent: `None`) may proceed.
    pub(crate) fn accepts(&self, host: Option<&str>) -> bool {
        if !self.loopback_only {
            return true;
        }
        // Browsers always send `Host`; a client without one is not a web page.
        let Some(host) = host else {
            return true;
        };
        let name = strip_port(host.trim()).to_ascii_lowercase();
        is_loopback_name(&name) || self.allowed.contains(&name)
    }
}

/// `name` without a trailing `:PORT`, and an IPv6 literal without its brackets.
fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    if host.parse::<IpAddr>().is_ok() {
        return host;
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|byte| byte.is_ascii_digit()) => name,
        _ => host,
    }
}

fn is_loopback_name(name: &str) -> bool {
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_listeners_accept_loopback_hosts_and_the_allow_list() {
        let policy = HostPolicy {
            loopback_only: true,
            allowed: vec!["keel.internal.example".into()],
        };
        for host in [
            "127.0.0.1:4000",
            "127.1.2.3",
            "localhost:1",
            "LOCALHOST",
            "app.localhost:80",
            "[::1]:4000",
            "::1",
            "keel.internal.example:443",
        ] {
            assert!(policy.accepts(Some(host)), "{host}");
        }
        assert!(policy.accepts(None));
        for host in [
            "evil.example",
            "evil.example:4000",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "10.0.0.1:4000",
            "[fe80::1]:4000",
        ] {
            assert!(!policy.accepts(Some(host)), "{host}");
        }
    }

    #[test]
    fn other_listeners_accept_any_host() {
        assert!(HostPolicy::default().accepts(Some("evil.example")));
    }
}
