//! Answers a `trace ctl` request against a running session (for `trace`
//! and for the engines that keep it attached: `serve`, `top`).
use anyhow::Result;

use super::ctl;
use super::report::{self, View};
use super::session::Session;

/// Whether `trace ctl reset` may restart the statistics of this session.
#[derive(Debug, Clone, Copy)]
pub enum Reset {
    Allowed,
    /// Refused, with the reason `trace ctl` prints.
    Refused(&'static str),
}

/// One `trace ctl` request against a running session.
pub fn answer(s: &mut Session, req: ctl::Request, view: &View, reset: Reset) -> Result<()> {
    let reply = match req.action {
        ctl::Action::Enable => {
            s.set_enabled(true);
            "enabled\n".to_string()
        }
        ctl::Action::Disable => {
            s.set_enabled(false);
            "disabled\n".to_string()
        }
        ctl::Action::Reset => match reset {
            Reset::Refused(why) => format!("error: {why}\n"),
            Reset::Allowed => match s.reset() {
                Ok(()) => "reset\n".to_string(),
                Err(e) => format!("error: {e}\n"),
            },
        },
        ctl::Action::Dump => match s.snapshot() {
            Ok(r) if req.json => serde_json::to_string(&r)? + "\n",
            Ok(r) => report::text(&r, view),
            Err(e) => format!("error: {e}\n"),
        },
    };
    req.reply(&reply);
    Ok(())
}
