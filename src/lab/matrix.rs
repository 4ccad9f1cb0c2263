//! A matrix from the command line: kernels, configurations and CPU counts,
//! each checked before anything boots.
use anyhow::Result;

use super::{args::RunArgs, spec};
use crate::base::error::usage;
use crate::vm::{self, kernel};

/// What one matrix needs, checked before anything boots.
pub struct Matrix {
    pub kernels: Vec<String>,
    pub cpus: Vec<u32>,
    pub configs: Vec<spec::Config>,
    pub access: spec::Matrix,
}

impl Matrix {
    /// The configurations' names, in the order given.
    pub fn config_names(&self) -> Vec<String> {
        self.configs.iter().map(|c| c.name.clone()).collect()
    }
}

pub fn resolve(args: &RunArgs) -> Result<Matrix> {
    let kernels = split_list(&args.kernels);
    if kernels.is_empty() {
        return Err(usage("--kernels is empty"));
    }
    for k in &kernels {
        if !kernel::known_series().contains(&k.as_str()) {
            return Err(usage(format!(
                "unknown kernel '{k}': use one of {}",
                kernel::known_series().join(", ")
            )));
        }
    }
    let dirs = spec::search_path(&args.config_dirs);
    for d in &args.config_dirs {
        if !d.is_dir() {
            return Err(usage(format!(
                "--config-dir {}: not a directory",
                d.display()
            )));
        }
    }
    let names = split_list(&args.configs);
    if names.is_empty() {
        return Err(usage("--configs is empty"));
    }
    let configs = names
        .iter()
        .map(|n| spec::load(n, &dirs))
        .collect::<Result<Vec<_>>>()?;
    crate::bench::check_ops(&args.ops, args.iterations)?;
    Ok(Matrix {
        kernels,
        cpus: cpu_counts(&args.cpus)?,
        configs,
        access: spec::load_matrix()?,
    })
}

/// Comma-separated names, in order, each once.
pub fn split_list(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// `--cpus 1,2`: each count once, 1 to MAX_CPUS.
fn cpu_counts(s: &str) -> Result<Vec<u32>> {
    let counts = split_list(s)
        .iter()
        .map(|w| match w.parse::<u32>() {
            Ok(n) if (1..=vm::MAX_CPUS).contains(&n) => Ok(n),
            _ => Err(usage(format!(
                "--cpus {s}: '{w}' is not a CPU count from 1 to {}",
                vm::MAX_CPUS
            ))),
        })
        .collect::<Result<Vec<u32>>>()?;
    if counts.is_empty() {
        return Err(usage("--cpus is empty"));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::{cpu_counts, split_list};

    #[test]
    fn cpu_counts_are_checked_and_kept_once_in_order() {
        assert_eq!(cpu_counts("2,1,2").unwrap(), [2, 1]);
        for bad in ["0", "9", "two", "", ","] {
            assert!(cpu_counts(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_keep_their_order_once_each() {
        assert_eq!(split_list(" b,a,,b , c"), ["b", "a", "c"]);
        assert!(split_list(",").is_empty());
    }
}
