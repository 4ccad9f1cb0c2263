//! fentry/fexit: an entry and an exit program per hook (5.5; the exit reads
//! the return with bpf_get_func_ret(), 5.17).
use super::family::{Build, Family};
use super::interface::Method;
use super::link::tracing_link;
use super::multi_link::MultiEntry;
use super::probe::{self, Probe, Target};
use super::template::{Kind, Template};

const WHY_FENTRY: &str = "fentry/fexit costs less per call than the multi-links (about 150 virtual \
    ns less than the session multi-link on 7.3, 550-750 less than the kprobe session on 6.12) and 80 \
    less than one session per hook; its slower attach and release (seconds, one trampoline per \
    hook) are paid once";

pub static FAMILY: Family = Family {
    name: "fentry/fexit",
    arg: "fentry-fexit",
    help: "An fentry and an fexit program per hook (5.17+: the exit reads the return with bpf_get_func_ret()); refused where the kernel lacks it.",
    // attach[0]: BPF_TRACE_FENTRY_MULTI where the kernel has it (--timing-windows).
    offered: |o| match o.func_ret {
        true => Ok([o.fentry_multi.unwrap_or(0), 0]),
        false => Err("the kernel lacks bpf_get_func_ret() (5.17)"),
    },
    refused_missing: "--method fentry-fexit: this kernel lacks bpf_get_func_ret() (5.17): \
        use --method auto or kprobe",
    dearer_per_call: false,
    why_auto: Some(WHY_FENTRY),
    counts: true,
    counts_by_multi_link: false,
    syscall_time: true,
    programs: |o| match (o.empty, o.no_preempt) {
        (true, _) => ["hook_empty"; 2],
        (false, true) => ["hook_entry_np", "hook_exit_np"],
        (false, false) => ["hook_entry", "hook_exit"],
    },
    build: |b: Build| {
        let [entry, exit] = b.programs;
        let entry_multi = match (b.windowed, b.attach[0]) {
            (true, m) if m != 0 => Some((b.template)(WINDOW_ENTRY, Kind::FentryMulti(m))?),
            _ => None,
        };
        Ok(Box::new(FentryFexit {
            entry: (b.template)(entry, Kind::Fentry)?,
            exit: (b.template)(exit, Kind::Fexit)?,
            entry_multi,
        }))
    },
};

/// --timing-windows' one entry program for every hook (BPF_TRACE_FENTRY_MULTI).
pub const WINDOW_ENTRY: &str = "hook_window_entry";

pub struct FentryFexit {
    pub entry: Template,
    pub exit: Template,
    /// --timing-windows on 7.x: every hook's entry in one multi-link.
    pub entry_multi: Option<Template>,
}

impl Method for FentryFexit {
    fn name(&self) -> &'static str {
        "fentry/fexit"
    }

    fn describe(&self) -> &'static str {
        "fentry/fexit probe pairs"
    }

    fn window_entries(&self, targets: &[Target]) -> Option<Result<MultiEntry, String>> {
        let t = self.entry_multi.as_ref()?;
        Some(MultiEntry::load(t, targets))
    }

    fn attach_window_calibration(
        &self,
        target: &Target,
    ) -> Option<Result<(Probe, MultiEntry), String>> {
        let t = self.entry_multi.as_ref()?;
        let pair = || {
            let exit = self.exit.load(target.consts, target.btf_id)?;
            let link = tracing_link(&exit, self.exit.attach_type())?;
            let mut entry = MultiEntry::load(t, std::slice::from_ref(target))?;
            entry.set(true)?;
            Ok((Probe::new(target.consts.hook_id, exit, link), entry))
        };
        Some(pair())
    }

    fn drop_window_link(&mut self) {
        self.entry_multi = None;
    }

    fn attach(&self, target: &Target) -> Result<Probe, String> {
        if target.consts.windowed() {
            return self.attach_exit(target);
        }
        probe::pair(target, &self.entry, &self.exit, |_, t, prog| {
            tracing_link(prog, t.attach_type())
        })
    }
}

impl FentryFexit {
    /// --timing-windows: both copies loaded, the exit attached; the entry
    /// waits for the first window.
    fn attach_exit(&self, target: &Target) -> Result<Probe, String> {
        let hook_id = target.consts.hook_id;
        let exit = self.exit.load(target.consts, target.btf_id)?;
        let link = tracing_link(&exit, self.exit.attach_type())?;
        if self.entry_multi.is_some() {
            return Ok(Probe::new(hook_id, exit, link));
        }
        let entry = self.entry.load(target.consts, target.btf_id)?;
        Ok(Probe::windowed(
            hook_id,
            vec![entry, exit],
            link,
            self.entry.attach_type(),
        ))
    }
}
