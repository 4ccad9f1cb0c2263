//! Which kernel addresses a function's machine code names: decoded with
//! iced-x86 (x86-64 only). A function that walks a hook's list (up to 6.8)
//! or its static-call slots (`lsm_for_each_hook`, 6.9+) loads the table's
//! address as a RIP-relative or absolute memory operand, or materialises it
//! as a sign-extended 32-bit immediate (`mov $table+off, %rbx`).
use iced_x86::{Decoder, DecoderOptions, OpKind, Register};

/// One address named by one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ref {
    /// The instruction's address.
    pub site: u64,
    /// The address it names.
    pub target: u64,
}

/// Every address in `range` that the code at `ip` names, in code order.
pub fn refs_into(code: &[u8], ip: u64, range: std::ops::Range<u64>) -> Vec<Ref> {
    let mut out = Vec::new();
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    for ins in &mut decoder {
        if ins.is_invalid() {
            continue;
        }
        for i in 0..ins.op_count() {
            let target = match ins.op_kind(i) {
                OpKind::Memory if ins.is_ip_rel_memory_operand() => ins.ip_rel_memory_address(),
                // [disp32] or [disp32 + index*scale]: a table at an absolute address.
                OpKind::Memory if ins.memory_base() == Register::None => {
                    ins.memory_displacement64()
                }
                OpKind::Immediate32to64 => ins.immediate32to64() as u64,
                OpKind::Immediate64 => ins.immediate64(),
                _ => continue,
            };
            if range.contains(&target) {
                out.push(Ref {
                    site: ins.ip(),
                    target,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: u64 = 0xffff_ffff_823b_07c0;
    const IP: u64 = 0xffff_ffff_814b_3560;

    fn le32(v: i64) -> [u8; 4] {
        (v as i32).to_le_bytes()
    }

    #[test]
    fn rip_relative_absolute_and_immediate_references_are_found() {
        let mut code = Vec::new();
        // mov rbx, [rip + d]: the next instruction's address + d = TABLE + 0x318.
        let d = (TABLE + 0x318) as i64 - (IP + 7) as i64;
        code.extend([0x48, 0x8b, 0x1d]);
        code.extend(le32(d));
        // mov rax, [abs32] (ModRM 04, SIB 25: no base, no index) = TABLE + 8.
        code.extend([0x48, 0x8b, 0x04, 0x25]);
        code.extend(le32((TABLE + 8) as i64));
        // mov rbx, imm32 sign-extended = TABLE + 0x1260 (static-call slots).
        code.extend([0x48, 0xc7, 0xc3]);
        code.extend(le32((TABLE + 0x1260) as i64));
        // mov rax, [rbx + 0x10]: a register's, not the table's.
        code.extend([0x48, 0x8b, 0x43, 0x10]);
        // mov rax, [abs32] outside the range.
        code.extend([0x48, 0x8b, 0x04, 0x25]);
        code.extend(le32((TABLE - 8) as i64));
        code.push(0xc3); // ret
        let refs = refs_into(&code, IP, TABLE..TABLE + 0x2000);
        let got: Vec<(u64, u64)> = refs
            .iter()
            .map(|r| (r.site - IP, r.target - TABLE))
            .collect();
        assert_eq!(got, [(0, 0x318), (7, 8), (15, 0x1260)]);
    }

    #[test]
    fn undecodable_bytes_name_nothing() {
        // A run of 0x0f 0x0b (ud2) and a truncated instruction.
        let code = [0x0f, 0x0b, 0x0f, 0x0b, 0x48, 0x8b];
        assert!(refs_into(&code, IP, 0..u64::MAX).is_empty());
    }
}
