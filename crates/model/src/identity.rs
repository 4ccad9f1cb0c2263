//! Typed identities of runs: which kernel a run's figures belong to (tables
//! group by it), where it was measured (`compare` refuses runs from
//! different places) and whether two runs were measured alike (only then is
//! a percentage between them shown). Compared with `==`; labels are for
//! display only.
use std::fmt;

use super::bench::{BenchProvenance, BenchResult};
use super::cell::CellResult;
use super::provenance::{Environment, Provenance, TimeMode};
use super::trace::TraceResult;

/// The kernel a run's figures belong to: a lab cell's Debian series and
/// flavour on a guest of some CPUs, or a single result's kernel release.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelId {
    Lab {
        series: String,
        flavour: String,
        cpus: u32,
    },
    Single {
        release: String,
    },
}

impl KernelId {
    pub fn of_cell(c: &CellResult) -> Self {
        KernelId::Lab {
            series: c.kernel.series.clone(),
            flavour: c.kernel.flavour.clone(),
            cpus: c.options.cpus,
        }
    }

    /// The Debian series of a lab cell ("6.1"), the release of a single result.
    pub fn series(&self) -> &str {
        match self {
            KernelId::Lab { series, .. } => series,
            KernelId::Single { release } => release,
        }
    }

    /// A guest of more than one CPU: another machine, with its own tables.
    pub fn smp(&self) -> bool {
        matches!(self, KernelId::Lab { cpus, .. } if *cpus > 1)
    }
}

/// As tables name the kernel: its series, and its flavour where the series
/// does not say it ("6.1 (amd64)"; "6.1-smack" as it is), and the guest's
/// CPUs when more than one ("6.1 2cpu").
impl fmt::Display for KernelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelId::Single { release } => f.write_str(release),
            KernelId::Lab {
                series,
                flavour,
                cpus,
            } => {
                if flavour == "cloud" || series.ends_with(&format!("-{flavour}")) {
                    f.write_str(series)?;
                } else {
                    write!(f, "{series} ({flavour})")?;
                }
                match cpus {
                    1 => Ok(()),
                    n => write!(f, " {n}cpu"),
                }
            }
        }
    }
}

/// Where a run was measured, for `compare`'s like-with-like check.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub kernel_release: String,
    pub environment: Environment,
    pub time: TimeMode,
    pub hostname: String,
    pub cpu_model: String,
}

impl Origin {
    pub fn of_bench(p: &BenchProvenance) -> Self {
        Origin {
            cpu_model: p.cpu_model.clone(),
            ..Self::of_trace(&p.base)
        }
    }

    /// A trace records no CPU model.
    pub fn of_trace(p: &Provenance) -> Self {
        Origin {
            kernel_release: p.kernel_release.clone(),
            environment: p.environment,
            time: p.time,
            hostname: p.hostname.clone(),
            cpu_model: String::new(),
        }
    }

    /// The guest's CPU as its benchmark saw it, else the host's.
    pub fn of_cell(c: &CellResult) -> Self {
        let guest_cpu = c
            .guest
            .as_ref()
            .and_then(|g| g.bench.as_ref())
            .map(|b| b.provenance.cpu_model.clone());
        Origin {
            kernel_release: c.kernel.release.clone(),
            environment: Environment::Guest,
            time: c.time,
            hostname: c.hostname.clone(),
            cpu_model: guest_cpu.unwrap_or_else(|| c.host_cpu.clone()),
        }
    }

    /// The fields where `later` was measured elsewhere ("kernel_release: x vs y").
    pub fn mismatches(&self, later: &Origin) -> Vec<String> {
        let (a, b) = (self, later);
        let fields = [
            (
                "kernel_release",
                a.kernel_release.clone(),
                b.kernel_release.clone(),
            ),
            (
                "environment",
                a.environment.to_string(),
                b.environment.to_string(),
            ),
            ("time", a.time.to_string(), b.time.to_string()),
            ("hostname", a.hostname.clone(), b.hostname.clone()),
            ("cpu_model", a.cpu_model.clone(), b.cpu_model.clone()),
        ];
        fields
            .iter()
            .filter(|(_, x, y)| x != y)
            .map(|(f, x, y)| format!("{f}: {x} vs {y}"))
            .collect()
    }
}

/// How a run was measured: two runs with equal identities were measured
/// alike, and a percentage between them means something.
#[derive(Debug, Clone, PartialEq)]
pub enum Alike {
    /// A lab cell: the same kernel package, time mode, benchmark options and guest.
    Cell {
        kernel_sha256: String,
        time: TimeMode,
        samples: usize,
        sample_ms: f64,
        iterations: Option<u64>,
        accel: String,
        icount: String,
        rtc: String,
        memory_mb: u32,
        kaslr: bool,
        bench_dir: String,
        cpus: u32,
        /// The --workload program's sha256: another program is another op.
        workload: Option<String>,
    },
    /// A single bench or trace result: the same kernel release, machine,
    /// time mode, samples and rounds (a trace has neither).
    Single {
        kernel_release: String,
        hostname: String,
        cpu_model: String,
        time: TimeMode,
        samples: Option<usize>,
        iterations: Option<u64>,
        workload: Option<String>,
    },
}

/// What of `-icount` decides the figures: `sleep=` only decides whether an
/// idle guest also waits in host time (the lab's TPM cells: vm/machine.rs),
/// not how instructions are counted, so it does not make cells unlike.
fn counted_time(icount: &str) -> String {
    icount
        .split(',')
        .filter(|o| !o.starts_with("sleep="))
        .collect::<Vec<_>>()
        .join(",")
}

/// What makes two cells' kernels the same: the package, and for a kernel
/// lsmpmon built from a source package (6.1-smack) also the image, which
/// another recipe changes (SLOB, then SLUB) from the same tarball.
fn kernel_sha256(k: &super::KernelRef) -> String {
    if k.package.starts_with("linux-source") {
        format!("{}:{}", k.deb_sha256, k.image_sha256)
    } else {
        k.deb_sha256.clone()
    }
}

impl Alike {
    /// The same identity with the kernel left out: runs on two kernels
    /// measured otherwise alike (the framework form sets kernels side by side).
    pub fn but_kernel(&self) -> Alike {
        let mut a = self.clone();
        match &mut a {
            Alike::Cell { kernel_sha256, .. } => kernel_sha256.clear(),
            Alike::Single { kernel_release, .. } => kernel_release.clear(),
        }
        a
    }

    pub fn of_cell(c: &CellResult) -> Self {
        let o = &c.options;
        Alike::Cell {
            kernel_sha256: kernel_sha256(&c.kernel),
            time: c.time,
            samples: o.lab.samples,
            sample_ms: o.lab.sample_ms,
            iterations: o.lab.iterations,
            accel: o.accel.clone(),
            icount: counted_time(&o.icount),
            rtc: super::draw::rtc_without_draw(&o.rtc),
            memory_mb: o.lab.memory_mb,
            kaslr: o.kaslr,
            bench_dir: o.lab.bench_dir.clone(),
            cpus: o.cpus,
            workload: o.lab.workload.as_ref().map(|w| w.sha256.clone()),
        }
    }

    pub fn of_bench(b: &BenchResult) -> Self {
        Self::single(
            &Origin::of_bench(&b.provenance),
            Some(b.options.samples),
            b.options.iterations,
            b.options.workload.as_ref().map(|w| w.sha256.clone()),
        )
    }

    pub fn of_trace(t: &TraceResult) -> Self {
        Self::single(&Origin::of_trace(&t.provenance), None, None, None)
    }

    fn single(
        o: &Origin,
        samples: Option<usize>,
        iterations: Option<u64>,
        workload: Option<String>,
    ) -> Self {
        Alike::Single {
            kernel_release: o.kernel_release.clone(),
            hostname: o.hostname.clone(),
            cpu_model: o.cpu_model.clone(),
            time: o.time,
            samples,
            iterations,
            workload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{counted_time, kernel_sha256, KernelId};
    use crate::KernelRef;

    #[test]
    fn a_kernel_built_from_source_is_its_image_and_a_debian_one_its_package() {
        let atlas = concat!(env!("CARGO_MANIFEST_DIR"), "/../../results/atlas/cells");
        let smack = std::fs::read_dir(atlas)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains("6.1-smack-smack__none"))
            .unwrap();
        let cell: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(smack).unwrap()).unwrap();
        let mut built: KernelRef = serde_json::from_value(cell["kernel"].clone()).unwrap();
        let mut rebuilt = built.clone();
        // Another recipe, the same source tarball: another kernel.
        rebuilt.image_sha256 = "0".repeat(64);
        assert_ne!(kernel_sha256(&built), kernel_sha256(&rebuilt));
        // A Debian package is its own image: the package decides.
        built.package = "linux-image-6.1.0-56-cloud-amd64".into();
        rebuilt.package = built.package.clone();
        assert_eq!(kernel_sha256(&built), kernel_sha256(&rebuilt));
    }

    #[test]
    fn icount_sleep_does_not_make_cells_unlike_but_shift_and_off_do() {
        let tpm = counted_time("shift=0,sleep=on");
        assert_eq!(tpm, counted_time("shift=0,sleep=off"));
        assert_eq!(tpm, "shift=0");
        assert_ne!(tpm, counted_time("shift=1,sleep=off"));
        assert_ne!(tpm, counted_time("off"));
        assert_eq!(
            counted_time("shift=0,sleep=on,align=on"),
            "shift=0,align=on"
        );
    }

    #[test]
    fn kernel_labels_name_flavour_and_cpus_only_where_needed() {
        let k = |series: &str, flavour: &str, cpus| KernelId::Lab {
            series: series.into(),
            flavour: flavour.into(),
            cpus,
        };
        assert_eq!(k("6.1", "cloud", 1).to_string(), "6.1");
        assert_eq!(k("6.1", "amd64", 1).to_string(), "6.1 (amd64)");
        assert_eq!(k("6.1-smack", "smack", 2).to_string(), "6.1-smack 2cpu");
        assert!(k("6.1", "cloud", 2).smp() && !k("6.1", "cloud", 1).smp());
    }
}
