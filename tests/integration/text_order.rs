//! The node binary's text in the link order of `host/text-order.txt` (host/build.rs): the
//! functions the node runs at start and at rest first, packed, so that they fill few pages.
//! Built only where the build script passes the list to the linker (`cfg(text_order)`).

use std::collections::{HashMap, HashSet};
use std::process::Command;

/// The list, one mangled function name a line after the `# rustc ...` that made them, as
/// scripts/heap-profile.sh `text` writes it.
const LIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/text-order.txt");

/// The binary's defined functions by mangled name, each at its address (`nm`).
fn functions(binary: &str) -> HashMap<String, u64> {
    let output = Command::new("nm")
        .args(["--defined-only", binary])
        .output()
        .expect("run nm (binutils)");
    assert!(
        output.status.success(),
        "nm {binary}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = u64::from_str_radix(fields.next()?, 16).ok()?;
            let kind = fields.next()?;
            let name = fields.next()?;
            matches!(kind, "t" | "T" | "w" | "W").then(|| (name.to_owned(), address))
        })
        .collect()
}

/// Most of the listed functions exist in this build (else the list is stale: the names of a
/// crate's functions change with its code, its dependencies and their features), and they sit
/// together at the start of the text: few functions the list does not name lie among them.
/// Laid out as usual, about three quarters of the binary's functions would.
#[test]
fn the_functions_the_node_runs_come_first_in_its_text() {
    let list = std::fs::read_to_string(LIST).expect("read host/text-order.txt");
    let listed: HashSet<&str> = list.lines().filter(|line| !line.starts_with('#')).collect();
    let functions = functions(env!("CARGO_BIN_EXE_wasmlet"));
    let placed: Vec<u64> = listed
        .iter()
        .filter_map(|name| functions.get(*name).copied())
        .collect();
    assert!(
        placed.len() * 10 >= listed.len() * 7,
        "only {} of the {} functions host/text-order.txt names are in this build: the list is \
         stale; write it again with scripts/heap-profile.sh text",
        placed.len(),
        listed.len()
    );
    let end_of_listed = placed.iter().copied().max().unwrap_or_default();
    let unlisted_among_them = functions
        .iter()
        .filter(|(name, address)| **address < end_of_listed && !listed.contains(name.as_str()))
        .count();
    assert!(
        unlisted_among_them * 4 <= placed.len(),
        "{unlisted_among_them} functions that host/text-order.txt does not name lie among the {} \
         it names: the linker did not apply the list (host/build.rs)",
        placed.len()
    );
}
