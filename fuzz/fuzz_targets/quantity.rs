//! A resource quantity. Never panics, parses within a millisecond of CPU time, and an error
//! quotes the quantity it refused. The time is the thread's CPU time, best of up to three
//! tries: the fuzzer shares the machine, and wall time counts the turns other work takes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustix::time::{clock_gettime, ClockId};
use std::time::Duration;

const LIMIT: Duration = Duration::from_millis(1);

fn cpu_time() -> Duration {
    let now = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fuzz_target!(|text: &str| {
    let timed = || {
        let started = cpu_time();
        let result = wasmlet::resources::parse_milli(text);
        (cpu_time().saturating_sub(started), result)
    };
    let (mut best, result) = timed();
    for _ in 0..2 {
        if best < LIMIT {
            break;
        }
        best = best.min(timed().0);
    }
    assert!(
        best < LIMIT || text.len() > 100_000,
        "{text:?} took {best:?} of CPU time"
    );
    if let Err(error) = result {
        assert!(error.to_string().starts_with("quantity "), "{error}");
    }
});
