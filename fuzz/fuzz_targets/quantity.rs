//! A resource quantity. Never panics, answers within a millisecond, and an error quotes the
//! quantity it refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::time::{Duration, Instant};

fuzz_target!(|text: &str| {
    let started = Instant::now();
    let result = wasmlet::resources::parse_milli(text);
    assert!(started.elapsed() < Duration::from_millis(1) || text.len() > 100_000);
    if let Err(error) = result {
        assert!(error.to_string().starts_with("quantity "), "{error}");
    }
});
