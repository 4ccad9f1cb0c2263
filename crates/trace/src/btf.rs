//! The running kernel's BTF: which functions exist, their parameters and
//! return types. Hooks are discovered here, never listed in the source.
//! Read through `libbpf_rs::btf`, which owns every raw-pointer walk.
use std::collections::HashMap;

use anyhow::Result;
use libbpf_rs::btf::{types, Btf, BtfKind, BtfType, HasSize, ReferencesType, TypeId};

use base::error::usage;

/// A parameter or return type, as far as the tracer cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgType {
    Void,
    Int,
    /// Pointer to `struct NAME` (const or not).
    StructPtr(String),
    Other,
}

#[derive(Debug, Clone)]
pub struct Func {
    pub btf_id: u32,
    pub params: Vec<ArgType>,
    pub ret: ArgType,
}

/// A struct member: byte offset, and element count if it is an array.
#[derive(Debug, Clone)]
pub struct Member {
    pub offset: u64,
    pub nelems: Option<u32>,
}

#[derive(Debug, Clone, Default)]
pub struct Struct {
    pub size: u64,
    pub members: HashMap<String, Member>,
}

pub struct KernelBtf {
    pub funcs: HashMap<String, Func>,
    /// `enum bpf_attach_type` as this kernel has it (BPF_TRACE_FSESSION, ...).
    pub attach_types: HashMap<String, u32>,
    /// Only the structs asked for in `load`.
    pub structs: HashMap<String, Struct>,
}

/// How many typedefs and modifiers a type is followed through.
const MAX_DEPTH: usize = 16;

fn name(t: &BtfType) -> String {
    t.name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What a parameter or return of type `t` is.
fn classify(mut t: BtfType) -> ArgType {
    for _ in 0..MAX_DEPTH {
        match t.kind() {
            BtfKind::Void => return ArgType::Void,
            BtfKind::Int | BtfKind::Enum => return ArgType::Int,
            BtfKind::Typedef
            | BtfKind::Volatile
            | BtfKind::Const
            | BtfKind::Restrict
            | BtfKind::TypeTag => match t.next_type() {
                Some(next) => t = next,
                None => return ArgType::Other,
            },
            BtfKind::Ptr => return t.next_type().map_or(ArgType::Other, pointee),
            _ => return ArgType::Other,
        }
    }
    ArgType::Other
}

/// What a pointer to `t` points to.
fn pointee(mut t: BtfType) -> ArgType {
    for _ in 0..MAX_DEPTH {
        match t.kind() {
            BtfKind::Struct => return ArgType::StructPtr(name(&t)),
            BtfKind::Const | BtfKind::Volatile | BtfKind::TypeTag | BtfKind::Typedef => {
                match t.next_type() {
                    Some(next) => t = next,
                    None => return ArgType::Other,
                }
            }
            _ => return ArgType::Other,
        }
    }
    ArgType::Other
}

/// A struct's size and members (offsets in bytes; bitfields at their byte).
fn layout(btf: &Btf, s: &types::Struct) -> Struct {
    let members = s
        .iter()
        .map(|m| {
            let bits = match m.attr {
                types::MemberAttr::Normal { offset }
                | types::MemberAttr::BitField { offset, .. } => offset,
            };
            let nelems = btf
                .type_by_id::<types::Array>(m.ty)
                .map(|a| a.capacity() as u32);
            let name = m
                .name
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (
                name,
                Member {
                    offset: u64::from(bits / 8),
                    nelems,
                },
            )
        })
        .collect();
    Struct {
        size: s.size() as u64,
        members,
    }
}

/// A function's parameters and return type.
fn signature(btf: &Btf, f: &types::Func) -> Option<(Vec<ArgType>, ArgType)> {
    let proto = btf.type_by_id::<types::FuncProto>(f.referenced_type_id())?;
    let params = proto
        .iter()
        .map(|p| {
            btf.type_by_id::<BtfType>(p.ty)
                .map_or(ArgType::Other, classify)
        })
        .collect();
    let ret = btf
        .type_by_id::<BtfType>(proto.referenced_type_id())
        .map_or(ArgType::Other, classify);
    Some((params, ret))
}

fn vmlinux() -> Result<Btf<'static>> {
    Btf::from_vmlinux().map_err(|e| usage(format!("cannot read kernel BTF: {e}")))
}

impl KernelBtf {
    /// Every function in vmlinux BTF whose name passes `keep`, and the layout
    /// of the structs named in `structs`.
    pub fn load(keep: impl Fn(&str) -> bool, structs: &[&str]) -> Result<Self> {
        if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
            return Err(usage(
                "this kernel has no BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF): \
                 trace in a guest instead: lsmpmon vm run -- lsmpmon trace ...",
            ));
        }
        let btf = vmlinux()?;
        let mut kbtf = Self {
            funcs: HashMap::new(),
            attach_types: HashMap::new(),
            structs: HashMap::new(),
        };
        kbtf.read(&btf, keep, structs);
        Ok(kbtf)
    }

    /// Reads the functions named in `names` too (a hook's caller found in
    /// the kernel's text need not be among those `load` kept).
    pub fn add_funcs(&mut self, names: &std::collections::BTreeSet<String>) -> Result<()> {
        let names: std::collections::BTreeSet<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| !self.funcs.contains_key(*n))
            .collect();
        if !names.is_empty() {
            self.read(&vmlinux()?, |n| names.contains(n), &[]);
        }
        Ok(())
    }

    fn read(&mut self, btf: &Btf, keep: impl Fn(&str) -> bool, structs: &[&str]) {
        let kbtf = self;
        for id in 1..btf.len() as u32 {
            let Some(t) = btf.type_by_id::<BtfType>(TypeId::from(id)) else {
                continue;
            };
            match t.kind() {
                BtfKind::Enum if name(&t) == "bpf_attach_type" => kbtf.read_attach_types(t),
                BtfKind::Struct => {
                    let n = name(&t);
                    if structs.contains(&n.as_str()) && !kbtf.structs.contains_key(&n) {
                        if let Ok(s) = types::Struct::try_from(t) {
                            kbtf.structs.insert(n, layout(btf, &s));
                        }
                    }
                }
                BtfKind::Func => {
                    let n = name(&t);
                    if !keep(&n) {
                        continue;
                    }
                    let Some((params, ret)) = types::Func::try_from(t)
                        .ok()
                        .and_then(|f| signature(btf, &f))
                    else {
                        continue;
                    };
                    let f = Func {
                        btf_id: id,
                        params,
                        ret,
                    };
                    kbtf.funcs.insert(n, f);
                }
                _ => {}
            }
        }
    }

    fn read_attach_types(&mut self, t: BtfType) {
        let Ok(values) = types::Enum::try_from(t) else {
            return;
        };
        for v in values.iter() {
            let n = v.name.map(|n| n.to_string_lossy().into_owned());
            self.attach_types
                .insert(n.unwrap_or_default(), v.value as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running kernel's BTF, read as the tracer reads it (every kernel
    /// lsmpmon runs on has these).
    #[test]
    fn reads_functions_enums_and_struct_layouts() {
        if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
            base::say!("skipped: no kernel BTF here");
            return;
        }
        let btf = KernelBtf::load(
            |n| n == "security_file_open" || n == "security_task_free",
            &["list_head", "task_struct"],
        )
        .unwrap();
        let open = &btf.funcs["security_file_open"];
        assert_eq!(open.params, [ArgType::StructPtr("file".into())]);
        assert_eq!(open.ret, ArgType::Int);
        let free = &btf.funcs["security_task_free"];
        assert_eq!(free.ret, ArgType::Void);
        assert!(!btf.funcs.contains_key("security_inode_create"), "not kept");
        assert_eq!(
            btf.attach_types["BPF_TRACE_FEXIT"],
            libbpf_sys::BPF_TRACE_FEXIT
        );
        let list = &btf.structs["list_head"];
        assert_eq!(list.size, 16);
        assert_eq!(list.members["prev"].offset, 8);
        assert_eq!(list.members["next"].nelems, None);
        assert_eq!(btf.structs["task_struct"].members["comm"].nelems, Some(16));
    }
}
