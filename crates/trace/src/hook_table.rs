//! The kernel's own list of LSM hooks: the members of `struct
//! security_hook_heads` (one list head a hook, up to 6.8) or `struct
//! lsm_static_calls_table` (one array of static-call slots a hook, 6.9+), as
//! its BTF lays them out. A `bpf_lsm_*` function that is no member is one of
//! the BPF LSM's own helpers, not a hook.
use super::btf::KernelBtf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `security_hook_heads`: an hlist of `security_hook_list` a hook.
    Lists,
    /// `static_calls_table`: `struct lsm_static_call` slots a hook.
    StaticCalls,
}

#[derive(Debug, Clone)]
pub struct HookTable {
    pub layout: Layout,
    /// (hook, byte offset, byte size), by offset.
    members: Vec<(String, u64, u64)>,
    size: u64,
}

impl HookTable {
    /// The table this kernel's BTF has, if any (`lsm_tables::STRUCTS` loaded).
    pub fn from_btf(btf: &KernelBtf) -> Option<Self> {
        let (layout, s) = [
            (Layout::StaticCalls, "lsm_static_calls_table"),
            (Layout::Lists, "security_hook_heads"),
        ]
        .into_iter()
        .find_map(|(l, name)| btf.structs.get(name).map(|s| (l, s)))?;
        let mut offsets: Vec<(String, u64)> = s
            .members
            .iter()
            .map(|(n, m)| (n.clone(), m.offset))
            .collect();
        Some(Self::new(layout, &mut offsets, s.size))
    }

    /// A table of `size` bytes whose members start at `offsets`; each runs
    /// to the next (the last to the end).
    pub fn new(layout: Layout, offsets: &mut [(String, u64)], size: u64) -> Self {
        offsets.sort_by_key(|(_, o)| *o);
        let members = offsets
            .iter()
            .enumerate()
            .map(|(i, (name, off))| {
                let end = offsets.get(i + 1).map_or(size, |(_, next)| *next);
                (name.clone(), *off, end.saturating_sub(*off))
            })
            .collect();
        Self {
            layout,
            members,
            size,
        }
    }

    /// The kernel symbol the table lives at.
    pub fn symbol(&self) -> &'static str {
        match self.layout {
            Layout::Lists => "security_hook_heads",
            Layout::StaticCalls => "static_calls_table",
        }
    }

    /// Its type in BTF.
    pub fn struct_name(&self) -> &'static str {
        match self.layout {
            Layout::Lists => "security_hook_heads",
            Layout::StaticCalls => "lsm_static_calls_table",
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn hooks(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(n, _, _)| n.as_str())
    }

    pub fn contains(&self, hook: &str) -> bool {
        self.members.iter().any(|(n, _, _)| n == hook)
    }

    /// The hook whose member holds byte `offset` of the table.
    pub fn hook_at(&self, offset: u64) -> Option<&str> {
        let i = self
            .members
            .partition_point(|(_, o, _)| *o <= offset)
            .checked_sub(1)?;
        let (name, start, size) = &self.members[i];
        (offset < start + size).then_some(name.as_str())
    }

    /// Byte offset and size of `hook`'s member.
    pub fn member(&self, hook: &str) -> Option<(u64, u64)> {
        self.members
            .iter()
            .find(|(n, _, _)| n == hook)
            .map(|(_, o, s)| (*o, *s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_inside_a_member_names_its_hook() {
        // 6.9+: 11 slots of 32 bytes a hook; a function reading the third
        // slot's `active` key (offset 24 in the slot) of the second hook.
        let mut offsets = vec![
            ("file_open".to_string(), 352),
            ("binder_set_context_mgr".to_string(), 0),
        ];
        let t = HookTable::new(Layout::StaticCalls, &mut offsets, 704);
        assert_eq!(t.hook_at(352 + 2 * 32 + 24), Some("file_open"));
        assert_eq!(t.hook_at(351), Some("binder_set_context_mgr"));
        assert_eq!(t.hook_at(0), Some("binder_set_context_mgr"));
        assert_eq!(t.hook_at(704), None, "past the table");
        assert_eq!(t.member("file_open"), Some((352, 352)));
        assert_eq!(t.symbol(), "static_calls_table");
        assert_eq!(
            t.hooks().collect::<Vec<_>>(),
            ["binder_set_context_mgr", "file_open"]
        );
    }
}
