//! A probe plugin that misbehaves in the export its config names (`hostile`); `strings`
//! answers the worst message as an `unknown` result.

use hostile::{act, Config};
use wasmlet_plugin_sdk::{export, PodAccess, ProbeHandler, ProbeRequest, ProbeResult};

#[derive(Default)]
pub struct Hostile(Config);

impl ProbeHandler for Hostile {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        self.0 = Config::configure(text)?;
        Ok(())
    }

    fn self_check(&self) -> Result<(), String> {
        act(&self.0, "self-check")
    }

    fn check(&self, _: &ProbeRequest, _: &dyn PodAccess) -> ProbeResult {
        match act(&self.0, "check") {
            Ok(()) => ProbeResult::success("no fault asked for"),
            Err(message) => ProbeResult::unknown(message),
        }
    }
}

export!(Hostile as probe);
