//! Why the kernel refused lsmpmon's programs, as one actionable line.
use base::error::usage;

/// `what` failed with `err`; EPERM (lockdown, no CAP_BPF) becomes a usage
/// error that says to trace in a guest.
pub fn refused(what: &str, err: &dyn std::fmt::Display) -> anyhow::Error {
    let text = err.to_string();
    if text.contains("Operation not permitted") || text.contains("EPERM") {
        let lockdown = std::fs::read_to_string("/sys/kernel/security/lockdown")
            .ok()
            .and_then(|l| {
                l.split_whitespace()
                    .find(|w| w.starts_with('['))
                    .map(|w| w.trim_matches(['[', ']']).to_string())
            });
        let why = match lockdown.as_deref() {
            Some("none") | None => {
                "the kernel refused fentry programs (EPERM; kernel lockdown or missing CAP_BPF)"
                    .to_string()
            }
            Some(mode) => format!("kernel lockdown ({mode}) refuses fentry programs"),
        };
        return usage(format!(
            "{why}: trace inside a guest instead: lsmpmon vm run --kernel 6.1 -- lsmpmon trace ..."
        ));
    }
    anyhow::anyhow!("{what}: {text}")
}
