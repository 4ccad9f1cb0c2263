//! The one interface every attach method implements.
use std::collections::HashMap;

use super::kretprobe::Removal;
use super::multi_link::MultiEntry;
use super::probe::{Probe, Target};

pub trait Method {
    /// What the result calls it (`probe.method`).
    fn name(&self) -> &'static str;

    /// What the progress lines call its probes.
    fn describe(&self) -> &'static str;

    /// Loads one function's probes and attaches them.
    fn attach(&self, target: &Target) -> Result<Probe, String>;

    /// --timing-windows: every hook's entry in one multi-link, made and
    /// dropped at each window, where the method and kernel have one.
    fn window_entries(&self, _targets: &[Target]) -> Option<Result<MultiEntry, String>> {
        None
    }

    /// --timing-windows with the multi-link: the calibration probe as a
    /// window times a call (its exit, and its entry by a multi-link of its
    /// own, kept attached), so that the pair cost is that pair's.
    fn attach_window_calibration(
        &self,
        _target: &Target,
    ) -> Option<Result<(Probe, MultiEntry), String>> {
        None
    }

    /// --timing-windows: the kernel refused the multi-link: each hook gets
    /// an entry of its own, attached in turn.
    fn drop_window_link(&mut self) {}

    /// One probe for every target at once, where the method has it (None:
    /// the targets are attached one by one).
    fn attach_batch(&self, _targets: &[Target]) -> Option<Result<Probe, String>> {
        None
    }

    /// The targets (by index) this method cannot probe, with the reason,
    /// found before attaching: one of them would make the kernel refuse a
    /// whole batch.
    fn unprobeable(&self, _targets: &[Target]) -> Vec<(usize, String)> {
        Vec::new()
    }

    /// What replaces this method when the kernel refuses its batch.
    fn fallback(&self) -> Option<Box<dyn Method>> {
        None
    }

    /// Why the result should mention the method (a costlier fallback).
    fn note(&self) -> Option<&'static str> {
        None
    }

    /// Returns lost so far (return probes all taken), by hook id.
    fn lost_returns(&self) -> HashMap<u32, u64> {
        HashMap::new()
    }

    /// How many calls of one hook its return probes follow at once, where lsmpmon set it.
    fn maxactive(&self) -> Option<u32> {
        None
    }

    /// What must be undone once every link is closed (in raw syscalls: it
    /// may run in the release child).
    fn after_detach(&self) -> Option<Removal> {
        None
    }
}
