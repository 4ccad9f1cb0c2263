//! Which cells a matrix has, and what each kernel makes of a configuration:
//! not applicable (with the reason), or the LSM list it must show.
use std::{collections::HashMap, path::Path};

use anyhow::Result;

use crate::spec::Config;

/// A kernel's build configuration (`boot/config-*`).
pub struct KernelConfig {
    options: HashMap<String, String>,
    /// (major, minor) from the release string.
    pub version: (u32, u32),
}

impl KernelConfig {
    pub fn read(path: &Path, release: &str) -> Result<Self> {
        // A kernel's config is some 300 KiB.
        let bytes = base::secure_fs::read_regular("a kernel config", path, 64 << 20)?;
        Ok(Self::parse(&String::from_utf8_lossy(&bytes), release))
    }

    pub fn parse(text: &str, release: &str) -> Self {
        let options = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
            .collect();
        let mut nums = release
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|p| p.parse().ok());
        let version = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
        Self { options, version }
    }

    pub fn enabled(&self, option: &str) -> bool {
        self.options.get(option).is_some_and(|v| v == "y")
    }

    /// Why `config` cannot run on this kernel, if it cannot.
    pub fn not_applicable(&self, config: &Config) -> Option<String> {
        let (major, minor) = self.version;
        if let Some(min) = &config.spec.min_kernel {
            if min.parsed().is_some_and(|v| self.version < v) {
                return Some(format!(
                    "kernel {major}.{minor} is older than {}: {}",
                    min.version, min.why
                ));
            }
        }
        let missing: Vec<&str> = config
            .spec
            .requires
            .iter()
            .filter(|o| !self.enabled(o))
            .map(String::as_str)
            .collect();
        let framework = if !missing.is_empty() && !self.enabled("CONFIG_SECURITY") {
            " (it has no LSM framework: CONFIG_SECURITY is off)"
        } else {
            ""
        };
        (!missing.is_empty()).then(|| {
            format!(
                "kernel {}.{} is built without {}{framework}",
                self.version.0,
                self.version.1,
                missing.join(", ")
            )
        })
    }

    /// What `/sys/kernel/security/lsm` must list when booted with `lsm`
    /// (None: the kernel's CONFIG_LSM): `lockdown` first when it is an early
    /// LSM, `capability` always, the requested modules the kernel has (one
    /// of the exclusive ones), and from 6.9 on `ima`, `evm` last. Nothing on
    /// a kernel without the framework (CONFIG_SECURITY off: no list at all).
    pub fn expected_lsms(&self, lsm: Option<&str>) -> Vec<String> {
        if !self.enabled("CONFIG_SECURITY") {
            return Vec::new();
        }
        let default = self.options.get("CONFIG_LSM").cloned().unwrap_or_default();
        let requested = lsm.unwrap_or(&default);
        let early = self.enabled("CONFIG_SECURITY_LOCKDOWN_LSM_EARLY");
        let last_ima = self.version >= (6, 9);
        let mut out: Vec<String> = Vec::new();
        if early {
            out.push("lockdown".into());
        }
        out.push("capability".into());
        let mut exclusive_taken = false;
        for name in requested.split(',').map(str::trim) {
            if out.iter().any(|o| o == name) || !self.builds(name) {
                continue;
            }
            // integrity has no hooks of its own before 6.9; from 6.9 ima/evm come last.
            if matches!(name, "integrity" | "ima" | "evm" | "capability") {
                continue;
            }
            if name == "lockdown" && early {
                continue;
            }
            if EXCLUSIVE.contains(&name) {
                if exclusive_taken {
                    continue;
                }
                exclusive_taken = true;
            }
            out.push(name.to_string());
        }
        if last_ima {
            for (name, opt) in [("ima", "CONFIG_IMA"), ("evm", "CONFIG_EVM")] {
                if self.enabled(opt) {
                    out.push(name.into());
                }
            }
        }
        out
    }

    fn builds(&self, lsm: &str) -> bool {
        let opt = match lsm {
            "capability" => return true,
            "lockdown" => "CONFIG_SECURITY_LOCKDOWN_LSM",
            "integrity" => "CONFIG_INTEGRITY",
            "ima" => "CONFIG_IMA",
            "evm" => "CONFIG_EVM",
            "bpf" => "CONFIG_BPF_LSM",
            other => return self.enabled(&format!("CONFIG_SECURITY_{}", other.to_uppercase())),
        };
        self.enabled(opt)
    }
}

/// Modules of which only the first listed is activated.
const EXCLUSIVE: &[&str] = &["selinux", "smack", "apparmor"];

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN_6_1: &str = "CONFIG_SECURITY=y\nCONFIG_SECURITY_LOCKDOWN_LSM=y\nCONFIG_SECURITY_LOCKDOWN_LSM_EARLY=y\n\
        CONFIG_SECURITY_LANDLOCK=y\nCONFIG_SECURITY_YAMA=y\nCONFIG_SECURITY_SELINUX=y\n\
        CONFIG_SECURITY_APPARMOR=y\nCONFIG_SECURITY_TOMOYO=y\nCONFIG_BPF_LSM=y\nCONFIG_INTEGRITY=y\n\
        CONFIG_IMA=y\nCONFIG_EVM=y\n\
        CONFIG_LSM=\"landlock,lockdown,yama,loadpin,safesetid,integrity,apparmor,selinux,smack,tomoyo,bpf\"\n";

    #[test]
    fn default_list_matches_what_debian_6_1_shows() {
        // Seen in a 6.1 guest: lockdown,capability,landlock,yama,apparmor,tomoyo,bpf
        let k = KernelConfig::parse(DEBIAN_6_1, "6.1.0-56-cloud-amd64");
        assert_eq!(
            k.expected_lsms(None).join(","),
            "lockdown,capability,landlock,yama,apparmor,tomoyo,bpf"
        );
        assert_eq!(
            k.expected_lsms(Some("capability")).join(","),
            "lockdown,capability"
        );
        let k612 = KernelConfig::parse(DEBIAN_6_1, "6.12.57+deb13-cloud-amd64");
        assert_eq!(
            k612.expected_lsms(Some("capability,apparmor")).join(","),
            "lockdown,capability,apparmor,ima,evm"
        );
    }

    /// Debian 7.3's security options, as its config has them.
    const DEBIAN_7_3: &str = "CONFIG_SECURITY=y\nCONFIG_BPF_LSM=y\nCONFIG_SECURITY_SELINUX=y\n\
        # CONFIG_SECURITY_SMACK is not set\nCONFIG_SECURITY_TOMOYO=y\nCONFIG_SECURITY_APPARMOR=y\n\
        # CONFIG_SECURITY_LOADPIN is not set\nCONFIG_SECURITY_YAMA=y\n\
        # CONFIG_SECURITY_SAFESETID is not set\nCONFIG_SECURITY_LOCKDOWN_LSM=y\n\
        CONFIG_SECURITY_LOCKDOWN_LSM_EARLY=y\nCONFIG_SECURITY_LANDLOCK=y\nCONFIG_SECURITY_IPE=y\n\
        CONFIG_INTEGRITY=y\nCONFIG_IMA=y\nCONFIG_EVM=y\n\
        CONFIG_LSM=\"landlock,lockdown,yama,loadpin,safesetid,integrity,apparmor,selinux,smack,tomoyo,bpf,ipe\"\n";

    #[test]
    fn default_list_matches_what_debian_7_3_shows() {
        // Seen in a 7.3 guest (vm run --kernel 7.3): ipe, then ima and evm last.
        let k = KernelConfig::parse(DEBIAN_7_3, "7.3.4+deb13-cloud-amd64");
        assert_eq!(k.version, (7, 3));
        assert_eq!(
            k.expected_lsms(None).join(","),
            "lockdown,capability,landlock,yama,apparmor,tomoyo,bpf,ipe,ima,evm"
        );
        // The `none` baseline: IMA and EVM stay, IPE goes.
        assert_eq!(
            k.expected_lsms(Some("capability")).join(","),
            "lockdown,capability,ima,evm"
        );
    }

    #[test]
    fn a_kernel_without_the_framework_lists_no_module_whatever_lsm_asks() {
        let nolsm = DEBIAN_7_3.replace("CONFIG_SECURITY=y", "# CONFIG_SECURITY is not set");
        let k = KernelConfig::parse(&nolsm, "7.3.4");
        assert!(k.expected_lsms(Some("capability")).is_empty());
        assert!(k.expected_lsms(None).is_empty());
        let landlock = crate::spec::load("landlock", &crate::spec::search_path(&[])).unwrap();
        let bare = KernelConfig::parse("# CONFIG_SECURITY is not set\n", "7.3.4");
        let why = bare
            .not_applicable(&landlock)
            .expect("landlock needs the framework");
        assert!(
            why.contains("CONFIG_SECURITY_LANDLOCK") && why.contains("no LSM framework"),
            "{why}"
        );
    }

    #[test]
    fn requirements_decide_applicability() {
        let k = KernelConfig::parse(
            "CONFIG_SECURITY_SELINUX=y\n# CONFIG_SECURITY_LANDLOCK is not set\n",
            "5.10.0-1",
        );
        assert_eq!(k.version, (5, 10));
        assert!(k.enabled("CONFIG_SECURITY_SELINUX"));
        assert!(!k.enabled("CONFIG_SECURITY_LANDLOCK"));
    }

    #[test]
    fn a_kernel_older_than_a_configuration_needs_is_not_applicable() {
        let mut c = crate::spec::load("mac-label", &crate::spec::search_path(&[])).unwrap();
        let conf = format!("{DEBIAN_6_1}CONFIG_SECURITY_PATH=y\n");
        let k510 = KernelConfig::parse(&conf, "5.10.0-32-cloud-amd64");
        let why = k510.not_applicable(&c).unwrap();
        assert!(
            why.starts_with("kernel 5.10 is older than 5.17: ") && why.contains("bpf_loop"),
            "{why}"
        );
        for release in ["5.17.0", "6.1.0-56-cloud-amd64", "7.3.4+deb13-cloud-amd64"] {
            assert_eq!(
                KernelConfig::parse(&conf, release).not_applicable(&c),
                None,
                "{release}"
            );
        }
        c.spec.min_kernel = None;
        assert_eq!(k510.not_applicable(&c), None);
    }
}
