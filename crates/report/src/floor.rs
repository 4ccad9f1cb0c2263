//! The committed layout floor (`results/floor.json`): made from committed
//! draws of `none` by `lsmpmon report --form floor`, and read back to judge
//! runs of one draw a side against it.
use std::{collections::BTreeMap, sync::OnceLock};

use model::floor::{FloorTable, OpFloor, RuleErrorRate, FLOOR_SCHEMA, MIN_REFERENCE_DRAWS};
use model::identity::KernelId;

use super::input::{ops, Run, BASELINE};

/// The floor committed with this build of lsmpmon.
pub fn committed() -> &'static FloorTable {
    static TABLE: OnceLock<FloorTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        // Checked by a test against the committed cells; never malformed.
        serde_json::from_str(include_str!("../../../results/floor.json")).unwrap_or(FloorTable {
            schema: FLOOR_SCHEMA.into(),
            made_from: Vec::new(),
            floors: Vec::new(),
            error_rates: Vec::new(),
        })
    })
}

/// The one-draw-a-side rule's measured false-positive rate on `kernel`.
pub fn error_rate(kernel: &KernelId) -> Option<&'static RuleErrorRate> {
    match kernel {
        KernelId::Lab {
            series,
            flavour,
            cpus,
        } => committed().error_rate(series, flavour, *cpus),
        KernelId::Single { .. } => None,
    }
}

/// The committed floor of `op` on `kernel`, for a lab cell's kernel.
pub fn reference(kernel: &KernelId, op: &str) -> Option<&'static OpFloor> {
    match kernel {
        KernelId::Lab {
            series,
            flavour,
            cpus,
        } => committed().get(series, flavour, *cpus, op),
        KernelId::Single { .. } => None,
    }
}

type Key = (String, String, u32, String);

/// From this many draws whose samples were settled, older draws are left
/// out: their figures also moved with the ops sampled beside them, so
/// pooled they give an upper bound of the floor, not the floor.
const SETTLED_ENOUGH: usize = 10;

#[derive(Default, Clone)]
struct Pool {
    higher_is_better: bool,
    medians: Vec<f64>,
    builds: Vec<String>,
    versions: Vec<String>,
}

impl Pool {
    fn add(&mut self, median: f64, higher_is_better: bool, build: &str, version: Option<&String>) {
        self.higher_is_better = higher_is_better;
        self.medians.push(median);
        push_new(&mut self.builds, build.to_string());
        if let Some(v) = version {
            push_new(&mut self.versions, v.clone());
        }
    }
}

/// The floor of every kernel and op that passed lab cells of `none` in
/// `runs` measured (`input::load_all` reads each copy of a cell once).
pub fn from_runs(runs: &[Run], made_from: Vec<String>) -> FloorTable {
    // Every draw, and the settled draws alone.
    let mut pools: BTreeMap<Key, (Pool, Pool)> = BTreeMap::new();
    for r in runs
        .iter()
        .filter(|r| r.from_lab && r.passed() && is_baseline_or_twin(&r.config))
    {
        let KernelId::Lab {
            series,
            flavour,
            cpus,
        } = &r.kernel
        else {
            continue;
        };
        let bench = r.bench.as_ref();
        // The executable's hash where recorded: one commit built twice is two builds.
        let build = bench.and_then(|b| {
            let base = &b.provenance.base;
            base.executable_sha256
                .clone()
                .or_else(|| base.commit.clone())
        });
        let build = build.unwrap_or_else(|| "unknown".into());
        let settled = bench.is_some_and(|b| b.options.settled);
        let version = r.kernel_ref.as_ref().map(|k| &k.package_version);
        for o in ops(r) {
            let key = (series.clone(), flavour.clone(), *cpus, o.op.clone());
            let (all, settled_only) = pools.entry(key).or_default();
            let hib = o.unit.higher_is_better();
            all.add(o.summary.median, hib, &build, version);
            if settled {
                settled_only.add(o.summary.median, hib, &build, version);
            }
        }
    }
    let chosen: Vec<(Key, Pool, bool)> = pools
        .into_iter()
        .map(|(key, (all, settled))| {
            if settled.medians.len() >= SETTLED_ENOUGH {
                (key, settled, true)
            } else {
                (key, all, false)
            }
        })
        .collect();
    let error_rates = error_rates(&chosen);
    let floors = chosen
        .into_iter()
        .map(|((series, flavour, cpus, op), p, only_settled)| OpFloor {
            series,
            flavour,
            cpus,
            op,
            floor_pct: round_to(base::draws::spread_pct(&p.medians), 3),
            draws: p.medians.len(),
            builds: p.builds.len(),
            kernel_versions: p.versions,
            settled: only_settled,
        })
        .collect();
    FloorTable {
        schema: FLOOR_SCHEMA.into(),
        made_from,
        floors,
        error_rates,
    }
}

/// Per kernel, the one-draw-a-side rule (`base::draws::against_reference`)
/// applied leave-two-out: each ordered pair of an op's draws judged against
/// the floor of its other draws. Ops with fewer draws than a committed
/// floor needs once the pair is out are left out.
fn error_rates(pools: &[(Key, Pool, bool)]) -> Vec<RuleErrorRate> {
    let mut rates: Vec<RuleErrorRate> = Vec::new();
    for ((series, flavour, cpus, op), pool, _) in pools {
        let v = &pool.medians;
        if v.len() < MIN_REFERENCE_DRAWS + 2 {
            continue;
        }
        let (mut judged, mut established) = (0, 0);
        for i in 0..v.len() {
            for j in (0..v.len()).filter(|j| *j != i) {
                let rest: Vec<f64> = (0..v.len())
                    .filter(|k| *k != i && *k != j)
                    .map(|k| v[k])
                    .collect();
                let floor = base::draws::spread_pct(&rest);
                let c = base::draws::against_reference(pool.higher_is_better, v[i], v[j], floor);
                judged += 1;
                established += usize::from(c.is_some_and(|c| c.established));
            }
        }
        let at = rates
            .iter()
            .position(|r| r.series == *series && r.flavour == *flavour && r.cpus == *cpus);
        let r = match at {
            Some(at) => &mut rates[at],
            None => {
                rates.push(RuleErrorRate {
                    series: series.clone(),
                    flavour: flavour.clone(),
                    cpus: *cpus,
                    comparisons: 0,
                    false_positives: 0,
                    rate_pct: 0.0,
                    by_op: Vec::new(),
                });
                rates.last_mut().expect("just pushed")
            }
        };
        r.comparisons += judged;
        r.false_positives += established;
        if established > 0 {
            r.by_op.push((op.clone(), established));
        }
    }
    for r in &mut rates {
        r.rate_pct = round_to(100.0 * r.false_positives as f64 / r.comparisons as f64, 3);
    }
    rates
}

/// `none`, or a twin of it: a configuration with no module that differs
/// only in what it brings (files, boot parameters, a setup's allocations).
/// A twin's draws are draws of the baseline as far as any module is
/// concerned, so what its presence alone shifts is part of the floor (on
/// 6.1 4 MiB of inert files moved delete_0k by -1.6 % with one build).
fn is_baseline_or_twin(config: &str) -> bool {
    config == BASELINE || config.starts_with("twin-")
}

fn push_new(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// Fixed decimals, so that the committed file repeats exactly.
fn round_to(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(medians: &[f64]) -> Pool {
        Pool {
            medians: medians.to_vec(),
            ..Pool::default()
        }
    }

    fn key(op: &str) -> Key {
        ("6.1".into(), "cloud".into(), 1, op.into())
    }

    #[test]
    fn a_draw_no_other_draw_is_near_is_a_false_positive_whichever_side_it_takes() {
        // Six draws within 0.2 %, one 3 % away: every pair with the far draw
        // (6 × 2 ordered) exceeds the others' floor (0.5 % at least); no
        // other pair does. An op with too few draws is left out.
        let pools = vec![
            (
                key("stat"),
                pool(&[100.0, 100.1, 100.2, 100.0, 100.1, 100.2, 103.0]),
                true,
            ),
            (key("read"), pool(&[1.0, 2.0, 3.0]), true),
        ];
        let rates = error_rates(&pools);
        assert_eq!(rates.len(), 1);
        assert_eq!(rates[0].comparisons, 42);
        assert_eq!(rates[0].false_positives, 12);
        assert_eq!(rates[0].by_op, vec![("stat".to_string(), 12)]);
        assert!((rates[0].rate_pct - 28.571).abs() < 1e-9);
    }
}
