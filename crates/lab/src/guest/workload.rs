//! How the guest starts the workload: the copy of lsmpmon the policy
//! labels (`WORKLOAD`), confined or not, and the bench options it runs with.
use std::process::{Command, Stdio};

use crate::guest_plan::{GuestPlan, PLAN_PATH, WORKLOAD, WORK_DIR};

pub const LSMPMON: &str = "/bin/lsmpmon";

pub fn workload(plan: &GuestPlan, confined: bool, args: &[&str]) -> Command {
    let mut cmd = if confined {
        let mut c = Command::new(LSMPMON);
        c.args(["lab", "confine", PLAN_PATH, "--", WORKLOAD]);
        c
    } else {
        Command::new(WORKLOAD)
    };
    cmd.args(args);
    if confined && plan.spec.confine.landlock {
        cmd.arg("--landlock");
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// The traced run feeds per-hook averages, not Table 3: one sample per op
/// gives thousands of calls per hook at a fraction of the time.
const TRACED_SAMPLES: &str = "1";

pub fn bench_args(plan: &GuestPlan, traced: bool) -> Vec<&str> {
    let mut v = vec!["bench", "--json"];
    if !plan.bench_args.iter().any(|a| a == "--dir") {
        v.extend(["--dir", WORK_DIR]);
    }
    let mut args = plan.bench_args.iter().map(String::as_str);
    while let Some(a) = args.next() {
        v.push(a);
        if a == "--samples" {
            let n = args.next().unwrap_or(TRACED_SAMPLES);
            v.push(if traced { TRACED_SAMPLES } else { n });
        }
    }
    v
}
