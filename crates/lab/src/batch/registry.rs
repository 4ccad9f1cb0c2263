//! The engines by the name a submission record keeps.
use anyhow::Result;

use super::{engine::Engine, slurm, slurm::Slurm};
use base::error::usage;
use model::cell::BatchTask;

pub fn by_name(name: &str) -> Result<Box<dyn Engine>> {
    match name {
        "slurm" => Ok(Box::new(Slurm::default())),
        other => Err(usage(format!(
            "engine '{other}' is not one this lsmpmon knows (slurm)"
        ))),
    }
}

/// The engine's task this process runs as, if it is one (its environment
/// says: Slurm's `SLURM_ARRAY_JOB_ID`, `SLURMD_NODENAME`, …).
pub fn this_task() -> Option<BatchTask> {
    slurm::this_task(&|k| std::env::var(k).ok())
}
