//! A lab cell (schema `lsmpmon.lab-cell/1`): one configuration on one
//! kernel in a guest — what ran, whether it proved itself, and the guest's
//! own bench and trace results.
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};

use super::bench::BenchResult;
use super::provenance::KernelRef;
use super::provenance::TimeMode;
use super::trace::TraceResult;

pub const CELL_SCHEMA: &str = "lsmpmon.lab-cell/1";
pub use super::options::{LabOptions, DEFAULT_BENCH_DIR};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// Proved, then measured.
    Passed,
    /// The configuration did not prove itself: nothing was measured.
    ProofFailed,
    /// The kernel cannot run the configuration (reason given).
    NotApplicable,
    /// Boot, setup, benchmark or guest failure (reason and log given).
    Failed,
    /// Stopped by Ctrl-C.
    Interrupted,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CellResult {
    pub schema: String,
    pub id: String,
    pub status: CellStatus,
    pub reason: Option<String>,
    pub kernel: KernelRef,
    pub config: ConfigRef,
    pub options: RunOptions,
    pub time: TimeMode,
    pub lsmpmon_version: String,
    /// The git commit of the lsmpmon build that ran the cell (a build from
    /// a checkout). A build is one more draw of the guest's layout
    /// (BENCHMARKS.md, 'What a build moves'), so cells of two builds are not one run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsmpmon_commit: Option<String>,
    /// The SHA-256 of the lsmpmon executable that ran the cell: the build
    /// itself (one commit built twice may differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsmpmon_sha256: Option<String>,
    pub hostname: String,
    pub host_cpu: String,
    pub started_unix_s: u64,
    pub wall_s: f64,
    pub stages: Vec<StageTime>,
    /// Bytes the configuration adds to the guest (its files, programs, libraries).
    pub bytes_added: u64,
    /// The guest's console log and run files: relative to the results
    /// directory (`logs/<id>`; absolute in cells from before 0.9).
    pub log_dir: String,
    pub guest: Option<GuestReport>,
    /// The web server's package, for cells running the `web` ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_server: Option<DebPackage>,
    /// The compiler's package, for cells running the `build` op.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<DebPackage>,
    /// The plan the cell was run from (`lab cell`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanRef>,
    /// The batch engine's task that ran the cell (`lab cell` under Slurm):
    /// on which node, as which job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<BatchTask>,
}

impl CellResult {
    /// Its log directory, found from the results directory it is in.
    pub fn log_path(&self, results: &std::path::Path) -> std::path::PathBuf {
        results.join(&self.log_dir)
    }

    /// The build that ran it: its executable's hash, or (cells from before
    /// that was recorded) its commit.
    pub fn build(&self) -> Option<&str> {
        self.lsmpmon_sha256
            .as_deref()
            .or_else(|| self.build_commit())
    }

    /// The commit of the build that ran it: recorded by the cell, or (cells
    /// from before it was) by its guest's benchmark.
    pub fn build_commit(&self) -> Option<&str> {
        self.lsmpmon_commit.as_deref().or_else(|| {
            let bench = self.guest.as_ref()?.bench.as_ref()?;
            bench.provenance.base.commit.as_deref()
        })
    }
}

/// Where a batch engine ran a cell.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct BatchTask {
    /// The engine (`slurm`).
    pub engine: String,
    /// The engine's name of the node (Slurm's node name, not a host path).
    pub node: String,
    /// The task's id in the engine (`JOB_INDEX` of a Slurm array).
    pub job: String,
    /// How many times the engine had requeued the task before this run
    /// (after a lost node, say).
    pub restarts: u32,
}

/// Which plan, and which of its cells.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct PlanRef {
    pub id: String,
    pub index: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConfigRef {
    pub name: String,
    pub description: String,
    /// Where it came from: `configs/<name>` for the shipped ones, else its
    /// path relative to the working directory, or its name alone (the
    /// hash identifies it).
    pub dir: String,
    /// sha256 over the configuration directory (names and contents).
    pub hash: String,
    pub lsm: Option<String>,
    pub append: String,
    pub proof: ProofKind,
    /// Whose own functions fill the Table 4 form.
    pub measured_lsms: Vec<String>,
}

/// A cell's options: the run's, and the guest its draw booted.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunOptions {
    #[serde(flatten)]
    pub lab: LabOptions,
    pub accel: String,
    pub icount: String,
    pub rtc: String,
    pub kaslr: bool,
    /// Guest CPUs (cells from before the option ran on one).
    #[serde(default = "one_cpu")]
    pub cpus: u32,
}

impl RunOptions {
    /// The layout draw the cell booted as (its `-rtc` base; 0 for cells
    /// from before draws and for clocks that are not a draw's).
    pub fn draw(&self) -> u32 {
        super::draw::draw_of_rtc(&self.rtc).unwrap_or(0)
    }
}

fn one_cpu() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StageTime {
    pub name: String,
    pub wall_s: f64,
    /// The guest's own (virtual) time for the stage, where it reported one.
    pub guest_ms: Option<f64>,
}

impl StageTime {
    pub fn wall(name: &str, wall_s: f64) -> Self {
        Self {
            name: name.into(),
            wall_s,
            guest_ms: None,
        }
    }
}

/// The package a cell's server or compiler came from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct DebPackage {
    pub package: String,
    pub version: String,
    pub deb_sha256: String,
}

/// What the guest reports of its cell (`lab guest`'s one line of JSON).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct GuestReport {
    /// Each stage's guest (virtual) time.
    pub stages: Vec<GuestStage>,
    pub active_lsms: Vec<String>,
    pub proof: Option<ProofReport>,
    pub footprint: Option<Footprint>,
    /// The confined, untraced benchmark.
    #[serde(serialize_with = "keys_sorted")]
    pub bench: Option<BenchResult>,
    /// `trace --per-lsm` around a second, identical benchmark run.
    #[serde(serialize_with = "keys_sorted")]
    pub trace: Option<TraceResult>,
    #[serde(serialize_with = "keys_sorted")]
    pub traced_bench: Option<BenchResult>,
    /// The traced run op by op: each op's module calls (the accounting
    /// identity's calls per op). Absent in cells before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_calls: Option<Vec<super::account::OpCalls>>,
    pub error: Option<String>,
}

/// Cells have always held the guest's results with their keys in
/// alphabetical order (they were kept as untyped JSON): still so.
fn keys_sorted<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(v)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GuestStage {
    pub name: String,
    pub guest_ms: f64,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProofKind {
    Deny,
    Measure,
    Baseline,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProofReport {
    pub kind: ProofKind,
    pub passed: bool,
    /// One line: what was shown, or why the proof failed.
    pub summary: String,
    /// The matrix before the policy (unconfined) and after (confined).
    pub unconfined: Vec<Outcome>,
    pub confined: Vec<Outcome>,
    /// Rows the configuration says it cannot express (not judged).
    pub not_expressed: Vec<String>,
    /// deny: the kernel's record of a denial, as found.
    pub record: Option<String>,
    /// measure: the measurement-list lines naming the workload's files.
    pub measurements: Vec<String>,
    pub pcr10_before: Option<String>,
    pub pcr10_after: Option<String>,
    /// baseline: what securityfs lists, and what was expected.
    pub active_lsms: Vec<String>,
    pub expected_lsms: Vec<String>,
}

/// One access-matrix row as the workload tried it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct Outcome {
    pub row: String,
    pub op: AccessOp,
    pub path: String,
    pub expect: Expect,
    /// None: the call succeeded.
    pub errno: Option<i32>,
    /// "allowed", or the error's name ("EACCES", "ENOENT", …).
    pub result: String,
}

impl Outcome {
    pub fn allowed(&self) -> bool {
        self.errno.is_none()
    }

    /// Denied the way a security module denies: EACCES or EPERM.
    pub fn denied(&self) -> bool {
        matches!(self.errno, Some(libc::EACCES) | Some(libc::EPERM))
    }

    /// What the row expects, under an enforcing policy.
    pub fn as_expected(&self) -> bool {
        match self.expect {
            Expect::Allow => self.allowed(),
            Expect::Deny => self.denied(),
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AccessOp {
    Read,
    Write,
    Create,
    Exec,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    Allow,
    Deny,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct Memory {
    pub total_kib: u64,
    /// MemTotal − MemFree − per-CPU free pages − Buffers − Cached −
    /// SReclaimable: kernel and process memory, not the page cache (which
    /// holds the guest's files) nor free pages (cells made before the
    /// per-CPU lists were read count those as used).
    pub used_kib: u64,
    pub slab_unreclaimable_kib: u64,
    /// Free pages held in the per-CPU lists (/proc/zoneinfo `count`), which
    /// MemFree leaves out: 6.12 keeps up to tens of MiB there, more or less
    /// by what the boot allocated (absent: not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_cpu_free_kib: Option<u64>,
}

/// Footprint (the embedded-SELinux paper's Tables 8, 9 and 11).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Footprint {
    pub before_setup: Memory,
    pub after_setup: Memory,
    /// Sizes of the spec's `policy_files`, as loaded.
    pub policy_bytes: u64,
    pub policy_files: BTreeMap<String, u64>,
    /// The module's own statistics files, verbatim.
    pub kernel_stats: BTreeMap<String, String>,
    /// SELinux: how the loaded policy's access-vector tables fill their hash
    /// slots (absent for other modules and in cells made before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avtab: Option<AvtabFigures>,
    /// KiB in each slab cache after setup (active objects × object size,
    /// /proc/slabinfo): the modules' own caches (avtab, avc, …) are there
    /// by name. Absent in cells made before.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub slab_kib: BTreeMap<String, u64>,
    /// The module caches SLUB merged with others (/sys/kernel/slab's links
    /// to one cache): the other names whose objects their line also counts
    /// (7.3: avtab_node with hashtab_node and fsnotify_mark_connector).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub slab_shared_with: BTreeMap<String, Vec<String>>,
    /// How many reads of /proc/meminfo it took, after dropping the caches,
    /// for two in a row to agree within 64 KiB (0: cells made before).
    #[serde(default)]
    pub meminfo_reads: u32,
}

/// Slab caches that belong to a security module, by name prefix: SELinux's
/// access-vector table and cache, its policy structures, AppArmor's,
/// TOMOYO's, Landlock's, IMA's and Smack's where they have caches of their
/// own (the rest of their memory is in kmalloc caches, shared).
pub const LSM_SLAB_PREFIXES: &[&str] = &[
    "avtab",
    "avc_",
    "ebitmap",
    "hashtab",
    "sidtab",
    "selinux",
    "aa_",
    "apparmor",
    "tomoyo",
    "landlock",
    "iint",
    "ima_",
    "integrity",
    "smack",
    "evm",
];

impl Footprint {
    /// KiB in the slab caches of [`LSM_SLAB_PREFIXES`].
    pub fn lsm_slab_kib(&self) -> Option<u64> {
        if self.slab_kib.is_empty() {
            return None;
        }
        let lsm = |name: &str| LSM_SLAB_PREFIXES.iter().any(|p| name.starts_with(p));
        Some(
            self.slab_kib
                .iter()
                .filter(|(n, _)| lsm(n))
                .map(|(_, k)| k)
                .sum(),
        )
    }
}

/// One avtab's slot use, the figures of the kernel's `avtab_hash_eval`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AvtabEval {
    pub entries: u64,
    pub slots: u64,
    pub slots_used: u64,
    pub longest_chain: u64,
    /// Sum over used slots of the chain length squared (the kernel's own
    /// figure of how uneven the chains are).
    pub chain_length_squared_sum: u64,
}

/// The policy's access-vector tables (the embedded-SELinux paper's Table 11).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AvtabFigures {
    /// "computed": from the loaded policy (/sys/fs/selinux/policy) with the
    /// running kernel's slot rule and hash function.
    pub source: String,
    /// The loaded policy's format version.
    pub policy_version: u32,
    /// The unconditional rules (the kernel's tag "rules").
    pub rules: AvtabEval,
    /// The rules under booleans ("conditional_rules"): the kernel sizes this
    /// table from the unconditional rule count.
    pub conditional_rules: AvtabEval,
    /// The kernel's own evaluation, where it was built with
    /// CONFIG_SECURITY_SELINUX_DEBUG and the guest enabled its pr_debug: the
    /// "rules" line read from the kernel log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_rules: Option<AvtabEval>,
    /// The slot count the kernel command line asked for
    /// (`lsmpmon_avtab_slots=`, honoured by lsmpmon's patched kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots_asked: Option<u64>,
}

/// Plain words for what users read (tables, notes, errors); the JSON keeps
/// its snake_case names.
impl std::fmt::Display for CellStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CellStatus::Passed => "passed",
            CellStatus::ProofFailed => "proof failed",
            CellStatus::NotApplicable => "not applicable",
            CellStatus::Failed => "failed",
            CellStatus::Interrupted => "interrupted",
        })
    }
}

impl std::fmt::Display for ProofKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProofKind::Deny => "deny",
            ProofKind::Measure => "measure",
            ProofKind::Baseline => "baseline",
        })
    }
}

impl std::fmt::Display for AccessOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AccessOp::Read => "read",
            AccessOp::Write => "write",
            AccessOp::Create => "create",
            AccessOp::Exec => "exec",
        })
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Expect::Allow => "allow",
            Expect::Deny => "deny",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CellResult;

    /// The cell's own fields in their declared order, the guest's bench and
    /// trace with sorted keys: the bytes cells have always had.
    #[test]
    fn a_cell_keeps_its_field_order_and_the_guest_results_sorted() {
        let text = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/report/lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json"
        ));
        let cell: CellResult = serde_json::from_str(text).unwrap();
        let out = serde_json::to_string_pretty(&cell).unwrap();
        let at = |key: &str, from: usize| from + out[from..].find(key).unwrap();
        assert!(out.starts_with("{\n  \"schema\": \"lsmpmon.lab-cell/1\",\n  \"id\""));
        let bench = at("\"bench\": {", 0);
        let keys = [
            "clock_overhead_ns",
            "landlock",
            "options",
            "provenance",
            "results",
        ];
        let places: Vec<usize> = keys
            .iter()
            .map(|k| at(&format!("\"{k}\""), bench))
            .collect();
        assert!(places.windows(2).all(|w| w[0] < w[1]), "{places:?}");
        let trace = at("\"trace\": {", 0);
        assert!(at("\"elapsed_ns\"", trace) < at("\"hooks\"", trace));
        assert!(at("\"hooks\"", trace) < at("\"schema\"", trace));
    }
}
