//! What `lsmpmon trace` needs of a guest kernel, read from its config before
//! anything boots.
use anyhow::Result;

use super::manifest::Kernel;
use crate::cache::check_sha256;
use base::error::usage;

/// Config options `lsmpmon trace` needs, and what each gives it.
const TRACE_NEEDS: &[(&str, &str)] = &[
    ("CONFIG_BPF_SYSCALL", "the bpf() syscall"),
    ("CONFIG_DEBUG_INFO_BTF", "BTF"),
    ("CONFIG_BPF_JIT", "the BPF JIT, for trampolines"),
    ("CONFIG_FUNCTION_TRACER", "ftrace's fentry call sites"),
    ("CONFIG_SECURITY", "LSM hooks"),
];

/// What of [`TRACE_NEEDS`] a kernel config lacks, as `OPTION (what)`.
pub fn trace_missing(config: &str) -> Vec<String> {
    TRACE_NEEDS
        .iter()
        .filter(|(opt, _)| !config.lines().any(|l| l.trim() == format!("{opt}=y")))
        .map(|(opt, what)| format!("{opt} ({what})"))
        .collect()
}

/// Whether a guest command runs `lsmpmon trace`: as the command itself, or
/// as a command of a shell script argument (`sh -c 'x; lsmpmon trace …'`),
/// not words that merely mention it (`echo "lsmpmon trace"`).
pub fn runs_trace(argv: &[String]) -> bool {
    let starts_trace = |words: &mut dyn Iterator<Item = &str>| {
        words.next().and_then(|w| w.rsplit('/').next()) == Some("lsmpmon")
            && words.next() == Some("trace")
    };
    starts_trace(&mut argv.iter().map(String::as_str))
        || argv.iter().skip(1).any(|a| {
            a.split([';', '&', '|', '\n', '(', ')', '{', '}'])
                .any(|command| starts_trace(&mut command.split_whitespace()))
        })
}

/// Refuses, before booting, a kernel that cannot run `lsmpmon trace`.
pub fn check_trace(k: &Kernel) -> Result<()> {
    let config = check_sha256(&k.config, &k.config_sha256)?;
    let config = String::from_utf8_lossy(&config);
    let missing = trace_missing(&config);
    if missing.is_empty() {
        return Ok(());
    }
    let what = k
        .path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| format!("{} {}", k.series, k.release));
    if !config.lines().any(|l| l.trim() == "CONFIG_SECURITY=y") {
        return Err(usage(format!(
            "kernel {what} has no LSM framework (built without CONFIG_SECURITY): there is no hook to trace; bench measures it"
        )));
    }
    Err(usage(format!(
        "kernel {what} cannot run lsmpmon trace: its config ({}) lacks {}; build it with them",
        k.config.display(),
        missing.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_trace_needs_is_read_from_the_config() {
        let all = "CONFIG_BPF_SYSCALL=y\nCONFIG_DEBUG_INFO_BTF=y\nCONFIG_BPF_JIT=y\n\
                   CONFIG_FUNCTION_TRACER=y\nCONFIG_SECURITY=y\n";
        assert!(trace_missing(all).is_empty());
        let no_btf = all.replace(
            "CONFIG_DEBUG_INFO_BTF=y",
            "# CONFIG_DEBUG_INFO_BTF is not set",
        );
        assert_eq!(trace_missing(&no_btf), ["CONFIG_DEBUG_INFO_BTF (BTF)"]);
        assert_eq!(trace_missing("").len(), TRACE_NEEDS.len());
    }

    #[test]
    fn trace_is_seen_in_the_guest_command() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(runs_trace(&argv(&["lsmpmon", "trace", "--", "true"])));
        assert!(runs_trace(&argv(&["/bin/lsmpmon", "trace"])));
        assert!(runs_trace(&argv(&[
            "sh",
            "-c",
            "x; lsmpmon trace --json -- ls"
        ])));
        assert!(!runs_trace(&argv(&["lsmpmon", "bench"])));
        assert!(!runs_trace(&argv(&["echo", "trace"])));
        assert!(!runs_trace(&argv(&[
            "sh",
            "-c",
            "echo \"do not run lsmpmon trace here\""
        ])));
        assert!(runs_trace(&argv(&["sh", "-c", "cd / && lsmpmon trace"])));
    }
}
