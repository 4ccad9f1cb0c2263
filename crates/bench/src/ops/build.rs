//! The LSM paper's kernel-build macrobenchmark, scaled to a TCG guest: one
//! op compiles and links the Linux kernel's own host programs, the first
//! thing every kernel build compiles (fixdep, kallsyms, unifdef, sorttable,
//! mk_elfconfig from Debian's linux-source-6.1), with Debian's tcc, one
//! compiler process per program. `lab run --ops build` puts the compiler, the
//! C library's headers and the sources in the guest.
use std::{
    fs,
    path::Path,
    process::{Command, Stdio},
};

use anyhow::{bail, Context, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};

/// Where the sources are in the guest (their paths inside the kernel tree
/// below it).
pub const SOURCE_DIR: &str = "/usr/src/lsmpmon-build";
pub const COMPILER: &str = "/usr/bin/tcc";

/// The programs and their sources, relative to the kernel tree.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("fixdep", "scripts/basic/fixdep.c"),
    ("kallsyms", "scripts/kallsyms.c"),
    ("unifdef", "scripts/unifdef.c"),
    ("sorttable", "scripts/sorttable.c"),
    ("mk_elfconfig", "scripts/mod/mk_elfconfig.c"),
];

/// Headers of the kernel tree the sources include (sorttable's byte shifts).
pub const TREE_INCLUDE: &str = "tools/include";

pub fn ops() -> Vec<OpDef> {
    group(
        "build",
        Unit::NsPerOp,
        &[("build_kscripts", |c| Ok(Box::new(Build::new(c)?)))],
    )
}

struct Build {
    out: std::path::PathBuf,
}

impl Build {
    fn new(ctx: &Ctx) -> Result<Self> {
        if !Path::new(COMPILER).is_file() || !Path::new(SOURCE_DIR).is_dir() {
            bail!(
                "{COMPILER} or {SOURCE_DIR} is missing: `lsmpmon lab run --ops build` puts Debian's tcc and the kernel's sources in the guest"
            );
        }
        Ok(Self {
            out: ctx.dir.clone(),
        })
    }

    /// One program compiled and linked; its output must be an ELF file.
    fn compile(&self, name: &str, source: &str) -> Result<u64> {
        let out = self.out.join(name);
        let _ = fs::remove_file(&out);
        let result = Command::new(COMPILER)
            .args(["-O2", "-I", TREE_INCLUDE, "-o"])
            .arg(&out)
            .arg(source)
            .current_dir(SOURCE_DIR)
            .stdin(Stdio::null())
            // One pipe only: with two, std's output() sets them non-blocking
            // by ioctl(FIONBIO) and panics when a policy refuses that ioctl
            // (TOMOYO's workload domain allows TCGETS only).
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("running {COMPILER}"))?;
        if !result.status.success() {
            let err = String::from_utf8_lossy(&result.stderr);
            bail!(
                "tcc {source} failed ({}): {}",
                result.status,
                err.lines().next().unwrap_or("no message")
            );
        }
        let bytes = fs::read(&out).with_context(|| format!("reading {}", out.display()))?;
        if !bytes.starts_with(b"\x7fELF") {
            bail!("tcc {source} wrote no executable");
        }
        Ok(bytes.len() as u64)
    }
}

impl Bench for Build {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let mut work = Work::default();
        for _ in 0..iters {
            for &(name, source) in PROGRAMS {
                work.bytes += self.compile(name, source)?;
            }
            work.ops += 1;
        }
        Ok(work)
    }
}
