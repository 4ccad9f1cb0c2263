//! lsmpmon's version, defined once (Cargo.toml), and the git commit of a
//! build from a checkout (build.rs): `--version`, the package, the man pages
//! and every result's provenance show these.

/// Cargo.toml's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The version with the commit's first 12 hex digits when built from a
/// checkout: `0.1.0 (commit 4cd0691a1b2c)`.
pub const LONG: &str = env!("LSMPMON_VERSION_LONG");

/// The full commit id a build from a git checkout was made from.
pub fn commit() -> Option<&'static str> {
    Some(env!("LSMPMON_GIT_COMMIT")).filter(|c| !c.is_empty())
}

/// The SHA-256 of this executable, read once: the build itself. Two builds
/// of one commit (a dirty tree, another toolchain) differ here, and a build
/// is a draw of a guest's layout, so results name their build by it.
pub fn executable_sha256() -> Option<&'static str> {
    static HASH: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    HASH.get_or_init(|| crate::digest::sha256_file(std::path::Path::new("/proc/self/exe")).ok())
        .as_deref()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_long_version_is_the_version_and_the_commit() {
        assert!(super::LONG.starts_with(super::VERSION));
        match super::commit() {
            Some(c) => {
                assert!(c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()));
                assert!(super::LONG.ends_with(&format!(" (commit {})", &c[..12])));
            }
            None => assert_eq!(super::LONG, super::VERSION),
        }
    }

    #[test]
    fn the_executables_hash_is_the_hash_of_the_running_file() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let want = crate::digest::sha256_hex(&exe);
        assert_eq!(super::executable_sha256(), Some(want.as_str()));
    }
}
