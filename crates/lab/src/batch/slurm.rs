//! The Slurm adapter: one job array a submission (`sbatch --array`), one
//! task a cell; the queue from `squeue` (a cluster without accounting has
//! no `sacct`: finished tasks are known by their cells' results).
use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::Result;

use super::engine::{Array, Engine, Job, Queued, Task};
use base::{command::which, error::usage, secure_fs};
use model::cell::BatchTask;

#[derive(Debug, Clone, Default)]
pub struct Slurm {
    pub partition: Option<String>,
    /// `--time` as Slurm reads it (`30`, `1:00:00`, `1-0`).
    pub time: Option<String>,
    /// Tasks of one array running at once (`%K`).
    pub max_parallel: Option<u32>,
    /// Passed to sbatch as they are, before the script.
    pub sbatch_args: Vec<String>,
}

/// The lsmpmon task's memory beside its guest's: QEMU's own and lsmpmon's.
const HOST_OVERHEAD_MB: u32 = 512;

impl Engine for Slurm {
    fn check(&self) -> Result<()> {
        slurm_conf()?;
        for tool in ["sbatch", "squeue"] {
            if which(tool).is_none() {
                return Err(usage(format!(
                    "{tool} not found: install Slurm's commands (apt-get install slurm-wlm munge; \
                     scripts/setup.sh --tests does), or run the plan's cells with `lab cell`"
                )));
            }
        }
        Ok(())
    }

    fn submit(&self, a: &Array) -> Result<Job> {
        let script = a.dir.join("cells.sbatch");
        secure_fs::write_atomic(&script, script_text(a).as_bytes())?;
        let log_dir = a.dir.join("logs");
        secure_fs::private_dir(&log_dir)?;
        let out = Command::new("sbatch")
            .args(self.sbatch_args(a, &log_dir))
            .arg(&script)
            .output()
            .map_err(|e| usage(format!("cannot run sbatch: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(self.error(&String::from_utf8_lossy(&out.stderr), Doing::Submit));
        }
        // `--parsable`: "ID" or "ID;CLUSTER".
        let id = stdout.trim().split(';').next().unwrap_or("").to_string();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            return Err(usage(format!(
                "sbatch printed no job id ({:?}): check its output by hand",
                stdout.trim()
            )));
        }
        Ok(Job {
            id,
            cells: a.cells.clone(),
            submitted_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs(),
            log_dir,
        })
    }

    fn queued(&self, job: &Job) -> Result<Vec<Task>> {
        slurm_conf()?;
        // squeue retries an unreachable controller for a minute: status
        // reads the cells on disk instead of waiting that long.
        let out = Command::new("timeout")
            .args([
                &format!("{SQUEUE_TIMEOUT_S}"),
                "squeue",
                "-h",
                "-r",
                "-j",
                &job.id,
            ])
            .args(["-O", SQUEUE_FIELDS])
            .output()
            .map_err(|e| usage(format!("cannot run squeue: {e}")))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(124) {
            return Err(usage(format!(
                "squeue did not answer within {SQUEUE_TIMEOUT_S} s: is slurmctld running? `scontrol ping` says"
            )));
        }
        if !out.status.success() {
            // A job gone from the controller's memory has ended.
            if stderr.contains("Invalid job id") {
                return Ok(Vec::new());
            }
            return Err(self.error(&stderr, Doing::Queue));
        }
        Ok(parse_squeue(&String::from_utf8_lossy(&out.stdout), &job.id))
    }

    fn log_path(&self, job: &Job, index: usize) -> PathBuf {
        job.log_dir.join(format!("{}_{index}.out", job.id))
    }

    fn task_id(&self, job: &Job, index: usize) -> String {
        format!("{}_{index}", job.id)
    }
}

/// squeue's fields for `parse_squeue`, each ended by `|`, wide enough that
/// squeue truncates nothing (it pads; `parse_squeue` trims).
const SQUEUE_FIELDS: &str = "JobArrayID:64|,State:24|,NodeList:256|,RestartCnt:12|";

/// The array task this process is, from the environment Slurm gives it.
pub fn this_task(env: &dyn Fn(&str) -> Option<String>) -> Option<BatchTask> {
    let job = env("SLURM_ARRAY_JOB_ID")?;
    let index = env("SLURM_ARRAY_TASK_ID")?;
    Some(BatchTask {
        engine: "slurm".into(),
        node: env("SLURMD_NODENAME")?,
        job: format!("{job}_{index}"),
        restarts: env("SLURM_RESTART_COUNT")
            .and_then(|r| r.parse().ok())
            .unwrap_or(0),
    })
}

/// How long `lab status` waits for Slurm's queue.
const SQUEUE_TIMEOUT_S: u32 = 10;

/// What lsmpmon asked Slurm when it failed.
#[derive(Clone, Copy)]
enum Doing {
    Submit,
    Queue,
}

/// A `SLURM_CONF` that names no readable file is said at once (Slurm's
/// commands retry it for a minute, then blame the job).
fn slurm_conf() -> Result<()> {
    let Some(conf) = std::env::var_os("SLURM_CONF") else {
        return Ok(());
    };
    match std::fs::metadata(&conf) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(usage(format!(
            "SLURM_CONF={} is not a file: name the cluster's slurm.conf",
            Path::new(&conf).display()
        ))),
        Err(e) => Err(usage(format!(
            "SLURM_CONF={} cannot be read ({e}): name the cluster's slurm.conf",
            Path::new(&conf).display()
        ))),
    }
}

impl Slurm {
    fn sbatch_args(&self, a: &Array, log_dir: &Path) -> Vec<String> {
        let mut array = list(&a.cells);
        if let Some(k) = self.max_parallel {
            array.push_str(&format!("%{k}"));
        }
        let mut v = vec![
            "--parsable".into(),
            format!("--job-name=lsmpmon-{}", a.plan.short_id()),
            format!("--array={array}"),
            format!("--cpus-per-task={}", a.cpus),
            format!("--mem={}M", a.memory_mb + HOST_OVERHEAD_MB),
            format!("--output={}/%A_%a.out", log_dir.display()),
            // A task whose node is lost runs again elsewhere (whatever the
            // cluster's JobRequeue): its cell had written nothing, or a
            // complete file that the new run's supersedes.
            "--requeue".into(),
            // Its log keeps every run's output.
            "--open-mode=append".into(),
        ];
        if let Some(p) = &self.partition {
            v.push(format!("--partition={p}"));
        }
        if let Some(t) = &self.time {
            v.push(format!("--time={t}"));
        }
        v.extend(self.sbatch_args.iter().cloned());
        v
    }

    /// Slurm's error as one line with what to do.
    fn error(&self, stderr: &str, doing: Doing) -> anyhow::Error {
        let first = stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no message")
            .trim_start_matches("sbatch: error: ")
            .trim_start_matches("squeue: error: ")
            .to_string();
        let has = |s: &str| stderr.to_lowercase().contains(&s.to_lowercase());
        let line = if has("invalid partition") {
            let p = self.partition.as_deref().unwrap_or("(the default)");
            format!(
                "Slurm has no partition {p}: `sinfo -s` lists them; choose one with --partition"
            )
        } else if has("munge") || has("authentication") {
            format!("Slurm's authentication failed ({first}): is munged running with the cluster's key?")
        } else if has("unable to contact")
            || has("connection refused")
            || has("timed out")
            || has("zero bytes")
        {
            format!("the Slurm controller cannot be reached ({first}): is slurmctld running? `scontrol ping` says; SLURM_CONF names the cluster")
        } else if has("configuration file") || has("s_p_parse_file") {
            format!("Slurm cannot read its configuration ({first}): SLURM_CONF names the cluster's slurm.conf")
        } else if let Doing::Queue = doing {
            format!("squeue failed ({first}): `squeue` by hand says more")
        } else if has("time limit") {
            format!("Slurm rejected the job array ({first}): give a --time within the partition's limit (`scontrol show partition`)")
        } else {
            // sbatch's own words say what is wrong; no option is blamed.
            format!("Slurm rejected the job array: {first} (correct what it names; `sbatch --test-only` checks a job without submitting it)")
        };
        usage(line)
    }
}

/// The task script: the task's index is the cell's; the cell's own command.
fn script_text(a: &Array) -> String {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("lsmpmon"));
    format!(
        "#!/bin/sh\n# lsmpmon plan {id}: one task a cell; the task's index is the cell's.\n\
         exec {exe} lab cell {plan} \"$SLURM_ARRAY_TASK_ID\" --results {results}\n",
        id = a.plan.id,
        exe = quote(&exe.display().to_string()),
        plan = quote(&a.plan_path.display().to_string()),
        results = quote(&a.plan.paths.results.display().to_string()),
    )
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `0,2,5`: Slurm's array list (it reads ranges and single indices alike).
fn list(cells: &[usize]) -> String {
    cells
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `squeue -r -O` lines of `SQUEUE_FIELDS`: `JOB_INDEX|STATE|NODES|RESTARTS|`
/// (squeue pads a field before its `|`).
fn parse_squeue(text: &str, job: &str) -> Vec<Task> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('|').map(str::trim);
            let (id, state, node, restarts) = (f.next()?, f.next()?, f.next()?, f.next()?);
            let index = id.strip_prefix(job)?.strip_prefix('_')?.parse().ok()?;
            let state = match state {
                "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED"
                | "SUSPENDED" => Queued::Pending,
                _ => Queued::Running,
            };
            Some(Task {
                index,
                state,
                node: (!node.is_empty() && node != "(null)").then(|| node.to_string()),
                restarts: restarts.parse().unwrap_or(0),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_lines_are_tasks_of_this_job_only() {
        let text = "41_0   |RUNNING  |node1 |0 |\n41_3|PENDING||1|\n42_1|RUNNING|node2|0|\n\
                    41_[4-5%1]|PENDING||0|\n41_2|COMPLETING|node3|2|\n";
        let task = |index, state, node: Option<&str>, restarts| Task {
            index,
            state,
            node: node.map(str::to_string),
            restarts,
        };
        assert_eq!(
            parse_squeue(text, "41"),
            [
                task(0, Queued::Running, Some("node1"), 0),
                task(3, Queued::Pending, None, 1),
                task(2, Queued::Running, Some("node3"), 2)
            ]
        );
        assert!(parse_squeue("", "41").is_empty());
    }

    #[test]
    fn a_task_knows_its_node_job_and_restarts_from_its_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let full = env(&[
            ("SLURM_ARRAY_JOB_ID", "7"),
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURMD_NODENAME", "node3"),
            ("SLURM_RESTART_COUNT", "1"),
        ]);
        let t = this_task(&full).unwrap();
        assert_eq!(
            (t.node.as_str(), t.job.as_str(), t.restarts),
            ("node3", "7_2", 1)
        );
        let first = env(&[
            ("SLURM_ARRAY_JOB_ID", "7"),
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURMD_NODENAME", "node1"),
        ]);
        assert_eq!(this_task(&first).unwrap().restarts, 0);
        assert!(this_task(&env(&[("SLURMD_NODENAME", "node1")])).is_none());
    }

    #[test]
    fn slurm_errors_say_what_to_do() {
        let s = Slurm {
            partition: Some("gpu".into()),
            ..Slurm::default()
        };
        let line = |stderr: &str| s.error(stderr, Doing::Submit).to_string();
        assert!(line("sbatch: error: invalid partition specified: gpu\n").contains("`sinfo -s`"));
        assert!(line("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n")
            .contains("slurmctld running"));
        assert!(
            line("sbatch: error: Invalid authentication credential (munge)\n").contains("munged")
        );
        let rejected = line("sbatch: error: Batch job submission failed: Requested node configuration is not available\n");
        assert!(
            rejected.contains("rejected") && rejected.contains("node configuration"),
            "{rejected}"
        );
        // sbatch's own words pass through; no option it did not name is blamed.
        let host = line("sbatch: error: Unknown host\n");
        assert!(
            host.contains("rejected the job array: Unknown host") && !host.contains("--time"),
            "{host}"
        );
        let time = line("sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)\n");
        assert!(time.contains("give a --time within"), "{time}");
        assert_eq!(list(&[0, 2, 5]), "0,2,5");
        let conf = "squeue: error: s_p_parse_file: cannot stat file /x: No such file or directory, retrying in 1sec up to 60sec\nsqueue: fatal: Unable to process configuration file\n";
        let queue = s.error(conf, Doing::Queue).to_string();
        assert!(
            queue.contains("configuration") && !queue.contains("rejected"),
            "{queue}"
        );
        let other = s
            .error("squeue: error: something\n", Doing::Queue)
            .to_string();
        assert!(other.starts_with("squeue failed"), "{other}");
    }
}
