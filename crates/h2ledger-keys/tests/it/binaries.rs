//! The probe point in real Go binaries built by Debian's Go.

use h2ledger_keys::elf::Elf;
use h2ledger_keys::gopclntab::{Pcln, PclnVersion};
use h2ledger_keys::{find_go_probe, FoundBy, GoAbi, ProbeError, GO_WRITE_KEY_LOG};

use crate::peers::peers;

#[test]
fn symbol_table_and_function_table_agree() {
    let Some(p) = peers() else { return };
    let full = std::fs::read(&p.full).unwrap();
    let stripped = std::fs::read(&p.stripped).unwrap();

    let a = find_go_probe(&full).unwrap();
    assert_eq!(a.found_by, FoundBy::Symtab);
    assert_eq!(a.abi, GoAbi::Register);
    let v = a.go_version.clone().expect("a Go version");
    assert!(v.starts_with("go1."), "{v}");

    let b = find_go_probe(&stripped).unwrap();
    assert_eq!(
        b.found_by,
        FoundBy::Pclntab,
        "the stripped binary has no symbol table"
    );
    assert_eq!(b.go_version, a.go_version);
    // -s -w drops tables, not code: the function is at the same place in both.
    assert_eq!((b.address, b.file_offset), (a.address, a.file_offset));

    // The entry is a function start in the file: Go's amd64 functions begin with the stack
    // check, `mov 0x10(%r14),...` or `cmp 0x10(%r14),%rsp` (REX prefix 0x49, or 0x4c/0x4d).
    let first = full[a.file_offset as usize];
    assert!(matches!(first, 0x48..=0x4f), "first byte {first:#x}");
}

#[test]
fn function_table_matches_the_symbol_table_for_many_functions() {
    let Some(p) = peers() else { return };
    let full = std::fs::read(&p.full).unwrap();
    let elf = Elf::parse(&full).unwrap();
    let text = elf.section(".text").map(|s| s.addr);
    let pcln = Pcln::parse(
        elf.section_data(&elf.section(".gopclntab").unwrap())
            .unwrap(),
        text,
    )
    .unwrap();
    assert!(matches!(
        pcln.version,
        PclnVersion::Go118 | PclnVersion::Go120
    ));
    assert!(pcln.nfunc > 1000, "{} functions", pcln.nfunc);
    let mut checked = 0;
    for name in [
        GO_WRITE_KEY_LOG,
        "main.main",
        "main.selfSigned",
        "runtime.main",
        "net/http.(*Server).ServeTLS",
        "crypto/tls.(*Conn).handshakeContext",
        "crypto/tls.(*clientHandshakeStateTLS13).establishHandshakeKeys",
    ] {
        let sym = elf
            .symbol(name)
            .unwrap_or_else(|| panic!("{name} in .symtab"));
        assert_eq!(pcln.find(name), Some(sym.value), "{name}");
        checked += 1;
    }
    // And every function of the table: its entry is a symbol of the same name.
    let mut agree = 0;
    for i in (0..pcln.nfunc).step_by(97) {
        let (entry, name) = pcln.func(i).unwrap();
        if let Some(sym) = elf.symbol(std::str::from_utf8(name).unwrap()) {
            assert_eq!(sym.value, entry, "{}", String::from_utf8_lossy(name));
            agree += 1;
        }
    }
    assert!(
        checked == 7 && agree > 50,
        "{agree} sampled functions agree"
    );
}

#[test]
fn binaries_without_the_function_say_why_in_one_line() {
    let Some(p) = peers() else { return };
    let no_tls = std::fs::read(&p.no_tls).unwrap();
    let e = find_go_probe(&no_tls).unwrap_err();
    assert!(
        matches!(
            e,
            ProbeError::NoFunction {
                go_version: Some(_)
            }
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("is not in this go1.") && !msg.contains('\n'),
        "{msg}"
    );

    // Not Go at all: this test binary (Rust).
    let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    assert_eq!(find_go_probe(&me), Err(ProbeError::NotGo));
}
