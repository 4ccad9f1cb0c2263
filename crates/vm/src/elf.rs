//! Whether a binary can run as the guest's lsmpmon: the guest has busybox
//! and no C library or loader, so only an x86-64 ELF executable without a
//! program interpreter (no PT_INTERP program header: static) runs there.
//! Checked on the host before the boot: in the guest it is a kernel panic.
use std::{fs, os::unix::fs::FileExt, os::unix::fs::OpenOptionsExt, path::Path};

use anyhow::Result;

use base::error::usage;

const PT_INTERP: u32 = 3;
const EM_X86_64: u16 = 62;
/// ELF64's program header entry size.
const PHDR_BYTES: u16 = 56;

/// The size of the static x86-64 executable at `path`, or one line naming
/// `what` (the option) and what is wrong with it. Only its headers are read.
pub fn static_executable(what: &str, path: &Path) -> Result<u64> {
    let name = format!("{what} {}", path.display());
    let refuse = |why: &str| {
        usage(format!(
            "{name}: {why}: give a static x86-64 lsmpmon (this repository's \
             cargo build --release makes one)"
        ))
    };
    // O_NONBLOCK: opening a FIFO must not wait for a writer.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| usage(format!("cannot read {name}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| usage(format!("cannot read {name}: {e}")))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file (a directory, device or FIFO)"));
    }
    let mut eh = [0u8; 64];
    let not_elf = "not an x86-64 ELF executable";
    file.read_exact_at(&mut eh, 0)
        .map_err(|_| refuse(not_elf))?;
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let e_type = u16_at(&eh, 16);
    if &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 || u16_at(&eh, 18) != EM_X86_64 {
        return Err(refuse(not_elf));
    }
    if e_type != 2 && e_type != 3 {
        return Err(refuse("an ELF file that is not an executable"));
    }
    let phoff = u64::from_le_bytes(eh[32..40].try_into().unwrap_or_default());
    let (entry_bytes, count) = (u16_at(&eh, 54), u16_at(&eh, 56));
    let table_end = u64::from(entry_bytes)
        .checked_mul(u64::from(count))
        .and_then(|n| n.checked_add(phoff));
    if entry_bytes < PHDR_BYTES || table_end.is_none_or(|end| end > meta.len()) {
        return Err(refuse("a malformed ELF file (its program headers)"));
    }
    for i in 0..u64::from(count) {
        let mut p_type = [0u8; 4];
        file.read_exact_at(&mut p_type, phoff + i * u64::from(entry_bytes))
            .map_err(|e| usage(format!("cannot read {name}: {e}")))?;
        if u32::from_le_bytes(p_type) == PT_INTERP {
            return Err(refuse(
                "dynamically linked (it names a program interpreter), and the guest has no C \
                 library or loader",
            ));
        }
    }
    Ok(meta.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(path: &Path) -> String {
        static_executable("--lsmpmon-bin", path)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn only_a_static_x86_64_executable_is_accepted() {
        let me = std::env::current_exe().unwrap();
        // The test binary is built as lsmpmon is: static (.cargo/config.toml).
        assert_eq!(
            static_executable("x", &me).unwrap(),
            fs::metadata(&me).unwrap().len()
        );
        for (path, why) in [
            ("/dev/zero", "not a regular file"),
            ("/etc/hostname", "not an x86-64 ELF"),
            ("/", "not a regular file"),
        ] {
            let e = err(Path::new(path));
            assert!(
                e.contains(why) && e.contains("--lsmpmon-bin"),
                "{path}: {e}"
            );
        }
        let dynamic = ["/bin/ls", "/usr/bin/ls"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.exists())
            .expect("a dynamically linked ls");
        let e = err(dynamic);
        assert!(e.contains("dynamically linked"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn a_truncated_program_header_table_is_refused() {
        let me = fs::read(std::env::current_exe().unwrap()).unwrap();
        let path = std::env::temp_dir().join(format!("elf-cut-{}", std::process::id()));
        fs::write(&path, &me[..64]).unwrap();
        let e = err(&path);
        fs::remove_file(&path).unwrap();
        assert!(e.contains("malformed"), "{e}");
    }
}
