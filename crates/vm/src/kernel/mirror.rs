//! Which Debian archive kernels come from: the machine's own apt sources
//! (deb822 `*.sources` or one-line `sources.list`), or `--mirror`.
use std::{fs, path::Path};

use anyhow::Result;

use base::error::usage;

#[derive(Debug, Clone, PartialEq)]
pub struct Mirrors {
    pub main: String,
    pub security: String,
}

impl Mirrors {
    /// A mirror the user named; its security archive is `<mirror>-security`,
    /// the Debian convention (override with LSMPMON_SECURITY_MIRROR).
    pub fn given(main: &str) -> Result<Self> {
        let main = checked_url(main)?.trim_end_matches('/').to_string();
        let security = match std::env::var("LSMPMON_SECURITY_MIRROR") {
            Ok(s) => checked_url(&s)?.to_string(),
            Err(_) => format!("{main}-security"),
        };
        Ok(Self { main, security })
    }

    pub fn from_system() -> Result<Self> {
        // sources.list first: it is the system's own; sources.list.d often adds others.
        let mut entries =
            parse_one_line(&fs::read_to_string("/etc/apt/sources.list").unwrap_or_default());
        let dir = Path::new("/etc/apt/sources.list.d");
        let mut files: Vec<_> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            let text = fs::read_to_string(&f).unwrap_or_default();
            match f.extension().and_then(|e| e.to_str()) {
                Some("sources") => entries.extend(parse_deb822(&text)),
                Some("list") => entries.extend(parse_one_line(&text)),
                _ => {}
            }
        }
        Self::choose(&entries).ok_or_else(|| {
            usage(
                "no Debian archive found in this machine's apt sources: \
                 give one with --mirror URL (or LSMPMON_MIRROR)",
            )
        })
    }

    /// The first archive serving a plain Debian suite, and the first serving
    /// a `-security` suite (default: the main one with `-security`).
    fn choose(entries: &[(String, String)]) -> Option<Self> {
        let is_debian = |suite: &str| {
            let (base, rest) = suite.split_once('-').unwrap_or((suite, ""));
            DEBIAN_SUITES.contains(&base)
                && ["", "updates", "security", "backports", "proposed-updates"].contains(&rest)
        };
        let main = entries
            .iter()
            .find(|(_, s)| is_debian(s) && !s.ends_with("-security"))?
            .0
            .trim_end_matches('/')
            .to_string();
        let security = entries
            .iter()
            .find(|(_, s)| is_debian(s) && s.ends_with("-security"))
            .map(|(u, _)| u.trim_end_matches('/').to_string())
            .unwrap_or_else(|| format!("{main}-security"));
        Some(Self { main, security })
    }
}

const DEBIAN_SUITES: &[&str] = &[
    "bullseye",
    "bookworm",
    "trixie",
    "forky",
    "sid",
    "stable",
    "testing",
    "unstable",
    "oldstable",
];

/// A URL that can go into a sources.list line as it is: no spaces, no
/// control characters (a newline could add a line of its own).
fn checked_url(url: &str) -> Result<&str> {
    let scheme_ok = match url.split_once(':') {
        Some(("http" | "https", rest)) => rest.starts_with("//"),
        Some(("file", rest)) => rest.starts_with('/'),
        _ => false,
    };
    let ok = scheme_ok
        && !url
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '[' || c == ']');
    if !ok {
        return Err(usage(format!(
            "mirror '{}' is not an http(s):// or file:/ URL without spaces",
            url.escape_debug()
        )));
    }
    Ok(url)
}

/// (URI, suite) pairs of `Types: deb` stanzas.
fn parse_deb822(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
        };
        if !field("Types:").is_some_and(|t| t.split_whitespace().any(|t| t == "deb")) {
            continue;
        }
        if field("Enabled:").is_some_and(|e| e == "no") {
            continue;
        }
        let (Some(uris), Some(suites)) = (field("URIs:"), field("Suites:")) else {
            continue;
        };
        if !field("Components:").is_some_and(|c| c.split_whitespace().any(|c| c == "main")) {
            continue;
        }
        for uri in uris.split_whitespace() {
            for suite in suites.split_whitespace() {
                out.push((uri.to_string(), suite.to_string()));
            }
        }
    }
    out
}

/// (URI, suite) pairs of `deb [options] URI SUITE COMPONENTS…` lines.
fn parse_one_line(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let l = l.split('#').next()?.trim();
            let rest = l.strip_prefix("deb ")?.trim_start();
            let rest = match rest.strip_prefix('[') {
                Some(r) => r.split_once(']')?.1.trim_start(),
                None => rest,
            };
            let mut words = rest.split_whitespace();
            let (uri, suite) = (words.next()?, words.next()?);
            words
                .any(|c| c == "main")
                .then(|| (uri.to_string(), suite.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // file: archives: no host names in the repository.
    #[test]
    fn deb822_and_one_line_sources_give_main_and_security() {
        let d = "Types: deb\nURIs: file:/srv/m/debian\nSuites: bookworm bookworm-updates\n\
                 Components: main\n\nTypes: deb\nURIs: file:/srv/s/debian-security\n\
                 Suites: bookworm-security\nComponents: main\n\nTypes: deb\n\
                 URIs: file:/srv/other/apt\nSuites: nodistro\n";
        let m = Mirrors::choose(&parse_deb822(d)).unwrap();
        assert_eq!(m.main, "file:/srv/m/debian");
        assert_eq!(m.security, "file:/srv/s/debian-security");

        let l = "# deb file:/srv/old/debian buster main\n\
                 deb file:/srv/cloud/apt cloud-sdk-bookworm main\n\
                 deb [arch=amd64 signed-by=/k.gpg] file:/srv/m2/debian/ bookworm main\n";
        let m = Mirrors::choose(&parse_one_line(l)).unwrap();
        assert_eq!(m.main, "file:/srv/m2/debian");
        assert_eq!(m.security, "file:/srv/m2/debian-security");
    }

    #[test]
    fn third_party_suites_and_hostile_urls_are_refused() {
        let l = "deb file:/srv/pg/apt bookworm-pgdg main\n\
                 deb file:/srv/docker/debian bookworm stable\n\
                 deb file:/srv/m/debian bookworm main contrib\n";
        let m = Mirrors::choose(&parse_one_line(l)).unwrap();
        assert_eq!(m.main, "file:/srv/m/debian");
        let hostile = "file:/srv/m/debian bookworm main\ndeb [trusted=yes] file:/x";
        assert!(Mirrors::given(hostile).is_err());
        assert!(Mirrors::given("ftp:/srv/debian").is_err());
        assert!(Mirrors::given("file:/srv/m/debian/").is_ok());
    }

    #[test]
    fn no_debian_suite_means_no_mirror() {
        let d = "Types: deb\nURIs: file:/srv/node\nSuites: nodistro\n";
        assert_eq!(Mirrors::choose(&parse_deb822(d)), None);
        let disabled = "Types: deb\nEnabled: no\nURIs: file:/srv/m/debian\nSuites: bookworm\n";
        assert_eq!(Mirrors::choose(&parse_deb822(disabled)), None);
    }
}
