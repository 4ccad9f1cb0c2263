//! What the LSM framework and a module add to the kernel image (the
//! embedded-SELinux paper's Table 8: the kernel's growth beside library,
//! commands and policy), as that paper defines A - B: the build with the
//! module (A) against the build without it (B), from one source with every
//! other option alike. lsmpmon's own kernels record their sizes when built
//! (`vm/kernel/image_size.rs`); their cells carry them.
use super::framework::{one_recipe_source, NO_LSM};
use super::input::Run;
use base::form::Form;
use base::papers;
use base::table::{Cell, Row, Table};
use model::{ImageSizes, KernelRef, SectionSizes};

/// One build: its kernel label and what it recorded.
struct Build<'a> {
    label: String,
    kernel: &'a KernelRef,
    image: &'a ImageSizes,
}

pub fn tables(runs: &[Run]) -> Vec<Table> {
    let mut builds: Vec<Build> = Vec::new();
    for r in runs {
        let Some(k) = &r.kernel_ref else { continue };
        let Some(image) = &k.image else { continue };
        if !builds
            .iter()
            .any(|b| b.kernel.image_sha256 == k.image_sha256)
        {
            builds.push(Build {
                label: k.series.clone(),
                kernel: k,
                image,
            });
        }
    }
    builds
        .iter()
        .filter(|b| b.kernel.flavour == NO_LSM)
        .filter_map(|base| {
            let with: Vec<&Build> = builds
                .iter()
                .filter(|b| b.kernel.flavour != NO_LSM && one_recipe_source(b.kernel, base.kernel))
                .collect();
            (!with.is_empty()).then(|| table(base, &with))
        })
        .collect()
}

fn kib(bytes: u64) -> Cell {
    Cell::fixed(bytes as f64 / 1024.0, 1)
}

fn diff_kib(a: u64, b: u64) -> Cell {
    Cell::fixed((a as f64 - b as f64) / 1024.0, 1)
}

/// One of `size`'s figures of a part.
type Section = fn(&SectionSizes) -> u64;

/// The rows: the bzImage, the whole vmlinux by section, then each security
/// part either build has (a part a build lacks weighs 0 there).
fn rows(base: &Build, with: &[&Build]) -> Vec<(String, Vec<u64>)> {
    let all: Vec<&ImageSizes> = std::iter::once(base.image)
        .chain(with.iter().map(|b| b.image))
        .collect();
    let mut out: Vec<(String, Vec<u64>)> = vec![(
        "bzImage (compressed, as booted)".into(),
        all.iter().map(|i| i.bzimage_bytes).collect(),
    )];
    let sections: [(&str, Section); 4] = [
        ("text", |s| s.text_bytes),
        ("data", |s| s.data_bytes),
        ("bss", |s| s.bss_bytes),
        ("text + data + bss", SectionSizes::total_bytes),
    ];
    for (name, f) in sections {
        out.push((
            format!("vmlinux {name}"),
            all.iter().map(|i| f(&i.vmlinux)).collect(),
        ));
    }
    let mut parts: Vec<&String> = Vec::new();
    for i in &all {
        for p in i.parts.keys() {
            if !parts.contains(&p) {
                parts.push(p);
            }
        }
    }
    for p in parts {
        let label = if p == "security" {
            "security/*.o".to_string()
        } else {
            p.clone()
        };
        out.push((
            format!("{label}: text + data + bss"),
            all.iter()
                .map(|i| i.parts.get(p).map_or(0, SectionSizes::total_bytes))
                .collect(),
        ));
    }
    out
}

fn table(base: &Build, with: &[&Build]) -> Table {
    let mut header = vec![
        "KiB".to_string(),
        format!("{} (B: no LSM framework)", base.label),
    ];
    for b in with {
        header.push(format!("{} (A)", b.label));
        header.push(format!("A - B ({})", b.label));
    }
    let rows = rows(base, with)
        .into_iter()
        .map(|(label, bytes)| {
            let b = bytes[0];
            let mut cells = vec![kib(b)];
            for a in &bytes[1..] {
                cells.push(kib(*a));
                cells.push(diff_kib(*a, b));
            }
            Row { label, cells }
        })
        .collect();
    Table {
        form: Form::ImageGrowth,
        title: format!(
            "Kernel image growth ({}): {} {} with and without the LSM framework",
            papers::cite(&papers::EMBEDDED_SELINUX, "Table 8"),
            base.kernel.package,
            base.kernel.package_version
        ),
        kernel: base.label.clone(),
        notes: vec![
            "A - B as the paper defines it: the build with the module against the build without it, from one source package and one lsmpmon fragment (tinyconfig, -Os, xz-compressed); B turns off CONFIG_SECURITY and what depends on it. So A - B is the framework with its call sites (SECURITY_NETWORK, SECURITY_PATH where A has them), the module, the BPF LSM's hooks that trace's BPF LSM method needs (kernel/bpf/bpf_lsm.o, security/bpf), the integrity core CONFIG_SECURITY brings (security/integrity) and, on 6.1, fanotify's permission events.".into(),
            "Sizes as binutils' `size` counts them when lsmpmon built the kernel: vmlinux text is every allocated read-only section (code, read-only data, the kernel's BTF and symbol tables, init sections); a part is the object files of its directory as compiled, before the link (security/*.o: security.o, commoncap.o, which every kernel has, securityfs's inode.o, min_addr.o, device_cgroup.o, lsm_audit.o, as configured).".into(),
        ],
        header,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::tests::kernel_ref;
    use crate::test_runs::run;

    fn built(series: &str, flavour: &str, fragment: &str, smack_bytes: u64, bz: u64) -> Run {
        let mut k = kernel_ref(series, "src", fragment);
        k.flavour = flavour.into();
        let image = k.image.as_mut().unwrap();
        image.bzimage_bytes = bz;
        image.vmlinux.text_bytes = bz * 3;
        let part = |text_bytes| SectionSizes {
            text_bytes,
            data_bytes: 100,
            bss_bytes: 24,
        };
        image.parts.insert(
            "security".into(),
            part(if smack_bytes > 0 { 50_000 } else { 20_000 }),
        );
        if smack_bytes > 0 {
            image
                .parts
                .insert("security/smack".into(), part(smack_bytes));
        }
        let mut r = run(series, flavour, 1, "none", &[("stat", 1.0)]);
        r.kernel_ref = Some(k);
        r
    }

    #[test]
    fn a_minus_b_pairs_one_recipe_and_counts_a_missing_part_as_nothing() {
        let runs = vec![
            built("6.1-nolsm", NO_LSM, "frag", 0, 3_000_000),
            built("6.1-smack", "smack", "frag", 49_000, 3_100_000),
            // Another fragment: not the paper's A - B against this B.
            built("6.1-other", "other", "other-frag", 10_000, 9_000_000),
        ];
        let t = tables(&runs);
        assert_eq!(t.len(), 1);
        let t = &t[0];
        assert_eq!(t.form, Form::ImageGrowth);
        assert_eq!(t.header.len(), 4, "{:?}", t.header);
        assert!(t.header[1].starts_with("6.1-nolsm") && t.header[2].starts_with("6.1-smack"));
        let row = |p: &str| {
            &t.rows
                .iter()
                .find(|r| r.label.starts_with(p))
                .unwrap()
                .cells
        };
        let kib = |c: &Cell| match c {
            Cell::Fixed { value, .. } => *value,
            other => panic!("{other:?}"),
        };
        let bz = row("bzImage");
        assert_eq!(kib(&bz[2]), 100_000.0 / 1024.0);
        let smack = row("security/smack");
        assert_eq!((kib(&smack[0]), kib(&smack[2])), (0.0, 49_124.0 / 1024.0));
        assert_eq!(kib(&row("security/*.o")[2]), 30_000.0 / 1024.0);
        // No B: no table.
        assert!(tables(&runs[1..]).is_empty());
    }
}
