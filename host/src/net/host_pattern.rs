//! Host patterns as plugin manifests and `plugins.<name>` in config.yaml write them:
//! `host`, `host:port`, `*.domain`, an IP address (`[v6]:port` too).

/// Checks an `allowed-hosts` and a `private-hosts` list (a manifest's, or the
/// operator's override in config.yaml); the error names the list and the entry.
pub fn validate_hosts(allowed: &[String], private: &[String]) -> Result<(), String> {
    for host in allowed {
        validate_host_pattern(host).map_err(|e| format!("allowed-hosts: `{host}`: {e}"))?;
    }
    for host in private {
        let plain = super::ip_literal(host).is_some()
            || (!host.starts_with("*.") && split_host_port(host).1.is_none());
        if !plain || validate_host_pattern(host).is_err() {
            return Err(format!(
                "private-hosts: `{host}`: give a host name or an IP address, without port or wildcard"
            ));
        }
    }
    Ok(())
}

fn validate_host_pattern(pattern: &str) -> Result<(), String> {
    if pattern.contains("://") || pattern.contains('/') {
        return Err("give a host (and optional port), not a URL".into());
    }
    if super::ip_literal(pattern).is_some() {
        return Ok(());
    }
    let (host, port) = split_host_port(pattern);
    if let Some(port) = port {
        port.parse::<u16>()
            .map_err(|_| format!("`{port}` is not a port number"))?;
    }
    let host = host.strip_prefix("*.").unwrap_or(host);
    let valid_label = |l: &str| {
        !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    let is_ipv6 = host.starts_with('[') && host.ends_with(']');
    if host.is_empty() || !(is_ipv6 || host.split('.').all(valid_label)) {
        return Err("not a host name or IP address".into());
    }
    Ok(())
}

/// Splits `host:port` (with `[v6]:port` support); the port is None when absent.
pub fn split_host_port(pattern: &str) -> (&str, Option<&str>) {
    if let Some(end) = pattern.rfind(']') {
        let (host, rest) = pattern.split_at(end + 1);
        return (host, rest.strip_prefix(':'));
    }
    match pattern.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (pattern, None),
    }
}
