//! What the LSM framework and a module add to the kernel image (the
//! embedded-SELinux paper's Table 8: the kernel's growth beside library,
//! commands and policy), as that paper defines A - B: the build with the
//! module (A) against the build without it (B), from one source with every
//! other option alike. lsmpmon's own kernels record their sizes when built
//! (`vm/kernel/image_size.rs`); their cells carry them.
use super::framework::NO_LSM;
use super::input::Run;
use crate::base::form::Form;
use crate::base::papers;
use crate::base::table::{Cell, Row, Table};
use crate::model::{ImageSizes, KernelRef, SectionSizes};

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
                .filter(|b| b.kernel.flavour != NO_LSM && same_source(b.kernel, base.kernel))
                .collect();
            (!with.is_empty()).then(|| table(base, &with))
        })
        .collect()
}

/// Built from the same source package file.
fn same_source(a: &KernelRef, b: &KernelRef) -> bool {
    a.package == b.package && a.deb_sha256 == b.deb_sha256
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
            "security/*.o (framework, capability, securityfs)".to_string()
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
            "A - B as the paper defines it: the build with the framework and the module against the build without them, from one source package and lsmpmon's options alike (tinyconfig, -Os, xz-compressed); B turns off CONFIG_SECURITY and what depends on it. Sizes as binutils' `size` counts them when lsmpmon built the kernel: text is code and read-only data; a part is the objects of its directory in the link (security/*.o: the framework's own files, with commoncap, which every kernel links). A's module builds also carry the BPF LSM's hooks (kernel/bpf/bpf_lsm.o) that trace's BPF LSM method needs.".into(),
        ],
        header,
        rows,
    }
}
