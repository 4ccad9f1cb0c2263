//! The forms a table can take: one name each, shared by the table model,
//! the renderers (which chart goes with which form), `report --form` and
//! the JSON results (where a form is its stable name).
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! forms {
    ($($variant:ident = $name:literal: $doc:literal,)*) => {
        /// A table's form.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, clap::ValueEnum)]
        pub enum Form {
            $(
                #[doc = $doc]
                #[serde(rename = $name)]
                #[value(name = $name)]
                $variant,
            )*
        }

        impl Form {
            /// Its stable name, as the results and `report --form` spell it.
            pub fn name(self) -> &'static str {
                match self {
                    $(Form::$variant => $name,)*
                }
            }
        }
    };
}

forms! {
    Overview = "overview": "Configuration × kernel for one headline op (the atlas's first screen).",
    Table3 = "table3": "Operations × configurations with the change over `none` (LSMPMON, Table 3).",
    Table4 = "table4": "Hooks × configurations: each module's own time per call (LSMPMON, Table 4).",
    Account = "account": "Explained by hooks: calls per op × time per call against the overhead.",
    Inventory = "inventory": "Each module's hooks: implemented, called by the ops, how it names objects (LSMPMON, Tables 1 and 2).",
    Framework = "framework": "The LSM framework alone: a kernel built without it against the same source with it, and Debian's build (the LSM framework paper).",
    FrameworkReleases = "framework-releases": "The framework's cost release by release (what 6.9's static calls changed).",
    ImageGrowth = "image-growth": "What the framework and each module add to the kernel image, A - B (embedded SELinux, Table 8).",
    Table5 = "table5": "One configuration across kernels (LSMPMON, Table 5).",
    Table6_7 = "table6_7": "Syscalls × kernels (LSMPMON, Tables 6 and 7).",
    Footprint = "footprint": "Memory, policy size and module slab caches (embedded SELinux, Tables 8, 9, 11).",
    SelinuxPolicies = "selinux-policies": "Standard against embedded SELinux policy.",
    AvtabSlots = "avtab-slots": "The avtab's hash slots against the policy search at one rule count (embedded SELinux, Table 11).",
    AvcSweep = "avc-sweep": "The AVC sweep: distinct types against the AVC's slots.",
    AvcSweepCurve = "avc-sweep-curve": "The AVC sweep as a curve.",
    ImaHash = "ima_hash": "IMA's hash algorithms (the integrity-measurement paper).",
    ImaRead = "ima_read": "IMA measure-call latency on read.",
    ImaMmap = "ima_mmap": "IMA measure-call latency on mmap.",
    ImaModule = "ima_module": "IMA's kernel-module measurement: a module load by file and by buffer (the integrity-measurement paper).",
    Webstone = "webstone": "Web server connection rate (the LSM paper's Webstone).",
    WebstoneLatency = "webstone-latency": "Web server latency.",
    Yield = "yield": "Context switches in one address space (the pseudo multi-process paper).",
    Observer = "observer": "Each op's time under the trace against untraced (the observer effect).",
    Compare = "compare": "Two runs' shared figures with a verdict.",
    Bench = "bench": "One bench run's ops.",
    BenchCompare = "bench_compare": "A bench run against a baseline run.",
    Hooks = "hooks": "One trace's per-hook table (LSMPMON's).",
    PerLsm = "per_lsm": "One trace's cost per module.",
    PerSyscall = "per_syscall": "One trace's hooks per syscall.",
    PerCgroup = "per_cgroup": "One trace's hooks per cgroup (--by cgroup).",
}

impl std::fmt::Display for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Form;
    use clap::ValueEnum;

    #[test]
    fn a_form_is_its_name_in_json_and_on_the_command_line() {
        for f in Form::value_variants() {
            let json = serde_json::to_string(f).unwrap();
            assert_eq!(json, format!("\"{}\"", f.name()));
            assert_eq!(serde_json::from_str::<Form>(&json).unwrap(), *f);
            assert_eq!(Form::from_str(f.name(), false).unwrap(), *f);
        }
        assert!(serde_json::from_str::<Form>("\"table9\"").is_err());
    }
}
