//! `vm run --forward HOST:GUEST`: a guest TCP port reachable on the host's
//! 127.0.0.1 through QEMU's user-mode network (no host privileges; the guest
//! is `restrict`ed: it reaches nothing outside, only forwarded connections
//! come in). The guest gets a virtio-net card, its driver's modules from
//! the kernel package, and 10.0.2.15/24 before COMMAND runs.
use std::net::{Ipv4Addr, TcpListener};

use anyhow::Result;

use super::initramfs::Entry;
use super::kernel::Kernel;
use base::error::usage;

/// Where the guest's network set-up script is; /init runs it if present.
pub const NET_SCRIPT: &str = "lsmpmon/net.sh";
const MODULES_DIR: &str = "lsmpmon/net";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forward {
    pub host_port: u16,
    pub guest_port: u16,
}

/// `--forward HOST:GUEST`, two TCP ports.
pub fn parse(s: &str) -> Result<Forward, String> {
    let (h, g) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not HOST:GUEST (two TCP ports)"))?;
    let port = |p: &str| match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{p}' is not a TCP port (1-65535)")),
    };
    Ok(Forward {
        host_port: port(h)?,
        guest_port: port(g)?,
    })
}

/// Refuses a host port given twice or already taken (QEMU would only say
/// so after booting).
pub fn check_free(forwards: &[Forward]) -> Result<()> {
    for (i, f) in forwards.iter().enumerate() {
        if let Some(g) = forwards[..i].iter().find(|g| g.host_port == f.host_port) {
            return Err(usage(format!(
                "--forward {}:{}: host port {} is already forwarded (--forward {}:{}): give \
                 each --forward its own host port",
                f.host_port, f.guest_port, f.host_port, g.host_port, g.guest_port
            )));
        }
    }
    for f in forwards {
        if let Err(e) = TcpListener::bind((Ipv4Addr::LOCALHOST, f.host_port)) {
            return Err(usage(format!(
                "--forward {}:{}: 127.0.0.1:{} cannot be used: {e}",
                f.host_port, f.guest_port, f.host_port
            )));
        }
    }
    Ok(())
}

/// QEMU's options: one user-mode network with every forward, one virtio card.
pub fn qemu_args(forwards: &[Forward]) -> Vec<String> {
    let mut netdev = "user,id=n0,restrict=on".to_string();
    for f in forwards {
        netdev += &format!(",hostfwd=tcp:127.0.0.1:{}-:{}", f.host_port, f.guest_port);
    }
    vec![
        "-netdev".into(),
        netdev,
        "-device".into(),
        "virtio-net-pci,netdev=n0".into(),
    ]
}

/// The driver's modules and the script that loads them and sets eth0 up.
pub fn guest_files(kernel: &Kernel) -> Vec<Entry> {
    let dir = kernel.net_dir();
    let mut files: Vec<Entry> = kernel
        .net_modules
        .iter()
        .map(|m| Entry::host(dir.join(m), &format!("{MODULES_DIR}/{m}"), 0o644))
        .collect();
    files.push(Entry::bytes(
        NET_SCRIPT,
        0o755,
        script(&kernel.net_modules).into_bytes(),
    ));
    files
}

/// QEMU's user network: the guest is 10.0.2.15, the gateway 10.0.2.2.
fn script(modules: &[String]) -> String {
    let mut s = String::from("#!/bin/busybox sh\n");
    for m in modules {
        s += &format!(
            "insmod /{MODULES_DIR}/{m} || echo \"lsmpmon: guest: insmod {m} failed\" >&2\n"
        );
    }
    s += "ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 \
          || echo 'lsmpmon: guest: eth0 could not be set up' >&2\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_parse_to_loopback_hostfwd_rules() {
        let f = parse("19464:9464").unwrap();
        assert_eq!(
            f,
            Forward {
                host_port: 19464,
                guest_port: 9464
            }
        );
        for bad in ["9464", "0:9464", "1:70000", "a:1", ":"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let args = qemu_args(&[f, parse("2222:22").unwrap()]);
        assert_eq!(
            args[1],
            "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:19464-:9464,hostfwd=tcp:127.0.0.1:2222-:22"
        );
        assert_eq!(args[3], "virtio-net-pci,netdev=n0");
    }

    /// Issue 34 item 9: a host port given twice was refused by QEMU after
    /// the boot (124); it is a usage error before.
    #[test]
    fn a_host_port_given_twice_is_refused() {
        let f = |s: &str| parse(s).unwrap();
        let err = check_free(&[f("40000:80"), f("40001:22"), f("40000:443")]).unwrap_err();
        assert_eq!(base::error::exit_code(&err), 2);
        let text = err.to_string();
        assert!(
            text.contains("host port 40000 is already forwarded (--forward 40000:80)"),
            "{text}"
        );
    }

    #[test]
    fn the_script_loads_modules_in_order_then_sets_eth0_up() {
        let s = script(&["failover.ko".into(), "virtio_net.ko".into()]);
        let a = s.find("insmod /lsmpmon/net/failover.ko").unwrap();
        let b = s.find("insmod /lsmpmon/net/virtio_net.ko").unwrap();
        let c = s.find("ip addr add 10.0.2.15/24 dev eth0").unwrap();
        assert!(a < b && b < c, "{s}");
    }
}
