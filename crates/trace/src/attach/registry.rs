//! The attach methods, in `auto`'s order: the one place that names them all.
//! Adding a method is a file with its `Method` implementation and its
//! `FAMILY` (family.rs), its `mod` line in attach/mod.rs and its line here;
//! a method that needs a kernel feature no other method reads also adds that
//! feature to `Offer` (offer.rs), and its programs go in a bpf/ file of their
//! own.
use super::family::Family;
use super::{fentry, kmulti, kprobe, multi, session};

/// `auto`'s order: the first the kernel offers, unless weighed out.
pub static FAMILIES: [&Family; 6] = [
    &multi::FAMILY,
    &kmulti::SESSION,
    &kmulti::PAIR,
    &session::FAMILY,
    &fentry::FAMILY,
    &kprobe::FAMILY,
];
