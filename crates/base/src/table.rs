//! The one table model and renderer of lsmpmon: `report`, `lab`, `bench`,
//! `trace` and `compare` build a [`Table`] and print it as text (comfy-table),
//! Markdown, CSV or JSON. A cell without a figure says why, never a blank.
use comfy_table::{presets, Cell as TCell, CellAlignment, ContentArrangement, Table as Comfy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::form::Form;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Table {
    /// The table's form (its stable name in JSON: "table3", "table4", …).
    pub form: Form,
    pub title: String,
    pub kernel: String,
    /// Where the numbers come from and how to read them.
    pub notes: Vec<String>,
    pub header: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Row {
    pub label: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cell {
    Value {
        value: f64,
        /// Change over the baseline (percent).
        pct: Option<f64>,
        /// Shown after the value (a footnote mark).
        mark: Option<String>,
    },
    /// A median over layout draws and, beside a baseline, its change with
    /// an interval and whether the change is established.
    Drawn {
        value: f64,
        draws: usize,
        /// This column's own spread over its draws, percent (its layout
        /// floor, when it is the baseline).
        #[serde(default)]
        spread_pct: f64,
        change: Option<crate::draws::DrawnChange>,
    },
    /// The accounting identity: of an overhead over the baseline (ns per
    /// op), what the modules' own functions account for (calls per op ×
    /// net time per call).
    Explained {
        explained_ns: f64,
        /// The part of `explained_ns` the added modules spend in their own
        /// functions, when `explained_ns` is the whole hooks' time.
        #[serde(default)]
        modules_ns: Option<f64>,
        overhead_ns: f64,
        /// The overhead is established over the layout floor.
        established: bool,
    },
    /// A figure shown with a fixed number of decimals.
    Fixed { value: f64, decimals: usize },
    /// A word or name, not a figure (a verdict, a unit).
    Text { text: String },
    /// Why there is no figure: "N/A", "not applicable", "proof failed", …
    Missing { why: String },
}

impl Cell {
    pub fn value(value: f64) -> Self {
        Cell::Value {
            value,
            pct: None,
            mark: None,
        }
    }

    pub fn fixed(value: f64, decimals: usize) -> Self {
        Cell::Fixed { value, decimals }
    }

    pub fn text(text: impl Into<String>) -> Self {
        Cell::Text { text: text.into() }
    }

    pub fn missing(why: impl Into<String>) -> Self {
        Cell::Missing { why: why.into() }
    }
}

/// What a form prints where a figure is not a number: a checked result
/// never gives one, and no form prints "inf" or "NaN".
pub const NOT_A_FIGURE: &str = "not a figure";

/// A zero without its sign: JSON and charts print -0.0 as "-0.0".
pub fn unsigned_zero(value: f64) -> f64 {
    if value == 0.0 {
        0.0
    } else {
        value
    }
}

/// The one way a figure becomes text: `decimals` places; a value that
/// rounds to zero has no sign (never "-0.0"); one that is not finite is
/// [`NOT_A_FIGURE`].
pub fn fmt_num(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return NOT_A_FIGURE.into();
    }
    let shown = format!("{value:.decimals$}");
    match shown.strip_prefix('-') {
        Some(zero) if zero.chars().all(|c| c == '0' || c == '.') => zero.to_string(),
        _ => shown,
    }
}

/// [`fmt_num`] with its sign: "+1.2", "-0.4", and "0.0" for a value that
/// rounds to zero.
pub fn fmt_signed(value: f64, decimals: usize) -> String {
    let shown = fmt_num(value, decimals);
    let zero = shown.chars().all(|c| c == '0' || c == '.');
    if zero || shown.starts_with('-') || !value.is_finite() {
        shown
    } else {
        format!("+{shown}")
    }
}

/// A figure with as many digits as it deserves: integers above 1000, one
/// decimal above 10, three below.
pub fn fmt_value(value: f64) -> String {
    if value.abs() >= 1000.0 || value.fract() == 0.0 {
        fmt_num(value, 0)
    } else if value.abs() >= 10.0 {
        fmt_num(value, 1)
    } else {
        fmt_num(value, 3)
    }
}

/// "+1.2 %"; a change that rounds to nothing is "0.0 %", never "-0.0 %".
pub fn fmt_pct(pct: f64, decimals: usize) -> String {
    format!("{} %", fmt_signed(pct, decimals))
}

/// A figure in the CSV form: as Rust writes it exactly, "0" for either
/// zero, and empty where it is not finite.
fn csv_num(value: f64) -> String {
    if !value.is_finite() {
        String::new()
    } else if value == 0.0 {
        "0".into()
    } else {
        value.to_string()
    }
}

/// A figure of the CSV form with `decimals` places; empty where not finite.
fn csv_fixed(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        fmt_num(value, decimals)
    } else {
        String::new()
    }
}

/// Explained within ×0.5 … ×1.5 of the overhead: the identity holds.
pub const EXPLAINED_RANGE: (f64, f64) = (0.5, 1.5);

/// Whether an established overhead is explained outside `EXPLAINED_RANGE`.
pub fn unexplained(explained_ns: f64, overhead_ns: f64, established: bool) -> bool {
    let ratio = explained_ns / overhead_ns;
    established && !(EXPLAINED_RANGE.0..=EXPLAINED_RANGE.1).contains(&ratio)
}

fn fmt_explained(
    explained_ns: f64,
    modules_ns: Option<f64>,
    overhead_ns: f64,
    established: bool,
) -> String {
    // Printed without a "-0".
    let us = |ns: f64| fmt_value(ns / 1e3 + 0.0);
    let explained = match modules_ns {
        Some(m) => format!("{} [modules {}]", us(explained_ns), us(m)),
        None => us(explained_ns),
    };
    if !established {
        return format!("{explained} µs (overhead not established)");
    }
    let flag = if unexplained(explained_ns, overhead_ns, established) {
        " ⚑"
    } else {
        ""
    };
    format!(
        "{explained} of {} µs (×{}){flag}",
        us(overhead_ns),
        fmt_num(explained_ns / overhead_ns, 2)
    )
}

pub fn fmt_cell(c: &Cell) -> String {
    match c {
        Cell::Explained {
            explained_ns,
            modules_ns,
            overhead_ns,
            established,
        } => fmt_explained(*explained_ns, *modules_ns, *overhead_ns, *established),
        Cell::Missing { why } => why.clone(),
        Cell::Text { text } => text.clone(),
        Cell::Fixed { value, decimals } => fmt_num(*value, *decimals),
        Cell::Drawn {
            value,
            change,
            draws,
            spread_pct,
        } => match change {
            None if *draws > 1 => {
                format!(
                    "{} ({draws} draws, spread {} %)",
                    fmt_value(*value),
                    fmt_num(*spread_pct, 2)
                )
            }
            None => fmt_value(*value),
            Some(c) => format!("{} ({})", fmt_value(*value), fmt_drawn(c)),
        },
        Cell::Value { value, pct, mark } => {
            let p = pct
                .map(|p| format!(" ({})", fmt_pct(p, 1)))
                .unwrap_or_default();
            let m = mark.as_ref().map(|m| format!(" {m}")).unwrap_or_default();
            format!("{}{p}{m}", fmt_value(*value))
        }
    }
}

/// An established change with its interval, "+246.1 % [+240.2, +251.0]";
/// any other as layout noise with its interval, never as a bare figure.
pub fn fmt_drawn(c: &crate::draws::DrawnChange) -> String {
    let range = format!(
        "[{}, {}]",
        fmt_signed(c.low_pct, 1),
        fmt_signed(c.high_pct, 1)
    );
    if c.two_modes {
        format!("two layout modes {range} %")
    } else if c.established {
        format!("{} {range}", fmt_pct(c.pct, 1))
    } else if c.low_pct > 0.0 || c.high_pct < 0.0 {
        format!("within layout floor {range} %")
    } else {
        format!("layout noise {range} %")
    }
}

fn comfy(t: &Table, preset: &str, esc: fn(&str) -> String) -> Comfy {
    let mut c = Comfy::new();
    c.load_preset(preset);
    c.set_content_arrangement(ContentArrangement::Disabled);
    c.set_header(t.header.iter().map(|h| TCell::new(esc(h))));
    for r in &t.rows {
        c.add_row(
            std::iter::once(TCell::new(esc(&r.label))).chain(r.cells.iter().map(|x| {
                let align = if matches!(x, Cell::Text { .. }) {
                    CellAlignment::Left
                } else {
                    CellAlignment::Right
                };
                TCell::new(esc(&fmt_cell(x))).set_alignment(align)
            })),
        );
    }
    c
}

fn verbatim(s: &str) -> String {
    s.to_string()
}

/// User text (a configuration or kernel name, a path, a reason) in Markdown
/// prose, shown as written: what could start a link, emphasis, code, a tag,
/// an entity or a block is escaped. `_` inside a word (`CONFIG_IMA`) cannot
/// start emphasis and stays as it is.
pub fn md_text(s: &str) -> String {
    let mut out = md_inline(s);
    // First on a line (or in a list item), these start a block; so do
    // digits and a `.` or `)` before a space or the end (an ordered list;
    // `5.10` is none).
    if out.starts_with(['-', '+', '=', '#']) {
        out.insert(0, '\\');
    }
    let digits = out.len() - out.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let marker = out[digits..].starts_with(['.', ')'])
        && matches!(out[digits + 1..].chars().next(), None | Some(' ' | '\t'));
    if digits > 0 && marker {
        out.insert(digits, '\\');
    }
    out
}

/// Text inside a line that cannot start a block (a table's cell or header,
/// a heading's text): escaped as `md_text` escapes, but for the block rule.
/// One escaping for every Markdown a report writes.
pub fn md_inline(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '_' {
            let end = chars[i..]
                .iter()
                .position(|&x| x != '_')
                .map_or(chars.len(), |n| i + n);
            let in_word = i > 0
                && chars[i - 1].is_alphanumeric()
                && chars.get(end).is_some_and(|x| x.is_alphanumeric());
            for _ in i..end {
                out.push_str(if in_word { "_" } else { "\\_" });
            }
            i = end;
            continue;
        }
        match c {
            '\\' | '`' | '*' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // A line break would end the paragraph, list item or row.
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// A text cell of the CSV that a spreadsheet would run as a formula
/// (`=HYPERLINK(…)`; `+`, `-`, `@`, a tab or a carriage return first) gets a
/// leading `'`, as OWASP advises against CSV injection. A number is left
/// as it is (a negative one is no formula).
fn csv_text(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula && s.parse::<f64>().is_err() {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

/// The title, then borderless columns for a terminal: the first column
/// starts each line.
pub fn plain(t: &Table) -> String {
    let mut c = comfy(t, presets::NOTHING, verbatim);
    if let Some(col) = c.column_mut(0) {
        col.set_padding((0, 1));
    }
    let body: Vec<String> = c
        .to_string()
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect();
    format!("{}:\n{}", t.title, body.join("\n"))
}

pub fn text(tables: &[Table]) -> String {
    tables
        .iter()
        .map(|t| {
            format!(
                "{}\n{}\n{}\n",
                t.title,
                comfy(t, presets::UTF8_FULL_CONDENSED, verbatim),
                t.notes.join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn markdown(tables: &[Table]) -> String {
    tables
        .iter()
        .map(|t| {
            format!(
                "### {}\n\n{}\n\n{}\n",
                md_inline(&t.title),
                comfy(t, presets::ASCII_MARKDOWN, md_inline),
                t.notes
                    .iter()
                    .map(|n| format!("- {}", md_text(n)))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One record per cell (tidy form): table, kernel, row, column, value, pct,
/// mark, text, missing — what a spreadsheet or pandas wants.
pub fn csv(tables: &[Table]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "form", "kernel", "row", "column", "value", "pct", "mark", "text", "missing",
    ])?;
    for t in tables {
        for r in &t.rows {
            for (col, c) in t.header.iter().skip(1).zip(&r.cells) {
                let rec = csv_fields(c);
                let [value, pct, mark, text, missing] = &rec;
                w.write_record([
                    &csv_text(t.form.name()),
                    &csv_text(&t.kernel),
                    &csv_text(&r.label),
                    &csv_text(col),
                    value,
                    pct,
                    mark,
                    text,
                    missing,
                ])?;
            }
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// A cell's value, pct, mark, text and missing fields in the CSV form.
fn csv_fields(c: &Cell) -> [String; 5] {
    let mut rec = [
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
    ];
    match c {
        Cell::Value { value, pct, mark } => {
            rec[0] = csv_num(*value);
            rec[1] = pct.map(|p| csv_fixed(p, 3)).unwrap_or_default();
            rec[2] = csv_text(mark.as_deref().unwrap_or_default());
        }
        Cell::Fixed { value, .. } => rec[0] = csv_num(*value),
        Cell::Explained {
            explained_ns,
            modules_ns,
            overhead_ns,
            established,
        } => {
            rec[0] = csv_num(*explained_ns);
            if *established {
                rec[1] = csv_fixed(explained_ns / overhead_ns * 100.0, 3);
            }
            rec[2] = if *established {
                "established"
            } else {
                "layout noise"
            }
            .into();
            rec[3] = match modules_ns {
                Some(m) => format!(
                    "of an overhead of {} ns per op; modules {}",
                    fmt_num(*overhead_ns, 1),
                    fmt_num(*m, 1)
                ),
                None => format!("of an overhead of {} ns per op", fmt_num(*overhead_ns, 1)),
            };
        }
        Cell::Drawn {
            value,
            draws,
            change,
            spread_pct,
        } => {
            rec[0] = csv_num(*value);
            rec[3] = format!("{draws} draws, spread {}", fmt_num(*spread_pct, 3));
            if let Some(c) = change {
                rec[1] = csv_fixed(c.pct, 3);
                rec[2] = if c.established {
                    "established"
                } else if c.low_pct > 0.0 || c.high_pct < 0.0 {
                    "within layout floor"
                } else {
                    "layout noise"
                }
                .into();
                rec[3] = format!(
                    "[{}, {}] over {draws} draws, floor {}",
                    fmt_num(c.low_pct, 3),
                    fmt_num(c.high_pct, 3),
                    fmt_num(c.floor_pct, 3)
                );
            }
        }
        Cell::Text { text } => rec[3] = csv_text(text),
        Cell::Missing { why } => rec[4] = csv_text(why),
    }
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        Table {
            form: Form::Bench,
            title: "T".into(),
            kernel: "6.1".into(),
            notes: vec!["n".into()],
            header: vec!["op".into(), "a".into(), "b".into()],
            rows: vec![Row {
                label: "stat, \"quoted\"".into(),
                cells: vec![
                    Cell::Value {
                        value: 4.04,
                        pct: Some(28.6),
                        mark: None,
                    },
                    Cell::missing("proof failed"),
                ],
            }],
        }
    }

    #[test]
    fn missing_cells_say_why_in_every_format() {
        let t = sample();
        assert!(text(std::slice::from_ref(&t)).contains("proof failed"));
        assert!(markdown(std::slice::from_ref(&t)).contains("| proof failed |"));
        let c = csv(std::slice::from_ref(&t)).unwrap();
        assert!(
            c.contains("bench,6.1,\"stat, \"\"quoted\"\"\",b,,,,,proof failed"),
            "{c}"
        );
        assert!(
            plain(&t).lines().nth(1).unwrap().starts_with("op "),
            "{}",
            plain(&t)
        );
    }

    /// A table's title, header, labels and notes were escaped for `|` and
    /// tags only, prose for all of Markdown:
    /// a configuration named `*x*` was emphasis in one and text in the other.
    #[test]
    fn every_part_of_a_markdown_table_escapes_user_text_alike() {
        let hostile = "*x* [l](u) `c` a|b <i>";
        let want = md_inline(hostile);
        let mut t = sample();
        t.title = hostile.into();
        t.header[1] = hostile.into();
        t.rows[0].label = hostile.into();
        t.rows[0].cells[1] = Cell::Text {
            text: hostile.into(),
        };
        t.notes = vec![hostile.into(), "- not a nested list".into()];
        let md = markdown(std::slice::from_ref(&t));
        assert_eq!(want, "\\*x\\* \\[l\\](u) \\`c\\` a\\|b &lt;i&gt;");
        assert!(md.starts_with(&format!("### {want}\n")), "{md}");
        // Header, label and text cell; then the first note.
        assert_eq!(md.matches(want.as_str()).count(), 5, "{md}");
        assert!(md.contains("\n- \\- not a nested list"), "{md}");
        assert_eq!(md_text("1. not a list"), "1\\. not a list");
        assert_eq!(md_text("12) nor this"), "12\\) nor this");
        assert_eq!(md_text("2026 stays"), "2026 stays");
        assert!(!md.contains("*x*") && !md.contains("<i>"), "{md}");
    }

    /// Issue 34 item 18: a text cell `=HYPERLINK(…)` was written as it is,
    /// a formula for the spreadsheet that opens the CSV.
    #[test]
    fn csv_text_cells_that_a_spreadsheet_would_run_are_quoted() {
        let mut t = sample();
        t.header[1] = "=HYPERLINK(\"http://x\",\"y\")".into();
        t.rows[0].label = "@SUM(A1)".into();
        t.rows[0].cells[0] = Cell::Value {
            value: -12.5,
            pct: Some(-3.0),
            mark: Some("+x".into()),
        };
        t.rows[0].cells[1] = Cell::Text {
            text: "-2+3".into(),
        };
        let c = csv(std::slice::from_ref(&t)).unwrap();
        let rows: Vec<&str> = c.lines().collect();
        assert_eq!(
            rows[1],
            "bench,6.1,'@SUM(A1),\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",-12.5,-3.000,'+x,,"
        );
        assert!(rows[2].ends_with(",'-2+3,"), "{c}");
        for (text, shown) in [
            ("-1.5", "-1.5"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("a=b", "a=b"),
        ] {
            assert_eq!(csv_text(text), shown);
        }
    }

    /// Issue 34 item 18: user text in Markdown prose shows as written.
    #[test]
    fn user_text_in_markdown_prose_is_escaped() {
        assert_eq!(
            md_text("[x](javascript:alert(1)) *b* `c` <img> a|b ~~s~~ &amp;"),
            "\\[x\\](javascript:alert(1)) \\*b\\* \\`c\\` &lt;img&gt; a\\|b \\~\\~s\\~\\~ &amp;amp;"
        );
        assert_eq!(md_text("# h"), "\\# h");
        assert_eq!(
            md_text("CONFIG_IMA cloud__ima _x_ __y"),
            "CONFIG_IMA cloud__ima \\_x\\_ \\_\\_y"
        );
        assert_eq!(md_text("- a\nb"), "\\- a b");
        assert_eq!(
            md_text("5.10, ima-sha1, 6.1-smack"),
            "5.10, ima-sha1, 6.1-smack"
        );
    }

    /// Issue 52 item 4: "+inf %", "×inf" and `pct=inf` reached every form.
    #[test]
    fn no_form_prints_a_figure_that_is_not_finite() {
        let mut t = sample();
        let change = crate::draws::DrawnChange {
            pct: f64::INFINITY,
            low_pct: f64::NEG_INFINITY,
            high_pct: f64::NAN,
            interval: crate::draws::Interval::PairRange,
            floor_pct: 0.5,
            established: true,
            two_modes: false,
        };
        t.rows[0].cells = vec![
            Cell::Value {
                value: f64::INFINITY,
                pct: Some(f64::NAN),
                mark: None,
            },
            Cell::Drawn {
                value: f64::NAN,
                draws: 5,
                spread_pct: f64::INFINITY,
                change: Some(change),
            },
        ];
        t.rows.push(Row {
            label: "x".into(),
            cells: vec![
                Cell::Explained {
                    explained_ns: 5.0,
                    modules_ns: Some(f64::NAN),
                    overhead_ns: 0.0,
                    established: true,
                },
                Cell::fixed(f64::NEG_INFINITY, 2),
            ],
        });
        let all = [
            text(std::slice::from_ref(&t)),
            markdown(std::slice::from_ref(&t)),
            csv(std::slice::from_ref(&t)).unwrap(),
        ];
        for out in all {
            let lower = out.to_lowercase();
            assert!(!lower.contains("inf") && !lower.contains("nan"), "{out}");
            assert!(out.contains(NOT_A_FIGURE) || !out.contains('×'), "{out}");
        }
    }

    #[test]
    fn values_keep_their_sign_and_digits() {
        assert_eq!(fmt_value(4.04), "4.040");
        assert_eq!(fmt_value(1234.56), "1235");
        assert_eq!(fmt_value(-12.34), "-12.3");
        assert_eq!(fmt_cell(&sample().rows[0].cells[0]), "4.040 (+28.6 %)");
    }
}
