//! The access matrix, tried by the workload itself (`lab access`, hidden):
//! each row's call and what it returned.
use base::error::errno_name;
use std::{
    fs::OpenOptions,
    io::Read,
    os::unix::fs::OpenOptionsExt,
    path::Path,
    process::{Command, Stdio},
};

use crate::spec::{AccessMatrix, AccessOp, Row};
pub use model::cell::Outcome;

pub fn try_all(m: &AccessMatrix) -> Vec<Outcome> {
    m.row.iter().map(try_row).collect()
}

fn try_row(r: &Row) -> Outcome {
    let errno = attempt(r.op, Path::new(&r.path)).err();
    Outcome {
        row: r.name.clone(),
        op: r.op,
        path: r.path.clone(),
        expect: r.expect,
        errno,
        result: errno.map_or_else(|| "allowed".into(), errno_name),
    }
}

fn attempt(op: AccessOp, path: &Path) -> Result<(), i32> {
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    match op {
        AccessOp::Read => {
            let mut f = OpenOptions::new().read(true).open(path).map_err(errno)?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf).map_err(errno)?;
        }
        AccessOp::Write => {
            OpenOptions::new().write(true).open(path).map_err(errno)?;
        }
        AccessOp::Create => {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .mode(0o600)
                .open(path)
                .map_err(errno)?;
            std::fs::remove_file(path).map_err(errno)?;
        }
        AccessOp::Exec => {
            let st = Command::new(path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(errno)?;
            if !st.success() {
                return Err(libc::ECHILD);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Expect;

    #[test]
    fn rows_report_what_the_kernel_returned() {
        let d = std::env::temp_dir().join(format!("lsmpmon-access-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let public = d.join("public");
        std::fs::write(&public, "x").unwrap();
        let row = |name: &str, op, path: &Path, expect| Row {
            name: name.into(),
            op,
            path: path.display().to_string(),
            expect,
        };
        let m = AccessMatrix {
            row: vec![
                row("r", AccessOp::Read, &public, Expect::Allow),
                row("missing", AccessOp::Read, &d.join("nope"), Expect::Deny),
                row("c", AccessOp::Create, &d.join("new"), Expect::Allow),
                row("x", AccessOp::Exec, Path::new("/bin/false"), Expect::Allow),
            ],
        };
        let out = try_all(&m);
        assert!(out[0].allowed() && out[0].as_expected());
        // ENOENT is not a denial: a deny row that fails for another reason fails.
        assert_eq!(out[1].result, "ENOENT");
        assert!(!out[1].denied() && !out[1].as_expected());
        assert!(
            out[2].allowed() && !d.join("new").exists(),
            "created and removed"
        );
        assert!(!out[3].allowed(), "exit status 1 is not success");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
