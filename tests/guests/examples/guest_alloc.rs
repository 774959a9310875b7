//! An eviction plugin that allocates without bound: `rank` keeps growing its
//! heap 1 MiB at a time and touches every page, until the host's memory cap
//! refuses `memory.grow` and the allocation failure aborts (a trap).
//!
//! Config: `{"faultIn": "rank" | "configure" | "self-check"}` (default `rank`).

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Config {
    fault_in: String,
}

#[derive(Default)]
pub struct Alloc {
    fault_in: String,
}

/// Grows the heap until allocation fails; never returns normally.
fn hog() -> ! {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        blocks.push(vec![0xA5; 1 << 20]);
        core::hint::black_box(&blocks);
    }
}

impl EvictionPolicy for Alloc {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let c: Config = config::parse(text)?;
        if c.fault_in == "configure" {
            hog();
        }
        self.fault_in = c.fault_in;
        Ok(())
    }

    fn self_check(&self) -> Result<(), String> {
        if self.fault_in == "self-check" {
            hog();
        }
        Ok(())
    }

    fn rank(
        &self,
        _: &NodeInfo,
        _: &[SignalObservation],
        _: &[PodInfo],
    ) -> Result<Vec<u32>, String> {
        hog()
    }
}

export!(Alloc as eviction);
