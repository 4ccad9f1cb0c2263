//! SVG charts for the HTML report (plotters' SVG backend): grouped bars,
//! a heat map and a latency histogram. Each returns the SVG text.
use anyhow::{anyhow, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const PALETTE: &[RGBColor] = &[
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// One series: its name and a value per category (`None`: no figure, no bar).
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Category names under their slots (one unit wide from 0), staggered on
/// two lines so long names do not overlap; `y_bottom` is the axis' low end.
fn label_categories(
    root: &Area,
    chart: &Chart,
    categories: &[String],
    y_bottom: f64,
) -> Result<()> {
    let style = ("sans-serif", 11)
        .into_font()
        .into_text_style(root)
        .pos(Pos::new(HPos::Center, VPos::Top));
    let (_, bottom) = chart.backend_coord(&(0.0, y_bottom));
    for (i, c) in categories.iter().enumerate() {
        let (x, _) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let y = bottom + 6 + (i as i32 % 2) * 14;
        root.draw(&Text::new(c.clone(), (x, y), style.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// Bars grouped by category, one colour per series, a zero line.
pub fn grouped_bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[Series],
) -> Result<String> {
    // A value that is not finite has no bar (and would make the axis infinite).
    let values = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied())
        .filter(|v| v.is_finite());
    let (lo, hi) = values.fold((0.0f64, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    let pad = ((hi - lo) * 0.08).max(1.0);
    let width = (120 + categories.len() * (24 + 14 * series.len())).clamp(480, 1400) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let n = categories.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(70)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..n, (lo - pad)..(hi + pad))
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_label)
            .y_label_formatter(&tick)
            .draw()
            .map_err(err)?;
        label_categories(&root, &chart, categories, lo - pad)?;
        let slot = 0.8 / series.len().max(1) as f64;
        for (si, s) in series.iter().enumerate() {
            let color = PALETTE[si % PALETTE.len()];
            let bars = s.values.iter().enumerate().filter_map(|(ci, v)| {
                let v = (*v).filter(|v| v.is_finite())?;
                let x0 = ci as f64 + 0.1 + si as f64 * slot;
                Some(Rectangle::new(
                    [(x0, 0.0), (x0 + slot * 0.9, v)],
                    color.filled(),
                ))
            });
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .draw_series(LineSeries::new([(0.0, 0.0), (n, 0.0)], BLACK))
            .map_err(err)?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One line per series through its (x, y) points, x on a log2 axis (the
/// AVC sweep: ns per op against N); a point per figure.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String> {
    let pts = || {
        series
            .iter()
            .flat_map(|s| s.1.iter())
            .filter(|p| p.0 > 0.0 && p.1.is_finite())
    };
    let (x_lo, x_hi) = pts().fold((f64::MAX, f64::MIN), |(l, h), p| (l.min(p.0), h.max(p.0)));
    let y_hi = pts().fold(0.0f64, |h, p| h.max(p.1));
    if x_lo > x_hi {
        return Err(anyhow!("drawing a chart: no points"));
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (x_lo / 1.5..x_hi * 1.5).log_scale().base(2.0),
                0.0..y_hi * 1.1 + 1.0,
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .y_label_formatter(&tick)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(err)?;
        for (si, (name, points)) in series.iter().enumerate() {
            let color = PALETTE[si % PALETTE.len()];
            let p: Vec<(f64, f64)> = points
                .iter()
                .copied()
                .filter(|p| p.0 > 0.0 && p.1.is_finite())
                .collect();
            chart
                .draw_series(LineSeries::new(p.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                });
            chart
                .draw_series(p.into_iter().map(|xy| Circle::new(xy, 3, color.filled())))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Rows × columns of figures, shaded on a log scale; `None` cells are grey
/// and carry their reason as text.
pub fn heat_map(
    title: &str,
    rows: &[String],
    cols: &[String],
    cells: &[Vec<Result<(f64, String), String>>],
) -> Result<String> {
    let (cell_w, cell_h, left, top) = (110i32, 22i32, 190i32, 60i32);
    let width = (left + cell_w * cols.len() as i32 + 20) as u32;
    let height = (top + cell_h * rows.len() as i32 + 20) as u32;
    let figures: Vec<f64> = cells
        .iter()
        .flatten()
        .filter_map(|c| c.as_ref().ok().map(|(v, _)| *v))
        .filter(|v| *v > 0.0)
        .collect();
    let lmin = figures
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(1.0)
        .ln();
    let lmax = figures.iter().copied().fold(1.0, f64::max).ln();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let font = ("sans-serif", 12).into_font();
        root.draw(&Text::new(
            title.to_string(),
            (10, 8),
            ("sans-serif", 16).into_font(),
        ))
        .map_err(err)?;
        for (ci, c) in cols.iter().enumerate() {
            let x = left + ci as i32 * cell_w + 4;
            root.draw(&Text::new(c.clone(), (x, top - 18), font.clone()))
                .map_err(err)?;
        }
        for (ri, r) in rows.iter().enumerate() {
            let y = top + ri as i32 * cell_h;
            root.draw(&Text::new(r.clone(), (10, y + 5), font.clone()))
                .map_err(err)?;
            for (ci, cell) in cells[ri].iter().enumerate() {
                let x = left + ci as i32 * cell_w;
                let (fill, label, ink) = match cell {
                    Ok((v, label)) => {
                        let t = if lmax > lmin {
                            ((v.max(1.0).ln() - lmin) / (lmax - lmin)).clamp(0.0, 1.0)
                        } else {
                            0.5
                        };
                        let shade =
                            RGBColor(255, (235.0 - 180.0 * t) as u8, (200.0 - 180.0 * t) as u8);
                        (shade, label.clone(), BLACK)
                    }
                    Err(why) => (
                        RGBColor(236, 236, 236),
                        why.clone(),
                        RGBColor(110, 110, 110),
                    ),
                };
                root.draw(&Rectangle::new(
                    [(x, y), (x + cell_w - 2, y + cell_h - 2)],
                    fill.filled(),
                ))
                .map_err(err)?;
                root.draw(&Text::new(label, (x + 6, y + 5), font.clone().color(&ink)))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Each category's samples as dots, in % from the category's median, with
/// the median itself as a short black bar at 0: how noisy each figure was.
pub fn strip(title: &str, categories: &[String], samples: &[Vec<f64>]) -> Result<String> {
    let devs: Vec<Vec<f64>> = samples
        .iter()
        .map(|s| {
            let m = base::stats::median(s);
            s.iter()
                .filter(|v| v.is_finite() && m > 0.0)
                .map(|v| (v / m - 1.0) * 100.0)
                .collect()
        })
        .collect();
    let far = devs.iter().flatten().fold(1.0f64, |a, v| a.max(v.abs()));
    let pad = far * 0.1;
    let width = (120 + categories.len() * 34).clamp(480, 1400) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 340)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let n = categories.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..n, -(far + pad)..(far + pad))
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("% from the op's median")
            .y_label_formatter(&tick)
            .draw()
            .map_err(err)?;
        label_categories(&root, &chart, categories, -(far + pad))?;
        let color = PALETTE[0];
        for (ci, d) in devs.iter().enumerate() {
            // Samples side by side across the slot, in the order taken.
            let step = 0.6 / d.len().max(1) as f64;
            let dots = d.iter().enumerate().map(|(k, v)| {
                Circle::new(
                    (ci as f64 + 0.2 + step * (k as f64 + 0.5), *v),
                    3,
                    color.filled(),
                )
            });
            chart.draw_series(dots).map_err(err)?;
            let median = [(ci as f64 + 0.15, 0.0), (ci as f64 + 0.85, 0.0)];
            chart
                .draw_series(LineSeries::new(median, BLACK.stroke_width(2)))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A log2 latency histogram: one bar per bucket [low, high).
pub fn histogram(title: &str, unit: &str, buckets: &[(u64, u64, u64)]) -> Result<String> {
    let labels: Vec<String> = buckets.iter().map(|(lo, _, _)| short_ns(*lo)).collect();
    let series = [Series {
        name: "calls".into(),
        values: buckets.iter().map(|b| Some(b.2 as f64)).collect(),
    }];
    grouped_bars(
        title,
        &format!("calls per bucket (lower bound, {unit})"),
        &labels,
        &series,
    )
}

fn short_ns(v: u64) -> String {
    match v {
        0..=999 => v.to_string(),
        1_000..=999_999 => format!("{}k", v / 1_000),
        _ => format!("{}M", v / 1_000_000),
    }
}

/// An axis tick as plotters prints it, but a tick at zero that the range's
/// steps left a hair below it (-1e-17) is "0.0", never "-0.0".
fn tick(y: &f64) -> String {
    use plotters::coord::ranged1d::ValueFormatter;
    let y = if y.abs() < 1e-9 { 0.0 } else { *y };
    <plotters::coord::types::RangedCoordf64 as ValueFormatter<f64>>::format(&y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_their_labels() {
        let s = grouped_bars(
            "t",
            "%",
            &["stat".into(), "open<close>".into()],
            &[Series {
                name: "selinux".into(),
                values: vec![Some(28.6), None],
            }],
        )
        .unwrap();
        assert!(s.starts_with("<svg") && s.contains("<rect") && s.contains("selinux"));
        assert!(
            s.contains("open&lt;close&gt;") && !s.contains("open<close>"),
            "labels escaped"
        );
        let h = heat_map(
            "h",
            &["file_open".into()],
            &["a".into(), "b".into()],
            &[vec![Ok((250.0, "250 h".into())), Err("N/A".into())]],
        )
        .unwrap();
        assert!(h.contains("N/A") && h.contains(">\n250 h\n<"), "{h}");
    }

    /// One dot per sample; a sample 10 % over its median sits above one
    /// at the median (SVG y grows downwards).
    #[test]
    fn strip_draws_each_sample_around_its_median() {
        let svg = strip(
            "spread",
            &["stat".into(), "null".into()],
            &[vec![100.0, 110.0, 100.0], vec![50.0, 50.0]],
        )
        .unwrap();
        assert_eq!(svg.matches("<circle").count(), 5, "{svg}");
        let ys: Vec<f64> = svg
            .split("<circle")
            .skip(1)
            .map(|c| {
                let y = c.split("cy=\"").nth(1).unwrap();
                y[..y.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert!(ys[1] < ys[0] && ys[0] == ys[2] && ys[3] == ys[0], "{ys:?}");
        assert!(svg.contains("stat") && svg.contains("% from the op"));
    }
}
