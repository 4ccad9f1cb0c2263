//! Progress of a matrix: a bar per running cell on a terminal, plain lines
//! (one per stage) otherwise.
use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::results::{CellResult, CellStatus};

pub struct Progress {
    multi: MultiProgress,
    total: ProgressBar,
    tty: bool,
}

pub struct Line<'a> {
    bar: ProgressBar,
    label: String,
    progress: &'a Progress,
}

impl Progress {
    pub fn new(cells: usize, done: usize) -> Self {
        let tty = std::io::stderr().is_terminal();
        let multi = MultiProgress::with_draw_target(if tty {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let total = multi.add(ProgressBar::new(cells as u64));
        total.set_style(
            ProgressStyle::with_template("lab [{bar:30}] {pos}/{len} cells, {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        total.set_position(done as u64);
        Self { multi, total, tty }
    }

    pub fn start(&self, label: &str) -> Line<'_> {
        let bar = self.multi.add(ProgressBar::new_spinner());
        bar.set_style(
            ProgressStyle::with_template("  {spinner} {prefix:<20} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(label.to_string());
        bar.set_message("boot");
        bar.enable_steady_tick(std::time::Duration::from_millis(250));
        if !self.tty {
            base::say!("lab: {label}: boot");
        }
        Line {
            bar,
            label: label.into(),
            progress: self,
        }
    }

    pub fn finished(&self, r: &CellResult) {
        self.total.inc(1);
        let what = match r.status {
            CellStatus::Passed => format!("passed in {:.0} s", r.wall_s),
            CellStatus::NotApplicable => "not applicable".into(),
            s => s.to_string(),
        };
        let why = r
            .reason
            .as_deref()
            .map(|w| format!(": {w}"))
            .unwrap_or_default();
        let cpus = match r.options.cpus {
            1 => String::new(),
            n => format!(" {n}cpu"),
        };
        self.println(&format!(
            "lab: {} {}{cpus}: {what}{why}",
            r.kernel.series, r.config.name
        ));
        if let Some(line) = trace_summary(r) {
            self.println(&format!(
                "lab: {} {}{cpus}: {line}",
                r.kernel.series, r.config.name
            ));
        }
    }

    fn println(&self, line: &str) {
        if self.tty {
            let _ = self.multi.println(line);
        } else {
            base::say!("{line}");
        }
    }

    pub fn done(&self) {
        self.total.finish_and_clear();
    }
}

impl Line<'_> {
    /// A line from the guest: stages and proofs are shown; bench chatter
    /// only on the bar.
    pub fn update(&self, line: &str) {
        let line = line.trim();
        if let Some(stage) = line.strip_prefix("lab: stage ") {
            self.bar.set_message(stage.to_string());
            if !self.progress.tty {
                base::say!("lab: {}: {stage}", self.label);
            }
        } else if line.starts_with("lab: proof") {
            self.progress
                .println(&format!("lab: {}: {}", self.label, &line[5..]));
        } else if !line.is_empty() {
            self.bar.set_message(line.to_string());
        }
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// A traced cell's trace in one line: hooks, and what timing them all cost
/// its ops (the observer effect, observer.rs).
fn trace_summary(r: &CellResult) -> Option<String> {
    let g = r.guest.as_ref()?;
    let trace = g.trace.as_ref()?;
    let effects = super::observer::effects(g.bench.as_ref()?, g.traced_bench.as_ref()?);
    Some(format!(
        "trace: {} hooks by {}; under trace (all hooks, --per-lsm): {}",
        trace.probe.hooks_attached,
        trace.probe.method,
        if effects.is_empty() {
            "no op in both runs".into()
        } else {
            super::observer::summary(&effects, 4)
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traced_cell_says_what_the_trace_cost_its_ops() {
        let cell: CellResult = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/report/lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json"
        ))
        .unwrap();
        let line = trace_summary(&cell).unwrap();
        assert!(line.starts_with("trace: "), "{line}");
        assert!(line.contains("stat ×1.67, open_close ×1.74"), "{line}");
        let mut untraced = cell;
        untraced.guest.as_mut().unwrap().traced_bench = None;
        assert_eq!(trace_summary(&untraced), None);
    }
}
