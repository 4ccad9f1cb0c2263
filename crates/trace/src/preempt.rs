//! lsmpmon's probes keep each CPU's calls in progress on a per-CPU stack.
//! The kernel runs fentry/fexit programs with migration disabled but not
//! preemption: under a fully preemptible kernel (`preempt=full`, `lazy`,
//! PREEMPT_RT) another task could run in the middle of a probe and push its
//! own frames between another's. Where the kernel has the kfuncs
//! `bpf_preempt_disable`/`bpf_preempt_enable` (6.10), each probe runs with
//! preemption disabled; an older preemptible kernel is refused. (From 7.x,
//! Debian's kernels only offer `full` and `lazy`.)
use anyhow::Result;

use base::error::usage;

/// The preemption model the running kernel uses, if it can be told.
pub fn model() -> Option<String> {
    dynamic_model()
        .or_else(|| cmdline_model(&std::fs::read_to_string("/proc/cmdline").ok()?))
        .or_else(|| {
            let release = model::provenance::collect().kernel_release;
            config_model(&std::fs::read_to_string(format!("/boot/config-{release}")).ok()?)
        })
}

/// debugfs `sched/preempt` (PREEMPT_DYNAMIC): "none (voluntary) full".
fn dynamic_model() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/debug/sched/preempt").ok()?;
    current_in(&text)
}

fn current_in(text: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
        .map(String::from)
}

fn cmdline_model(cmdline: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("preempt="))
        .map(String::from)
}

fn config_model(config: &str) -> Option<String> {
    let on = |opt: &str| config.lines().any(|l| l == format!("{opt}=y"));
    if on("CONFIG_PREEMPT_RT") {
        Some("rt".into())
    } else if on("CONFIG_PREEMPT_DYNAMIC") || on("CONFIG_PREEMPT_VOLUNTARY") {
        // A dynamic kernel without preempt= runs its build-time default.
        Some(
            if on("CONFIG_PREEMPT") {
                "full"
            } else {
                "voluntary"
            }
            .into(),
        )
    } else if on("CONFIG_PREEMPT") {
        Some("full".into())
    } else {
        Some("none".into())
    }
}

/// The preemption model where it lets a task be preempted inside a probe,
/// if the probes can disable preemption (`can_disable`); an error otherwise.
pub fn check(can_disable: bool) -> Result<Option<String>> {
    match model() {
        Some(m) if matches!(m.as_str(), "full" | "lazy" | "rt") => {
            if can_disable {
                Ok(Some(m))
            } else {
                Err(usage(format!(
                    "the kernel runs with preemption model '{m}' and has no bpf_preempt_disable \
                     (6.10): a task can be preempted inside lsmpmon's probes and mix its calls \
                     with another's; boot with preempt=voluntary (or preempt=none)"
                )))
            }
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_source() {
        assert_eq!(
            current_in("none (voluntary) full\n").as_deref(),
            Some("voluntary")
        );
        assert_eq!(
            current_in("none voluntary (full) lazy\n").as_deref(),
            Some("full")
        );
        assert_eq!(
            cmdline_model("console=ttyS0 preempt=full quiet").as_deref(),
            Some("full")
        );
        assert_eq!(cmdline_model("console=ttyS0 quiet"), None);
        let dynamic =
            "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
        assert_eq!(config_model(dynamic).as_deref(), Some("voluntary"));
        assert_eq!(config_model("CONFIG_PREEMPT=y\n").as_deref(), Some("full"));
        assert_eq!(
            config_model("CONFIG_PREEMPT=y\nCONFIG_PREEMPT_RT=y\n").as_deref(),
            Some("rt")
        );
        assert_eq!(
            config_model("# CONFIG_PREEMPT is not set\n").as_deref(),
            Some("none")
        );
    }
}
