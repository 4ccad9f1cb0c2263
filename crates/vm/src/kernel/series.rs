//! The Debian kernel series lsmpmon knows how to fetch, and how each
//! packages its kernel.

/// How a series packages its kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Up to 6.x: `linux-image-<ver>-<flavour>[-unsigned]`, with
    /// `boot/vmlinuz-<ver>` and `boot/config-<ver>`.
    Image,
    /// From 7.x: `linux-image-<ver>-…` only depends on
    /// `linux-binary-unsigned-<ver>-…` (`usr/lib/modules/<ver>/vmlinuz.unsigned`),
    /// `linux-base-<ver>-…` (`usr/lib/modules/<ver>/config`) and the modules
    /// (of which lsmpmon keeps the IMA module ops' module and, for
    /// `--forward`, the network driver).
    Split,
}

/// A kernel series lsmpmon knows how to fetch, and the Debian suite holding it.
pub struct Series {
    pub name: &'static str,
    pub suite: &'static str,
    pub layout: Layout,
}

pub const SERIES: &[Series] = &[
    Series {
        name: "5.10",
        suite: "bullseye",
        layout: Layout::Image,
    },
    Series {
        name: "6.1",
        suite: "bookworm",
        layout: Layout::Image,
    },
    Series {
        name: "6.12",
        suite: "trixie",
        layout: Layout::Image,
    },
    Series {
        name: "7.3",
        suite: "trixie-backports",
        layout: Layout::Split,
    },
];

pub fn find(name: &str) -> Option<&'static Series> {
    SERIES.iter().find(|s| s.name == name)
}

/// The flavours Debian builds that lsmpmon boots.
pub const FLAVOURS: &[&str] = &["cloud", "amd64"];

/// `-cloud-amd64` or `-amd64`: how package names end for `flavour`.
pub fn flavour_suffix(flavour: &str) -> String {
    match flavour {
        "amd64" => "amd64".into(),
        f => format!("{f}-amd64"),
    }
}
