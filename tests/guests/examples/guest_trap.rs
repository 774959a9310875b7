//! An eviction plugin that traps: `rank` panics (the SDK logs the message
//! through `host.log` at error level, then the abort traps) or executes
//! `unreachable`.
//!
//! Config: `{"faultIn": "rank" | "configure" | "self-check", "how": "panic" | "unreachable"}`
//! (defaults `rank`, `panic`). `"faultIn": "self-check-err"` makes
//! `self-check` return an error instead of trapping.

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Config {
    fault_in: String,
    how: String,
}

#[derive(Default)]
pub struct Trap {
    config: Config,
}

impl Trap {
    fn trap(&self, place: &str) -> ! {
        if self.config.how == "unreachable" {
            #[cfg(target_arch = "wasm32")]
            core::arch::wasm32::unreachable();
        }
        panic!("guest-trap: deliberate panic in {place}")
    }
}

impl EvictionPolicy for Trap {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        self.config = config::parse(text)?;
        if self.config.fault_in == "configure" {
            self.trap("configure");
        }
        Ok(())
    }

    fn self_check(&self) -> Result<(), String> {
        match self.config.fault_in.as_str() {
            "self-check" => self.trap("self-check"),
            "self-check-err" => Err("guest-trap: self-check refuses, as configured".into()),
            _ => Ok(()),
        }
    }

    fn rank(
        &self,
        _: &NodeInfo,
        _: &[SignalObservation],
        _: &[PodInfo],
    ) -> Result<Vec<u32>, String> {
        self.trap("rank")
    }
}

export!(Trap as eviction);
