//! Lab configurations are data: `configs/<name>/spec.toml` (format in
//! configs/README.md) and the access matrix every confining one enforces.
use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use base::{error::usage, secure_fs};
pub use model::cell::{AccessOp, Expect, ProofKind};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub description: String,
    /// Another configuration whose files this one takes first (its own
    /// files replace theirs by name): a variant without copies.
    pub files_from: Option<String>,
    /// SELinux: what the kernel's rules table must hold once the policy is
    /// loaded, read from the kernel's own avtab line (a kernel built with
    /// CONFIG_SECURITY_SELINUX_DEBUG); the cell fails otherwise.
    pub avtab: Option<AvtabExpect>,
    /// The kernel's `lsm=` parameter; None: the kernel's own list.
    pub lsm: Option<String>,
    #[serde(default)]
    pub append: String,
    /// Kernel config options that must be `y`.
    #[serde(default)]
    pub requires: Vec<String>,
    /// The oldest kernel it runs on, and why (what it needs that older
    /// kernels lack and their config cannot show).
    pub min_kernel: Option<MinKernel>,
    #[serde(default)]
    pub measured_lsms: Vec<String>,
    #[serde(default)]
    pub host_packages: Vec<String>,
    #[serde(default)]
    pub programs: Vec<PathBuf>,
    pub host_build: Option<String>,
    pub setup: Option<String>,
    #[serde(default)]
    pub policy_files: Vec<String>,
    #[serde(default)]
    pub cannot_express: Vec<String>,
    #[serde(default)]
    pub confine: Confine,
    pub proof: Proof,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AvtabExpect {
    pub rules: u64,
    /// Hash slots: a slot count other than the kernel's own rule is asked
    /// for with `lsmpmon_avtab_slots=` in `append` (lsmpmon's
    /// 7.3-selinux-avtab kernel honours it).
    pub slots: u64,
}

/// The boot parameter lsmpmon's patched kernel reads (kernels/7.3-avtab-slots.patch).
pub const AVTAB_SLOTS_PARAM: &str = "lsmpmon_avtab_slots=";

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MinKernel {
    /// `major.minor`.
    pub version: String,
    pub why: String,
}

impl MinKernel {
    /// (major, minor), checked when the spec is read.
    pub fn parsed(&self) -> Option<(u32, u32)> {
        let (a, b) = self.version.split_once('.')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Confine {
    pub attr_file: Option<String>,
    pub attr_value: Option<String>,
    #[serde(default)]
    pub landlock: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    pub kind: ProofKind,
    /// deny: "kmsg" or a file where the kernel records denials.
    pub record: Option<String>,
    /// deny: a line of `record` containing this proves the record.
    pub pattern: Option<String>,
    /// deny: lines one record spans from the matching one (TOMOYO's audit log:
    /// header, domain, request).
    #[serde(default = "one")]
    pub record_lines: usize,
    /// deny: why the module leaves no record of a denial (then errnos alone prove it).
    pub no_record: Option<String>,
    /// measure: a TPM (swtpm) is attached and PCR 10 must change.
    #[serde(default)]
    pub tpm: bool,
}

fn one() -> usize {
    1
}

/// A configuration found on disk.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    pub dir: PathBuf,
    /// The directories of its `files_from` chain, farthest first: their
    /// files go into the guest before its own.
    pub base_dirs: Vec<PathBuf>,
    pub spec: Spec,
    /// sha256 over the directory's files (names and contents), sorted.
    pub hash: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccessMatrix {
    pub row: Vec<Row>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub name: String,
    pub op: AccessOp,
    pub path: String,
    pub expect: Expect,
}

pub const MATRIX_FILE: &str = "access-matrix.toml";
pub const SPEC_FILE: &str = "spec.toml";

/// The configuration directories: `--config-dir`s first (they win on a name
/// clash), then the `configs/` shipped with lsmpmon.
pub fn search_path(extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = extra.to_vec();
    dirs.push(shipped_dir());
    dirs
}

/// `search_path`, refusing a `--config-dir` that is not a directory.
pub fn search_path_checked(extra: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if let Some(d) = extra.iter().find(|d| !d.is_dir()) {
        return Err(usage(format!(
            "--config-dir {}: not a directory",
            d.display()
        )));
    }
    Ok(search_path(extra))
}

/// Where the Debian package installs the configurations, relative to the
/// directory of the binary (`/usr/bin`).
const PACKAGED_DIR: &str = "../share/lsmpmon/configs";

/// The shipped configurations: LSMPMON_CONFIGS if set; for an installed
/// lsmpmon (one with `../share/lsmpmon/configs` next to its directory) the
/// packaged ones; else `configs/` of the source tree it was built from.
pub fn shipped_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("LSMPMON_CONFIGS") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().ok();
    exe.as_deref()
        .and_then(Path::parent)
        .map(|bin| bin.join(PACKAGED_DIR))
        .filter(|d| d.is_dir())
        .and_then(|d| d.canonicalize().ok())
        .unwrap_or_else(|| {
            let tree = Path::new(base::SOURCE_TREE);
            tree.canonicalize()
                .unwrap_or_else(|_| tree.into())
                .join("configs")
        })
}

/// Where a configuration came from, without this machine's paths:
/// `configs/<name>` for a shipped one, else relative to the working
/// directory when below it, else its name (its hash identifies it).
pub fn shown_dir(c: &Config) -> String {
    if c.dir.parent() == Some(shipped_dir().as_path()) {
        return format!("configs/{}", c.name);
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    match c.dir.strip_prefix(&cwd) {
        Ok(rel) if c.dir.is_absolute() => rel.display().to_string(),
        _ if c.dir.is_relative() => c.dir.display().to_string(),
        _ => c.name.clone(),
    }
}

/// Every configuration name available, sorted.
pub fn available(dirs: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = dirs
        .iter()
        .flat_map(|d| fs::read_dir(d).into_iter().flatten().flatten())
        .filter(|e| e.path().join(SPEC_FILE).is_file())
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A configuration that is in none of `dirs`: the ones that are, or, when
/// there are none, where lsmpmon looked.
fn unknown(name: &str, dirs: &[PathBuf]) -> anyhow::Error {
    let names = available(dirs);
    if !names.is_empty() {
        return usage(format!(
            "unknown configuration '{name}': use one of {} (or add a directory with --config-dir)",
            names.join(", ")
        ));
    }
    let from_env = std::env::var_os("LSMPMON_CONFIGS").map(PathBuf::from);
    let looked: Vec<String> = dirs
        .iter()
        .map(|d| match &from_env {
            Some(e) if e == d => format!("{} (LSMPMON_CONFIGS)", d.display()),
            _ => d.display().to_string(),
        })
        .collect();
    usage(format!(
        "unknown configuration '{name}': no configurations found in {} (each is a directory \
         holding {SPEC_FILE}): set LSMPMON_CONFIGS to the directory of lsmpmon's configs/, or \
         add one with --config-dir",
        looked.join(", ")
    ))
}

pub fn load(name: &str, dirs: &[PathBuf]) -> Result<Config> {
    let (dir, spec) = load_one(name, dirs)?;
    let base_dirs = files_from_chain(name, &spec, dirs)?;
    let layers: Vec<PathBuf> = base_dirs.iter().chain([&dir]).cloned().collect();
    Ok(Config {
        name: name.to_string(),
        hash: hash_layers(&layers)?,
        dir,
        base_dirs,
        spec,
    })
}

/// At most this many configurations below one.
const MAX_FILES_FROM: usize = 4;

/// The directories `name`'s `files_from` names, farthest first; refused
/// when one is unknown, or the chain loops or runs too deep.
fn files_from_chain(name: &str, spec: &Spec, dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut chain = Vec::new();
    let mut seen = vec![name.to_string()];
    let mut next = spec.files_from.clone();
    while let Some(base) = next {
        if seen.contains(&base) || seen.len() > MAX_FILES_FROM {
            return Err(usage(format!(
                "configuration '{name}': files_from loops or runs deeper than {MAX_FILES_FROM} ({} -> {base})",
                seen.join(" -> ")
            )));
        }
        let of = seen.last().cloned().unwrap_or_default();
        let config =
            load_one(&base, dirs).with_context(|| format!("files_from of configuration '{of}'"))?;
        next = config.1.files_from;
        chain.insert(0, config.0);
        seen.push(base);
    }
    Ok(chain)
}

/// One configuration's directory and spec, without its files_from.
fn load_one(name: &str, dirs: &[PathBuf]) -> Result<(PathBuf, Spec)> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(usage(format!("bad configuration name '{name}'")));
    }
    let Some(dir) = dirs
        .iter()
        .map(|d| d.join(name))
        .find(|d| d.join(SPEC_FILE).is_file())
    else {
        return Err(unknown(name, dirs));
    };
    let spec = parse_spec(&dir.join(SPEC_FILE))?;
    Ok((dir, spec))
}

/// A spec or the access matrix is a few KiB: anything far larger is not one.
const MAX_SPEC_BYTES: u64 = 1 << 20;
/// A configuration's policy files: a SELinux policy is a few MiB.
const MAX_CONFIG_FILE_BYTES: u64 = 256 << 20;

/// The text of a spec file (or the matrix): a regular file of bounded size.
fn read_text(path: &Path) -> Result<String> {
    let bytes = secure_fs::read_regular("", path, MAX_SPEC_BYTES)?;
    String::from_utf8(bytes)
        .map_err(|_| usage(format!("{}: not UTF-8 text: not a spec", path.display())))
}

pub fn parse_spec(path: &Path) -> Result<Spec> {
    let text = read_text(path)?;
    let spec: Spec = toml::from_str(&text).map_err(|e| malformed(path, &e))?;
    check_spec(&spec).map_err(|why| usage(format!("{}: {why}", path.display())))?;
    Ok(spec)
}

/// toml's message names the field; it spans several lines with a caret.
fn malformed(path: &Path, e: &toml::de::Error) -> anyhow::Error {
    let line = e
        .span()
        .map(|s| {
            let text = fs::read_to_string(path).unwrap_or_default();
            format!(
                " (line {})",
                text[..s.start.min(text.len())].lines().count().max(1)
            )
        })
        .unwrap_or_default();
    usage(format!(
        "{}{line}: {}",
        path.display(),
        e.message().replace('\n', " ")
    ))
}

fn check_spec(spec: &Spec) -> std::result::Result<(), String> {
    if let Some(m) = spec.min_kernel.as_ref().filter(|m| m.parsed().is_none()) {
        return Err(format!(
            "min_kernel.version {:?} is not major.minor (e.g. \"5.17\")",
            m.version
        ));
    }
    let p = &spec.proof;
    let record = p.record.is_some() && p.pattern.is_some();
    if p.kind == ProofKind::Deny && record == p.no_record.is_some() {
        return Err(
            "kind = \"deny\" needs fields proof.record and proof.pattern, or proof.no_record (why the module records nothing)"
                .into(),
        );
    }
    if p.kind == ProofKind::Deny && spec.confine == Confine::default() && spec.setup.is_none() {
        return Err("a \"deny\" proof needs [confine] or a setup script that confines".into());
    }
    if p.tpm && p.kind != ProofKind::Measure {
        return Err("field proof.tpm only applies to kind = \"measure\"".into());
    }
    if spec.confine.attr_file.is_some() != spec.confine.attr_value.is_some() {
        return Err("fields confine.attr_file and confine.attr_value go together".into());
    }
    if let Some(lsm) = &spec.lsm {
        if lsm.is_empty()
            || !lsm
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == ',' || c == '_')
        {
            return Err(format!(
                "field lsm: '{lsm}' is not a comma-separated list of LSM names"
            ));
        }
    }
    if let Some(a) = spec.avtab {
        if a.slots < 2 || a.slots > 1 << 16 || !a.slots.is_power_of_two() || a.rules == 0 {
            return Err(format!(
                "field avtab: slots {} is not a power of two from 2 to 65536, or rules is 0",
                a.slots
            ));
        }
    }
    let asked = spec
        .append
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(AVTAB_SLOTS_PARAM))
        .next_back();
    if let Some(asked) = asked {
        if spec.avtab.map(|a| a.slots.to_string()).as_deref() != Some(asked) {
            return Err(format!(
                "field append asks for {AVTAB_SLOTS_PARAM}{asked}: field avtab must say slots = {asked} (what the cell proves)"
            ));
        }
    }
    for o in &spec.requires {
        if !o.starts_with("CONFIG_") {
            return Err(format!("field requires: '{o}' is not a CONFIG_ option"));
        }
    }
    for p in &spec.programs {
        if !p.is_absolute() {
            return Err(format!(
                "field programs: '{}' is not an absolute path",
                p.display()
            ));
        }
    }
    Ok(())
}

/// The one access matrix, lsmpmon's own: a `--config-dir` cannot replace it
/// (that would weaken every configuration's proof).
pub fn load_access_matrix() -> Result<AccessMatrix> {
    let path = shipped_dir().join(MATRIX_FILE);
    let text = read_text(&path)?;
    let m: AccessMatrix = toml::from_str(&text).map_err(|e| malformed(&path, &e))?;
    if !m.row.iter().any(|r| r.expect == Expect::Deny) {
        return Err(usage(format!("{}: no row expects deny", path.display())));
    }
    Ok(m)
}

/// sha256 over the files the guest gets from `layers` (a later layer's
/// file replaces an earlier one's of the same name), names and contents.
pub fn hash_layers(layers: &[PathBuf]) -> Result<String> {
    let mut files = std::collections::BTreeMap::new();
    for dir in layers {
        let mut rels = Vec::new();
        collect_files(dir, dir, &mut rels)?;
        for rel in rels {
            files.insert(rel.clone(), dir.join(rel));
        }
    }
    let mut h = Sha256::new();
    for (rel, path) in files {
        let bytes = secure_fs::read_regular("", &path, MAX_CONFIG_FILE_BYTES)?;
        h.update(rel.as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(format!("{:x}", h.finalize()))
}

pub fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    for e in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let e = e?;
        let ty = e.file_type()?;
        if ty.is_dir() {
            collect_files(root, &e.path(), out)?;
        } else if ty.is_file() {
            let rel = e.path().strip_prefix(root)?.to_string_lossy().into_owned();
            out.push(rel);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        fs::create_dir_all(dir).unwrap();
        let p = dir.join(SPEC_FILE);
        fs::write(&p, text).unwrap();
        p
    }

    /// Issue 34 item 20: with no configuration anywhere the refusal said
    /// "use one of  (or add…)", an empty list; it says where it looked.
    #[test]
    fn no_configurations_anywhere_names_where_lsmpmon_looked() {
        let dirs = [
            PathBuf::from("/nonexistent"),
            PathBuf::from("/proc/self/fdinfo"),
        ];
        let err = load("none", &dirs).unwrap_err();
        let text = err.to_string();
        assert_eq!(base::error::exit_code(&err), 2);
        assert!(
            text.contains("no configurations found in /nonexistent, /proc/self/fdinfo"),
            "{text}"
        );
        assert!(!text.contains("use one of"), "{text}");
        let shipped = [shipped_dir()];
        let text = load("no-such-config", &shipped).unwrap_err().to_string();
        assert!(
            text.contains("use one of") && text.contains("selinux-mini"),
            "{text}"
        );
    }

    #[test]
    fn malformed_specs_name_file_and_field() {
        let d = std::env::temp_dir().join(format!("lsmpmon-spec-{}", std::process::id()));
        let p = write(
            &d,
            "description = \"x\"\nlsmm = \"selinux\"\n[proof]\nkind = \"baseline\"\n",
        );
        let msg = parse_spec(&p).unwrap_err().to_string();
        assert!(msg.contains("spec.toml") && msg.contains("lsmm"), "{msg}");
        assert!(!msg.contains('\n'));

        write(&d, "description = \"x\"\n[proof]\nkind = \"deny\"\n");
        let msg = parse_spec(&p).unwrap_err().to_string();
        assert!(msg.contains("proof.record"), "{msg}");

        write(&d, "description = \"x\"\n[proof]\nkind = \"maybe\"\n");
        let msg = parse_spec(&p).unwrap_err().to_string();
        assert!(msg.contains("maybe") && msg.contains("line 3"), "{msg}");

        write(
            &d,
            "description = \"x\"\nmin_kernel = { version = \"5\", why = \"w\" }\n[proof]\nkind = \"baseline\"\n",
        );
        let msg = parse_spec(&p).unwrap_err().to_string();
        assert!(msg.contains("min_kernel.version \"5\""), "{msg}");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn shipped_configs_and_matrix_parse() {
        let dirs = search_path(&[]);
        let names = available(&dirs);
        assert!(names.contains(&"none".to_string()), "{names:?}");
        for n in &names {
            load(n, &dirs).unwrap_or_else(|e| panic!("{n}: {e}"));
        }
        let m = load_access_matrix().unwrap();
        assert!(m.row.iter().any(|r| r.expect == Expect::Allow));
    }

    #[test]
    fn directory_hash_changes_with_content_and_names() {
        let d = std::env::temp_dir().join(format!("lsmpmon-hash-{}", std::process::id()));
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("sub/a"), "1").unwrap();
        let h1 = hash_layers(std::slice::from_ref(&d)).unwrap();
        fs::write(d.join("sub/a"), "2").unwrap();
        let h2 = hash_layers(std::slice::from_ref(&d)).unwrap();
        fs::rename(d.join("sub/a"), d.join("sub/b")).unwrap();
        let h3 = hash_layers(std::slice::from_ref(&d)).unwrap();
        assert!(h1 != h2 && h2 != h3 && h1 != h3);
        fs::remove_dir_all(&d).unwrap();
    }

    /// A variant takes its base's files first; its own replace them by name.
    /// The chain's hash moves with a base's file; a loop, an unknown base or
    /// a chain too deep is refused with exit 2; slot counts that are no
    /// power of two are refused where the spec is read.
    #[test]
    fn files_from_layers_a_variant_over_its_base() {
        let d = std::env::temp_dir().join(format!("lsmpmon-layers-{}", std::process::id()));
        let spec =
            |from: &str| format!("description = \"x\"\n{from}[proof]\nkind = \"baseline\"\n");
        write(&d.join("base"), &spec(""));
        fs::write(d.join("base/policy"), "base").unwrap();
        fs::write(d.join("base/setup.sh"), "base").unwrap();
        write(&d.join("variant"), &spec("files_from = \"base\"\n"));
        fs::write(d.join("variant/setup.sh"), "variant").unwrap();
        let dirs = [d.clone()];
        let c = load("variant", &dirs).unwrap();
        assert_eq!(c.base_dirs, vec![d.join("base")]);
        let out = d.join("guest");
        for layer in c.base_dirs.iter().chain([&c.dir]) {
            base::secure_fs::copy_tree_over(layer, &out).unwrap();
        }
        assert_eq!(fs::read_to_string(out.join("policy")).unwrap(), "base");
        assert_eq!(fs::read_to_string(out.join("setup.sh")).unwrap(), "variant");
        fs::write(d.join("base/policy"), "changed").unwrap();
        assert_ne!(load("variant", &dirs).unwrap().hash, c.hash);

        write(&d.join("base"), &spec("files_from = \"variant\"\n"));
        let err = load("variant", &dirs).unwrap_err();
        assert_eq!(base::error::exit_code(&err), 2);
        assert!(err.to_string().contains("loops"), "{err}");
        write(&d.join("base"), &spec("files_from = \"nowhere\"\n"));
        let err = load("variant", &dirs).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("files_from of configuration 'base': unknown configuration 'nowhere'"),
            "{text}"
        );
        assert_eq!(base::error::exit_code(&err), 2);

        write(
            &d.join("slots"),
            &spec("avtab = { rules = 8188, slots = 1000 }\n"),
        );
        let err = load("slots", &dirs).unwrap_err().to_string();
        assert!(err.contains("slots 1000 is not a power of two"), "{err}");
        fs::remove_dir_all(&d).unwrap();
    }
}
