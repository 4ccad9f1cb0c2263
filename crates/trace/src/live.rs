//! The trace engine kept attached for another engine (`serve`, `top`): it
//! attaches as `trace` does (same selection, filters, method and probe-floor
//! calibration), lends the running session to the caller, and releases the
//! probes after, as `trace` does. `trace ctl` keeps working meanwhile.
use std::mem::MaybeUninit;

use anyhow::Result;

use super::answer::answer;
pub use super::answer::Reset;
use super::args::EngineArgs;
use super::report::{SortKey, View};
use super::session::Session;
use super::{command, ctl};
use model::TraceResult;

/// A running session, lent to the caller of [`attached`].
pub struct Live<'s, 'obj> {
    session: &'s mut Session<'obj>,
    server: Option<ctl::Server>,
    reset: Reset,
}

/// Attaches, runs `body` on the live session, then releases the probes
/// (whatever `body` returned). The kernel's refusals are `trace`'s one lines.
pub fn attached<T>(
    args: &EngineArgs,
    reset: Reset,
    body: impl FnOnce(&mut Live<'_, '_>) -> Result<T>,
) -> Result<T> {
    super::check_root()?;
    let (discovery, kbtf) = super::discover(args)?;
    let mut open_object = MaybeUninit::uninit();
    let (mut session, _guard) = super::attach_all(&mut open_object, args, &[], discovery, &kbtf)?;
    let server = ctl::Server::start()
        .map_err(|e| {
            let why = base::error::one_line(&e);
            base::say!("lsmpmon: warning: no trace ctl for this session: {why}");
        })
        .ok();
    let out = body(&mut Live {
        session: &mut session,
        server,
        reset,
    });
    session.set_enabled(false);
    base::say!("lsmpmon: detaching ...");
    let detach_ms = session.attacher.free(args.detach);
    base::say!("lsmpmon: detached in {detach_ms:.0} ms");
    out
}

impl Live<'_, '_> {
    /// Everything measured so far (since the last reset, if resets are allowed).
    pub fn snapshot(&mut self) -> Result<TraceResult> {
        self.session.snapshot()
    }

    /// As `snapshot`, with the per-syscall breakdown only `with_syscalls`:
    /// reading it is most of a snapshot's cost.
    pub fn snapshot_with(&mut self, with_syscalls: bool) -> Result<TraceResult> {
        self.session.snapshot_with(with_syscalls)
    }

    /// Each CPU's hooks since attach (index = CPU); see `Session::per_cpu`.
    pub fn per_cpu(&self) -> Vec<Vec<model::HookResult>> {
        self.session.per_cpu()
    }

    /// Restarts the statistics (refused as `trace ctl reset` is, if so set).
    pub fn reset(&mut self) -> Result<()> {
        match self.reset {
            Reset::Allowed => self.session.reset(),
            Reset::Refused(why) => Err(anyhow::anyhow!("{why}")),
        }
    }

    /// --timing-windows: attaches or releases entries as the windows say;
    /// call it from the caller's loop (it takes a few milliseconds at most).
    pub fn tick(&mut self) {
        self.session.tick_windows();
    }

    /// SIGINT or SIGTERM has arrived: the caller should return.
    pub fn stopped(&self) -> bool {
        command::stopped()
    }

    /// Answers one pending `trace ctl` request, if any.
    pub fn answer_ctl(&mut self) -> Result<()> {
        if let Some(req) = self.server.as_ref().and_then(|srv| srv.poll()) {
            let view = View {
                sort: SortKey::Sum,
                top: None,
                hist: false,
            };
            answer(self.session, req, &view, self.reset)?;
        }
        Ok(())
    }
}
