//! Drawing one `top` screen (ratatui: only changed cells are written, so
//! nothing flickers).
use ratatui::{
    layout::{Constraint, Layout},
    style::{Modifier, Style},
    text::Line,
    widgets::{Cell, Paragraph, Row as TableRow, Table},
    Frame,
};

use super::delta::Row;
use super::keys::State;

/// The smallest screen `top` draws on.
pub const MIN_COLS: u16 = 72;
pub const MIN_ROWS: u16 = 8;

/// What one screen shows besides the rows.
pub struct Screen<'a> {
    /// Kernel, method, hooks, time mode.
    pub title: &'a str,
    pub state: &'a State,
    pub rows: &'a [Row],
    pub interval_s: f64,
}

fn ns(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(n) if n >= 1e6 => format!("{:.1}ms", n / 1e6),
        Some(n) if n >= 1e3 => format!("{:.1}us", n / 1e3),
        Some(n) => format!("{n:.0}ns"),
    }
}

fn rate(v: f64) -> String {
    if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn status(s: &Screen) -> Line<'static> {
    let st = s.state;
    let mut text = format!("sort: {}   interval: {:.1} s", st.sort.name(), s.interval_s);
    match &st.editing {
        Some(f) => text += &format!("   filter: {f}_"),
        None if !st.filter.is_empty() => text += &format!("   filter: {}", st.filter),
        None => {}
    }
    if st.by_cgroup {
        text += "   view: cgroups (all hooks)";
    }
    if st.paused {
        text += "   [paused]";
    }
    Line::from(text)
}

/// One column of the table: its header, its width and its cell.
struct Column {
    header: &'static str,
    width: Constraint,
    cell: fn(&Row) -> String,
}

/// The table's columns, declared once.
const COLUMNS: [Column; 6] = [
    Column {
        header: "HOOK",
        width: Constraint::Min(24),
        cell: |r| match &r.lsm {
            Some(l) => format!("{l}:{}", r.hook),
            None => r.hook.clone(),
        },
    },
    Column {
        header: "CALLS/S",
        width: Constraint::Length(9),
        cell: |r| rate(r.calls_per_s),
    },
    Column {
        header: "AVG",
        width: Constraint::Length(9),
        cell: |r| ns(r.ave_ns),
    },
    Column {
        header: "P99",
        width: Constraint::Length(9),
        cell: |r| ns(r.p99_ns.map(|v| v as f64)),
    },
    Column {
        header: "DENY/S",
        width: Constraint::Length(8),
        cell: |r| r.deny_per_s.map(rate).unwrap_or_else(|| "-".into()),
    },
    Column {
        header: "TIME%",
        width: Constraint::Length(8),
        cell: |r| format!("{:.2}%", r.share * 100.0),
    },
];

fn table_row(r: &Row) -> TableRow<'static> {
    TableRow::new(COLUMNS.iter().map(|c| Cell::from((c.cell)(r))))
}

pub fn draw(f: &mut Frame, s: &Screen) {
    let area = f.area();
    if area.width < MIN_COLS || area.height < MIN_ROWS {
        let msg = format!("terminal too small: top needs {MIN_COLS}x{MIN_ROWS}");
        f.render_widget(Paragraph::new(msg), area);
        return;
    }
    let [title, status_area, table, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    f.render_widget(
        Paragraph::new(Line::styled(s.title.to_string(), bold)),
        title,
    );
    f.render_widget(Paragraph::new(status(s)), status_area);
    let mut headers = COLUMNS.map(|c| c.header);
    if s.state.by_cgroup {
        headers[0] = "CGROUP";
    }
    let header = TableRow::new(headers).style(bold);
    let widths = COLUMNS.map(|c| c.width);
    let rows = s.rows.iter().map(table_row);
    f.render_widget(Table::new(rows, widths).header(header), table);
    let help = match s.state.cgroups_recorded {
        true => "s sort  / filter  g hooks/cgroups  p pause  r reset  q quit",
        false => "s sort  / filter  p pause  r reset  q quit",
    };
    f.render_widget(Paragraph::new(help), keys);
}

#[cfg(test)]
mod tests {
    use ratatui::{backend::TestBackend, Terminal};

    use super::super::delta::{self, SortKey};
    use super::*;
    use model::{Bucket, TraceResult};

    fn fixture() -> TraceResult {
        let text = include_str!("../../../tests/fixtures/report/trace-6.1.json");
        serde_json::from_str(text).unwrap()
    }

    /// A second snapshot 2 s later: file_open +1000 calls of 2 µs (4 denied),
    /// inode_permission +100 calls of 300 ns, nothing else.
    fn later(before: &TraceResult) -> TraceResult {
        let mut now = before.clone();
        for h in &mut now.hooks {
            let (calls, each_ns, deny) = match h.hook.as_str() {
                "file_open" => (1000, 2000, 4),
                "inode_permission" => (100, 300, 0),
                _ => continue,
            };
            h.calls += calls;
            h.count += calls;
            h.sum_ns += calls * each_ns;
            h.deny = h.deny.map(|d| d + deny);
            h.hist.push(Bucket {
                low_ns: each_ns,
                high_ns: each_ns + each_ns / 16,
                count: calls,
            });
        }
        now
    }

    fn screen(rows: &[delta::Row], state: &State, cols: u16, lines: u16) -> Vec<String> {
        let mut t = Terminal::new(TestBackend::new(cols, lines)).unwrap();
        t.draw(|f| {
            draw(
                f,
                &Screen {
                    title: "lsmpmon top  6.1.0-56-cloud-amd64",
                    state,
                    rows,
                    interval_s: 2.0,
                },
            )
        })
        .unwrap();
        let buf = t.backend().buffer().clone();
        (0..lines)
            .map(|y| (0..cols).map(|x| buf[(x, y)].symbol()).collect::<String>())
            .collect()
    }

    #[test]
    fn hooks_sorted_by_interval_time_with_rates_and_percentiles() {
        let before = fixture();
        let rows = delta::rows(&before, &later(&before), 2.0);
        let state = State::default();
        let shown = delta::shown(&rows, SortKey::Time, "");
        let lines = screen(&shown, &state, 90, 12);
        assert!(
            lines[0].starts_with("lsmpmon top  6.1.0-56-cloud-amd64"),
            "{lines:#?}"
        );
        assert!(lines[1].contains("sort: time"), "{lines:#?}");
        assert!(lines[2].starts_with("HOOK"), "{lines:#?}");
        // 1000 calls in 2 s = 500/s of 2.0 us, p99 the middle of [2000, 2125) ns;
        // 2 denied per s; 2 ms of 2 s = 0.10 %.
        let first: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            first,
            ["file_open", "500", "2.0us", "2.1us", "2", "0.10%"],
            "{lines:#?}"
        );
        let second: Vec<&str> = lines[4].split_whitespace().collect();
        assert_eq!(
            second,
            ["inode_permission", "50", "300ns", "309ns", "0", "0.00%"]
        );
        // Idle hooks: no rate, no time.
        assert!(
            lines[5].contains(" 0 ") && lines[5].contains(" - "),
            "{lines:#?}"
        );
        assert!(lines[11].starts_with("s sort  / filter"), "{lines:#?}");
    }

    #[test]
    fn filter_and_module_rows() {
        let before = fixture();
        let rows = delta::rows(&before, &later(&before), 2.0);
        let state = State {
            filter: "permission".into(),
            ..State::default()
        };
        let shown = delta::shown(&rows, SortKey::Name, &state.filter);
        assert!(shown.iter().all(|r| r.hook.contains("permission")));
        let lines = screen(&shown, &state, 90, 12);
        assert!(lines[1].contains("filter: permission"), "{lines:#?}");
        assert!(
            !lines.iter().any(|l| l.starts_with("file_open")),
            "{lines:#?}"
        );
        // --per-lsm rows carry their module.
        let lsm = &before.per_lsm[0];
        let module_row = format!("{}:{}", lsm.lsm, lsm.stats.hook);
        let all = delta::shown(&rows, SortKey::Name, "");
        let lines = screen(&all, &State::default(), 90, 40);
        assert!(
            lines.iter().any(|l| l.starts_with(&module_row)),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_small_terminal_gets_one_line() {
        let lines = screen(&[], &State::default(), 40, 5);
        assert!(
            lines[0].starts_with("terminal too small: top needs 72x8"),
            "{lines:#?}"
        );
        assert!(lines[1..].iter().all(|l| l.trim().is_empty()));
    }
}
