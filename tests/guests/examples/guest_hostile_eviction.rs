//! An eviction plugin that misbehaves in the export its config names (`hostile`).

use hostile::{act, Config};
use wasmlet_plugin_sdk::{export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};

#[derive(Default)]
pub struct Hostile(Config);

impl EvictionPolicy for Hostile {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        self.0 = Config::configure(text)?;
        Ok(())
    }

    fn self_check(&self) -> Result<(), String> {
        act(&self.0, "self-check")
    }

    fn rank(
        &self,
        _: &NodeInfo,
        _: &[SignalObservation],
        pods: &[PodInfo],
    ) -> Result<Vec<u32>, String> {
        if self.0.long_answer("rank") {
            return Ok(hostile::long_answer(pods.len()));
        }
        act(&self.0, "rank")?;
        Ok((0..pods.len() as u32).collect())
    }
}

export!(Hostile as eviction);
