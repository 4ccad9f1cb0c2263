//! How a reference MAC identifies a file: by label, path or inode.
use clap::ValueEnum;

use super::intf::mac_method;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Label,
    Path,
    Inode,
}

impl Method {
    pub(super) fn id(self) -> u32 {
        match self {
            Method::Label => mac_method::MAC_LABEL,
            Method::Path => mac_method::MAC_PATH,
            Method::Inode => mac_method::MAC_INODE,
        }
    }
}
