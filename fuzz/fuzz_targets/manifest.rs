//! A static pod manifest: parse, validate, default. Never panics; every refusal names a field.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|text: &str| {
    if let Err(problem) = wasmlet::source::manifest::load(text, Path::new("/m/fuzz.yaml"), "node") {
        assert!(!problem.field.is_empty(), "{problem}");
    }
});
