//! The engines by the name a submission record keeps.
use anyhow::Result;

use super::{engine::Engine, slurm::Slurm};
use base::error::usage;

pub fn by_name(name: &str) -> Result<Box<dyn Engine>> {
    match name {
        "slurm" => Ok(Box::new(Slurm::default())),
        other => Err(usage(format!(
            "engine '{other}' is not one this lsmpmon knows (slurm)"
        ))),
    }
}
