//! `lsmpmon top`: the trace engine at a terminal, every hook's cost over the
//! last second, refreshed in place.
pub mod keys;
pub mod model;
pub mod view;

use std::{
    io::IsTerminal,
    time::{Duration, Instant},
};

use anyhow::Result;
use clap::Args;
use ratatui::{
    crossterm::event::{self, Event},
    DefaultTerminal,
};

use crate::base::error::usage;
use crate::model::TraceResult;
use crate::trace::live::{self, Live, Reset};
use crate::trace::EngineArgs;
use keys::{Action, State};

#[derive(Args, Debug, Clone)]
pub struct TopArgs {
    /// Seconds between refreshes.
    #[arg(long, default_value_t = 1.0, value_parser = crate::base::parse::seconds)]
    pub interval: f64,
    /// What to attach to and how, as `trace`.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Refuses, before attaching, what `top` cannot draw on.
fn check_terminal() -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(usage(
            "lsmpmon top needs a terminal: use lsmpmon trace --interval 1 or lsmpmon serve instead",
        ));
    }
    let (cols, rows) = ratatui::crossterm::terminal::size()?;
    if cols < view::MIN_COLS || rows < view::MIN_ROWS {
        return Err(usage(format!(
            "terminal too small ({cols}x{rows}): lsmpmon top needs {}x{}",
            view::MIN_COLS,
            view::MIN_ROWS
        )));
    }
    Ok(())
}

pub fn main(args: TopArgs) -> Result<i32> {
    if args.engine.count_only {
        return Err(usage(
            "lsmpmon top sorts by time and --count-only times nothing: use lsmpmon serve --count-only or lsmpmon trace --count-only",
        ));
    }
    check_terminal()?;
    live::attached(&args.engine, Reset::Allowed, |live| {
        // Raw mode and the alternate screen; ratatui's panic hook restores them.
        let mut terminal = ratatui::try_init()?;
        let shown = run(&mut terminal, live, args.interval);
        ratatui::try_restore()?;
        shown
    })?;
    Ok(0)
}

fn title(r: &TraceResult) -> String {
    format!(
        "lsmpmon top  {}  {}  {} hooks  {} time  lsm={}",
        r.provenance.kernel_release,
        r.probe.method,
        r.probe.hooks_attached,
        r.provenance.time.name(),
        r.provenance.active_lsms.join(",")
    )
}

/// Draws and reads keys until q, Ctrl-C or SIGTERM.
fn run(terminal: &mut DefaultTerminal, live: &mut Live, interval_s: f64) -> Result<()> {
    let mut state = State::default();
    let mut before = live.snapshot_with(false)?;
    let mut taken = Instant::now();
    let mut rows = Vec::new();
    let mut shown_interval_s = interval_s;
    let head = title(&before);
    while !live.stopped() {
        live.answer_ctl()?;
        if !state.paused && taken.elapsed().as_secs_f64() >= interval_s {
            let now = live.snapshot_with(false)?;
            shown_interval_s = taken.elapsed().as_secs_f64();
            rows = model::rows(&before, &now, shown_interval_s);
            (before, taken) = (now, Instant::now());
        }
        let visible = model::shown(&rows, state.sort, &state.filter);
        terminal.draw(|f| {
            view::draw(
                f,
                &view::Screen {
                    title: &head,
                    state: &state,
                    rows: &visible,
                    interval_s: shown_interval_s,
                },
            )
        })?;
        if !event::poll(Duration::from_millis(100))? {
            continue;
        }
        if let Event::Key(k) = event::read()? {
            match state.key(k) {
                Action::Quit => break,
                Action::Reset => {
                    live.reset()?;
                    (before, taken, rows) =
                        (live.snapshot_with(false)?, Instant::now(), Vec::new());
                }
                Action::None => {}
            }
        }
    }
    Ok(())
}
