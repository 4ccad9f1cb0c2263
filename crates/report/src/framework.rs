//! The LSM framework alone (the LSM framework paper's comparison: a kernel
//! without LSM against the same kernel with the framework and only the
//! default module) and what it costs release by release: lsmpmon's builds
//! without CONFIG_SECURITY (`<series>-nolsm`) against its builds of the same
//! source and options with the framework (booted as `none`: capability
//! only), and against Debian's build of the release.
use super::forms::{self, draws, kernel_floor_pct, median, op_names, unit_label, version};
use super::input::{Run, BASELINE};
use base::draws::change_over_floor;
use base::form::Form;
use base::papers;
use base::stats::overhead_pct;
use base::table::{Cell, Row, Table};
use model::bench::Unit;
use model::identity::KernelId;

/// The flavour of lsmpmon's kernels built without the framework.
pub const NO_LSM: &str = "nolsm";

/// A no-LSM kernel's `none` and what is set against it on the same release
/// and CPU count.
struct Family<'a> {
    release: String,
    cpus: u32,
    base: &'a Run,
    /// Own builds of the same source first, then Debian's.
    others: Vec<&'a Run>,
}

pub fn tables(runs: &[Run]) -> Vec<Table> {
    let every = forms::latest(runs);
    let families = families(&every);
    let mut out: Vec<Table> = families.iter().map(|f| table(f, &every)).collect();
    if let Some(t) = releases(&families, &every) {
        out.push(t);
    }
    out
}

/// (release, flavour, cpus) of a lab kernel.
fn parts(k: &KernelId) -> Option<(&str, &str, u32)> {
    match k {
        KernelId::Lab {
            series,
            flavour,
            cpus,
        } => Some((series, flavour, *cpus)),
        KernelId::Single { .. } => None,
    }
}

/// The release a lab series belongs to: "6.1" of "6.1-smack" and of "6.1".
fn release_of(series: &str) -> &str {
    series.split('-').next().unwrap_or(series)
}

fn families<'a>(every: &[&'a Run]) -> Vec<Family<'a>> {
    let nones: Vec<&Run> = every
        .iter()
        .filter(|r| r.config == BASELINE && r.passed())
        .copied()
        .collect();
    let mut out: Vec<Family> = Vec::new();
    for base in &nones {
        let Some((series, NO_LSM, cpus)) = parts(&base.kernel) else {
            continue;
        };
        let release = release_of(series).to_string();
        if out.iter().any(|f| f.release == release && f.cpus == cpus) {
            continue;
        }
        let mut others: Vec<&Run> = Vec::new();
        for r in &nones {
            let Some((s, flavour, c)) = parts(&r.kernel) else {
                continue;
            };
            let set_against = s == release || same_build(base, r);
            let same_release = release_of(s) == release && c == cpus && flavour != NO_LSM;
            if same_release && set_against && !others.iter().any(|o| o.kernel == r.kernel) {
                others.push(r);
            }
        }
        // The same source first: it differs from the base by the framework alone.
        others.sort_by_key(|r| (r.kernel.series() == release, r.kernel.to_string()));
        out.push(Family {
            release,
            cpus,
            base,
            others,
        });
    }
    out
}

/// Built by lsmpmon from one source package file and one fragment: the two
/// differ by the recipe's overrides alone.
fn same_build(a: &Run, b: &Run) -> bool {
    match (&a.kernel_ref, &b.kernel_ref) {
        (Some(x), Some(y)) => one_recipe_source(x, y),
        _ => false,
    }
}

/// Two of lsmpmon's builds of one source package file and one fragment.
pub fn one_recipe_source(x: &model::KernelRef, y: &model::KernelRef) -> bool {
    let fragment = |k: &model::KernelRef| {
        k.image
            .as_ref()
            .map(|i| i.fragment_sha256.clone())
            .filter(|h| !h.is_empty())
    };
    let patch = |k: &model::KernelRef| k.image.as_ref().map(|i| i.source_patch_sha256.clone());
    x.package == y.package
        && x.deb_sha256 == y.deb_sha256
        && fragment(x).is_some()
        && fragment(x) == fragment(y)
        && patch(x) == patch(y)
}

/// One op's change of `c` over the no-LSM base, with the interval its
/// draws give where both sides were drawn; the two kernels' layout floors
/// decide whether it is established.
fn change(every: &[&Run], base: &Run, c: &Run, op: &str, unit: Unit) -> Cell {
    let figures = |of: &Run| -> Vec<f64> {
        draws(every, of)
            .iter()
            .filter_map(|r| median(r, op))
            .collect()
    };
    let (b, v) = (figures(base), figures(c));
    let shown = |x: f64| if unit == Unit::NsPerOp { x / 1e3 } else { x };
    if v.is_empty() {
        return Cell::missing("not run");
    }
    if std::ptr::eq(base, c) {
        return plain(&v, unit);
    }
    let alike = base.alike.but_kernel() == c.alike.but_kernel();
    if b.len() >= 2 && v.len() >= 2 && alike {
        let floor = kernel_floor_pct(every, base, op).max(kernel_floor_pct(every, c, op));
        return Cell::Drawn {
            value: shown(base::stats::median(&v)),
            draws: v.len(),
            spread_pct: base::draws::spread_pct(&v),
            change: change_over_floor(unit.higher_is_better(), &b, &v, floor),
        };
    }
    let (bm, vm) = (base::stats::median(&b), base::stats::median(&v));
    Cell::Value {
        value: shown(vm),
        pct: (alike && !b.is_empty()).then(|| overhead_pct(unit.higher_is_better(), bm, vm)),
        mark: None,
    }
}

/// The base's own figure: the median over its draws and their spread.
fn plain(v: &[f64], unit: Unit) -> Cell {
    let m = base::stats::median(v);
    let value = if unit == Unit::NsPerOp { m / 1e3 } else { m };
    if v.len() < 2 {
        return Cell::value(value);
    }
    Cell::Drawn {
        value,
        draws: v.len(),
        spread_pct: base::draws::spread_pct(v),
        change: None,
    }
}

fn column_name(f: &Family, r: &Run) -> String {
    let what = if r.kernel.series() == f.release {
        "Debian's build"
    } else {
        "framework + capability, same source"
    };
    format!("{} ({what})", r.kernel)
}

fn table(f: &Family, every: &[&Run]) -> Table {
    let cols: Vec<&Run> = std::iter::once(f.base)
        .chain(f.others.iter().copied())
        .collect();
    let rows = op_names(&cols)
        .into_iter()
        .map(|(op, unit)| Row {
            label: format!("{op} ({})", unit_label(unit)),
            cells: cols
                .iter()
                .map(|c| change(every, f.base, c, &op, unit))
                .collect(),
        })
        .collect();
    let mut header = vec![
        "operation".to_string(),
        format!("{} (no LSM framework)", f.base.kernel),
    ];
    header.extend(f.others.iter().map(|r| column_name(f, r)));
    Table {
        form: Form::Framework,
        title: format!(
            "The LSM framework alone ({}): kernel {} on {} CPU{}",
            papers::cite(&papers::LSM, "2.5.15 against 2.5.15-lsm"),
            f.release,
            f.cpus,
            if f.cpus == 1 { "" } else { "s" }
        ),
        kernel: f.base.kernel.to_string(),
        notes: notes(f, &cols),
        header,
        rows,
    }
}

fn notes(f: &Family, cols: &[&Run]) -> Vec<String> {
    let fanotify = if version(&f.release).is_some_and(|v| v < (6, 8)) {
        " Before 6.8 the framework's open and permission hooks also called fanotify's permission events, so on this release the no-framework build has none and its open, read and write skip that call too."
    } else {
        ""
    };
    vec![
        format!(
            "Every column is the `{BASELINE}` configuration: booted with lsm=capability, a parameter the no-framework kernel does not know (it goes to init's environment). {} is lsmpmon's build of {} without CONFIG_SECURITY: each security_* hook is an inline stub that returns 0 or calls the capability check directly (cap_capable, cap_mmap_addr, …), so capabilities are still checked.{fanotify}",
            f.base.kernel, f.release
        ),
        "The own build beside it is the same source package and fragment with the framework on: the difference is the framework's dispatch (each hook's walk over the modules' lists up to 6.8, static calls from 6.9), its blob allocations and what the capability module does through it. Debian's build adds its other options (-O2 where lsmpmon's tinyconfig builds use -Os, lockdown as an early LSM, from 6.9 IMA and EVM as LSMs).".into(),
        "Two builds also differ in their code's layout, which the draws of one build do not sample: a change between builds is a cost of the framework only where it exceeds what a rebuild alone moves. Where two builds with the framework are shown, they differ only in options of a module `none` leaves inactive (7.3-selinux-avc14: the AVC's hash size), so the gap between them is that rebuild floor; a change the other way (faster with the framework) is layout too.".into(),
        format!(
            "{} time; medians over layout draws. A change is over the no-framework kernel, with its interval; it is established only where the interval excludes 0 and the change exceeds both kernels' layout floors (each the widest spread of a configuration's draws on that kernel). Positive = slower.",
            forms::time_mode(cols)
        ),
    ]
}

/// Per family: the median over ops of each column's change, and how many
/// ops' changes are established: the framework's cost per release.
fn releases(families: &[Family], every: &[&Run]) -> Option<Table> {
    let rows: Vec<Row> = families
        .iter()
        .flat_map(|f| {
            f.others
                .iter()
                .filter(|c| same_build(f.base, c))
                .map(move |c| (f, *c))
        })
        .map(|(f, c)| {
            let ops = op_names(&[f.base, c]);
            let changes: Vec<Cell> = ops
                .iter()
                .map(|(op, unit)| change(every, f.base, c, op, *unit))
                .collect();
            let pcts: Vec<f64> = changes.iter().filter_map(pct_of).collect();
            let established = changes
                .iter()
                .filter(|x| matches!(x, Cell::Drawn { change: Some(d), .. } if d.established))
                .count();
            let cell = |v: Option<f64>| v.map_or(Cell::missing("–"), |v| Cell::fixed(v, 1));
            Row {
                label: format!("{} against {}", c.kernel, f.base.kernel),
                cells: vec![
                    cell((!pcts.is_empty()).then(|| base::stats::median(&pcts))),
                    cell(pcts.iter().copied().reduce(f64::min)),
                    cell(pcts.iter().copied().reduce(f64::max)),
                    Cell::text(format!("{established} of {}", pcts.len())),
                ],
            }
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(Table {
        form: Form::FrameworkReleases,
        title: format!(
            "The LSM framework's cost release by release ({})",
            papers::cite(&papers::LSM, "2.5.15 against 2.5.15-lsm")
        ),
        kernel: String::new(),
        notes: vec![
            "Each row: lsmpmon's build with the framework against its build of the same source and fragment without it, `none` on both, over the ops both ran: the median, least and greatest change in %, and how many changes are established over the layout floor (the framework form's rule).".into(),
            "Up to 6.8 a hook walks a list of the modules' function pointers; from 6.9 it is a static call per module slot (a NOP while the slot is off). The 6.1 and 7.3 builds also differ in their modules' fragments (Smack and SECURITY_PATH against SELinux), preemption model and fanotify, so their rows bound what the dispatch change did rather than isolate it.".into(),
        ],
        header: ["build", "median %", "least %", "greatest %", "established"]
            .map(String::from)
            .to_vec(),
        rows,
    })
}

fn pct_of(c: &Cell) -> Option<f64> {
    match c {
        Cell::Drawn {
            change: Some(d), ..
        } => Some(d.pct),
        Cell::Value { pct, .. } => *pct,
        _ => None,
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::test_runs::run;
    use model::{ImageSizes, KernelRef};

    pub fn kernel_ref(series: &str, deb: &str, fragment: &str) -> KernelRef {
        KernelRef {
            series: series.into(),
            flavour: String::new(),
            package: "linux-source-6.1".into(),
            package_version: "1".into(),
            deb_sha256: deb.into(),
            release: "6.1.1".into(),
            packages: Vec::new(),
            image_sha256: format!("{series}-{deb}-{fragment}"),
            path: None,
            image: (!fragment.is_empty()).then(|| ImageSizes {
                fragment_sha256: fragment.into(),
                source_patch_sha256: None,
                bzimage_bytes: 0,
                vmlinux: Default::default(),
                parts: Default::default(),
            }),
        }
    }

    /// `none` on a kernel, one run per draw with these stat medians (ns).
    fn drawn(series: &str, flavour: &str, cpus: u32, deb: &str, stat: &[f64]) -> Vec<Run> {
        stat.iter()
            .enumerate()
            .map(|(d, ns)| {
                let mut r = run(series, flavour, cpus, BASELINE, &[("stat", *ns)]);
                r.draw = d as u32;
                r.kernel_ref = Some(kernel_ref(series, deb, "frag"));
                r
            })
            .collect()
    }

    fn drawn_pct(c: &Cell) -> (f64, bool) {
        match c {
            Cell::Drawn {
                change: Some(d), ..
            } => (d.pct, d.established),
            other => panic!("no drawn change: {other:?}"),
        }
    }

    #[test]
    fn each_cpu_count_and_source_is_its_own_comparison() {
        let mut runs = drawn("6.1-nolsm", NO_LSM, 1, "src", &[1000.0, 1002.0, 998.0]);
        runs.extend(drawn(
            "6.1-smack",
            "smack",
            1,
            "src",
            &[1100.0, 1101.0, 1099.0],
        ));
        // Another source package: not "the same source", left out.
        runs.extend(drawn(
            "6.1-other",
            "other",
            1,
            "elsewhere",
            &[5000.0, 5001.0],
        ));
        runs.extend(drawn(
            "6.1",
            "cloud",
            1,
            "debian",
            &[1200.0, 1199.0, 1201.0],
        ));
        runs.extend(drawn("6.1-nolsm", NO_LSM, 4, "src", &[2000.0, 2001.0]));
        runs.extend(drawn("6.1-smack", "smack", 4, "src", &[3000.0, 3001.0]));
        let t = tables(&runs);
        assert_eq!(t.len(), 3, "{t:#?}");
        let one = &t[0];
        assert_eq!(one.form, Form::Framework);
        assert_eq!(one.header.len(), 4, "{:?}", one.header);
        assert!(one.header[1].starts_with("6.1-nolsm"));
        assert!(one.header[2].starts_with("6.1-smack") && one.header[2].contains("same source"));
        assert!(one.header[3].contains("Debian"), "{:?}", one.header);
        let stat = &one.rows[0].cells;
        match &stat[0] {
            Cell::Drawn {
                value,
                change,
                draws,
                ..
            } => {
                assert_eq!((*value, change.is_none(), *draws), (1.0, true, 3))
            }
            other => panic!("{other:?}"),
        }
        let (pct, established) = drawn_pct(&stat[1]);
        assert!((pct - 10.0).abs() < 1e-9 && established, "{pct}");
        assert!((drawn_pct(&stat[2]).0 - 20.0).abs() < 1e-9);
        // Four CPUs against four CPUs only.
        let four = &t[1];
        assert_eq!(four.header.len(), 3, "{:?}", four.header);
        assert!((drawn_pct(&four.rows[0].cells[1]).0 - 50.0).abs() < 0.1);
        // The summary: same-source builds only, one row per CPU count.
        let sum = &t[2];
        assert_eq!(sum.form, Form::FrameworkReleases);
        assert_eq!(sum.rows.len(), 2, "{:?}", sum.rows);
        assert!(sum.rows.iter().all(|r| r.label.starts_with("6.1-smack")));
        assert!(
            matches!(sum.rows[0].cells[0], Cell::Fixed { value, .. } if (value - 10.0).abs() < 1e-9)
        );
    }

    #[test]
    fn without_a_no_lsm_kernel_or_a_recorded_fragment_nothing_is_set_against_it() {
        let mut runs = drawn("6.1-smack", "smack", 1, "src", &[1100.0, 1101.0]);
        runs.extend(drawn("6.1", "cloud", 1, "debian", &[1200.0, 1199.0]));
        assert!(tables(&runs).is_empty());
        // A build that recorded no fragment is not known to be the same recipe.
        let mut runs = drawn("6.1-nolsm", NO_LSM, 1, "src", &[1000.0, 1001.0]);
        let mut own = drawn("6.1-smack", "smack", 1, "src", &[1100.0, 1101.0]);
        for r in &mut own {
            r.kernel_ref = Some(kernel_ref("6.1-smack", "src", ""));
        }
        runs.extend(own);
        let t = tables(&runs);
        assert_eq!(t[0].header.len(), 2, "{:?}", t[0].header);
        // No same-source pair: no summary at all.
        assert_eq!(t.len(), 1, "{t:#?}");
    }
}
