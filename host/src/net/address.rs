//! The address rules: which resolved addresses a request from Engram may connect to.
//! Every outbound path (installs, `fetch_url`, plugins' `wasi:http`) checks resolved
//! addresses here, so the list of ranges exists once.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Addresses a URL from outside must not reach: loopback, private (RFC 1918),
/// link-local, unique-local (fc00::/7), CGNAT (100.64.0.0/10), unspecified, broadcast,
/// multicast, documentation, benchmarking and reserved ranges, and IPv6 forms that
/// embed an IPv4 address (mapped, compatible, NAT64, 6to4) when that address is one of
/// these; Teredo (which hides its address), IPv4-translated `::ffff:0:0:0/96` (SIIT)
/// and local-use NAT64 `64:ff9b:1::/48` (whose translator is on the local network, and
/// whose embedded address sits where its operator's prefix length puts it) are refused
/// outright.
pub fn is_non_public(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4_non_public(v4),
        IpAddr::V6(v6) => v6_non_public(v6),
    }
}

fn v4_non_public(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_unspecified()
        || a == 0                                   // "this network" 0.0.0.0/8
        || ip.is_loopback()                         // 127.0.0.0/8
        || ip.is_private()                          // 10/8, 172.16/12, 192.168/16
        || ip.is_link_local()                       // 169.254/16
        || (a == 100 && (64..128).contains(&b))     // CGNAT 100.64/10
        || (a == 192 && b == 0 && c == 0)           // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)           // TEST-NET-1
        || (a == 198 && b == 51 && c == 100)        // TEST-NET-2
        || (a == 203 && b == 0 && c == 113)         // TEST-NET-3
        || (a == 198 && (b == 18 || b == 19))       // benchmarking
        || (a == 192 && b == 88 && c == 99)         // 6to4 relay anycast
        || ip.is_multicast()                        // 224/4
        || a >= 240 // reserved 240/4 and broadcast
}

fn v6_non_public(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_non_public(v4);
    }
    // IPv4-compatible (deprecated) ::a.b.c.d, but not :: and ::1 themselves.
    if seg[..6] == [0; 6] && !(ip.is_unspecified() || ip.is_loopback()) {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return v4_non_public(Ipv4Addr::new(a, b, c, d));
    }
    // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765) and local-use NAT64 64:ff9b:1::/48
    // (RFC 8215): never a public destination of their own.
    if seg[..6] == [0, 0, 0, 0, 0xffff, 0] || seg[..3] == [0x64, 0xff9b, 1] {
        return true;
    }
    // NAT64 64:ff9b::/96 embeds the IPv4 address in the last 32 bits.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return v4_non_public(Ipv4Addr::new(a, b, c, d));
    }
    // 6to4 2002::/16 embeds it in bits 16-48.
    if seg[0] == 0x2002 {
        let [a, b] = seg[1].to_be_bytes();
        let [c, d] = seg[2].to_be_bytes();
        return v4_non_public(Ipv4Addr::new(a, b, c, d));
    }
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00     // unique-local fc00::/7
        || (seg[0] & 0xffc0) == 0xfe80     // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0     // site-local (deprecated) fec0::/10
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || (seg[0] == 0x2001 && seg[1] == 0) // Teredo 2001::/32
        || seg[0] == 0x0100 && seg[1..4] == [0, 0, 0] // discard-only 100::/64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        for private in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "192.0.2.5",
            "198.18.0.1",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            "2001::1",
            "::ffff:0:7f00:1",
            "::ffff:0:a9fe:a9fe",
            "::ffff:0:808:808",
            "64:ff9b:1::a00:1",
            "64:ff9b:1:ffff::808:808",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(is_non_public(ip), "{private} should be refused");
        }
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.169.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(!is_non_public(ip), "{public} should be allowed");
        }
    }
}
