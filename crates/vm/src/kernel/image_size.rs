//! What a kernel lsmpmon built weighs, read from its build tree before the
//! tree is removed: the bzImage, the whole `vmlinux` and the security parts
//! of it, as binutils' `size` counts them (the embedded-SELinux paper's
//! Table 8 is the difference of two such builds).
use std::{collections::BTreeMap, fs, path::Path, process::Command};

use anyhow::{bail, Context, Result};

use base::command;
use model::{ImageSizes, SectionSizes};

/// The sizes of the built tree at `src`, built from a fragment of this sha256.
pub fn measure(src: &Path, fragment_sha256: String) -> Result<ImageSizes> {
    let bzimage_bytes = fs::metadata(src.join("arch/x86/boot/bzImage"))
        .context("the bzImage")?
        .len();
    let vmlinux = size_total(src, &["vmlinux".into()])?;
    let mut parts = BTreeMap::new();
    for (name, files) in security_parts(src)? {
        parts.insert(name, size_total(src, &files)?);
    }
    Ok(ImageSizes {
        fragment_sha256,
        source_patch_sha256: None,
        bzimage_bytes,
        vmlinux,
        parts,
    })
}

/// `security`: the objects in `security/` itself; `security/<dir>`: each
/// module directory that built an archive; the BPF LSM's object.
fn security_parts(src: &Path) -> Result<Vec<(String, Vec<String>)>> {
    let mut own: Vec<String> = Vec::new();
    let mut parts = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(src.join("security"))
        .context("the build's security/")?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = format!("security/{name}");
        if e.path().is_dir() {
            if has_objects(&e.path()) {
                parts.push((rel.clone(), vec![format!("{rel}/built-in.a")]));
            }
        } else if name.ends_with(".o") && !name.ends_with(".mod.o") {
            own.push(rel);
        }
    }
    if !own.is_empty() {
        parts.push(("security".into(), own));
    }
    if src.join("kernel/bpf/bpf_lsm.o").is_file() {
        parts.push((
            "kernel/bpf/bpf_lsm.o".into(),
            vec!["kernel/bpf/bpf_lsm.o".into()],
        ));
    }
    Ok(parts)
}

/// A module directory that compiled something (an empty built-in.a is an
/// archive header alone).
fn has_objects(dir: &Path) -> bool {
    fs::metadata(dir.join("built-in.a")).is_ok_and(|m| m.len() > 8)
        && fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().ends_with(".o"))
            })
            .unwrap_or(false)
}

/// `size -B -t` over `files` (paths relative to `src`): the totals line.
fn size_total(src: &Path, files: &[String]) -> Result<SectionSizes> {
    let out = command::output(
        Command::new("size")
            .current_dir(src)
            .args(["-B", "-t", "-d"])
            .args(files),
    )
    .with_context(|| format!("size {}", files.join(" ")))?;
    parse_totals(&out)
}

fn parse_totals(out: &str) -> Result<SectionSizes> {
    // `size -t` ends with a "(TOTALS)" line; over one file that line may be
    // the file's own.
    let line = out
        .lines()
        .rev()
        .find(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<u64>().is_ok())
        })
        .context("size printed no figures")?;
    let nums: Vec<u64> = line
        .split_whitespace()
        .take(3)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("size's line {line:?}"))?;
    let [text_bytes, data_bytes, bss_bytes] = nums[..] else {
        bail!("size's line {line:?} has no text, data and bss");
    };
    Ok(SectionSizes {
        text_bytes,
        data_bytes,
        bss_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_totals_line_is_read_not_the_first_file() {
        let out = "   text    data     bss     dec     hex filename\n\
                   10      20      30      60      3c security/a.o\n\
                   1000    2000    3000    6000    1770 (TOTALS)\n";
        let s = parse_totals(out).unwrap();
        assert_eq!(
            (s.text_bytes, s.data_bytes, s.bss_bytes),
            (1000, 2000, 3000)
        );
        assert_eq!(s.total_bytes(), 6000);
        assert!(parse_totals("   text    data     bss     dec     hex filename\n").is_err());
        assert!(parse_totals("12 x 3 4 5 f\n").is_err());
    }

    /// binutils' own figures for an object this test compiles: the sizes
    /// are those of the sections the compiler made, in their columns.
    #[test]
    fn size_counts_an_objects_sections_in_their_columns() {
        let dir = std::env::temp_dir().join(format!("lsmpmon-size-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let c = dir.join("a.c");
        fs::write(
            &c,
            "char big_bss[40000];\nint big_data[5000] = {1};\nint f(int x) { return x * 3 + big_data[x] + big_bss[x]; }\n",
        )
        .unwrap();
        let ok = Command::new("gcc")
            .current_dir(&dir)
            .args(["-O2", "-c", "a.c", "-o", "a.o"])
            .status()
            .unwrap()
            .success();
        assert!(ok, "gcc");
        let s = size_total(&dir, &["a.o".into()]).unwrap();
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(s.bss_bytes, 40000);
        assert_eq!(s.data_bytes, 20000);
        assert!(s.text_bytes > 0 && s.text_bytes < 1000, "{s:?}");
    }
}
