//! Progress of a matrix: a bar per running cell on a terminal, plain lines
//! (one per stage) otherwise.
use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::results::{CellResult, CellStatus};

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
            crate::say!("lab: {label}: boot");
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
            s => format!("{s:?}"),
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
    }

    fn println(&self, line: &str) {
        if self.tty {
            let _ = self.multi.println(line);
        } else {
            crate::say!("{line}");
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
                crate::say!("lab: {}: {stage}", self.label);
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
