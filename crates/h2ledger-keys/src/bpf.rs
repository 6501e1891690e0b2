//! The BPF program, written as instructions (the kernel's instruction set,
//! Documentation/bpf/standardization/instruction-set.rst; the encoding of
//! include/uapi/linux/bpf.h `struct bpf_insn`). It is small enough to read as a listing, and
//! writing it here needs no compiler at build time (docs/decisions.md #140). Its C
//! equivalent:
//!
//! ```c
//! SEC("uprobe") int write_key_log(struct pt_regs *ctx) {
//!     struct record *r = bpf_ringbuf_reserve(&ring, RECORD_LEN, 0);
//!     if (!r) { __u32 k = 0; __u64 *n = bpf_map_lookup_elem(&drops, &k);
//!               if (n) __sync_fetch_and_add(n, 1); return 0; }
//!     r->magic = MAGIC; r->zero = 0;
//!     r->ktime_ns = bpf_ktime_get_ns();
//!     r->pid_tgid = bpf_get_current_pid_tgid();
//!     r->label_ptr = ctx->bx;
//!     r->label_len = ctx->cx;   n = min(ctx->cx, 64);
//!     r->label_rc = bpf_probe_read_user(r->label, n, (void *)ctx->bx);
//!     r->random_len = ctx->si;  n = min(ctx->si, 32);
//!     r->random_rc = bpf_probe_read_user(r->random, n, (void *)ctx->di);
//!     r->secret_len = ctx->r10; n = min(ctx->r10, 64);
//!     r->secret_rc = bpf_probe_read_user(r->secret, n, (void *)ctx->r9);
//!     bpf_ringbuf_submit(r, 0);
//!     return 0;
//! }
//! ```
//!
//! The registers are Go's register ABI on amd64 (go/src/cmd/compile/abi-internal.md,
//! "amd64 architecture": integer arguments in RAX, RBX, RCX, RDI, RSI, R8, R9, R10, R11) for
//! `(c *Config) writeKeyLog(label string, clientRandom, secret []byte)`: c = RAX, label =
//! (RBX, RCX), clientRandom = (RDI, RSI, R8), secret = (R9, R10, R11).
#![forbid(unsafe_code)]

use crate::record::{
    KIND_SSL, LABEL_CAP, MAGIC, OFF_IP, OFF_KIND, OFF_KTIME, OFF_LABEL, OFF_LABEL_LEN,
    OFF_LABEL_PTR, OFF_LABEL_RC, OFF_PID_TGID, OFF_RANDOM, OFF_RANDOM_LEN, OFF_RANDOM_RC,
    OFF_SECRET, OFF_SECRET_LEN, OFF_SECRET_RC, RANDOM_CAP, RECORD_LEN, SECRET_CAP,
};

/// The license the kernel checks before it lets a program call GPL-only helpers
/// (bpf_probe_read_user is one); "Dual MIT/GPL" is in the kernel's
/// include/linux/license.h `license_is_gpl_compatible` list.
pub(crate) const LICENSE: &str = "Dual MIT/GPL";

/// One instruction, as `struct bpf_insn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Insn {
    pub(crate) code: u8,
    pub(crate) dst: u8,
    pub(crate) src: u8,
    pub(crate) off: i16,
    pub(crate) imm: i32,
}

impl Insn {
    /// The 8 bytes the kernel reads (little-endian: dst in the low nibble).
    pub(crate) fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.src << 4) | (self.dst & 0x0f);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

// Instruction classes, sizes, modes, sources and operations (include/uapi/linux/bpf_common.h
// and bpf.h).
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const W: u8 = 0x00;
const DW: u8 = 0x18;
const IMM: u8 = 0x00;
const MEM: u8 = 0x60;
const ATOMIC: u8 = 0xc0;
const K: u8 = 0x00;
const X: u8 = 0x08;
const ADD: u8 = 0x00;
const MOV: u8 = 0xb0;
const JEQ: u8 = 0x10;
const JNE: u8 = 0x50;
const JLE: u8 = 0xa0;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
/// `src_reg` of a 64-bit immediate load that holds a map file descriptor.
const PSEUDO_MAP_FD: u8 = 1;

// Helper function ids (include/uapi/linux/bpf.h, `__BPF_FUNC_MAPPER` order).
const MAP_LOOKUP_ELEM: i32 = 1;
const KTIME_GET_NS: i32 = 5;
const GET_CURRENT_PID_TGID: i32 = 14;
const PROBE_READ_USER: i32 = 112;
const PROBE_READ_USER_STR: i32 = 114;
const RINGBUF_RESERVE: i32 = 131;
const RINGBUF_SUBMIT: i32 = 132;

// Offsets in x86-64 `struct pt_regs` (arch/x86/include/asm/ptrace.h: r15 r14 r13 r12 bp bx
// r11 r10 r9 r8 ax cx dx si di ...), 8 bytes each.
const PT_RBX: i16 = 5 * 8;
const PT_R10: i16 = 7 * 8;
const PT_R9: i16 = 8 * 8;
const PT_RCX: i16 = 11 * 8;
const PT_RDX: i16 = 12 * 8;
const PT_RSI: i16 = 13 * 8;
const PT_RDI: i16 = 14 * 8;
const PT_RIP: i16 = 16 * 8;

const fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        dst,
        src,
        off,
        imm,
    }
}
fn mov_reg(dst: u8, src: u8) -> Insn {
    i(ALU64 | MOV | X, dst, src, 0, 0)
}
fn mov_imm(dst: u8, imm: i32) -> Insn {
    i(ALU64 | MOV | K, dst, 0, 0, imm)
}
fn add_imm(dst: u8, imm: i32) -> Insn {
    i(ALU64 | ADD | K, dst, 0, 0, imm)
}
fn ldx_dw(dst: u8, src: u8, off: i16) -> Insn {
    i(LDX | MEM | DW, dst, src, off, 0)
}
fn stx(size: u8, dst: u8, off: usize, src: u8) -> Insn {
    i(STX | MEM | size, dst, src, off as i16, 0)
}
fn st_w(dst: u8, off: i16, imm: i32) -> Insn {
    i(ST | MEM | W, dst, 0, off, imm)
}
fn st_dw(dst: u8, off: usize, imm: i32) -> Insn {
    i(ST | MEM | DW, dst, 0, off as i16, imm)
}
fn call(helper: i32) -> Insn {
    i(JMP | CALL, 0, 0, 0, helper)
}
fn exit() -> Insn {
    i(JMP | EXIT, 0, 0, 0, 0)
}
/// `dst = map fd`: two instruction slots.
fn ld_map_fd(dst: u8, fd: i32) -> [Insn; 2] {
    [
        i(LD | DW | IMM, dst, PSEUDO_MAP_FD, 0, fd),
        i(0, 0, 0, 0, 0),
    ]
}

/// Registers: R0 return value, R1-R5 arguments (clobbered by calls), R6-R9 kept across calls,
/// R10 the frame pointer.
const R0: u8 = 0;
const R1: u8 = 1;
const R2: u8 = 2;
const R3: u8 = 3;
const R9: u8 = 9;
const R6: u8 = 6;
const R7: u8 = 7;
const R8: u8 = 8;
const R10: u8 = 10;

/// A program under construction, with forward jumps patched once their target is known.
struct Prog(Vec<Insn>);

impl Prog {
    fn push(&mut self, insns: &[Insn]) {
        self.0.extend_from_slice(insns);
    }
    /// A conditional jump on `dst` against `imm`, target set by [`Prog::land`].
    fn jump(&mut self, op: u8, dst: u8, imm: i32) -> usize {
        self.0.push(i(JMP | op | K, dst, 0, 0, imm));
        self.0.len() - 1
    }
    /// Points the jump at `at` to the next instruction.
    fn land(&mut self, at: usize) {
        self.0[at].off = (self.0.len() - at - 1) as i16;
    }
    /// `r->len = ctx->len_reg; r->rc = bpf_probe_read_user(r + dst, min(len, cap), ctx->ptr_reg)`.
    fn copy(
        &mut self,
        len_reg: i16,
        ptr_reg: i16,
        off_len: usize,
        off_rc: usize,
        dst: usize,
        cap: usize,
    ) {
        self.push(&[ldx_dw(R8, R6, len_reg), stx(DW, R7, off_len, R8)]);
        let j = self.jump(JLE, R8, cap as i32);
        self.push(&[mov_imm(R8, cap as i32)]);
        self.land(j);
        self.push(&[
            mov_reg(R1, R7),
            add_imm(R1, dst as i32),
            mov_reg(R2, R8),
            ldx_dw(R3, R6, ptr_reg),
            call(PROBE_READ_USER),
            stx(W, R7, off_rc, R0),
        ]);
    }
}

/// The start both programs share: `R6 = ctx`, a record reserved in the ring buffer (`R7`;
/// a full ring counted in the drop counter and the program left), its magic, `kind`, time,
/// process and thread written.
fn prologue(ring_fd: i32, drops_fd: i32, kind: u32) -> Prog {
    let mut p = Prog(Vec::with_capacity(80));
    p.push(&[mov_reg(R6, R1)]);
    p.push(&ld_map_fd(R1, ring_fd));
    p.push(&[
        mov_imm(R2, RECORD_LEN as i32),
        mov_imm(R3, 0),
        call(RINGBUF_RESERVE),
    ]);
    let have = p.jump(JNE, R0, 0);
    // The ring buffer is full: count the loss.
    p.push(&[st_w(R10, -4, 0)]);
    p.push(&ld_map_fd(R1, drops_fd));
    p.push(&[mov_reg(R2, R10), add_imm(R2, -4), call(MAP_LOOKUP_ELEM)]);
    let out = p.jump(JEQ, R0, 0);
    p.push(&[
        mov_imm(R1, 1),
        i(STX | ATOMIC | DW, R0, R1, 0, i32::from(ADD)),
    ]);
    p.land(out);
    p.push(&[mov_imm(R0, 0), exit()]);
    p.land(have);
    p.push(&[
        mov_reg(R7, R0),
        st_w(R7, 0, MAGIC as i32),
        st_w(R7, OFF_KIND as i16, kind as i32),
        st_w(R7, 68, 0),
        call(KTIME_GET_NS),
        stx(DW, R7, OFF_KTIME, R0),
        call(GET_CURRENT_PID_TGID),
        stx(DW, R7, OFF_PID_TGID, R0),
    ]);
    p
}

/// The end both programs share: the record submitted.
fn epilogue(p: &mut Prog) {
    p.push(&[
        mov_reg(R1, R7),
        mov_imm(R2, 0),
        call(RINGBUF_SUBMIT),
        mov_imm(R0, 0),
        exit(),
    ]);
}

/// The program, given the file descriptors of its ring buffer and of its one-slot drop
/// counter (an array map of one u64).
pub(crate) fn program(ring_fd: i32, drops_fd: i32) -> Vec<Insn> {
    let mut p = prologue(ring_fd, drops_fd, 0);
    p.push(&[
        st_dw(R7, OFF_IP, 0),
        ldx_dw(R1, R6, PT_RBX),
        stx(DW, R7, OFF_LABEL_PTR, R1),
    ]);
    p.copy(
        PT_RCX,
        PT_RBX,
        OFF_LABEL_LEN,
        OFF_LABEL_RC,
        OFF_LABEL,
        LABEL_CAP,
    );
    p.copy(
        PT_RSI,
        PT_RDI,
        OFF_RANDOM_LEN,
        OFF_RANDOM_RC,
        OFF_RANDOM,
        RANDOM_CAP,
    );
    p.copy(
        PT_R10,
        PT_R9,
        OFF_SECRET_LEN,
        OFF_SECRET_RC,
        OFF_SECRET,
        SECRET_CAP,
    );
    epilogue(&mut p);
    p.0
}

/// The program at the entry of OpenSSL's or BoringSSL's `ssl_log_secret(ssl, label, secret,
/// secret_len)` (System V AMD64: RDI, RSI, RDX, RCX; BoringSSL's `Span` is the last two). Its
/// C equivalent, after the shared prologue:
///
/// ```c
///     r->ip = ctx->ip; r->label_ptr = ctx->si;
///     r->label_rc = bpf_probe_read_user_str(r->label, 64, (void *)ctx->si);
///     r->label_len = 0; r->random_len = 32;
///     void *base = (void *)ctx->di;
///     if (DEREF) {                       /* BoringSSL: ssl->s3 */
///         __u64 p = 0; long rc = bpf_probe_read_user(&p, 8, base + DEREF);
///         if (rc) { r->random_rc = rc; goto secret; }
///         base = (void *)p;
///     }
///     r->random_rc = bpf_probe_read_user(r->random, 32, base + OFFSET);
/// secret:
///     r->secret_len = ctx->cx; n = min(ctx->cx, 64);
///     r->secret_rc = bpf_probe_read_user(r->secret, n, (void *)ctx->dx);
/// ```
pub(crate) fn ssl_program(ring_fd: i32, drops_fd: i32, random: crate::ssl::RandomAt) -> Vec<Insn> {
    let mut p = prologue(ring_fd, drops_fd, KIND_SSL);
    p.push(&[
        ldx_dw(R1, R6, PT_RIP),
        stx(DW, R7, OFF_IP, R1),
        ldx_dw(R3, R6, PT_RSI),
        stx(DW, R7, OFF_LABEL_PTR, R3),
        mov_reg(R1, R7),
        add_imm(R1, OFF_LABEL as i32),
        mov_imm(R2, LABEL_CAP as i32),
        call(PROBE_READ_USER_STR),
        stx(W, R7, OFF_LABEL_RC, R0),
        st_dw(R7, OFF_LABEL_LEN, 0),
        st_dw(R7, OFF_RANDOM_LEN, RANDOM_CAP as i32),
        ldx_dw(R9, R6, PT_RDI),
    ]);
    let mut skip = None;
    if let Some(d) = random.deref {
        p.push(&[
            st_dw(R10, 0usize.wrapping_sub(8), 0),
            mov_reg(R1, R10),
            add_imm(R1, -8),
            mov_imm(R2, 8),
            mov_reg(R3, R9),
            add_imm(R3, d),
            call(PROBE_READ_USER),
            stx(W, R7, OFF_RANDOM_RC, R0),
        ]);
        skip = Some(p.jump(JNE, R0, 0));
        p.push(&[ldx_dw(R9, R10, -8)]);
    }
    p.push(&[
        mov_reg(R1, R7),
        add_imm(R1, OFF_RANDOM as i32),
        mov_imm(R2, RANDOM_CAP as i32),
        mov_reg(R3, R9),
        add_imm(R3, random.offset),
        call(PROBE_READ_USER),
        stx(W, R7, OFF_RANDOM_RC, R0),
    ]);
    if let Some(j) = skip {
        p.land(j);
    }
    p.copy(
        PT_RCX,
        PT_RDX,
        OFF_SECRET_LEN,
        OFF_SECRET_RC,
        OFF_SECRET,
        SECRET_CAP,
    );
    epilogue(&mut p);
    p.0
}

/// [`ssl_program`]'s bytes.
pub(crate) fn ssl_program_bytes(
    ring_fd: i32,
    drops_fd: i32,
    random: crate::ssl::RandomAt,
) -> Vec<u8> {
    ssl_program(ring_fd, drops_fd, random)
        .into_iter()
        .flat_map(Insn::to_bytes)
        .collect()
}

/// The program's bytes, as BPF_PROG_LOAD takes them.
pub(crate) fn program_bytes(ring_fd: i32, drops_fd: i32) -> Vec<u8> {
    program(ring_fd, drops_fd)
        .into_iter()
        .flat_map(Insn::to_bytes)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_land_inside_and_every_path_exits() {
        let p = program(3, 4);
        assert!(p.len() < 80, "{} instructions", p.len());
        jumps_ok(&p);
        for deref in [None, Some(0x30)] {
            let q = ssl_program(
                3,
                4,
                crate::ssl::RandomAt {
                    deref,
                    offset: 0x30,
                },
            );
            jumps_ok(&q);
            assert!(q.iter().any(|x| *x == call(PROBE_READ_USER_STR)));
        }
    }

    fn jumps_ok(p: &[Insn]) {
        assert_eq!(p.last().unwrap().code, JMP | EXIT);
        for (n, insn) in p.iter().enumerate() {
            let class = insn.code & 0x07;
            let op = insn.code & 0xf0;
            if class == JMP && op != CALL && op != EXIT {
                let target = n as i64 + 1 + i64::from(insn.off);
                assert!(insn.off > 0 && (target as usize) < p.len(), "jump at {n}");
            }
        }
        // Both map loads carry their fd; the reserve asks for one record.
        let maps: Vec<i32> = p
            .iter()
            .filter(|x| x.code == LD | DW | IMM && x.src == PSEUDO_MAP_FD)
            .map(|x| x.imm)
            .collect();
        assert_eq!(maps, [3, 4], "{p:?}");
        assert!(p
            .windows(3)
            .any(|w| w[0] == mov_imm(R2, RECORD_LEN as i32) && w[2] == call(RINGBUF_RESERVE)));
    }

    #[test]
    fn record_fields_fit_and_do_not_overlap() {
        let mut fields = [
            (0, 4),
            (4, 4),
            (OFF_KTIME, 8),
            (OFF_PID_TGID, 8),
            (OFF_LABEL_PTR, 8),
            (OFF_LABEL_LEN, 8),
            (OFF_RANDOM_LEN, 8),
            (OFF_SECRET_LEN, 8),
            (OFF_LABEL_RC, 4),
            (OFF_RANDOM_RC, 4),
            (OFF_SECRET_RC, 4),
            (68, 4),
            (OFF_LABEL, LABEL_CAP),
            (OFF_RANDOM, RANDOM_CAP),
            (OFF_SECRET, SECRET_CAP),
            (OFF_IP, 8),
        ];
        fields.sort();
        for w in fields.windows(2) {
            assert_eq!(w[0].0 + w[0].1, w[1].0, "{w:?}");
        }
        let last = fields.last().unwrap();
        assert_eq!(last.0 + last.1, RECORD_LEN);
        assert_eq!(RECORD_LEN % 8, 0);
    }

    #[test]
    fn encoding() {
        assert_eq!(mov_reg(R6, R1).to_bytes(), [0xbf, 0x16, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            ld_map_fd(R1, 5)[0].to_bytes(),
            [0x18, 0x11, 0, 0, 5, 0, 0, 0]
        );
        assert_eq!(
            call(PROBE_READ_USER).to_bytes(),
            [0x85, 0, 0, 0, 112, 0, 0, 0]
        );
    }
}
