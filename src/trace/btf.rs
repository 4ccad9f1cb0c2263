//! The running kernel's BTF: which functions exist, their parameters and
//! return types. Hooks are discovered here, never listed in the source.
use std::{collections::HashMap, ffi::CStr};

use anyhow::Result;

use crate::base::error::usage;

const BTF_KIND_INT: u32 = 1;
const BTF_KIND_PTR: u32 = 2;
const BTF_KIND_ARRAY: u32 = 3;
const BTF_KIND_STRUCT: u32 = 4;
const BTF_KIND_ENUM: u32 = 6;
const BTF_KIND_TYPEDEF: u32 = 8;
const BTF_KIND_VOLATILE: u32 = 9;
const BTF_KIND_CONST: u32 = 10;
const BTF_KIND_RESTRICT: u32 = 11;
const BTF_KIND_FUNC: u32 = 12;
const BTF_KIND_TYPE_TAG: u32 = 18;

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

struct Raw(*mut libbpf_sys::btf);

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: pointer came from btf__load_vmlinux_btf and is freed once.
        unsafe { libbpf_sys::btf__free(self.0) }
    }
}

impl Raw {
    fn ty(&self, id: u32) -> Option<&libbpf_sys::btf_type> {
        // SAFETY: libbpf returns NULL or a pointer into the loaded BTF, alive as long as self.
        unsafe { libbpf_sys::btf__type_by_id(self.0, id).as_ref() }
    }

    fn name(&self, off: u32) -> String {
        // SAFETY: as above; names are NUL-terminated.
        unsafe {
            let p = libbpf_sys::btf__name_by_offset(self.0, off);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    fn classify(&self, mut id: u32) -> ArgType {
        for _ in 0..16 {
            if id == 0 {
                return ArgType::Void;
            }
            let Some(t) = self.ty(id) else {
                return ArgType::Other;
            };
            // SAFETY: `type_` and `size` share a union; all kinds used here read `type_`.
            let next = unsafe { t.__bindgen_anon_1.type_ };
            match kind(t) {
                BTF_KIND_INT | BTF_KIND_ENUM => return ArgType::Int,
                BTF_KIND_TYPEDEF | BTF_KIND_VOLATILE | BTF_KIND_CONST | BTF_KIND_RESTRICT
                | BTF_KIND_TYPE_TAG => id = next,
                BTF_KIND_PTR => return self.pointee(next),
                _ => return ArgType::Other,
            }
        }
        ArgType::Other
    }

    fn layout(&self, t: &libbpf_sys::btf_type) -> Struct {
        // SAFETY: a STRUCT is followed by vlen btf_member records; `size` is its size.
        let (members, size) = unsafe {
            let first = (t as *const libbpf_sys::btf_type).add(1) as *const libbpf_sys::btf_member;
            (
                std::slice::from_raw_parts(first, vlen(t)),
                t.__bindgen_anon_1.size,
            )
        };
        let bitfield = (t.info >> 31) & 1 == 1;
        let members = members
            .iter()
            .map(|m| {
                let bits = if bitfield {
                    m.offset & 0xff_ffff
                } else {
                    m.offset
                };
                let nelems = self
                    .ty(m.type_)
                    .filter(|mt| kind(mt) == BTF_KIND_ARRAY)
                    .map(|mt| {
                        // SAFETY: an ARRAY is followed by one btf_array record.
                        unsafe {
                            (*((mt as *const libbpf_sys::btf_type).add(1)
                                as *const libbpf_sys::btf_array))
                                .nelems
                        }
                    });
                (
                    self.name(m.name_off),
                    Member {
                        offset: u64::from(bits / 8),
                        nelems,
                    },
                )
            })
            .collect();
        Struct {
            size: u64::from(size),
            members,
        }
    }

    fn pointee(&self, mut id: u32) -> ArgType {
        for _ in 0..16 {
            let Some(t) = self.ty(id) else {
                return ArgType::Other;
            };
            match kind(t) {
                BTF_KIND_STRUCT => return ArgType::StructPtr(self.name(t.name_off)),
                BTF_KIND_CONST | BTF_KIND_VOLATILE | BTF_KIND_TYPE_TAG | BTF_KIND_TYPEDEF => {
                    // SAFETY: see classify.
                    id = unsafe { t.__bindgen_anon_1.type_ };
                }
                _ => return ArgType::Other,
            }
        }
        ArgType::Other
    }
}

fn kind(t: &libbpf_sys::btf_type) -> u32 {
    (t.info >> 24) & 0x1f
}

fn vlen(t: &libbpf_sys::btf_type) -> usize {
    (t.info & 0xffff) as usize
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
        // SAFETY: plain constructor; NULL on failure.
        let raw = Raw(unsafe { libbpf_sys::btf__load_vmlinux_btf() });
        if raw.0.is_null() {
            return Err(usage(format!(
                "cannot read kernel BTF: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: raw is valid.
        let count = unsafe { libbpf_sys::btf__type_cnt(raw.0) };
        let mut funcs = HashMap::new();
        let mut found_structs = HashMap::new();
        let mut attach_types = HashMap::new();
        for id in 1..count {
            let Some(t) = raw.ty(id) else { continue };
            if kind(t) == BTF_KIND_ENUM && raw.name(t.name_off) == "bpf_attach_type" {
                // SAFETY: an ENUM is followed by vlen btf_enum records.
                let values = unsafe {
                    let first =
                        (t as *const libbpf_sys::btf_type).add(1) as *const libbpf_sys::btf_enum;
                    std::slice::from_raw_parts(first, vlen(t))
                };
                for v in values {
                    attach_types.insert(raw.name(v.name_off), v.val as u32);
                }
                continue;
            }
            if kind(t) == BTF_KIND_STRUCT {
                let name = raw.name(t.name_off);
                if structs.contains(&name.as_str()) && !found_structs.contains_key(&name) {
                    found_structs.insert(name, raw.layout(t));
                }
                continue;
            }
            if kind(t) != BTF_KIND_FUNC {
                continue;
            }
            let name = raw.name(t.name_off);
            if !keep(&name) {
                continue;
            }
            // SAFETY: a FUNC's `type_` is its FUNC_PROTO.
            let proto_id = unsafe { t.__bindgen_anon_1.type_ };
            let Some(proto) = raw.ty(proto_id) else {
                continue;
            };
            // SAFETY: a FUNC_PROTO is followed by vlen btf_param records.
            let params = unsafe {
                let first =
                    (proto as *const libbpf_sys::btf_type).add(1) as *const libbpf_sys::btf_param;
                std::slice::from_raw_parts(first, vlen(proto))
            };
            let params = params.iter().map(|p| raw.classify(p.type_)).collect();
            // SAFETY: see classify.
            let ret = raw.classify(unsafe { proto.__bindgen_anon_1.type_ });
            funcs.insert(
                name,
                Func {
                    btf_id: id,
                    params,
                    ret,
                },
            );
        }
        Ok(Self {
            funcs,
            attach_types,
            structs: found_structs,
        })
    }
}
