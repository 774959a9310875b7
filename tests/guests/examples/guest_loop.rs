//! An eviction plugin that never returns: `rank` spins forever, so only the
//! host's epoch deadline can stop it.
//!
//! Config: `{"faultIn": "rank" | "configure" | "self-check"}` (default
//! `rank`) picks the export that loops, to test validation deadlines too.

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Config {
    fault_in: String,
}

#[derive(Default)]
pub struct Loop {
    fault_in: String,
}

/// Spins without end; the counter is observable so nothing optimizes it out.
fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = core::hint::black_box(n.wrapping_add(1));
    }
}

impl EvictionPolicy for Loop {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let c: Config = config::parse(text)?;
        if c.fault_in == "configure" {
            spin();
        }
        self.fault_in = c.fault_in;
        Ok(())
    }

    fn self_check(&self) -> Result<(), String> {
        if self.fault_in == "self-check" {
            spin();
        }
        Ok(())
    }

    fn rank(
        &self,
        _: &NodeInfo,
        _: &[SignalObservation],
        _: &[PodInfo],
    ) -> Result<Vec<u32>, String> {
        spin()
    }
}

export!(Loop as eviction);
