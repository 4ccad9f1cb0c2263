//! `lsmpmon top`: the trace engine at a terminal, every hook's cost over the
//! last second, refreshed in place.
pub mod delta;
pub mod keys;
pub mod view;

use std::{
    io::IsTerminal,
    time::{Duration, Instant},
};

use anyhow::Result;
use clap::Args;
use ratatui::{
    crossterm::{
        event::{self, Event},
        execute,
        terminal::EnterAlternateScreen,
    },
    layout::Rect,
    DefaultTerminal, TerminalOptions, Viewport,
};

use base::error::usage;
use keys::{Action, State};
use model::TraceResult;
use trace::live::{self, Live, Reset};
use trace::EngineArgs;

#[derive(Args, Debug, Clone)]
pub struct TopArgs {
    /// Seconds between refreshes.
    #[arg(long, default_value_t = 1.0, value_parser = base::parse::seconds)]
    pub interval: f64,
    /// Also record calls by cgroup: g switches between hooks and cgroups.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub by: Vec<TopBy>,
    /// What to attach to and how, as `trace`.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `top --by`'s breakdowns.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopBy {
    /// Calls, time and denials per cgroup (v2) of the calling task.
    Cgroup,
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
    if args.engine.sampled() {
        return Err(usage(
            "lsmpmon top ranks hooks by each interval's time, which --sample or --timing-windows would estimate from a few calls: drop it (lsmpmon serve samples)",
        ));
    }
    check_terminal()?;
    let engine = EngineArgs {
        by_cgroup: args.by.contains(&TopBy::Cgroup),
        ..args.engine.clone()
    };
    live::attached(&engine, Reset::Allowed, |live| {
        let mut screen = Screen::enter()?;
        let shown = run(&mut screen.terminal, live, args.interval);
        drop(screen);
        shown
    })?;
    Ok(0)
}

/// The most columns and rows `top` draws on. A terminal can claim 65535 x
/// 65535 (`stty rows 65535 cols 65535`): a screen buffer of that size is
/// 170 GB, so a larger terminal gets its top-left corner drawn.
pub const MAX_COLS: u16 = 1000;
pub const MAX_ROWS: u16 = 1000;

/// The part of the terminal `top` draws on: all of it, up to the bounds.
fn drawn_area() -> Result<Rect> {
    let (cols, rows) = ratatui::crossterm::terminal::size()?;
    Ok(bounded(cols, rows))
}

fn bounded(cols: u16, rows: u16) -> Rect {
    Rect::new(0, 0, cols.min(MAX_COLS), rows.min(MAX_ROWS))
}

/// The terminal in raw mode on the alternate screen, as it was again when
/// this is dropped (an error, q, a signal) and before a panic's message.
struct Screen {
    terminal: DefaultTerminal,
}

impl Screen {
    fn enter() -> Result<Self> {
        struct Restore;
        impl Drop for Restore {
            fn drop(&mut self) {
                ratatui::restore();
            }
        }
        // Restores if what follows fails half-way (raw mode set, say).
        let restore = Restore;
        // Sets raw mode and a panic hook that restores the terminal first.
        let terminal = ratatui::try_init_with_options(TerminalOptions {
            viewport: Viewport::Fixed(drawn_area()?),
        })?;
        execute!(std::io::stdout(), EnterAlternateScreen)?;
        std::mem::forget(restore);
        Ok(Self { terminal })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        ratatui::restore();
    }
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
    let mut before = live.snapshot_with(false)?;
    let mut state = State {
        cgroups_recorded: before.cgroups.is_some(),
        ..State::default()
    };
    let mut taken = Instant::now();
    let (mut rows, mut cgroup_rows) = (Vec::new(), Vec::new());
    let mut shown_interval_s = interval_s;
    let head = title(&before);
    let mut area = drawn_area()?;
    while !live.stopped() {
        live.answer_ctl()?;
        // A fixed viewport follows the terminal's size only when told to.
        let now_area = drawn_area()?;
        if now_area != area {
            terminal.resize(now_area)?;
            area = now_area;
        }
        if !state.paused && taken.elapsed().as_secs_f64() >= interval_s {
            let now = live.snapshot_with(false)?;
            shown_interval_s = taken.elapsed().as_secs_f64();
            rows = delta::rows(&before, &now, shown_interval_s);
            cgroup_rows = delta::cgroup_rows(&before, &now, shown_interval_s);
            (before, taken) = (now, Instant::now());
        }
        let all = if state.by_cgroup { &cgroup_rows } else { &rows };
        let visible = delta::shown(all, state.sort, &state.filter);
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
                    (before, taken) = (live.snapshot_with(false)?, Instant::now());
                    (rows, cgroup_rows) = (Vec::new(), Vec::new());
                }
                Action::None => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 34 item 4: a 65535 x 65535 terminal made ratatui allocate a
    /// 170 GB screen buffer (abort, the terminal left on the alternate screen).
    #[test]
    fn the_drawn_area_is_bounded() {
        assert_eq!(bounded(65535, 65535), Rect::new(0, 0, MAX_COLS, MAX_ROWS));
        assert_eq!(bounded(100, 30), Rect::new(0, 0, 100, 30));
        let cells = usize::from(MAX_COLS) * usize::from(MAX_ROWS);
        assert!(cells * std::mem::size_of::<ratatui::buffer::Cell>() < 100 << 20);
    }
}
