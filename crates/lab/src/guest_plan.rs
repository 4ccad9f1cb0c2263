//! What the host asks of a cell's guest, and where the guest keeps things:
//! shared by the host side (`cell.rs`) and the guest side (`guest.rs`,
//! `proof.rs`).
use serde::{Deserialize, Serialize};

use crate::spec::{AccessMatrix, Spec};

pub const PLAN_PATH: &str = "/lab/cell.json";
pub const CONFIG_DIR: &str = "/lab/config";
pub const WORKLOAD: &str = "/usr/libexec/lsmpmon-workload";
/// Where `lab run --workload` puts the user's program: executed, it takes
/// the workload's command name (the first 15 bytes of this name), so that
/// the trace by name and the policies that know the workload by its name
/// see it as the workload.
pub const USER_WORKLOAD: &str = "/usr/libexec/lsmpmon-workload.user";
pub const PUBLIC: &str = "/etc/lsmpmon-lab/public";
pub const SECRET: &str = "/srv/lsmpmon-lab/secret";
pub const WORK_DIR: &str = "/tmp/lsmpmon-bench";
/// Where the `web` ops' server goes in the guest (and where it is in its package).
pub const NGINX: &str = "/usr/sbin/nginx";

/// What the host asks of the guest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuestPlan {
    pub config: String,
    pub spec: Spec,
    pub matrix: AccessMatrix,
    /// `bench` options after `--json --dir`: ops, samples, sample length.
    pub bench_args: Vec<String>,
    pub trace: bool,
    /// For a baseline proof: the exact list /sys/kernel/security/lsm must show.
    pub expected_lsms: Vec<String>,
    /// Start nginx (as the system, unconfined) before the benchmark: the
    /// `web` ops' server.
    #[serde(default)]
    pub web_server: bool,
}
